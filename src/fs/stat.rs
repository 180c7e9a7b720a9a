//! `shell::fs::stat`: one path's metadata.
//!
//! The path is resolved with `Tail::Entry`: a symlink at the tail is reported
//! as the link itself (`is_symlink: true`, `size` = length of its target
//! string) and never followed, so a link pointing out of the jail reveals
//! nothing about its target. Missing / denied / protected → the one S211.

use crate::error::{Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatRequest {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

// One filesystem entry's metadata (the entry itself; symlinks not followed).
// No doc comment on purpose: the contract's FsEntry schema has no description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FsEntry {
    pub name: String,
    pub is_dir: bool,
    pub is_symlink: bool,
    pub size: u64,
    pub mode: String,
    pub mtime: i64,
}

impl FsEntry {
    /// Build from `lstat` metadata.
    pub fn from_metadata(name: String, md: &std::fs::Metadata) -> FsEntry {
        use std::os::unix::fs::MetadataExt;
        let ft = md.file_type();
        FsEntry {
            name,
            is_dir: ft.is_dir(),
            is_symlink: ft.is_symlink(),
            size: md.len(),
            mode: super::mode_string(md.mode()),
            mtime: super::mtime_secs(md),
        }
    }
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::stat",
        "Takes `path` (a file or directory). Stat one file or directory: its type, size, mode, and mtime (paths jail-relative when \
         fs.host_roots are set). Errors return { code, message }; common: S211 not found or not \
         accessible, S215 jail escape. coder::read-file with stat: true additionally reports \
         total_lines.",
        Flags::NONE,
        stat,
    )
}

pub async fn stat(ctx: Ctx, req: StatRequest) -> Result<FsEntry, Failure> {
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        return super::forward(
            &ctx,
            "sandbox::fs::stat",
            serde_json::json!({"sandbox_id": id, "path": req.path}),
        )
        .await;
    }
    let resolved =
        ctx.runtime
            .policy
            .resolve_existing(&req.path, Surface::Shell, Tail::Entry, None)?;
    let raw = req.path.clone();
    super::blocking(move || {
        let md = resolved
            .loc()
            .metadata()
            .map_err(|e| Failure::from_io(&raw, &e))?;
        Ok(FsEntry::from_metadata(entry_name(&resolved.path), &md))
    })
    .await
}

/// The name an entry is reported under: its last component (`/` for the root).
pub fn entry_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;

    #[tokio::test]
    async fn stat_reports_file_dir_and_symlink_without_following() {
        let k = Kit::jailed();
        k.file("a.txt", "hello");
        k.dir("d");
        std::os::unix::fs::symlink(k.outside.path().join("secret"), k.root.join("out")).unwrap();
        std::fs::write(k.outside.path().join("secret"), "x").unwrap();
        let f = k.ok("shell::fs::stat", json!({"path": "a.txt"})).await;
        assert_eq!(f["name"], "a.txt");
        assert_eq!(f["size"], 5);
        assert_eq!(f["is_dir"], false);
        assert_eq!(f["mode"].as_str().unwrap().len(), 4);
        assert!(f["mtime"].as_i64().unwrap() > 0);
        let d = k.ok("shell::fs::stat", json!({"path": "d"})).await;
        assert_eq!(d["is_dir"], true);
        let l = k.ok("shell::fs::stat", json!({"path": "out"})).await;
        assert_eq!(l["is_symlink"], true);
        assert_eq!(l["is_dir"], false);
        // following the link would escape the jail
        let esc = k.err("shell::fs::stat", json!({"path": "out/.."})).await;
        assert_eq!(esc.code, "S215");
    }

    #[tokio::test]
    async fn stat_errors() {
        let k = Kit::jailed();
        assert_eq!(
            k.err("shell::fs::stat", json!({"path": "nope"})).await.code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::stat", json!({"path": "/etc/hostname"}))
                .await
                .code,
            "S215"
        );
        assert_eq!(
            k.err("shell::fs::stat", json!({"path": ""})).await.code,
            "S210"
        );
        let u = Kit::unjailed();
        assert_eq!(
            u.err("shell::fs::stat", json!({"path": "rel"})).await.code,
            "S210"
        );
        assert_eq!(
            u.err("shell::fs::stat", json!({"path": "~/x"})).await.code,
            "S210"
        );
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::stat", |p| json!({"path": p})).await;
    }
}
