//! Atomic file replacement: the one way `shell::fs::write` and
//! `shell::fs::sed` put bytes on disk.
//!
//! Bytes go to a temp file created in the target's own directory (so the
//! final rename never crosses a filesystem). [`Staged::commit`] then sets the
//! exact mode (no umask), keeps the previous owner when it can, fsyncs the
//! file, renames it over the target and fsyncs the directory, so after a
//! crash the directory holds either the old file or the complete new one.
//! Dropping a [`Staged`] without committing deletes the temp file: a failed
//! or interrupted write leaves the previous file untouched.
//!
//! The rename replaces the directory entry, so hard links to the old file
//! keep the old contents (the same as every editor that saves atomically).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
        sync_dir(target.parent().unwrap_or(Path::new("/")));
        Ok(self.written)
    }
}

/// Flush a directory's entries (the rename) to disk. Best effort: some
/// filesystems refuse fsync on a directory.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
