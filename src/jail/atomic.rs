//! Atomic, durable file replacement, by handle.
//!
//! Every write of a whole file goes through [`write_atomic`] or [`Staged`]:
//! the bytes go to an unnamed `O_TMPFILE` inode created in the target's
//! directory handle (see [`crate::jail`]), which gets the intended mode (and
//! the previous file's owner when the worker may set it), is fsynced, and is
//! then linked into place: straight onto the final name when nothing may be
//! replaced (the kernel refuses an existing name: no check-then-write race),
//! else onto a staging name that is renamed over the target. The directory
//! is fsynced last. A reader sees the old bytes or the new ones, never a
//! mix; a crash leaves the old file intact and, at worst, one staging name
//! (`.ide-stage-…`, hidden from every listing and swept at start-up, see
//! [`sweep`]); success is reported only once the new bytes are on disk.
//!
//! Filesystems without `O_TMPFILE` get a named staging file instead (same
//! prefix, `O_EXCL`), removed when the stage is dropped.
//!
//! Content that arrives in pieces (a channel upload, a streamed sed rewrite)
//! uses [`Staged`]: append bytes, [`Staged::seal`] (mode, owner, fsync;
//! nothing visible yet) and [`Sealed::commit`] (link/rename, directory
//! fsync). A batch seals every file before committing any; dropping a stage
//! at any point leaves the target as it was.

use crate::jail::record::{ChangeKind, Image, Recorder, write_kind};
use crate::jail::{self, Loc, Parent, STAGING_PREFIX};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// Mode given to a file that did not exist and was given no mode.
pub const DEFAULT_FILE_MODE: u32 = 0o644;

/// Whether an existing target may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clobber {
    /// Replace whatever is there.
    Replace,
    /// Fail with `AlreadyExists` if the target exists when the link
    /// happens (checked by the kernel, not before: no race).
    Never,
}

/// Bytes with their SHA-256, taken once: the `revision` a caller reports
/// for them is the hash the journal names them by, so a write of them
/// ([`write_hashed`]) does not hash them a second time. Built only by
/// hashing the very bytes it holds.
pub struct Hashed<'a> {
    bytes: &'a [u8],
    digest: [u8; 32],
}

impl<'a> Hashed<'a> {
    pub fn new(bytes: &'a [u8]) -> Hashed<'a> {
        Hashed {
            bytes,
            digest: Sha256::digest(bytes).into(),
        }
    }

    /// SHA-256 hex: the `revision` of these exact bytes.
    pub fn revision(&self) -> String {
        hex(&self.digest)
    }
}

/// Lower-case hex of a digest (how a `revision` is written).
pub fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(digest.len() * 2);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Replace (or create) the file at `target` with `bytes`. `mode`: the
/// permission bits to set; `None` keeps the existing file's mode (or
/// [`DEFAULT_FILE_MODE`]). The owner of an existing file is kept where the
/// worker may set it. `rec` records the change (the call's journal).
pub fn write_atomic(
    target: &Loc,
    bytes: &[u8],
    mode: Option<u32>,
    clobber: Clobber,
    rec: &Recorder,
) -> std::io::Result<()> {
    write_with(target, bytes, None, mode, clobber, rec)
}

/// [`write_atomic`] of bytes already hashed.
pub fn write_hashed(
    target: &Loc,
    body: &Hashed,
    mode: Option<u32>,
    clobber: Clobber,
    rec: &Recorder,
) -> std::io::Result<()> {
    write_with(target, body.bytes, Some(body.digest), mode, clobber, rec)
}

fn write_with(
    target: &Loc,
    bytes: &[u8],
    digest: Option<[u8; 32]>,
    mode: Option<u32>,
    clobber: Clobber,
    rec: &Recorder,
) -> std::io::Result<()> {
    let mut stage = Staged::new(target, rec)?;
    let existing = stage
        .parent
        .lstat()?
        .filter(|st| jail::is_file_mode(st.st_mode));
    if let Some(digest) = digest {
        // the whole body comes with its hash: nothing left to hash
        stage.hasher = None;
        stage.digest = Some(digest);
    }
    stage.write_all(bytes)?;
    let mode = mode
        .or_else(|| existing.map(|st| st.st_mode & 0o7777))
        .unwrap_or(DEFAULT_FILE_MODE);
    let owner = existing.map(|st| (st.st_uid, st.st_gid));
    stage.seal(mode, owner)?.commit_with(clobber).map(drop)
}

/// Rename `from` to `to` by handle; with [`Clobber::Never`] the kernel
/// refuses (`AlreadyExists`) if `to` exists at that instant. Neither name
/// is followed. Both directories are fsynced.
pub fn rename(from: &Loc, to: &Loc, clobber: Clobber, rec: &Recorder) -> std::io::Result<()> {
    let src = from.parent()?;
    let dst = to.parent()?;
    // What the move replaces at the destination, and what it moves.
    let replaced = rec.as_deref().and_then(|c| image_at(c, &dst));
    let moved = rec.as_deref().and_then(|c| image_at(c, &src));
    src.rename_to(&dst, clobber == Clobber::Never)?;
    match rec {
        Some(c) => c.record(
            ChangeKind::Moved,
            &to.abs(),
            Some(&from.abs()),
            replaced,
            moved,
            &[dst.dir(), src.dir()],
        ),
        None => {
            dst.sync_dir();
            src.sync_dir();
        }
    }
    Ok(())
}

/// The current body of the regular file a parent entry names, for the
/// journal (none when absent or not a regular file).
fn image_at(cap: &dyn crate::jail::record::Record, at: &Parent) -> Option<Image> {
    let fd = at.open(OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0).ok()?;
    let file = std::fs::File::from(fd);
    let md = file.metadata().ok()?;
    if !md.is_file() {
        return None;
    }
    cap.image_of(&file, md.permissions().mode() & 0o7777)
}

/// Remove a non-directory entry (a symlink itself, never its target),
/// journaling a regular file's body.
pub fn remove_file(target: &Loc, rec: &Recorder) -> std::io::Result<()> {
    let parent = target.parent()?;
    let before = rec.as_deref().and_then(|c| image_at(c, &parent));
    parent.unlink()?;
    match (rec, before) {
        (Some(c), Some(b)) => c.record(
            ChangeKind::Deleted,
            &target.abs(),
            None,
            Some(b),
            None,
            &[parent.dir()],
        ),
        _ => parent.sync_dir(),
    }
    Ok(())
}

/// Remove a directory and everything below it ([`jail::remove_tree`]),
/// journaling each regular file's body first (bodies over the blob cap are
/// journaled without them).
pub fn remove_tree(target: &Loc, rec: &Recorder) -> std::io::Result<()> {
    let parent = target.parent()?;
    let mut removed = Vec::new();
    if let Some(c) = rec {
        // Bodies only while the tree's total fits the blob cap: past it
        // they would be evicted at once, so the rest is versions only.
        let mut budget = c.max_blob_bytes();
        jail::walk::walk(target, Default::default(), |node| {
            if node.kind == jail::dir::Kind::File {
                if let Ok(fd) = node.open(OFlag::O_RDONLY | OFlag::O_NONBLOCK) {
                    let file = std::fs::File::from(fd);
                    if let Ok(md) = file.metadata() {
                        let mode = md.permissions().mode() & 0o7777;
                        let img = if md.len() <= budget {
                            budget -= md.len();
                            c.image_of(&file, mode)
                        } else {
                            budget = 0;
                            c.version_only(&file, mode)
                        };
                        if let Some(img) = img {
                            removed.push((node.path.to_path_buf(), img));
                        }
                    }
                }
            }
            jail::walk::Step::Descend
        });
    }
    jail::remove_tree(&parent)?;
    parent.sync_dir();
    if let Some(c) = rec {
        c.record_deletions(removed);
    }
    Ok(())
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
    Ok(hex(&hasher.finalize()))
}

/// A fresh staging name.
fn staging_name() -> OsString {
    OsString::from(format!("{STAGING_PREFIX}{}", uuid::Uuid::new_v4().simple()))
}

/// A new version of one file, written but not yet visible.
pub struct Staged {
    file: std::fs::File,
    parent: Parent,
    /// The staging name, when the filesystem has no `O_TMPFILE`.
    named: Option<OsString>,
    written: u64,
    /// The new body's SHA-256, taken as it is written, while a journal
    /// records this call: the journal then neither reads the body back to
    /// name it nor copies a body it already holds.
    hasher: Option<Sha256>,
    /// Who records this change (the call's journal), if anyone.
    rec: Recorder,
    /// The body's SHA-256 when the writer handed it over with the whole
    /// body ([`write_hashed`]); then `hasher` is `None`.
    digest: Option<[u8; 32]>,
    /// The journal's images of the version being replaced and of this new
    /// one, stored (and flushed) while the version itself was flushed; see
    /// [`Staged::seal`].
    sealed: Option<SealedImages>,
}

/// What [`Staged::seal`] stored for the journal.
struct SealedImages {
    before: Option<Image>,
    after: Option<Image>,
}

impl Staged {
    /// Start a replacement of `target` (which may not exist yet; its parent
    /// directory must).
    pub fn new(target: &Loc, rec: &Recorder) -> std::io::Result<Staged> {
        Staged::in_parent(target.parent()?, rec)
    }

    /// Start a new version of the entry `parent` names.
    pub fn in_parent(parent: Parent, rec: &Recorder) -> std::io::Result<Staged> {
        let tmp = nix::fcntl::openat(
            parent.dir(),
            ".",
            OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        );
        let (fd, named): (OwnedFd, Option<OsString>) = match tmp {
            Ok(fd) => (fd, None),
            Err(Errno::EOPNOTSUPP) | Err(Errno::EISDIR) | Err(Errno::EINVAL) => {
                let name = staging_name();
                let fd = nix::fcntl::openat(
                    parent.dir(),
                    name.as_os_str(),
                    OFlag::O_CREAT
                        | OFlag::O_EXCL
                        | OFlag::O_RDWR
                        | OFlag::O_NOFOLLOW
                        | OFlag::O_CLOEXEC,
                    nix::sys::stat::Mode::from_bits_truncate(0o600),
                )?;
                (fd, Some(name))
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Staged {
            file: fd.into(),
            parent,
            named,
            written: 0,
            hasher: rec.as_ref().map(|_| Sha256::new()),
            rec: rec.clone(),
            digest: None,
            sealed: None,
        })
    }

    /// Append bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        if let Some(h) = self.hasher.as_mut() {
            h.update(bytes);
        }
        Ok(())
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The directory entry this stage will replace.
    pub fn parent(&self) -> &Parent {
        &self.parent
    }

    /// Give the new version its final mode and owner and make its bytes
    /// durable; nothing is visible yet (a batch may seal many files before
    /// swapping any in). `owner` is the previous file's `(uid, gid)`;
    /// restoring it is best effort (only a privileged worker can give files
    /// away).
    ///
    /// While a journal records the call, the journal's copies of the body
    /// being replaced and of the new one are written first and flushed on
    /// a second thread while this one flushes the version itself: they
    /// reach the disk in one commit of the filesystem's journal (measured
    /// in BENCHMARKS.md), not one after the other. The body being replaced
    /// is taken here, not at the swap: a writer racing us in between is
    /// replaced by the swap either way.
    pub fn seal(mut self, mode: u32, owner: Option<(u32, u32)>) -> std::io::Result<Sealed> {
        let file = &self.file;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        if let Some((uid, gid)) = owner {
            let md = file.metadata()?;
            if md.uid() != uid || md.gid() != gid {
                let _ = std::os::unix::fs::fchown(file, Some(uid), Some(gid));
                // chown may clear setuid/setgid: apply the mode once more.
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
        }
        let digest = self
            .digest
            .take()
            .or_else(|| self.hasher.take().map(|h| h.finalize().into()));
        let cap = digest.as_ref().and(self.rec.clone());
        let (Some(cap), Some(digest)) = (cap, digest) else {
            self.file.sync_all()?;
            return Ok(Sealed { stage: Some(self) });
        };
        // The journal's copies of the body being replaced and of the new
        // one (when the store does not hold them) are written first, so the
        // version's own fsync below commits their metadata with its own,
        // and their data is flushed on a helper thread beside it.
        let after = cap.image_of_new(&self.file, &digest, self.written, mode);
        let before = image_at(&*cap, &self.parent);
        let pending = [&before, &after]
            .into_iter()
            .flatten()
            .any(Image::is_pending);
        let (before, after) = if pending {
            let flush = move || {
                let mut images = (before, after);
                let flushed = [&mut images.0, &mut images.1]
                    .into_iter()
                    .flatten()
                    .try_for_each(Image::flush_body);
                flushed.map(|()| images)
            };
            let (flushed, own) = jail::beside::beside(flush, || self.file.sync_all());
            own?;
            match flushed {
                Some(Ok(images)) => images,
                failed => {
                    let e = failed.and_then(Result::err);
                    tracing::error!(error = ?e, "change journal: a body did not reach the disk; the change is journaled without it");
                    (None, None)
                }
            }
        } else {
            self.file.sync_all()?;
            (before, after)
        };
        self.sealed = Some(SealedImages { before, after });
        Ok(Sealed { stage: Some(self) })
    }

    /// Seal and swap in at once, replacing what is there.
    pub fn commit(self, mode: u32, owner: Option<(u32, u32)>) -> std::io::Result<u64> {
        self.seal(mode, owner)?.commit()
    }

    /// Give the unnamed inode the name `name` in the target directory;
    /// `EEXIST` when taken.
    fn link_as(&self, name: &std::ffi::OsStr) -> std::io::Result<()> {
        jail::link_unnamed(self.file.as_fd(), self.parent.dir(), name)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(name) = self.named.take() {
            let _ = nix::unistd::unlinkat(
                self.parent.dir(),
                name.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

/// A complete, durable new version waiting to be swapped in. Dropping it
/// leaves the target as it was.
pub struct Sealed {
    stage: Option<Staged>,
}

impl Sealed {
    /// Put the new version in place, replacing what is there, and flush the
    /// directory. Returns the size.
    pub fn commit(self) -> std::io::Result<u64> {
        self.commit_with(Clobber::Replace)
    }

    /// Put the new version in place; with [`Clobber::Never`] an existing
    /// target makes it fail with `AlreadyExists` and changes nothing.
    pub fn commit_with(mut self, clobber: Clobber) -> std::io::Result<u64> {
        let mut stage = self.stage.take().expect("a sealed stage commits once");
        let written = stage.written;
        let target = stage.parent.name.clone();
        // The journal keeps the body being replaced and the new one; both
        // are stored before the swap, the record is written after it.
        let cap = stage.rec.clone();
        let images = match stage.sealed.take() {
            Some(s) => Some((s.before, s.after)),
            None => cap.as_deref().map(|c| {
                let mode = stage
                    .file
                    .metadata()
                    .map_or(DEFAULT_FILE_MODE, |m| m.permissions().mode() & 0o7777);
                (image_at(c, &stage.parent), c.image_of(&stage.file, mode))
            }),
        };
        match (stage.named.take(), clobber) {
            (None, Clobber::Never) => stage.link_as(&target)?,
            (None, Clobber::Replace) => {
                // Link under a staging name, then rename over the target: the
                // only moment a crash can leave a name behind (swept later).
                let name = staging_name();
                stage.link_as(&name)?;
                if let Err(e) = nix::fcntl::renameat(
                    stage.parent.dir(),
                    name.as_os_str(),
                    stage.parent.dir(),
                    target.as_os_str(),
                ) {
                    stage.named = Some(name);
                    return Err(e.into());
                }
            }
            (Some(name), clobber) => {
                let flags = if clobber == Clobber::Never {
                    nix::fcntl::RenameFlags::RENAME_NOREPLACE
                } else {
                    nix::fcntl::RenameFlags::empty()
                };
                if let Err(e) = nix::fcntl::renameat2(
                    stage.parent.dir(),
                    name.as_os_str(),
                    stage.parent.dir(),
                    target.as_os_str(),
                    flags,
                ) {
                    stage.named = Some(name);
                    return Err(e.into());
                }
            }
        }
        match (cap, images) {
            (Some(c), Some((before, after))) => {
                let path = stage.parent.loc().abs();
                if let Some(a) = &after {
                    c.remember(&stage.file, a);
                }
                c.record(
                    write_kind(&before),
                    &path,
                    None,
                    before,
                    after,
                    &[stage.parent.dir()],
                );
            }
            _ => stage.parent.sync_dir(),
        }
        Ok(written)
    }
}

/// Remove staging names a killed worker left behind under `root`: entries
/// named `.ide-stage-…` older than `min_age`, found by a handle walk that
/// follows no link. Returns how many were removed.
pub fn sweep(root: &Loc, min_age: std::time::Duration) -> usize {
    let mut removed = 0;
    let now = std::time::SystemTime::now();
    jail::walk::for_each_staging_name(root, &mut |dir, name| {
        let Ok(st) = nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
            return;
        };
        let mtime =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(st.st_mtime.max(0) as u64);
        if now.duration_since(mtime).is_ok_and(|age| age >= min_age)
            && jail::is_file_mode(st.st_mode)
            && nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir).is_ok()
        {
            removed += 1;
        }
    });
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// `path` (inside `dir`) as the policy would hand it over.
    fn at(dir: &Path, path: &Path) -> Loc {
        let anchor = crate::jail::Anchor::open(dir).unwrap();
        anchor.locate(path).unwrap()
    }

    #[test]
    fn replaces_content_and_keeps_the_mode() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&at(d.path(), &p), b"new", None, Clobber::Replace, &None).unwrap();
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
        write_atomic(&at(d.path(), &a), b"x", None, Clobber::Never, &None).unwrap();
        assert_eq!(
            std::fs::metadata(&a).unwrap().permissions().mode() & 0o777,
            0o644
        );
        let b = d.path().join("b");
        write_atomic(
            &at(d.path(), &b),
            b"x",
            Some(0o755),
            Clobber::Replace,
            &None,
        )
        .unwrap();
        assert_eq!(
            std::fs::metadata(&b).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("missing-dir").join("f");
        assert!(write_atomic(&at(d.path(), &p), b"x", None, Clobber::Replace, &None).is_err());
        // the target directory is a file: nothing is created or changed
        let file_dir = d.path().join("plain");
        std::fs::write(&file_dir, "old").unwrap();
        assert!(
            write_atomic(
                &at(d.path(), &file_dir.join("f")),
                b"new",
                None,
                Clobber::Replace,
                &None
            )
            .is_err()
        );
        assert_eq!(std::fs::read(&file_dir).unwrap(), b"old");
    }

    #[test]
    fn never_clobber_is_enforced_for_writes_and_renames() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "old").unwrap();
        let e = write_atomic(&at(d.path(), &p), b"new", None, Clobber::Never, &None).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        let q = d.path().join("g");
        std::fs::write(&q, "g").unwrap();
        let e = rename(&at(d.path(), &q), &at(d.path(), &p), Clobber::Never, &None).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        rename(
            &at(d.path(), &q),
            &at(d.path(), &p),
            Clobber::Replace,
            &None,
        )
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"g");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_dropped_stage_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::TempDir::new().unwrap();
        let target = dir.path().join("f.txt");
        std::fs::write(&target, "old").unwrap();
        {
            let mut s = Staged::new(&at(dir.path(), &target), &None).unwrap();
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
        let mut s = Staged::new(&at(dir.path(), &target), &None).unwrap();
        s.write_all(b"new").unwrap();
        assert_eq!(s.commit(0o640, None).unwrap(), 3);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
