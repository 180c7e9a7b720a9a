//! The handle layer: every filesystem operation of every surface.
//!
//! The policy ([`crate::policy`]) *decides* — it turns a wire path into a
//! canonical absolute path and checks it against the jail, the denylist and
//! the protected globs. This module *performs*: each operation starts from
//! an `O_PATH` handle on the root the decision was made under (an
//! [`Anchor`], opened once per runtime snapshot) and opens the canonical
//! path relative to it with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`. The final name is then touched with `*at()`
//! calls that never follow it. A canonical path holds no symlink, so a
//! symlink (or `..`) swapped in anywhere after the decision makes the
//! operation fail — `ELOOP`/`EXDEV`, which [`crate::error::Failure::from_io`]
//! redacts like a missing path — instead of leading outside.
//!
//! Kernels without `openat2` (before 5.6, or a seccomp filter answering
//! `ENOSYS`/`EPERM`) get the same guarantee one component at a time:
//! `openat(dir, name, O_PATH | O_NOFOLLOW | O_DIRECTORY)` from the anchor
//! down, which can neither follow a link nor climb (a canonical path has no
//! `..`).
//!
//! Walks descend by directory handles too ([`walk`]), and whole-file writes
//! stage an unnamed `O_TMPFILE` inode in the target's directory handle and
//! link it into place ([`crate::jail::atomic`]).

pub mod atomic;
pub mod beside;
pub mod dir;
pub mod record;
pub mod walk;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode};
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Prefix of the worker's own staging names (hidden from every listing,
/// search and watch, swept at start-up).
pub const STAGING_PREFIX: &str = ".ide-stage-";

/// Whether a directory entry name is one of the worker's staging names.
pub fn is_staging_name(name: &OsStr) -> bool {
    name.as_bytes().starts_with(STAGING_PREFIX.as_bytes())
}

/// An `O_PATH` handle on a directory that resolution starts from: a jail
/// root, or `/` when unjailed. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Anchor {
    fd: Arc<OwnedFd>,
    path: Arc<PathBuf>,
}

impl Anchor {
    /// Open `path` (absolute and canonical: checked by the policy when the
    /// runtime is built).
    pub fn open(path: &Path) -> std::io::Result<Anchor> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Anchor {
            fd: Arc::new(fd),
            path: Arc::new(path.to_path_buf()),
        })
    }

    /// A private data directory of the worker's own (the change journal's
    /// `turns.data_dir`, configured by the operator, outside any jail):
    /// created if missing (`0700` for what is created), then opened as a
    /// root handle like a jail root; everything inside is reached from it.
    pub fn create(path: &Path) -> std::io::Result<Anchor> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)?;
        Anchor::open(&path.canonicalize()?)
    }

    /// The directory itself, opened for `*at` work inside it.
    pub fn open_dir(&self) -> std::io::Result<OwnedFd> {
        open_beneath(
            self.fd(),
            Path::new(""),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        )
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The location of `abs` under this anchor, when it lies inside it.
    pub fn locate(&self, abs: &Path) -> Option<Loc> {
        let rel = abs.strip_prefix(self.path.as_path()).ok()?;
        Some(Loc {
            anchor: self.clone(),
            rel: rel.to_path_buf(),
        })
    }
}

/// A canonical path relative to an [`Anchor`]: where an operation happens.
#[derive(Clone, Debug)]
pub struct Loc {
    anchor: Anchor,
    /// Canonical, relative, no `.`/`..`; empty for the anchor itself.
    rel: PathBuf,
}

/// Kernel support for `openat2`, probed on first use.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

fn beneath(flags: OFlag) -> OpenHow {
    OpenHow::new().flags(flags | OFlag::O_CLOEXEC).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS,
    )
}

/// Open `rel` (canonical, relative) beneath `dir`, following no symlink
/// anywhere (the last component included: `O_NOFOLLOW` is implied).
pub fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag) -> std::io::Result<OwnedFd> {
    let rel_c: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        match nix::fcntl::openat2(dir, rel_c, beneath(flags | OFlag::O_NOFOLLOW)) {
            Ok(fd) => return Ok(fd),
            Err(Errno::ENOSYS) | Err(Errno::EPERM) if probe_openat2_missing() => {}
            // A way out of the root appeared (EXDEV from RESOLVE_BENEATH):
            // reported like a swapped-in symlink, so no caller mistakes it
            // for a cross-filesystem rename.
            Err(Errno::EXDEV) => return Err(Errno::ELOOP.into()),
            Err(e) => return Err(e.into()),
        }
    }
    open_by_components(dir, rel, flags)
}

/// Whether `openat2` is unavailable (decided once, by a call on `/`).
fn probe_openat2_missing() -> bool {
    let missing = matches!(
        nix::fcntl::openat2(
            nix::fcntl::AT_FDCWD,
            "/",
            beneath(OFlag::O_PATH | OFlag::O_DIRECTORY)
        ),
        Err(Errno::ENOSYS) | Err(Errno::EPERM)
    );
    if missing && !NO_OPENAT2.swap(true, Ordering::Relaxed) {
        tracing::warn!("openat2 is unavailable; resolving paths one component at a time");
    }
    missing
}

/// The `openat2`-less path: one `O_NOFOLLOW` hop per component.
fn open_by_components(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag) -> std::io::Result<OwnedFd> {
    let names: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(std::io::Error::from_raw_os_error(nix::libc::ELOOP)),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, parents)) = names.split_last() else {
        return Ok(nix::fcntl::openat(
            dir,
            ".",
            flags | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?);
    };
    let mut cur: Option<OwnedFd> = None;
    for name in parents {
        let at = cur.as_ref().map_or(dir, |f| f.as_fd());
        let next = nix::fcntl::openat(
            at,
            *name,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        cur = Some(next);
    }
    let at = cur.as_ref().map_or(dir, |f| f.as_fd());
    Ok(nix::fcntl::openat(
        at,
        *last,
        flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// Stat an open handle (an `O_PATH` one included).
pub fn fstat(fd: BorrowedFd<'_>) -> std::io::Result<FileStat> {
    Ok(nix::sys::stat::fstat(fd)?)
}

/// The magic-link path of a descriptor, for the calls that have no
/// handle-taking form.
pub fn proc_path(fd: BorrowedFd<'_>) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

impl Loc {
    pub fn anchor(&self) -> &Anchor {
        &self.anchor
    }

    /// The canonical absolute path.
    pub fn abs(&self) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            self.anchor.path.to_path_buf()
        } else {
            self.anchor.path.join(&self.rel)
        }
    }

    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// Whether this is the anchor itself.
    pub fn is_anchor(&self) -> bool {
        self.rel.as_os_str().is_empty()
    }

    /// A location below this one (`name` is one component).
    pub fn child(&self, name: &OsStr) -> Loc {
        Loc {
            anchor: self.anchor.clone(),
            rel: self.rel.join(name),
        }
    }

    /// A location below this one (`rel` canonical and relative).
    pub fn below(&self, rel: &Path) -> Loc {
        Loc {
            anchor: self.anchor.clone(),
            rel: self.rel.join(rel),
        }
    }

    /// Open with `flags` (never following a link).
    pub fn open(&self, flags: OFlag) -> std::io::Result<OwnedFd> {
        open_beneath(self.anchor.fd(), &self.rel, flags)
    }

    /// A regular file (or whatever is there) for reading, without blocking
    /// on a FIFO.
    pub fn open_read(&self) -> std::io::Result<std::fs::File> {
        Ok(self.open(OFlag::O_RDONLY | OFlag::O_NONBLOCK)?.into())
    }

    /// [`Loc::open_read`], refusing anything but a regular file (212): a
    /// directory, a FIFO, a socket or a device (`/dev/zero` would never
    /// end). `raw` is the caller's spelling of the path, for the message.
    pub fn open_regular(
        &self,
        raw: &str,
    ) -> Result<(std::fs::File, std::fs::Metadata), crate::error::Failure> {
        use crate::error::{Class, Failure, quote};
        let file = self.open_read().map_err(|e| Failure::from_io(raw, &e))?;
        let md = file.metadata().map_err(|e| Failure::from_io(raw, &e))?;
        if md.is_dir() {
            return Err(Failure::new(
                Class::WrongType,
                format!(
                    "{} is a directory; list it with coder::list-folder or coder::tree",
                    quote(raw)
                ),
            ));
        }
        if !md.is_file() {
            return Err(Failure::new(
                Class::WrongType,
                format!(
                    "{} is not a regular file (a FIFO, socket or device); only regular files are read or edited",
                    quote(raw)
                ),
            ));
        }
        Ok((file, md))
    }

    /// A directory for reading its entries.
    pub fn open_dir(&self) -> std::io::Result<OwnedFd> {
        self.open(OFlag::O_RDONLY | OFlag::O_DIRECTORY)
    }

    /// The entry itself (a symlink is not followed): for stat, chmod,
    /// chown and as a working directory.
    pub fn open_path(&self) -> std::io::Result<OwnedFd> {
        self.open(OFlag::O_PATH)
    }

    /// `lstat` of the entry.
    pub fn lstat(&self) -> std::io::Result<FileStat> {
        fstat(self.open_path()?.as_fd())
    }

    /// The entry's metadata (a symlink's own), as `std` reports it.
    pub fn metadata(&self) -> std::io::Result<std::fs::Metadata> {
        std::fs::File::from(self.open_path()?).metadata()
    }

    /// The directory holding the entry, opened for `*at()` calls, and the
    /// entry's name in it. The anchor itself has no parent here.
    pub fn parent(&self) -> std::io::Result<Parent> {
        let name = self
            .rel
            .file_name()
            .ok_or_else(|| std::io::Error::from_raw_os_error(nix::libc::EBUSY))?
            .to_os_string();
        let up = self.rel.parent().unwrap_or(Path::new(""));
        let dir = open_beneath(self.anchor.fd(), up, OFlag::O_RDONLY | OFlag::O_DIRECTORY)?;
        Ok(Parent {
            dir: Arc::new(dir),
            name,
            loc: self.clone(),
        })
    }

    /// Create every missing directory above the entry (`mkdir -p` of the
    /// parent), by handle, each with `mode`; returns the parent.
    pub fn make_parents(&self, mode: u32) -> std::io::Result<Parent> {
        let up = self.rel.parent().unwrap_or(Path::new(""));
        let mut dir = open_beneath(self.anchor.fd(), Path::new(""), OFlag::O_PATH)?;
        for comp in up.components() {
            let Component::Normal(name) = comp else {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ELOOP));
            };
            match nix::sys::stat::mkdirat(dir.as_fd(), name, Mode::from_bits_truncate(mode)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(e.into()),
            }
            dir = open_beneath(dir.as_fd(), Path::new(name), OFlag::O_PATH)?;
            if !fstat(dir.as_fd()).is_ok_and(|st| is_dir_mode(st.st_mode)) {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ENOTDIR));
            }
        }
        self.parent()
    }
}

/// The metadata of the entry `name` in the directory open as `dir` (a
/// symlink's own, never its target's).
pub fn child_metadata(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<std::fs::Metadata> {
    let fd = walk::open_child(dir, name, OFlag::O_PATH)?;
    std::fs::File::from(fd).metadata()
}

/// Whether an `st_mode` is a directory.
pub fn is_dir_mode(mode: u32) -> bool {
    mode & nix::libc::S_IFMT == nix::libc::S_IFDIR
}

/// Whether an `st_mode` is a regular file.
pub fn is_file_mode(mode: u32) -> bool {
    mode & nix::libc::S_IFMT == nix::libc::S_IFREG
}

/// Whether an `st_mode` is a symlink.
pub fn is_link_mode(mode: u32) -> bool {
    mode & nix::libc::S_IFMT == nix::libc::S_IFLNK
}

/// An entry addressed as (directory handle, name): every change to a name
/// happens here, with `*at()` calls that never follow the name.
#[derive(Clone, Debug)]
pub struct Parent {
    pub dir: Arc<OwnedFd>,
    pub name: OsString,
    loc: Loc,
}

impl Parent {
    /// The entry's location.
    pub fn loc(&self) -> &Loc {
        &self.loc
    }

    pub fn dir(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// `lstat` of the entry; `None` when it does not exist.
    pub fn lstat(&self) -> std::io::Result<Option<FileStat>> {
        match nix::sys::stat::fstatat(
            self.dir(),
            self.name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Open the entry (never following it) with `flags`.
    pub fn open(&self, flags: OFlag, mode: u32) -> std::io::Result<OwnedFd> {
        Ok(nix::fcntl::openat(
            self.dir(),
            self.name.as_os_str(),
            flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )?)
    }

    pub fn mkdir(&self, mode: u32) -> std::io::Result<()> {
        Ok(nix::sys::stat::mkdirat(
            self.dir(),
            self.name.as_os_str(),
            Mode::from_bits_truncate(mode),
        )?)
    }

    /// Remove a non-directory entry (a symlink itself, never its target).
    pub fn unlink(&self) -> std::io::Result<()> {
        Ok(nix::unistd::unlinkat(
            self.dir(),
            self.name.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )?)
    }

    /// Remove an empty directory.
    pub fn rmdir(&self) -> std::io::Result<()> {
        Ok(nix::unistd::unlinkat(
            self.dir(),
            self.name.as_os_str(),
            nix::unistd::UnlinkatFlags::RemoveDir,
        )?)
    }

    /// Rename this entry to `to`; `noreplace` makes the kernel refuse an
    /// existing destination.
    pub fn rename_to(&self, to: &Parent, noreplace: bool) -> std::io::Result<()> {
        let flags = if noreplace {
            nix::fcntl::RenameFlags::RENAME_NOREPLACE
        } else {
            nix::fcntl::RenameFlags::empty()
        };
        Ok(nix::fcntl::renameat2(
            self.dir(),
            self.name.as_os_str(),
            to.dir(),
            to.name.as_os_str(),
            flags,
        )?)
    }

    /// Create a symlink named like this entry.
    pub fn symlink(&self, target: &Path) -> std::io::Result<()> {
        Ok(nix::unistd::symlinkat(
            target,
            self.dir(),
            self.name.as_os_str(),
        )?)
    }

    /// The target of a symlink entry.
    pub fn readlink(&self) -> std::io::Result<PathBuf> {
        Ok(PathBuf::from(nix::fcntl::readlinkat(
            self.dir(),
            self.name.as_os_str(),
        )?))
    }

    /// fsync the directory (a rename or unlink in it becomes durable).
    /// Best effort: some filesystems refuse fsync on a directory.
    /// Keep the file this entry names reachable under a staging name (a
    /// hard link beside it) while the entry is replaced, so the
    /// replacement can be undone ([`Backup::restore`]) or, once it is
    /// complete, the old file let go ([`Backup::discard`]). A crash leaves
    /// at most the staging name, swept at start-up.
    pub fn backup(&self) -> std::io::Result<Backup> {
        let name = OsString::from(format!("{STAGING_PREFIX}{}", uuid::Uuid::new_v4().simple()));
        nix::unistd::linkat(
            self.dir(),
            self.name.as_os_str(),
            self.dir(),
            name.as_os_str(),
            nix::fcntl::AtFlags::empty(),
        )?;
        Ok(Backup {
            entry: self.clone(),
            name,
        })
    }

    pub fn sync_dir(&self) {
        sync_dir(self.dir());
    }
}

/// fsync a directory by handle; best effort, a failure is logged (the
/// change in it is done either way).
/// The old file of an entry being replaced, kept under a staging name
/// ([`Parent::backup`]).
pub struct Backup {
    entry: Parent,
    name: OsString,
}

impl Backup {
    /// Put the old file back under the entry's name (undo).
    pub fn restore(self) -> std::io::Result<()> {
        nix::fcntl::renameat(
            self.entry.dir(),
            self.name.as_os_str(),
            self.entry.dir(),
            self.entry.name.as_os_str(),
        )?;
        Ok(())
    }

    /// Let the old file go (the replacement is complete).
    pub fn discard(self) {
        let _ = nix::unistd::unlinkat(
            self.entry.dir(),
            self.name.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
}

/// The entry `name` in `dir`, never following it (`fstatat` with
/// `AT_SYMLINK_NOFOLLOW`).
pub fn stat_in<P: ?Sized + nix::NixPath>(
    dir: BorrowedFd<'_>,
    name: &P,
) -> std::io::Result<FileStat> {
    Ok(nix::sys::stat::fstatat(
        dir,
        name,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )?)
}

/// Remove the non-directory entry `name` of `dir`.
pub fn unlink_in<P: ?Sized + nix::NixPath>(dir: BorrowedFd<'_>, name: &P) -> std::io::Result<()> {
    Ok(nix::unistd::unlinkat(
        dir,
        name,
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    )?)
}

/// A second name (`to_name` in `to_dir`) for the file `from_name` of
/// `from_dir`, which is not followed; `AlreadyExists` when taken.
pub fn link_in(
    from_dir: BorrowedFd<'_>,
    from_name: &str,
    to_dir: BorrowedFd<'_>,
    to_name: &str,
) -> std::io::Result<()> {
    Ok(nix::unistd::linkat(
        from_dir,
        from_name,
        to_dir,
        to_name,
        nix::fcntl::AtFlags::empty(),
    )?)
}

/// A new unnamed (`O_TMPFILE`) file in `dir`, mode `0600`, named later
/// with [`link_unnamed`].
pub fn unnamed_in(dir: BorrowedFd<'_>) -> std::io::Result<std::fs::File> {
    Ok(nix::fcntl::openat(
        dir,
        ".",
        OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?
    .into())
}

/// Give the unnamed file `fd` the name `name` in `dir`; `AlreadyExists`
/// when taken. Through `/proc/self/fd` (no privilege needed), else by
/// handle (needs `CAP_DAC_READ_SEARCH`).
pub fn link_unnamed(fd: BorrowedFd<'_>, dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<()> {
    let via_proc = nix::unistd::linkat(
        nix::fcntl::AT_FDCWD,
        &proc_path(fd),
        dir,
        name,
        nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
    );
    match via_proc {
        Ok(()) => Ok(()),
        Err(Errno::ENOENT) => Ok(nix::unistd::linkat(
            fd,
            "",
            dir,
            name,
            nix::fcntl::AtFlags::AT_EMPTY_PATH,
        )?),
        Err(e) => Err(e.into()),
    }
}

/// Open (or with `O_CREAT` create, `0600`) the file `name` directly in
/// `dir`, never following a link: for a data directory's own files.
pub fn file_in(dir: BorrowedFd<'_>, name: &str, flags: OFlag) -> std::io::Result<std::fs::File> {
    Ok(nix::fcntl::openat(
        dir,
        name,
        flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?
    .into())
}

/// The directory `name` in `dir`, created (`0700`) if missing, opened
/// without following a link.
pub fn subdir_in(dir: BorrowedFd<'_>, name: &str) -> std::io::Result<OwnedFd> {
    match nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(0o700)) {
        Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
        Err(e) => return Err(e.into()),
    }
    walk::open_child(dir, OsStr::new(name), OFlag::O_RDONLY | OFlag::O_DIRECTORY)
}

pub fn sync_dir(dir: BorrowedFd<'_>) {
    if let Err(e) = nix::unistd::fsync(dir) {
        tracing::warn!(error = %e, "directory fsync failed");
    }
}

/// Remove the entry `parent` names and, for a directory, everything below
/// it, by handle: each directory is opened from its parent's handle without
/// following links, so a link inside is removed itself, never its target,
/// and a directory swapped for a link mid-way is not entered. Depth is
/// bounded by an explicit stack, not recursion.
pub fn remove_tree(parent: &Parent) -> std::io::Result<()> {
    let st = parent
        .lstat()?
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    if !is_dir_mode(st.st_mode) {
        return parent.unlink();
    }
    // (directory handle, its remaining subdirectories)
    let top = parent.open(OFlag::O_RDONLY | OFlag::O_DIRECTORY, 0)?;
    let mut stack: Vec<(OwnedFd, Vec<OsString>)> = vec![(top, Vec::new())];
    let mut fresh = true;
    while let Some((dir, pending)) = stack.last_mut() {
        if fresh {
            for e in dir::read(dir.as_fd())? {
                if e.kind == dir::Kind::Dir {
                    pending.push(e.name);
                } else {
                    match nix::unistd::unlinkat(
                        dir.as_fd(),
                        e.name.as_os_str(),
                        nix::unistd::UnlinkatFlags::NoRemoveDir,
                    ) {
                        Ok(()) | Err(Errno::ENOENT) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            // Staging names are hidden from `dir::read`; they go too.
            walk::for_each_staging_name_in(dir.as_fd(), &mut |d, name| {
                let _ = nix::unistd::unlinkat(d, name, nix::unistd::UnlinkatFlags::NoRemoveDir);
            });
        }
        match pending.last().cloned() {
            Some(name) => {
                let child =
                    walk::open_child(dir.as_fd(), &name, OFlag::O_RDONLY | OFlag::O_DIRECTORY)?;
                stack.push((child, Vec::new()));
                fresh = true;
            }
            None => {
                stack.pop();
                if let Some((up, pending)) = stack.last_mut() {
                    let name = pending.pop().expect("the child came from this list");
                    nix::unistd::unlinkat(
                        up.as_fd(),
                        name.as_os_str(),
                        nix::unistd::UnlinkatFlags::RemoveDir,
                    )?;
                }
                fresh = false;
            }
        }
    }
    parent.rmdir()
}

/// Change the permission bits of an open handle (`O_PATH` included; the
/// handle never follows a link, so neither does the change).
pub fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> std::io::Result<()> {
    match nix::sys::stat::fchmod(fd, Mode::from_bits_truncate(mode)) {
        Ok(()) => Ok(()),
        // O_PATH handles refuse fchmod; the magic link reaches the inode.
        Err(Errno::EBADF) => Ok(nix::sys::stat::fchmodat(
            nix::fcntl::AT_FDCWD,
            &proc_path(fd),
            Mode::from_bits_truncate(mode),
            nix::sys::stat::FchmodatFlags::FollowSymlink,
        )?),
        Err(e) => Err(e.into()),
    }
}

/// Change the owner of an open handle (`O_PATH` included).
pub fn chown_fd(fd: BorrowedFd<'_>, uid: Option<u32>, gid: Option<u32>) -> std::io::Result<()> {
    Ok(nix::unistd::fchownat(
        fd,
        "",
        uid.map(nix::unistd::Uid::from_raw),
        gid.map(nix::unistd::Gid::from_raw),
        nix::fcntl::AtFlags::AT_EMPTY_PATH,
    )?)
}

#[cfg(test)]
mod tests;
