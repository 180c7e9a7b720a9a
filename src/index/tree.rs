//! The tree snapshot: every entry of an indexed root, in the order the
//! handle walk meets them, and a replay that hands a search exactly the
//! entries [`crate::jail::walk::walk`] would.

use super::filter::Content;
use crate::jail::dir::Kind;
use crate::jail::walk::Step;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One directory: its entries sorted by name (byte order), as
/// `jail::dir::read_sorted` returns them.
#[derive(Debug, Default)]
pub struct Dir {
    pub entries: Vec<Entry>,
}

#[derive(Debug)]
pub struct Entry {
    pub name: Name,
    pub kind: Kind,
    /// The policy's word on the entry, under the configuration the index
    /// was built for (a new configuration rebuilds the index).
    pub known: Known,
    /// A directory's own entries (empty for one that could not be read,
    /// which a walk does not enter either).
    pub sub: Option<Box<Dir>>,
    /// A regular file's filter; `None` for a file that is protected, under
    /// a default exclude, too large or unreadable (always read).
    pub summary: Option<Summary>,
}

/// An entry's name: up to [`INLINE`] bytes in the entry itself (nearly
/// every name), longer ones on the heap. A replay reads every name it
/// visits; kept inline, the name comes with the entry's own cache line
/// instead of costing a miss of its own (on a 45 000-file tree, an eighth
/// of a miss search's time went to loading names).
#[derive(Clone, PartialEq, Eq)]
pub enum Name {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

/// Longest name kept inline.
pub const INLINE: usize = 22;

impl Name {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Name::Heap(b) => b,
        }
    }
}

impl From<&OsStr> for Name {
    fn from(name: &OsStr) -> Name {
        let b = name.as_bytes();
        match u8::try_from(b.len()) {
            Ok(len) if b.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..b.len()].copy_from_slice(b);
                Name::Inline { len, bytes }
            }
            _ => Name::Heap(b.into()),
        }
    }
}

impl std::ops::Deref for Name {
    type Target = OsStr;
    fn deref(&self) -> &OsStr {
        OsStr::from_bytes(self.as_bytes())
    }
}

impl AsRef<Path> for Name {
    fn as_ref(&self) -> &Path {
        Path::new(&**self)
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// What the index keeps of one file.
#[derive(Debug)]
pub struct Summary {
    pub content: Content,
    /// Bytes when filtered.
    pub size: u64,
    /// More than one hard link: a write elsewhere raises no event here.
    pub linked: bool,
    /// What `stat` said of the file before it was read.
    pub stamp: Stamp,
}

/// What `stat` says of a file when its filter was made: a file whose stamp
/// is the same has the same bytes (its ctime moves with every write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub size: u64,
    pub mtime: (i64, u32),
    pub ctime: (i64, u32),
    pub ino: u64,
    pub dev: u64,
}

impl Stamp {
    pub fn of_metadata(md: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            size: md.size(),
            mtime: (md.mtime(), md.mtime_nsec() as u32),
            ctime: (md.ctime(), md.ctime_nsec() as u32),
            ino: md.ino(),
            dev: md.dev(),
        }
    }

    pub fn of_stat(st: &nix::sys::stat::FileStat) -> Stamp {
        Stamp {
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec as u32),
            ctime: (st.st_ctime, st.st_ctime_nsec as u32),
            ino: st.st_ino,
            dev: st.st_dev,
        }
    }

    /// Changed at or after `since` (seconds, nanoseconds since the epoch),
    /// by its ctime or its mtime.
    pub fn changed_since(&self, since: (i64, u32)) -> bool {
        self.ctime >= since || self.mtime >= since
    }
}

/// What the policy says of an entry: protected (`fs.denylist_paths`,
/// `code.non_accessible_globs`), under a default exclude.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known {
    pub protected: bool,
    pub excluded: bool,
}

/// What a replay shows the visitor (the fields of a walk node a search
/// reads).
pub struct Seen<'a> {
    pub name: &'a OsStr,
    pub kind: Kind,
    /// Absolute path.
    pub path: &'a Path,
    /// Relative to the replayed folder.
    pub rel: &'a Path,
    /// 1 for the folder's entries, …
    pub depth: usize,
    /// The policy's word, when the index knows it (a disk walk asks).
    pub known: Option<Known>,
    /// The file's filter, when the index has one.
    pub summary: Option<&'a Summary>,
}

impl Dir {
    /// The directory at `rel` below this one.
    pub fn find(&self, rel: &Path) -> Option<&Dir> {
        let mut at = self;
        for part in rel.components() {
            at = at.entry(part.as_os_str())?.sub.as_deref()?;
        }
        Some(at)
    }

    /// [`Dir::find`], to change it.
    pub fn find_mut(&mut self, rel: &Path) -> Option<&mut Dir> {
        let mut at = self;
        for part in rel.components() {
            let i = at.position(part.as_os_str())?;
            at = at.entries[i].sub.as_deref_mut()?;
        }
        Some(at)
    }

    /// The entry at `rel` below this one.
    pub fn entry_at(&self, rel: &Path) -> Option<&Entry> {
        self.find(rel.parent()?)?.entry(rel.file_name()?)
    }

    /// [`Dir::entry_at`], to change it.
    pub fn entry_at_mut(&mut self, rel: &Path) -> Option<&mut Entry> {
        let dir = self.find_mut(rel.parent()?)?;
        let i = dir.position(rel.file_name()?)?;
        Some(&mut dir.entries[i])
    }

    fn entry(&self, name: &OsStr) -> Option<&Entry> {
        self.position(name).map(|i| &self.entries[i])
    }

    pub fn position(&self, name: &OsStr) -> Option<usize> {
        self.entries
            .binary_search_by(|e| e.name.as_bytes().cmp(name.as_bytes()))
            .ok()
    }

    /// Hand `visit` every entry below, depth first in name order, as the
    /// handle walk does with `skip_hidden` (names starting with `.` left
    /// out, and what is below them). `path` holds this directory's absolute
    /// path, `rel` its path relative to the replayed folder, as bytes: one
    /// buffer each for the whole replay, a name appended and cut off again
    /// per entry (`PathBuf::pop` parses the path's components each time).
    /// With `ahead` (the key the visitor asks each file for first), the
    /// filter words of the directory's files are loaded before the first
    /// visit. Returns false once `visit` said [`Step::Stop`].
    pub fn replay(
        &self,
        path: &mut Vec<u8>,
        rel: &mut Vec<u8>,
        depth: usize,
        skip_hidden: bool,
        ahead: Option<u64>,
        visit: &mut dyn FnMut(&Seen<'_>) -> Step,
    ) -> bool {
        if let Some(key) = ahead {
            // independent loads: the CPU has many in flight at once
            let mut any = 0u64;
            for e in &self.entries {
                if let Some(Summary {
                    content: Content::Filter(f),
                    ..
                }) = &e.summary
                {
                    any |= f.touch(key);
                }
            }
            std::hint::black_box(any);
        }
        for e in &self.entries {
            let name = e.name.as_bytes();
            if skip_hidden && name.first() == Some(&b'.') {
                continue;
            }
            let (path_len, rel_len) = (push_name(path, name), push_name(rel, name));
            let seen = Seen {
                name: &e.name,
                kind: e.kind,
                path: Path::new(OsStr::from_bytes(path)),
                rel: Path::new(OsStr::from_bytes(rel)),
                depth: depth + 1,
                known: Some(e.known),
                summary: e.summary.as_ref(),
            };
            let go_on = match visit(&seen) {
                Step::Stop => false,
                Step::Skip => true,
                Step::Descend => match &e.sub {
                    Some(sub) => sub.replay(path, rel, depth + 1, skip_hidden, ahead, visit),
                    None => true,
                },
            };
            path.truncate(path_len);
            rel.truncate(rel_len);
            if !go_on {
                return false;
            }
        }
        true
    }
}

/// Append `name` to the path in `buf` as `PathBuf::push` does for a plain
/// name (a `/` between, unless `buf` is empty or ends in one); returns the
/// length to cut back to.
fn push_name(buf: &mut Vec<u8>, name: &[u8]) -> usize {
    let len = buf.len();
    if !buf.is_empty() && buf.last() != Some(&b'/') {
        buf.push(b'/');
    }
    buf.extend_from_slice(name);
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_its_bytes_inline_or_not() {
        for len in [0, 1, INLINE - 1, INLINE, INLINE + 1, 255, 300] {
            let raw: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let name = Name::from(OsStr::from_bytes(&raw));
            assert_eq!(name.as_bytes(), &raw[..], "{len}");
            assert_eq!(matches!(name, Name::Inline { .. }), len <= INLINE, "{len}");
            assert_eq!(&*name, OsStr::from_bytes(&raw));
        }
        // not UTF-8: bytes kept as they are
        let odd = Name::from(OsStr::from_bytes(b"\xff\xfe.rs"));
        assert_eq!(odd.as_bytes(), b"\xff\xfe.rs");
        assert_eq!(std::mem::size_of::<Name>(), 24);
    }
}
