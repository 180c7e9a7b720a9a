//! `shell::fs::chmod`: set a path's mode, and optionally its owner.
//!
//! `mode` is octal (special bits only with `fs.allow_special_bits`); `uid` /
//! `gid` chown numerically. The path itself follows a symlink (like
//! chmod(1)). `recursive: true` walks the tree without following symlinks
//! (they are skipped, never changed) and never touches a protected entry;
//! children are changed before their directory, so a mode without `x` on
//! directories cannot cut the walk short. `entries_changed` counts the
//! entries the change was applied to.

use crate::catalog::{Ctx, Flags, FunctionDef, function};
use crate::error::{Failure, Surface};
use crate::policy::Tail;
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChmodRequest {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// Octal permission string, e.g. "0755".
    pub mode: String,
    /// Optional chown to this numeric uid.
    #[serde(default)]
    pub uid: Option<u32>,
    /// Optional chown to this numeric gid.
    #[serde(default)]
    pub gid: Option<u32>,
    /// Apply mode/owner change to all files under the path recursively.
    #[serde(default)]
    pub recursive: bool,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChmodResponse {
    /// Number of filesystem entries whose mode/owner changed.
    #[serde(alias = "updated")]
    pub entries_changed: u64,
    /// The path that was targeted. Empty for sandbox targets.
    #[serde(default)]
    pub path: String,
    /// Whether the change was applied recursively. Host only.
    #[serde(default)]
    pub recursive: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::chmod",
        "Change a file or directory's permissions. `mode` is an octal string like \"0644\". \
         `uid`/`gid` optionally chown. `recursive: true` walks the tree (symlinks skipped). \
         Returns { entries_changed, path, recursive }. Errors return { code, message }; common: \
         S210 bad mode, S211 not found or not accessible, S215 jail escape.",
        Flags::NONE,
        chmod,
    )
}

pub async fn chmod(ctx: Ctx, req: ChmodRequest) -> Result<ChmodResponse, Failure> {
    let mode = super::checked_mode(&ctx, &req.mode)?;
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        let mut payload = serde_json::json!({
            "sandbox_id": id, "path": req.path, "mode": req.mode, "recursive": req.recursive,
        });
        if let Some(uid) = req.uid {
            payload["uid"] = uid.into();
        }
        if let Some(gid) = req.gid {
            payload["gid"] = gid.into();
        }
        // The sandbox answers with the legacy `{updated}`; the alias maps it.
        let r: ChmodResponse = super::forward(&ctx, "sandbox::fs::chmod", payload).await?;
        return Ok(ChmodResponse {
            entries_changed: r.entries_changed,
            path: String::new(),
            recursive: false,
        });
    }
    let resolved =
        ctx.runtime
            .policy
            .resolve_existing(&req.path, Surface::Shell, Tail::Follow, None)?;
    let raw = req.path.clone();
    let (uid, gid, recursive) = (req.uid, req.gid, req.recursive);
    let runtime = ctx.runtime.clone();
    super::blocking(move || {
        let apply = |p: &Path| -> std::io::Result<()> {
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::chown(p, uid, gid)?;
            }
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        };
        let mut changed = 0u64;
        if recursive && std::fs::metadata(&resolved.path).is_ok_and(|m| m.is_dir()) {
            let protected = |p: &Path| runtime.policy.is_protected(p);
            walk_post_order(&resolved.path, &protected, &mut |p| {
                apply(p)?;
                changed += 1;
                Ok(())
            })
            .map_err(|e| Failure::from_io(&raw, &e))?;
        }
        apply(&resolved.path).map_err(|e| Failure::from_io(&raw, &e))?;
        changed += 1;
        Ok(ChmodResponse {
            entries_changed: changed,
            path: raw,
            recursive,
        })
    })
    .await
}

/// Visit every entry under `dir` (not `dir` itself), children before their
/// directory, skipping symlinks and protected entries (and what is below a
/// protected directory).
fn walk_post_order(
    dir: &Path,
    protected: &dyn Fn(&Path) -> bool,
    visit: &mut dyn FnMut(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ft = entry.file_type()?;
        if ft.is_symlink() || protected(&path) {
            continue;
        }
        if ft.is_dir() {
            walk_post_order(&path, protected, visit)?;
        }
        visit(&path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn mode_of(p: &std::path::Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[tokio::test]
    async fn changes_one_path() {
        let k = Kit::jailed();
        let f = k.file("f", "x");
        let r = k
            .ok("shell::fs::chmod", json!({"path": "f", "mode": "0600"}))
            .await;
        assert_eq!(
            r,
            json!({"entries_changed": 1, "path": "f", "recursive": false})
        );
        assert_eq!(mode_of(&f), 0o600);
        // owner change to our own ids works whoever we run as
        let md = std::fs::metadata(&f).unwrap();
        let r = k
            .ok(
                "shell::fs::chmod",
                json!({"path": "f", "mode": "644", "uid": md.uid(), "gid": md.gid()}),
            )
            .await;
        assert_eq!(r["entries_changed"], 1);
        assert_eq!(mode_of(&f), 0o644);
    }

    #[tokio::test]
    async fn recursive_skips_links_and_protected_entries() {
        let k = Kit::jailed();
        let a = k.file("t/a", "");
        let b = k.file("t/sub/b", "");
        let env = k.file("t/.env", "SECRET");
        let sec = k.file("t/secrets/k", "");
        let out = k.outside.path().join("o");
        std::fs::write(&out, "").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&out, k.root.join("t/link")).unwrap();
        std::fs::set_permissions(&env, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&sec, std::fs::Permissions::from_mode(0o644)).unwrap();
        let r = k
            .ok(
                "shell::fs::chmod",
                json!({"path": "t", "mode": "0700", "recursive": true}),
            )
            .await;
        // t, t/a, t/sub, t/sub/b and the t/secrets directory (not its file)
        assert_eq!(
            r,
            json!({"entries_changed": 5, "path": "t", "recursive": true})
        );
        assert_eq!(mode_of(&a), 0o700);
        assert_eq!(mode_of(&b), 0o700);
        assert_eq!(mode_of(&k.root.join("t/sub")), 0o700);
        assert_eq!(mode_of(&env), 0o644);
        assert_eq!(mode_of(&sec), 0o644);
        assert_eq!(mode_of(&out), 0o644);
    }

    #[tokio::test]
    async fn chmod_errors() {
        let k = Kit::jailed();
        k.file("f", "");
        assert_eq!(
            k.err("shell::fs::chmod", json!({"path": "f", "mode": "8"}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::chmod", json!({"path": "f", "mode": "4755"}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::chmod", json!({"path": "f"})).await.code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::chmod", json!({"path": "nope", "mode": "0644"}))
                .await
                .code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::chmod", json!({"path": "/etc", "mode": "0644"}))
                .await
                .code,
            "S215"
        );
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::chmod", |p| json!({"path": p, "mode": "0600"})).await;
    }

    #[tokio::test]
    async fn sandbox_legacy_updated_maps_to_entries_changed() {
        let k = Kit::jailed();
        k.sandbox_answers("sandbox::fs::chmod", Ok(json!({"updated": 3})));
        let r = k
            .ok(
                "shell::fs::chmod",
                json!({"path": "/w", "mode": "0755", "uid": 0, "recursive": true, "target": sandbox_target()}),
            )
            .await;
        assert_eq!(
            r,
            json!({"entries_changed": 3, "path": "", "recursive": false})
        );
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "path": "/w", "mode": "0755", "uid": 0, "recursive": true})
        );
    }
}
