//! Component-by-component path resolution against the real filesystem.
//!
//! Like `realpath`, but a missing component does not fail: from there on the
//! rest of the path is resolved lexically (a missing directory cannot hold a
//! symlink). `..` after a resolved symlink pops the symlink's target, not the
//! link, which is what the kernel does and what a jail check must see.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed before giving up (the kernel's own limit).
const MAX_HOPS: usize = 40;

pub struct Walked {
    pub path: PathBuf,
    pub exists: bool,
    /// The tail was a symlink whose target does not exist.
    pub dangling_tail: bool,
}

pub enum WalkError {
    /// A component could not be inspected (permission denied): redacted.
    Denied,
    Loop,
    Io(std::io::Error),
}

enum Part {
    Name(OsString),
    Parent,
}

fn parts(p: &Path) -> VecDeque<Part> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Part::Name(n.to_os_string())),
            Component::ParentDir => Some(Part::Parent),
            _ => None,
        })
        .collect()
}

/// Resolve an absolute path. With `Tail::Entry` a symlink in the last
/// position is kept as is (the entry itself is addressed).
pub fn resolve(abs: &Path, tail: super::Tail) -> Result<Walked, WalkError> {
    let mut queue = parts(abs);
    let mut out = PathBuf::from("/");
    // Components appended lexically below the first missing one. A `..`
    // that climbs back out of them returns to real resolution: otherwise
    // `missing/../link/x` would skip resolving `link`, a symlink that may
    // point out of the jail.
    let mut missing_depth = 0usize;
    let mut hops = 0usize;
    let mut tail_link = false;
    while let Some(part) = queue.pop_front() {
        let name = match part {
            Part::Parent => {
                out.pop();
                missing_depth = missing_depth.saturating_sub(1);
                continue;
            }
            Part::Name(n) => n,
        };
        let next = out.join(&name);
        if missing_depth > 0 {
            out = next;
            missing_depth += 1;
            continue;
        }
        let is_last = queue.is_empty();
        match std::fs::symlink_metadata(&next) {
            Ok(md) if md.file_type().is_symlink() => {
                if is_last && tail == super::Tail::Entry {
                    out = next;
                    continue;
                }
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(WalkError::Loop);
                }
                let target = std::fs::read_link(&next).map_err(map_io)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                let mut expanded = parts(&target);
                expanded.append(&mut queue);
                queue = expanded;
                tail_link = is_last;
            }
            Ok(_) => {
                out = next;
                if is_last {
                    tail_link = false;
                }
            }
            Err(e) => match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
                    missing_depth = 1;
                    out = next;
                }
                _ => return Err(map_io(e)),
            },
        }
    }
    let missing = missing_depth > 0;
    Ok(Walked {
        path: out,
        exists: !missing,
        dangling_tail: tail_link && missing,
    })
}

fn map_io(e: std::io::Error) -> WalkError {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        WalkError::Denied
    } else {
        WalkError::Io(e)
    }
}

/// Lexical normalization of an absolute path (`.` dropped, `..` popped).
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in parts(p) {
        match part {
            Part::Parent => {
                out.pop();
            }
            Part::Name(n) => out.push(n),
        }
    }
    out
}
