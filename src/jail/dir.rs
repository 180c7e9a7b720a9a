//! Reading a directory through its handle.

use super::is_staging_name;
use nix::dir::{Dir, Type};
use nix::fcntl::AtFlags;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;

/// What an entry is, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    /// FIFO, socket, device.
    Other,
}

impl Kind {
    pub fn of_mode(mode: u32) -> Kind {
        match mode & nix::libc::S_IFMT {
            nix::libc::S_IFDIR => Kind::Dir,
            nix::libc::S_IFREG => Kind::File,
            nix::libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// One directory entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
}

/// Every entry of the directory open as `dir` (`.`/`..` and the worker's
/// own staging names left out), unsorted. An entry that vanishes while it
/// is being typed is left out.
pub fn read(dir: BorrowedFd<'_>) -> std::io::Result<Vec<Entry>> {
    let dup = nix::unistd::dup(dir)?;
    let mut d = Dir::from_fd(dup)?;
    let mut out = Vec::new();
    let mut untyped = Vec::new();
    for ent in d.iter() {
        let ent = ent?;
        let name = ent.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = std::ffi::OsStr::from_bytes(name).to_os_string();
        if is_staging_name(&name) {
            continue;
        }
        let kind = match ent.file_type() {
            Some(Type::Directory) => Kind::Dir,
            Some(Type::File) => Kind::File,
            Some(Type::Symlink) => Kind::Symlink,
            Some(_) => Kind::Other,
            None => {
                untyped.push(name);
                continue;
            }
        };
        out.push(Entry { name, kind });
    }
    // Filesystems without d_type: one fstatat each, never following.
    for name in untyped {
        if let Ok(st) =
            nix::sys::stat::fstatat(d.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
        {
            out.push(Entry {
                name,
                kind: Kind::of_mode(st.st_mode),
            });
        }
    }
    Ok(out)
}

/// [`read`], sorted by name (byte order).
pub fn read_sorted(dir: BorrowedFd<'_>) -> std::io::Result<Vec<Entry>> {
    let mut v = read(dir)?;
    v.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}
