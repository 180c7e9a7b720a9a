//! `shell::fs::rm`: remove a file, a symlink or a directory.
//!
//! The tail is addressed as an entry: removing a symlink removes the link,
//! never its target. A non-empty directory needs `recursive: true` (else
//! S214). A jail root (or `/`, or a directory holding a jail root) is never
//! removed (S210). A recursive removal first walks the tree and refuses
//! (S210) when anything inside is protected — denylisted or matched by a
//! protected glob — since removing the directory would remove it too;
//! the walk and the removal never follow symlinks.
//!
//! A missing path is the redacted S211, like a denied one; `was_present` is
//! therefore true on every host success (it is meaningful as a contract
//! field for callers that also talk to sandboxes, where it is false).

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RmRequest {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// Required to delete a non-empty directory.
    #[serde(default)]
    pub recursive: bool,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RmResponse {
    /// Change-history id of the change (`coder::change-diff`); null when none was journaled (sandbox targets, nothing changed).
    #[serde(default)]
    pub change_id: Option<String>,
    /// True when the path was removed.
    pub removed: bool,
    /// The path that was targeted. Empty for sandbox targets.
    #[serde(default)]
    pub path: String,
    /// True when the path existed before removal. Host only; sandbox targets default this to false, which does NOT mean the path was absent.
    #[serde(default)]
    pub was_present: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::rm",
        "Delete a file or directory. `recursive: true` is required for a non-empty directory. \
         Returns { removed, path, was_present }. Errors return { code, message }; common: S211 \
         not found or not accessible, S214 dir not empty, S215 jail escape. coder::delete-file \
         removes several paths per call.",
        Flags::NONE,
        rm,
    )
}

pub async fn rm(ctx: Ctx, req: RmRequest) -> Result<RmResponse, Failure> {
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        #[derive(Deserialize)]
        struct Removed {
            removed: bool,
        }
        let r: Removed = super::forward(
            &ctx,
            "sandbox::fs::rm",
            serde_json::json!({"sandbox_id": id, "path": req.path, "recursive": req.recursive}),
        )
        .await?;
        return Ok(RmResponse {
            change_id: ctx.scope.take_first(),
            removed: r.removed,
            path: String::new(),
            was_present: false,
        });
    }
    let resolved =
        ctx.runtime
            .policy
            .resolve_existing(&req.path, Surface::Shell, Tail::Entry, None)?;
    super::refuse_root(&ctx, &req.path, &resolved.path, "remove")?;
    let raw = req.path.clone();
    let recursive = req.recursive;
    let ctx2 = ctx.clone();
    super::blocking(move || {
        let parent = resolved.parent().map_err(|e| Failure::from_io(&raw, &e))?;
        let md = parent
            .lstat()
            .map_err(|e| Failure::from_io(&raw, &e))?
            .ok_or_else(|| Failure::not_found(&raw))?;
        if !crate::jail::is_dir_mode(md.st_mode) {
            crate::jail::atomic::remove_file(resolved.loc(), &ctx2.scope.recorder())
                .map_err(|e| Failure::from_io(&raw, &e))?;
        } else if !recursive {
            parent.rmdir().map_err(|e| match e.kind() {
                std::io::ErrorKind::DirectoryNotEmpty => Failure::new(
                    Class::NotEmpty,
                    format!(
                        "directory {raw:?} is not empty; pass recursive: true to remove it with \
                         its contents"
                    ),
                ),
                _ => Failure::from_io(&raw, &e),
            })?;
        } else {
            super::refuse_protected_inside(&ctx2, &raw, &resolved, "remove")?;
            crate::jail::atomic::remove_tree(resolved.loc(), &ctx2.scope.recorder())
                .map_err(|e| Failure::from_io(&raw, &e))?;
        }
        parent.sync_dir();
        Ok(RmResponse {
            change_id: ctx2.scope.take_first(),
            removed: true,
            path: raw,
            was_present: true,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;

    #[tokio::test]
    async fn removes_files_links_and_trees() {
        let k = Kit::jailed();
        k.file("f", "x");
        let r = k.ok("shell::fs::rm", json!({"path": "f"})).await;
        assert_eq!(
            r,
            json!({"removed": true, "path": "f", "was_present": true})
        );
        assert!(!k.root.join("f").exists());
        // a link is removed, its target (outside the jail) is not
        std::fs::write(k.outside.path().join("t"), "keep").unwrap();
        std::os::unix::fs::symlink(k.outside.path().join("t"), k.root.join("l")).unwrap();
        k.ok("shell::fs::rm", json!({"path": "l"})).await;
        assert!(k.outside.path().join("t").exists());
        k.dir("empty");
        k.ok("shell::fs::rm", json!({"path": "empty"})).await;
        k.file("t/a/b", "1");
        std::os::unix::fs::symlink(k.outside.path(), k.root.join("t/a/out")).unwrap();
        assert_eq!(
            k.err("shell::fs::rm", json!({"path": "t"})).await.code,
            "S214"
        );
        k.ok("shell::fs::rm", json!({"path": "t", "recursive": true}))
            .await;
        assert!(!k.root.join("t").exists());
        assert!(k.outside.path().join("t").exists());
    }

    #[tokio::test]
    async fn never_removes_roots_or_protected_entries() {
        let k = Kit::jailed();
        k.file("x", "");
        assert_eq!(
            k.err("shell::fs::rm", json!({"path": ".", "recursive": true}))
                .await
                .code,
            "S210"
        );
        let root = k.root.to_string_lossy().into_owned();
        assert_eq!(
            k.err("shell::fs::rm", json!({"path": root, "recursive": true}))
                .await
                .code,
            "S210"
        );
        k.file("p/.env", "SECRET");
        k.file("p/ok", "");
        let e = k
            .err("shell::fs::rm", json!({"path": "p", "recursive": true}))
            .await;
        assert_eq!(e.code, "S210");
        assert!(k.root.join("p/.env").exists() && k.root.join("p/ok").exists());
        let u = Kit::unjailed();
        assert_eq!(
            u.err("shell::fs::rm", json!({"path": "/", "recursive": true}))
                .await
                .code,
            "S210"
        );
    }

    #[tokio::test]
    async fn rm_errors() {
        let k = Kit::jailed();
        assert_eq!(
            k.err("shell::fs::rm", json!({"path": "nope"})).await.code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::rm", json!({"path": "../x"})).await.code,
            "S215"
        );
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::rm", |p| json!({"path": p, "recursive": true})).await;
    }

    #[tokio::test]
    async fn sandbox_defaults_host_only_fields() {
        let k = Kit::jailed();
        k.sandbox_answers("sandbox::fs::rm", Ok(json!({"removed": true})));
        let r = k
            .ok(
                "shell::fs::rm",
                json!({"path": "/w", "recursive": true, "target": sandbox_target()}),
            )
            .await;
        assert_eq!(
            r,
            json!({"removed": true, "path": "", "was_present": false})
        );
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "path": "/w", "recursive": true})
        );
    }
}
