//! `shell::fs::chmod`: set a path's mode, and optionally its owner.
//!
//! `mode` is octal (special bits only with `fs.allow_special_bits`); `uid` /
//! `gid` chown numerically. The path itself follows a symlink (like
//! chmod(1)); a recursive change refuses a symlink as its root (212).
//! `recursive: true` walks the tree by handle without following symlinks
//! (they are skipped, never changed) and never touches a protected entry;
//! a regular file with more than one hard link is refused (the change would
//! land on its other names too, which the policy cannot see);
//! children are changed before their directory, so a mode without `x` on
//! directories cannot cut the walk short. `entries_changed` counts the
//! entries the change was applied to.

use crate::error::{Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::dir::Kind;
use crate::jail::walk::{self, Step};
use crate::policy::{Resolved, Tail};
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::os::fd::{AsFd, BorrowedFd};

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
    // A recursive change never follows a link, the root included (it would
    // re-mode the linked tree); a single change follows it, like chmod(1).
    let tail = if req.recursive {
        Tail::Entry
    } else {
        Tail::Follow
    };
    let resolved = ctx
        .runtime
        .policy
        .resolve_existing(&req.path, Surface::Shell, tail, None)?;
    let raw = req.path.clone();
    let (uid, gid, recursive) = (req.uid, req.gid, req.recursive);
    let runtime = ctx.runtime.clone();
    super::blocking(move || {
        let q = crate::error::quote(&raw);
        let io = |e: std::io::Error| Failure::from_io(&raw, &e);
        let root = resolved.loc().open_path().map_err(io)?;
        let st = crate::jail::fstat(root.as_fd()).map_err(io)?;
        if crate::jail::is_link_mode(st.st_mode) {
            return Err(super::wrong_type(format!(
                "{q} is a symbolic link; a recursive chmod never follows links — pass the \
                 directory it points to, or drop recursive to change the link's target"
            )));
        }
        let mut changed = 0u64;
        if recursive && crate::jail::is_dir_mode(st.st_mode) {
            let entries = tree_post_order(&resolved, &runtime.policy);
            // A hard-linked file would change under its other names too,
            // wherever they are: refuse before changing anything.
            if let Some(linked) = entries.iter().find(|(_, multi)| *multi) {
                return Err(hard_linked(&linked.0.path.display().to_string()));
            }
            for (entry, _) in &entries {
                let fd = entry.loc().open_path().map_err(io)?;
                apply(fd.as_fd(), mode, uid, gid).map_err(io)?;
                changed += 1;
            }
        }
        if crate::jail::is_file_mode(st.st_mode) && st.st_nlink > 1 {
            return Err(hard_linked(&raw));
        }
        apply(root.as_fd(), mode, uid, gid).map_err(io)?;
        changed += 1;
        Ok(ChmodResponse {
            entries_changed: changed,
            path: raw,
            recursive,
        })
    })
    .await
}

fn hard_linked(raw: &str) -> Failure {
    Failure::bad_input(format!(
        "{} is a regular file with more than one hard link; its mode and owner are shared with \
         names the policy cannot see (possibly outside the jail), so shell::fs::chmod refuses \
         it; copy it to a file of its own first (coder::create-file), then change that",
        crate::error::quote(raw)
    ))
}

/// Mode (and owner) of one handle; chown first, since Linux clears
/// setuid/setgid on chown.
fn apply(fd: BorrowedFd<'_>, mode: u32, uid: Option<u32>, gid: Option<u32>) -> std::io::Result<()> {
    if uid.is_some() || gid.is_some() {
        crate::jail::chown_fd(fd, uid, gid)?;
    }
    crate::jail::chmod_fd(fd, mode)
}

/// Every entry under `dir` (not `dir` itself), children before their
/// directory, walked by handle: symlinks and protected entries (and what is
/// below a protected directory) are left out. Each comes with whether it
/// is a regular file with more than one link.
fn tree_post_order(dir: &Resolved, policy: &crate::policy::Policy) -> Vec<(Resolved, bool)> {
    let mut out = Vec::new();
    // Directories wait until their subtree is done: (depth, entry).
    let mut pending: Vec<(usize, Resolved)> = Vec::new();
    walk::walk(dir.loc(), Default::default(), |node| {
        if node.depth == 0 {
            return Step::Descend;
        }
        while pending.last().is_some_and(|(d, _)| *d >= node.depth) {
            let (_, done) = pending.pop().expect("checked above");
            out.push((done, false));
        }
        if node.kind == Kind::Symlink || policy.is_protected(node.path) {
            return Step::Skip;
        }
        let at = dir.below(node.rel);
        match node.kind {
            Kind::Dir => pending.push((node.depth, at)),
            _ => {
                let multi = node.kind == Kind::File && node.lstat().is_ok_and(|st| st.st_nlink > 1);
                out.push((at, multi));
            }
        }
        Step::Descend
    });
    while let Some((_, done)) = pending.pop() {
        out.push((done, false));
    }
    out
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
