//! `coder::*`: the agent-ergonomic code surface.
//!
//! One module a function. Every path goes through [`crate::policy::Policy`]
//! (via [`resolve`] / [`resolve_scope`] here); nothing in this module tree
//! canonicalizes or checks globs by itself. Blocking file work runs on the
//! blocking pool ([`blocking`]). Writes go through [`crate::jail::atomic`].

pub mod change_diff;
/// The code-intelligence functions together, on a worker's services.
#[cfg(test)]
mod code_tests {
    mod tests;
}
pub mod create_file;
pub mod definition;
pub mod delete_file;
pub mod diagnostics;
pub mod find_symbol;
pub mod hover;
pub mod info;
pub mod lines;
pub mod list_folder;
pub mod map;
pub mod move_file;
pub mod outlines;
pub mod read_file;
pub mod references;
pub mod rename;
pub mod search;
pub mod semantic;
pub mod source;
pub mod symbols;
pub mod tree;
pub mod update_file;

use crate::error::{Failure, Surface};
use crate::function::Ctx;
use crate::policy::{Resolved, Tail};
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

/// Resolve the optional per-call `base_dir`.
pub fn resolve_scope(ctx: &Ctx, base_dir: Option<&str>) -> Result<Option<PathBuf>, Failure> {
    base_dir
        .map(|b| ctx.runtime.policy.resolve_scope(b, Surface::Coder))
        .transpose()
}

/// Resolve a coder wire path (following a symlink at the tail).
pub fn resolve(ctx: &Ctx, raw: &str, scope: Option<&PathBuf>) -> Result<Resolved, Failure> {
    ctx.runtime.policy.resolve(
        raw,
        Surface::Coder,
        Tail::Follow,
        scope.map(|p| p.as_path()),
    )
}

pub use crate::runtime::blocking;

/// Permission bits (lower 9 bits of `st_mode`).
pub fn mode_bits(md: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    md.permissions().mode() & 0o777
}

/// Modification time as Unix seconds (0 when unavailable).
pub fn mtime_secs(md: &std::fs::Metadata) -> i64 {
    md.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Kind of a directory entry, as listings report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

impl EntryKind {
    pub fn of(ft: &std::fs::FileType) -> EntryKind {
        if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }
}

/// SHA-256 hex of bytes: the `revision` of a file's exact content.
pub fn revision_of(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of a digest (the write layer's, so a revision is
/// spelled one way everywhere).
pub use crate::jail::atomic::hex;
