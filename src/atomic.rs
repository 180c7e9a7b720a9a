//! Atomic, durable file replacement.
//!
//! Every write of a whole file goes through [`write_atomic`]: the bytes go to
//! a temp file in the same directory, which gets the intended mode (and the
//! previous file's owner when the worker may set it), is fsynced, renamed
//! over the target, and the directory is fsynced. A reader sees the old bytes
//! or the new ones, never a mix; a crash leaves the old file intact; success
//! is reported only once the new bytes are on disk.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Mode given to a file that did not exist and was given no mode.
pub const DEFAULT_FILE_MODE: u32 = 0o644;

/// Whether an existing target may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clobber {
    /// Replace whatever is there.
    Replace,
    /// Fail with `AlreadyExists` if the target exists when the rename
    /// happens (checked by the kernel, not before: no race).
    Never,
}

/// Replace (or create) `path` with `bytes`. `mode`: the permission bits to
/// set; `None` keeps the existing file's mode (or [`DEFAULT_FILE_MODE`]).
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    clobber: Clobber,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("path has no parent directory"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = std::fs::metadata(path).ok();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    let mode = mode
        .or_else(|| existing.as_ref().map(|m| m.permissions().mode() & 0o7777))
        .unwrap_or(DEFAULT_FILE_MODE);
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some(md) = &existing {
        // Keep the owner when the worker is allowed to (root, or same user).
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(md.uid()), Some(md.gid()));
    }
    tmp.as_file().sync_all()?;
    match clobber {
        Clobber::Replace => tmp.persist(path).map(drop).map_err(|e| e.error)?,
        Clobber::Never => tmp.persist_noclobber(path).map(drop).map_err(|e| e.error)?,
    }
    sync_dir(dir)
}

/// Rename `from` to `to` atomically; with [`Clobber::Never`] the kernel
/// refuses (`AlreadyExists`) if `to` exists at that instant.
pub fn rename(from: &Path, to: &Path, clobber: Clobber) -> std::io::Result<()> {
    match clobber {
        Clobber::Replace => std::fs::rename(from, to),
        Clobber::Never => nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            from,
            nix::fcntl::AT_FDCWD,
            to,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(std::io::Error::from),
    }
}

/// fsync a directory so a rename or unlink in it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_keeps_the_mode() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&p, b"new", None, Clobber::Replace).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // no temp files left behind
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn new_files_get_the_given_or_default_mode() {
        let d = tempfile::TempDir::new().unwrap();
        let a = d.path().join("a");
        write_atomic(&a, b"x", None, Clobber::Never).unwrap();
        assert_eq!(
            std::fs::metadata(&a).unwrap().permissions().mode() & 0o777,
            0o644
        );
        let b = d.path().join("b");
        write_atomic(&b, b"x", Some(0o755), Clobber::Replace).unwrap();
        assert_eq!(
            std::fs::metadata(&b).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("missing-dir").join("f");
        assert!(write_atomic(&p, b"x", None, Clobber::Replace).is_err());
        // the target directory is a file: nothing is created or changed
        let file_dir = d.path().join("plain");
        std::fs::write(&file_dir, "old").unwrap();
        assert!(write_atomic(&file_dir.join("f"), b"new", None, Clobber::Replace).is_err());
        assert_eq!(std::fs::read(&file_dir).unwrap(), b"old");
    }

    #[test]
    fn never_clobber_is_enforced_for_writes_and_renames() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "old").unwrap();
        let e = write_atomic(&p, b"new", None, Clobber::Never).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        let q = d.path().join("g");
        std::fs::write(&q, "g").unwrap();
        let e = rename(&q, &p, Clobber::Never).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        rename(&q, &p, Clobber::Replace).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"g");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
