//! The index on disk: what a build learned, kept across restarts.
//!
//! One file per root in the worker's own state directory
//! (`<turns.data_dir>/search-index/<hash of the root>.idx`: inside the
//! change journal's directory, which the policy denies to every surface,
//! and never inside a workspace root). It is written after each build, by
//! the handle layer's atomic replace (an unnamed temporary inode, fsynced,
//! then linked over the old file), so a kill at any point leaves the old
//! file or the new one, never a torn one.
//!
//! What is saved is only what lets a restart skip reading a file again:
//! each filtered file's filter, with the `stat` stamp it was read under
//! (size, mtime, ctime, inode, device). On start the build walks the tree
//! as always (the listing is the disk's, never the file's) and reuses a
//! saved filter only for a file whose stamp is unchanged; every other file
//! is read. The ctime cannot be set by a user, so a file changed while the
//! worker was down reads as changed. A file whose ctime was within
//! [`RACY`] of the build's start is not saved: a write in the same clock
//! tick as the read that filtered it would leave the stamp as it was.
//! Protected files, files under the default excludes and files with more
//! than one hard link are never saved (the first two hold no filter in
//! memory either).
//!
//! The file is trusted only when everything checks: the magic, the format
//! version ([`FORMAT`], bumped whenever the filter's keys or layout
//! change), the length, the SHA-256 of every byte before the trailer, the
//! root it names, its owner (the worker's user) and mode (no group or
//! other write), and the structure itself (names sorted and well formed,
//! filter sizes in range, no count larger than the bytes left). Anything
//! else is ignored and the index is built from the disk; a file that
//! passes still only ever rules files out of a search, as a fresh build
//! does.
//!
//! Layout (little-endian): `MAGIC` (8) · `FORMAT` (u32) · the filters'
//! fingerprint ([`fingerprint`], u64) · root (u32 length,
//! bytes) · build start (i64 seconds, u32 nanoseconds) · the root directory
//! · payload length (u64) · SHA-256 of everything before it (32).
//! A directory is an entry count (u32) and its entries; an entry is its
//! name (u8 length, bytes), a tag (0 directory, 1 file), then a directory's
//! entries, or a file's stamp (size u64, mtime i64+u32, ctime i64+u32, ino
//! u64, dev u64), bytes filtered (u64), content (0 binary, 1 dense, 2
//! filter: u32 words, then the words).

use super::filter::{Content, Filter};
pub use super::tree::Stamp;
use super::tree::{Dir, Entry, Known, Summary};
use crate::jail::dir::Kind;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The layout's version: a file of any other is rebuilt.
pub const FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"ideindx\n";
const TRAILER: usize = 8 + 32;
/// Deepest directory saved (deeper ones are read at each start).
const MAX_DEPTH: usize = 512;
/// A file changed this close to the build's start is not saved.
pub const RACY: std::time::Duration = std::time::Duration::from_secs(2);

/// The filters this build makes, summed up: the filter of a fixed text
/// (its keys, probes and sizing) and the largest file filtered. A saved
/// index whose filters were made another way is refused even if [`FORMAT`]
/// was not bumped with the change: a filter read with other keys would rule
/// out files that match.
pub fn fingerprint() -> u64 {
    {
        let sample = b"fn sample_Text(x: u32) -> Value { x * 42 } // The quick brown fox\n\tTODO";
        let mut h = Sha256::new();
        match super::filter::Scratch::default().summarize(sample) {
            Content::Filter(f) => {
                for w in f.words() {
                    h.update(w.to_le_bytes());
                }
            }
            _ => h.update(b"no filter"),
        }
        h.update(super::MAX_FILE.to_le_bytes());
        u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes"))
    }
}

/// The file name of `root`'s saved index.
pub fn file_name(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_bytes());
    format!("{}.idx", crate::jail::atomic::hex(&digest[..12]))
}

/// Seconds and nanoseconds since the epoch of `t` (0 before it).
pub fn epoch(t: std::time::SystemTime) -> (i64, u32) {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (d.as_secs() as i64, d.subsec_nanos())
}

/// What a save wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Saved {
    pub files: usize,
    /// Left out: changed too close to the build's start.
    pub racy: usize,
}

/// The bytes of `tree` (the index of `root`, built from `started` on).
pub fn encode(root: &Path, started: std::time::SystemTime, tree: &Dir) -> (Vec<u8>, Saved) {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&fingerprint().to_le_bytes());
    let raw = root.as_os_str().as_bytes();
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(raw);
    let (s, n) = epoch(started);
    out.extend_from_slice(&s.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    // files changed since a little before the start are not saved
    let since = epoch(started.checked_sub(RACY).unwrap_or(std::time::UNIX_EPOCH));
    let mut saved = Saved::default();
    encode_dir(&mut out, tree, 0, since, &mut saved);
    let len = out.len() as u64;
    out.extend_from_slice(&len.to_le_bytes());
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    (out, saved)
}

fn saved_summary(e: &Entry, since: (i64, u32)) -> Option<&Summary> {
    match &e.summary {
        Some(s) if e.kind == Kind::File && !e.known.protected && !e.known.excluded => {
            (!s.linked && !s.stamp.changed_since(since)).then_some(s)
        }
        _ => None,
    }
}

fn encode_dir(out: &mut Vec<u8>, dir: &Dir, depth: usize, since: (i64, u32), saved: &mut Saved) {
    let keep = |e: &&Entry| {
        if e.known.protected || e.name.as_bytes().len() > 255 {
            return false;
        }
        match e.kind {
            Kind::Dir => e.sub.is_some() && depth < MAX_DEPTH,
            Kind::File => e.summary.is_some(),
            _ => false,
        }
    };
    let count_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut count = 0u32;
    for e in dir.entries.iter().filter(keep) {
        let summary = if e.kind == Kind::File {
            match saved_summary(e, since) {
                Some(s) => Some(s),
                None => {
                    saved.racy += usize::from(e.summary.as_ref().is_some_and(|s| {
                        !s.linked && !e.known.excluded && s.stamp.changed_since(since)
                    }));
                    continue;
                }
            }
        } else {
            None
        };
        count += 1;
        let name = e.name.as_bytes();
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        match (summary, &e.sub) {
            (Some(s), _) => {
                out.push(1);
                let st = &s.stamp;
                out.extend_from_slice(&st.size.to_le_bytes());
                out.extend_from_slice(&st.mtime.0.to_le_bytes());
                out.extend_from_slice(&st.mtime.1.to_le_bytes());
                out.extend_from_slice(&st.ctime.0.to_le_bytes());
                out.extend_from_slice(&st.ctime.1.to_le_bytes());
                out.extend_from_slice(&st.ino.to_le_bytes());
                out.extend_from_slice(&st.dev.to_le_bytes());
                out.extend_from_slice(&s.size.to_le_bytes());
                match &s.content {
                    Content::Binary => out.push(0),
                    Content::Dense => out.push(1),
                    Content::Filter(f) => {
                        out.push(2);
                        let words = f.words();
                        out.extend_from_slice(&(words.len() as u32).to_le_bytes());
                        for w in words {
                            out.extend_from_slice(&w.to_le_bytes());
                        }
                    }
                }
                saved.files += 1;
            }
            (None, Some(sub)) => {
                out.push(0);
                encode_dir(out, sub, depth + 1, since, saved);
            }
            (None, None) => unreachable!("kept entries are directories or saved files"),
        }
    }
    out[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
}

/// A saved index, checked.
#[derive(Debug)]
pub struct Loaded {
    pub tree: Dir,
    pub files: usize,
    /// When the build that saved it started.
    pub started: std::time::SystemTime,
}

/// The index saved for `root` in `bytes`, when every check passes; else
/// why not.
pub fn decode(root: &Path, bytes: &[u8]) -> Result<Loaded, String> {
    if bytes.len() < MAGIC.len() + 4 + TRAILER {
        return Err(format!("{} bytes: too short", bytes.len()));
    }
    if &bytes[..8] != MAGIC {
        return Err("not a saved index (wrong magic)".into());
    }
    let format = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if format != FORMAT {
        return Err(format!("format {format}, this worker reads {FORMAT}"));
    }
    let body = bytes.len() - TRAILER;
    let len = u64::from_le_bytes(bytes[body..body + 8].try_into().expect("8 bytes"));
    if len != body as u64 {
        return Err(format!("length {len} recorded, {body} found: truncated"));
    }
    let digest = Sha256::digest(&bytes[..body + 8]);
    if digest.as_slice() != &bytes[body + 8..] {
        return Err("checksum mismatch".into());
    }
    let mut r = Reader {
        b: &bytes[..body],
        at: 12,
    };
    if r.u64()? != fingerprint() {
        return Err("made with other filters (keys, probes or sizes)".into());
    }
    let raw_len = r.u32()? as usize;
    let raw = r.take(raw_len)?;
    if raw != root.as_os_str().as_bytes() {
        return Err(format!(
            "saved for {:?}, not {}",
            String::from_utf8_lossy(raw),
            root.display()
        ));
    }
    let secs = r.i64()?;
    let nanos = r.u32()?;
    if secs < 0 || nanos >= 1_000_000_000 {
        return Err("bad build time".into());
    }
    let started = std::time::UNIX_EPOCH + std::time::Duration::new(secs as u64, nanos);
    let mut files = 0;
    let tree = decode_dir(&mut r, 0, &mut files)?;
    if r.at != r.b.len() {
        return Err(format!("{} bytes after the tree", r.b.len() - r.at));
    }
    Ok(Loaded {
        tree,
        files,
        started,
    })
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("cut short at byte {}", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn left(&self) -> usize {
        self.b.len() - self.at
    }
}

/// Smallest encoding of an entry (a one-byte name, its tag, an empty
/// directory's count): bounds a count by the bytes left.
const MIN_ENTRY: usize = 1 + 1 + 1 + 4;

fn decode_dir(r: &mut Reader<'_>, depth: usize, files: &mut usize) -> Result<Dir, String> {
    if depth > MAX_DEPTH {
        return Err("directories nested too deep".into());
    }
    let count = r.u32()? as usize;
    if count > r.left() / MIN_ENTRY {
        return Err(format!("{count} entries claimed, {} bytes left", r.left()));
    }
    // the count is a claim: room for it grows as entries really decode
    let mut entries: Vec<Entry> = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let len = usize::from(r.u8()?);
        let name = r.take(len)?;
        if name.is_empty()
            || name == b"."
            || name == b".."
            || name.iter().any(|&c| c == b'/' || c == 0)
        {
            return Err(format!("bad name {:?}", String::from_utf8_lossy(name)));
        }
        if entries
            .last()
            .is_some_and(|prev| prev.name.as_bytes() >= name)
        {
            return Err("names out of order".into());
        }
        let entry = match r.u8()? {
            0 => Entry {
                name: OsStr::from_bytes(name).into(),
                kind: Kind::Dir,
                known: Known::default(),
                sub: Some(Box::new(decode_dir(r, depth + 1, files)?)),
                summary: None,
            },
            1 => {
                let stamp = Stamp {
                    size: r.u64()?,
                    mtime: (r.i64()?, r.u32()?),
                    ctime: (r.i64()?, r.u32()?),
                    ino: r.u64()?,
                    dev: r.u64()?,
                };
                let size = r.u64()?;
                let content = match r.u8()? {
                    0 => Content::Binary,
                    1 => Content::Dense,
                    2 => {
                        let words = r.u32()? as usize;
                        if words > r.left() / 8 {
                            return Err(format!("{words} filter words, {} bytes left", r.left()));
                        }
                        let raw = r.take(words * 8)?;
                        let words: Vec<u64> = raw
                            .chunks_exact(8)
                            .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
                            .collect();
                        Content::Filter(Filter::from_words(words.into_boxed_slice())?)
                    }
                    t => return Err(format!("content tag {t}")),
                };
                *files += 1;
                Entry {
                    name: OsStr::from_bytes(name).into(),
                    kind: Kind::File,
                    known: Known::default(),
                    sub: None,
                    summary: Some(Summary {
                        content,
                        size,
                        linked: false,
                        stamp,
                    }),
                }
            }
            t => return Err(format!("entry tag {t}")),
        };
        entries.push(entry);
    }
    Ok(Dir { entries })
}

/// Give `bytes` (a saved index, changed) a valid length and checksum for
/// what it now holds: what a test needs to reach the checks behind them.
#[cfg(test)]
pub(crate) fn reseal(bytes: &mut [u8]) {
    let body = bytes.len() - TRAILER;
    bytes[body..body + 8].copy_from_slice(&(body as u64).to_le_bytes());
    let d = Sha256::digest(&bytes[..body + 8]);
    bytes[body + 8..].copy_from_slice(&d);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::filter::Scratch;
    use crate::index::persist::reseal;

    fn file(name: &str, text: &[u8], ctime: i64, s: &mut Scratch) -> Entry {
        Entry {
            name: OsStr::new(name).into(),
            kind: Kind::File,
            known: Known::default(),
            sub: None,
            summary: Some(Summary {
                content: s.summarize(text),
                size: text.len() as u64,
                linked: false,
                stamp: Stamp {
                    size: text.len() as u64,
                    mtime: (ctime, 5),
                    ctime: (ctime, 7),
                    ino: 42,
                    dev: 9,
                },
            }),
        }
    }

    fn dir(name: &str, entries: Vec<Entry>) -> Entry {
        Entry {
            name: OsStr::new(name).into(),
            kind: Kind::Dir,
            known: Known::default(),
            sub: Some(Box::new(Dir { entries })),
            summary: None,
        }
    }

    fn sample() -> (Dir, std::time::SystemTime) {
        let mut s = Scratch::default();
        let started = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let mut secret = file("secret.env", b"TOKEN=hunter2", 10, &mut s);
        secret.known.protected = true;
        let mut linked = file("linked.rs", b"fn linked() {}", 10, &mut s);
        linked.summary.as_mut().unwrap().linked = true;
        let tree = Dir {
            entries: vec![
                file("a.rs", b"fn alpha() { beta() }", 10, &mut s),
                file("bin.dat", b"\0\x01\x02", 10, &mut s),
                dir(
                    "src",
                    vec![
                        file("lib.rs", b"pub mod x;", 10, &mut s),
                        linked,
                        // changed a second before the build began: racy
                        file("new.rs", b"fn fresh() {}", 999_999, &mut s),
                        secret,
                    ],
                ),
            ],
        };
        (tree, started)
    }

    #[test]
    fn a_saved_index_reads_back_what_may_be_trusted() {
        let (tree, started) = sample();
        let root = Path::new("/work/repo");
        let (bytes, saved) = encode(root, started, &tree);
        assert_eq!(saved, Saved { files: 3, racy: 1 });
        let back = decode(root, &bytes).unwrap();
        assert_eq!(back.files, 3);
        assert_eq!(back.started, started);
        let a = back.tree.entry_at(Path::new("a.rs")).unwrap();
        let orig = tree.entry_at(Path::new("a.rs")).unwrap();
        let (sa, so) = (a.summary.as_ref().unwrap(), orig.summary.as_ref().unwrap());
        assert_eq!(sa.stamp, so.stamp);
        assert_eq!(sa.size, so.size);
        match (&sa.content, &so.content) {
            (Content::Filter(x), Content::Filter(y)) => assert_eq!(x.words(), y.words()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            back.tree
                .entry_at(Path::new("bin.dat"))
                .unwrap()
                .summary
                .as_ref()
                .unwrap()
                .content,
            Content::Binary
        ));
        assert!(back.tree.entry_at(Path::new("src/lib.rs")).is_some());
        // never saved: protected content, a linked file, a racy one
        for gone in ["src/secret.env", "src/linked.rs", "src/new.rs"] {
            assert!(back.tree.entry_at(Path::new(gone)).is_none(), "{gone}");
        }
        assert!(!bytes.windows(7).any(|w| w == b"hunter2"));
        assert!(!bytes.windows(10).any(|w| w == b"secret.env"));
    }

    #[test]
    fn every_bad_state_of_the_file_is_refused() {
        let (tree, started) = sample();
        let root = Path::new("/work/repo");
        let (bytes, _) = encode(root, started, &tree);
        // truncated at every length
        for n in 0..bytes.len() {
            assert!(decode(root, &bytes[..n]).is_err(), "prefix of {n} bytes");
        }
        // any single byte flipped
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(root, &bad).is_err(), "byte {i} flipped");
        }
        // another root's file
        assert!(decode(Path::new("/work/other"), &bytes).is_err());
        // another format, with a checksum made for it
        let mut foreign = bytes.clone();
        foreign[8..12].copy_from_slice(&(FORMAT + 1).to_le_bytes());
        reseal(&mut foreign);
        let e = decode(root, &foreign).unwrap_err();
        assert!(e.contains("format"), "{e}");
        // filters made another way, under the same format
        let mut other = bytes.clone();
        other[12] ^= 1;
        reseal(&mut other);
        let e = decode(root, &other).unwrap_err();
        assert!(e.contains("other filters"), "{e}");
        // tampered structure behind a valid checksum: names out of order,
        // a count past the end, a filter of a size no build makes
        let mut swapped = bytes.clone();
        let at = find(&swapped, b"\x04a.rs");
        swapped[at + 1] = b'z';
        reseal(&mut swapped);
        assert!(decode(root, &swapped).unwrap_err().contains("order"));
        let mut huge = bytes.clone();
        let count_at = 8 + 4 + 8 + 4 + root.as_os_str().len() + 12;
        huge[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        reseal(&mut huge);
        assert!(decode(root, &huge).is_err());
        // garbage with a valid trailer never panics
        let mut x = 0x1234_5678_u64;
        for len in [0usize, 1, 7, 64, 4096] {
            let mut junk = bytes[..12.min(bytes.len())].to_vec();
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                junk.push(x as u8);
            }
            junk.extend_from_slice(&[0; TRAILER]);
            reseal(&mut junk);
            let _ = decode(root, &junk);
        }
    }

    fn find(hay: &[u8], needle: &[u8]) -> usize {
        hay.windows(needle.len()).position(|w| w == needle).unwrap()
    }
}
