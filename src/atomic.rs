//! Atomic, durable file replacement.
//!
//! Every write of a whole file goes through [`write_atomic`]: the bytes go to
//! a temp file in the same directory, which gets the intended mode (and the
//! previous file's owner when the worker may set it), is fsynced, renamed
//! over the target, and the directory is fsynced. A reader sees the old bytes
//! or the new ones, never a mix; a crash leaves the old file intact; success
//! is reported only once the new bytes are on disk.
//!
//! Content that arrives in pieces (a channel upload, a streamed sed rewrite)
//! goes through [`Staged`] instead, the same steps split in three: append
//! bytes, [`Staged::seal`] (mode, owner, fsync; nothing visible yet) and
//! [`Sealed::commit`] (rename, directory fsync). A batch seals every file
//! before committing any; dropping a stage at any point deletes its temp
//! file and leaves the target as it was.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
    if let Some(md) = &existing {
        // Keep the owner when the worker is allowed to (root, or same user).
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(md.uid()), Some(md.gid()));
    }
    // After the chown: Linux clears setuid/setgid on chown.
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    match clobber {
        Clobber::Replace => tmp.persist(path).map(drop).map_err(|e| e.error)?,
        Clobber::Never => tmp.persist_noclobber(path).map(drop).map_err(|e| e.error)?,
    }
    // The file is in place; a directory that refuses fsync (some FUSE/9p
    // mounts) must not turn a completed write into a reported failure.
    if let Err(e) = sync_dir(dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "directory fsync failed after rename");
    }
    Ok(())
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

/// Open an existing file for reading so that it can neither hang nor be
/// redirected: `O_NONBLOCK` (a FIFO opens at once instead of waiting for a
/// writer), `O_NOFOLLOW` (a symlink swapped in at the tail after the policy
/// resolved the path fails with `ELOOP` instead of being followed).
pub fn open_for_read(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(path)
}

/// [`open_for_read`], refusing anything but a regular file (212): a
/// directory, a FIFO, a socket or a device (`/dev/zero` would never end).
pub fn open_regular(
    raw: &str,
    path: &Path,
) -> Result<(std::fs::File, std::fs::Metadata), crate::error::Failure> {
    use crate::error::{Class, Failure};
    let file = open_for_read(path).map_err(|e| Failure::from_io(raw, &e))?;
    let md = file.metadata().map_err(|e| Failure::from_io(raw, &e))?;
    if md.is_dir() {
        return Err(Failure::new(
            Class::WrongType,
            format!("{raw:?} is a directory; list it with coder::list-folder or coder::tree"),
        ));
    }
    if !md.is_file() {
        return Err(Failure::new(
            Class::WrongType,
            format!(
                "{raw:?} is not a regular file (a FIFO, socket or device); only regular files are read or edited"
            ),
        ));
    }
    Ok((file, md))
}

/// SHA-256 hex of a file's bytes, streamed in constant memory.
pub fn revision_of_file(file: &mut std::fs::File) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// fsync a directory so a rename or unlink in it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// A new version of one file, written but not yet visible.
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
    written: u64,
}

impl Staged {
    /// Start a replacement of `target` (which may not exist yet; its parent
    /// directory must).
    pub fn new(target: &Path) -> std::io::Result<Staged> {
        let dir = target.parent().unwrap_or(Path::new("/"));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".ide-tmp")
            .tempfile_in(dir)?;
        Ok(Staged {
            tmp,
            target: target.to_path_buf(),
            written: 0,
        })
    }

    /// Append bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.tmp.as_file_mut().write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Give the new version its final mode and owner and make its bytes
    /// durable; the temp file is closed (a batch may seal many files before
    /// swapping any in). `owner` is the previous file's `(uid, gid)`;
    /// restoring it is best effort (only a privileged worker can give files
    /// away).
    pub fn seal(self, mode: u32, owner: Option<(u32, u32)>) -> std::io::Result<Sealed> {
        let file = self.tmp.as_file();
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        if let Some((uid, gid)) = owner {
            let md = file.metadata()?;
            if md.uid() != uid || md.gid() != gid {
                let _ = std::os::unix::fs::fchown(file, Some(uid), Some(gid));
                // chown may clear setuid/setgid: apply the mode once more.
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
        }
        file.sync_all()?;
        Ok(Sealed {
            tmp: self.tmp.into_temp_path(),
            target: self.target,
            written: self.written,
        })
    }

    /// Seal and swap in at once.
    pub fn commit(self, mode: u32, owner: Option<(u32, u32)>) -> std::io::Result<u64> {
        self.seal(mode, owner)?.commit()
    }
}

/// A complete, durable new version waiting to be swapped in. Dropping it
/// deletes it.
pub struct Sealed {
    tmp: tempfile::TempPath,
    target: PathBuf,
    written: u64,
}

impl Sealed {
    /// Rename over the target and flush the directory. Returns the size.
    pub fn commit(self) -> std::io::Result<u64> {
        let target = self.target;
        self.tmp.persist(&target).map_err(|e| e.error)?;
        // Best effort: some filesystems refuse fsync on a directory.
        let _ = sync_dir(target.parent().unwrap_or(Path::new("/")));
        Ok(self.written)
    }
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

    #[test]
    fn a_dropped_stage_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::TempDir::new().unwrap();
        let target = dir.path().join("f.txt");
        std::fs::write(&target, "old").unwrap();
        {
            let mut s = Staged::new(&target).unwrap();
            s.write_all(b"new and half").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn commit_replaces_with_the_exact_mode() {
        let dir = tempfile::TempDir::new().unwrap();
        let target = dir.path().join("f.txt");
        std::fs::write(&target, "old").unwrap();
        let mut s = Staged::new(&target).unwrap();
        s.write_all(b"new").unwrap();
        assert_eq!(s.commit(0o640, None).unwrap(), 3);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
