//! The symbol index: for each root the content index serves, every source
//! file's definitions (compact, names interned) and the identifiers it
//! uses, beside the content index and kept current through it.
//!
//! - **Build.** The first symbol query of a root whose content index is
//!   ready starts a build on a thread of its own: the files of the content
//!   index's snapshot in a language ide parses, parsed on every core at
//!   idle priority, giving way to searches as the content index's build
//!   does. Until it is ready, callers scan (and say so).
//! - **Never stale.** Every answer first takes the content index's lease
//!   (which applies every change event queued before the call) and replays
//!   the snapshot of the folder asked about: a file whose stamp (device,
//!   inode, size, mtime, ctime) is not the one its symbols were read at,
//!   or whose symbols were read while its change time was not yet settled
//!   ([`super::persist::RACY`]: a write in the same clock tick leaves the
//!   stamp as it was), is parsed again before the answer; a file the
//!   replay does not meet (deleted, moved out, protected since) is not
//!   answered.
//! - **Kept across restarts.** A build saves the table beside the content
//!   index's saved files; the next build of the root takes a file's
//!   symbols from it when its stamp is the same and was settled, and
//!   parses the others.
//! - **Bounded.** The table counts its bytes against
//!   `code.search_index_max_bytes`, like the content index: over it, the
//!   root is not symbol-indexed (queries scan) and the status says why.

use super::tree::{Seen, Stamp};
use super::{Indexes, Lease, Phase, persist};
use crate::code::lang;
use crate::code::names::Pattern;
use crate::code::outline;
use crate::jail::walk::Step;
use crate::policy::Resolved;
use crate::runtime::Runtime;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// No name (an absent owner or parent).
pub const NONE: u32 = u32::MAX;
/// Saved table format.
const FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"idesyms\n";
/// Roots symbol-indexed at once (as the content index).
const MAX_ROOTS: usize = 4;
/// Bookkeeping counted per file and per symbol, in bytes.
const FILE_OVERHEAD: usize = 160;
/// Longest identifier kept for the reference graph.
const MAX_REF_LEN: usize = 64;

/// One definition, compact: names are ids of the table's interner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CSym {
    pub name: u32,
    /// The parent a query named (a Go receiver), or [`NONE`].
    pub owner: u32,
    /// Index of the enclosing definition in the file's list, or [`NONE`].
    pub parent: u32,
    /// Index in [`lang::KINDS`].
    pub kind: u8,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    /// Byte where the definition's node starts: its signature's line.
    pub start: u32,
}

/// One file's entry.
#[derive(Debug)]
pub struct FileSyms {
    /// Relative to the root.
    pub rel: PathBuf,
    pub stamp: Stamp,
    /// Read when its change time was settled: the stamp moves with any
    /// later write.
    pub settled: bool,
    /// Index in [`lang::LANGS`].
    pub lang: u8,
    pub has_errors: bool,
    pub syms: Box<[CSym]>,
    /// The distinct identifiers it uses (name ids), for the reference graph.
    pub refs: Box<[u32]>,
    /// The round that last met it.
    seen: u64,
}

/// A definition a query names.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub file: u32,
    pub sym: u32,
    /// Parts of its name path.
    pub depth: usize,
}

/// Names, each stored once.
#[derive(Debug, Default)]
struct Interner {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    bytes: usize,
}

impl Interner {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        self.bytes += 2 * name.len() + 48;
        id
    }
}

/// One root's table.
#[derive(Debug, Default)]
pub struct Table {
    files: Vec<Option<FileSyms>>,
    free: Vec<u32>,
    by_ino: HashMap<(u64, u64), u32>,
    names: Interner,
    /// Per name id: the (file, symbol) defining it.
    postings: Vec<Vec<(u32, u32)>>,
    round: u64,
    bytes: usize,
    symbols: usize,
}

/// A definition parsed, before its names are interned: its name and
/// owner, and the rest of its [`CSym`] (whose `name` and `owner` are
/// unset).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PSym {
    name: String,
    owner: Option<String>,
    rest: CSym,
}

/// A file parsed, before its names are interned.
pub struct Parsed {
    stamp: Stamp,
    settled: bool,
    lang: u8,
    has_errors: bool,
    syms: Vec<PSym>,
    refs: Vec<String>,
}

/// Parse the file at `rel` below `root_at` (up to `max_read` bytes, 0:
/// no limit). `None`: not a language file, unreadable, too large.
/// Blocking.
pub fn parse_file(root_at: &Resolved, rel: &Path, max_read: u64) -> Option<Parsed> {
    parse_at(&root_at.below(rel), max_read)
}

/// [`parse_file`] of the file at `at`.
pub fn parse_at(at: &Resolved, max_read: u64) -> Option<Parsed> {
    use std::io::Read;
    let file = at.loc().open_read().ok()?;
    let md = file.metadata().ok()?;
    if !md.is_file() || (max_read > 0 && md.len() > max_read) {
        return None;
    }
    let before = Stamp::of_metadata(&md);
    if md.len() as usize > outline::MAX_PARSE_BYTES {
        return None;
    }
    let read_at = SystemTime::now();
    let mut bytes = Vec::with_capacity(md.len() as usize);
    (&file)
        .take(outline::MAX_PARSE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let l = lang::detect(&at.path, Some(&bytes))?;
    let tree = outline::parse(l, &bytes).ok()?;
    let (o, idents) = outline::of_tree_and_identifiers(l, &tree, &bytes);
    let refs = idents
        .into_iter()
        .filter(|r| r.len() <= MAX_REF_LEN)
        .collect();
    let after = file.metadata().ok().map(|m| Stamp::of_metadata(&m));
    let settled = after == Some(before) && settled_at(&before, read_at);
    let syms = o
        .syms
        .iter()
        .map(|s| PSym {
            name: s.name.clone(),
            owner: s.owner.clone(),
            rest: CSym {
                name: NONE,
                owner: NONE,
                parent: s.parent.unwrap_or(NONE),
                kind: kind_id(s.kind),
                line: s.line,
                column: s.column,
                end_line: s.end_line,
                start: u32::try_from(s.signature_at).unwrap_or(u32::MAX),
            },
        })
        .collect();
    Some(Parsed {
        stamp: before,
        settled,
        lang: l.id,
        has_errors: o.has_errors,
        syms,
        refs,
    })
}

fn kind_id(kind: &str) -> u8 {
    lang::KINDS.iter().position(|k| *k == kind).unwrap_or(0) as u8
}

/// Whether a stamp's change time was at least RACY before `read_at`.
fn settled_at(stamp: &Stamp, read_at: SystemTime) -> bool {
    let (secs, nanos) = persist::epoch(read_at);
    let now = secs as i128 * 1_000_000_000 + nanos as i128;
    let ct = stamp.ctime.0 as i128 * 1_000_000_000 + stamp.ctime.1 as i128;
    now - ct >= persist::RACY.as_nanos() as i128
}

/// Whether a file name is one the index parses (by its extension).
fn is_source(name: &[u8]) -> bool {
    let Some(dot) = name.iter().rposition(|b| *b == b'.') else {
        return false;
    };
    let ext = &name[dot + 1..];
    lang::LANGS.iter().any(|l| {
        l.extensions
            .iter()
            .any(|e| e.as_bytes().eq_ignore_ascii_case(ext))
    })
}

impl Table {
    /// The name of id `id`.
    pub fn name(&self, id: u32) -> &str {
        self.names.names.get(id as usize).map_or("", |n| n)
    }

    /// The file of id `id`.
    pub fn file(&self, id: u32) -> Option<&FileSyms> {
        self.files.get(id as usize)?.as_ref()
    }

    /// Files held.
    pub fn len(&self) -> usize {
        self.by_ino.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_ino.is_empty()
    }

    /// Symbols held.
    pub fn symbols(&self) -> usize {
        self.symbols
    }

    /// Bytes held (estimated).
    pub fn bytes(&self) -> usize {
        self.bytes + self.names.bytes
    }

    /// The name path of symbol `s` of file `f`.
    pub fn name_path(&self, f: &FileSyms, s: usize) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(s);
        while let Some(j) = cur {
            let sym = &f.syms[j];
            parts.push(self.name(sym.name));
            if sym.owner != NONE {
                parts.push(self.name(sym.owner));
            }
            cur = (sym.parent != NONE).then_some(sym.parent as usize);
        }
        parts.reverse();
        parts.join("/")
    }

    fn cost(f: &FileSyms) -> usize {
        FILE_OVERHEAD
            + f.rel.as_os_str().len()
            + f.syms.len() * std::mem::size_of::<CSym>()
            + f.refs.len() * 4
            + f.syms.len() * 8
    }

    /// The round of the last replay (a table made with [`Table::add`]
    /// only: 0, every file met by it).
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Put a parsed file in (a table made for one answer).
    pub fn add(&mut self, rel: PathBuf, p: Parsed) {
        self.insert(rel, p);
    }

    /// Put a parsed file in (replacing what was there for its inode).
    fn insert(&mut self, rel: PathBuf, p: Parsed) {
        let key = (p.stamp.dev, p.stamp.ino);
        if let Some(old) = self.by_ino.get(&key).copied() {
            self.remove(old);
        }
        let syms: Box<[CSym]> = p
            .syms
            .iter()
            .map(|p| CSym {
                name: self.names.id(&p.name),
                owner: p.owner.as_deref().map_or(NONE, |o| self.names.id(o)),
                ..p.rest
            })
            .collect();
        let refs: Box<[u32]> = p.refs.iter().map(|r| self.names.id(r)).collect();
        let f = FileSyms {
            rel,
            stamp: p.stamp,
            settled: p.settled,
            lang: p.lang,
            has_errors: p.has_errors,
            syms,
            refs,
            seen: self.round,
        };
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.files.push(None);
                (self.files.len() - 1) as u32
            }
        };
        if self.postings.len() < self.names.names.len() {
            self.postings.resize_with(self.names.names.len(), Vec::new);
        }
        for (i, s) in f.syms.iter().enumerate() {
            self.postings[s.name as usize].push((id, i as u32));
        }
        self.bytes += Table::cost(&f);
        self.symbols += f.syms.len();
        self.by_ino.insert(key, id);
        self.files[id as usize] = Some(f);
    }

    fn remove(&mut self, id: u32) {
        let Some(f) = self.files.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        for s in f.syms.iter() {
            if let Some(p) = self.postings.get_mut(s.name as usize) {
                p.retain(|(fid, _)| *fid != id);
            }
        }
        self.bytes = self.bytes.saturating_sub(Table::cost(&f));
        self.symbols = self.symbols.saturating_sub(f.syms.len());
        self.by_ino.remove(&(f.stamp.dev, f.stamp.ino));
        self.free.push(id);
    }

    /// Bring the files below `rel` (the folder, relative to the root) up
    /// to date with the lease's snapshot, parsing again what changed
    /// (blocking, on every core), and mark them met by this round.
    /// Returns the round: answers list only files met by it.
    fn validate(&mut self, lease: &Lease, rel: &Path, max_read: u64) -> u64 {
        self.round += 1;
        let round = self.round;
        let mut stale: Vec<PathBuf> = Vec::new();
        let base = lease.root_at().path.join(rel);
        lease.replay(rel, &base, false, None, &mut |seen: &Seen<'_>| {
            if seen.known.is_some_and(|k| k.protected || k.excluded) {
                // a protected entry is never answered; an excluded folder
                // is not walked by the functions this serves
                return if seen.kind == crate::jail::dir::Kind::Dir
                    && seen.known.is_some_and(|k| k.excluded)
                {
                    Step::Skip
                } else {
                    Step::Descend
                };
            }
            if seen.kind != crate::jail::dir::Kind::File || !is_source(seen.name.as_bytes()) {
                return Step::Descend;
            }
            let Some(sm) = seen.summary else {
                return Step::Descend;
            };
            let fresh = self
                .by_ino
                .get(&(sm.stamp.dev, sm.stamp.ino))
                .copied()
                .and_then(|id| {
                    let f = self.files[id as usize].as_mut()?;
                    let same = f.stamp == sm.stamp && f.settled && !sm.linked;
                    if same {
                        f.seen = round;
                        // moved within the root: the same inode, a new name
                        if f.rel.strip_prefix(rel).ok() != Some(seen.rel) {
                            f.rel = rel.join(seen.rel);
                        }
                    }
                    Some(same)
                })
                .unwrap_or(false);
            if !fresh {
                stale.push(rel.join(seen.rel));
            }
            Step::Descend
        });
        if !stale.is_empty() {
            let root_at = lease.root_at().clone();
            let parsed = crate::code::parallel(&stale, |r| parse_file(&root_at, r, max_read));
            for (r, p) in stale.into_iter().zip(parsed) {
                if let Some(p) = p {
                    self.insert(r, p);
                }
            }
        }
        // files below the root this round did not meet are gone
        if rel.as_os_str().is_empty() {
            let gone: Vec<u32> = self
                .files
                .iter()
                .enumerate()
                .filter_map(|(i, f)| f.as_ref().filter(|f| f.seen != round).map(|_| i as u32))
                .collect();
            for id in gone {
                self.remove(id);
            }
        }
        round
    }

    /// The names of symbol `s`'s name path, its own first, then its owner
    /// and its ancestors' (no allocation).
    fn chain<'a>(&'a self, f: &'a FileSyms, s: usize) -> impl Iterator<Item = &'a str> + 'a {
        let mut cur = Some(s);
        let mut owner_next: Option<u32> = None;
        std::iter::from_fn(move || {
            if let Some(o) = owner_next.take() {
                return Some(self.name(o));
            }
            let j = cur?;
            let sym = &f.syms[j];
            cur = (sym.parent != NONE).then_some(sym.parent as usize);
            if sym.owner != NONE {
                owner_next = Some(sym.owner);
            }
            Some(self.name(sym.name))
        })
    }

    /// Whether symbol `s` of `f` matches `pattern` (see
    /// [`Pattern::matches`]), comparing its chain of names in place.
    fn matches(&self, f: &FileSyms, s: usize, pattern: &Pattern, substring: bool) -> bool {
        let k = pattern.parts.len();
        let mut chain = self.chain(f, s);
        for (i, want) in pattern.parts.iter().rev().enumerate() {
            let Some(got) = chain.next() else {
                return false;
            };
            let ok = if i == 0 && substring {
                got.to_lowercase().contains(&want.to_lowercase())
            } else {
                got == want
            };
            if !ok {
                return false;
            }
        }
        let _ = k;
        !pattern.absolute || chain.next().is_none()
    }

    /// Every definition `pattern` names among the files met by replay
    /// round `round`, of `kinds` (empty: all), unranked.
    pub fn find(
        &self,
        round: u64,
        pattern: &Pattern,
        substring: bool,
        kinds: &[String],
    ) -> Vec<Hit> {
        let ids: Vec<u32> = if substring {
            let q = pattern.name().to_lowercase();
            self.names
                .names
                .iter()
                .enumerate()
                .filter(|(_, n)| n.to_lowercase().contains(&q))
                .map(|(i, _)| i as u32)
                .collect()
        } else {
            self.names
                .ids
                .get(pattern.name())
                .copied()
                .into_iter()
                .collect()
        };
        let mut out = Vec::new();
        for id in ids {
            let Some(post) = self.postings.get(id as usize) else {
                continue;
            };
            for (fid, s) in post {
                let Some(f) = self.file(*fid).filter(|f| f.seen == round) else {
                    continue;
                };
                let si = *s as usize;
                let sym = &f.syms[si];
                let kind = lang::KINDS[sym.kind as usize];
                if !kinds.is_empty() && !kinds.iter().any(|k| k == kind) {
                    continue;
                }
                if !self.matches(f, si, pattern, substring) {
                    continue;
                }
                if let Some(n) = pattern.overload {
                    // its place among the file's symbols of the same name path
                    let nth = f.syms[..si]
                        .iter()
                        .enumerate()
                        .filter(|(j, o)| {
                            o.name == sym.name && self.chain(f, *j).eq(self.chain(f, si))
                        })
                        .count();
                    if nth != n {
                        continue;
                    }
                }
                out.push(Hit {
                    file: *fid,
                    sym: *s,
                    depth: self.chain(f, si).count(),
                });
            }
        }
        out
    }

    /// Every file met by round `round`, with its id.
    pub fn files_met(&self, round: u64) -> impl Iterator<Item = (u32, &FileSyms)> {
        self.files.iter().enumerate().filter_map(move |(i, f)| {
            f.as_ref()
                .filter(|f| f.seen == round)
                .map(|f| (i as u32, f))
        })
    }

    /// The name id of `name`, if any file defines or uses it.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.names.ids.get(name).copied()
    }

    /// The (file, symbol) defining name id `id`.
    pub fn defining(&self, id: u32) -> &[(u32, u32)] {
        self.postings.get(id as usize).map_or(&[], Vec::as_slice)
    }
}

/// What the queries files and this format read: a saved table made by
/// other queries is refused.
fn fingerprint() -> u64 {
    let mut h = Sha256::new();
    h.update(FORMAT.to_le_bytes());
    for l in lang::LANGS {
        h.update(l.name.as_bytes());
        for q in l.queries_source() {
            h.update(q.as_bytes());
        }
    }
    u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes"))
}

fn encode(root: &Path, t: &Table) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&fingerprint().to_le_bytes());
    let put_bytes = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    put_bytes(&mut out, root.as_os_str().as_bytes());
    out.extend_from_slice(&(t.names.names.len() as u32).to_le_bytes());
    for n in &t.names.names {
        put_bytes(&mut out, n.as_bytes());
    }
    let kept: Vec<&FileSyms> = t.files.iter().flatten().filter(|f| f.settled).collect();
    out.extend_from_slice(&(kept.len() as u32).to_le_bytes());
    for f in kept {
        put_bytes(&mut out, f.rel.as_os_str().as_bytes());
        let s = &f.stamp;
        for v in [s.size, s.mtime.0 as u64, s.ctime.0 as u64, s.ino, s.dev] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&s.mtime.1.to_le_bytes());
        out.extend_from_slice(&s.ctime.1.to_le_bytes());
        out.push(f.lang);
        out.push(u8::from(f.has_errors));
        out.extend_from_slice(&(f.syms.len() as u32).to_le_bytes());
        for c in f.syms.iter() {
            for v in [
                c.name,
                c.owner,
                c.parent,
                u32::from(c.kind),
                c.line,
                c.column,
                c.end_line,
                c.start,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out.extend_from_slice(&(f.refs.len() as u32).to_le_bytes());
        for r in f.refs.iter() {
            out.extend_from_slice(&r.to_le_bytes());
        }
    }
    let len = out.len() as u64;
    out.extend_from_slice(&len.to_le_bytes());
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.b.len());
        let end = end.ok_or("truncated")?;
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
    fn bytes(&mut self) -> Result<&[u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// A saved file's entry: its stamp and symbols (names as strings).
type SavedFile = (Stamp, Parsed);

/// The saved table of `root` in `bytes`, by relative path, when every
/// check passes.
fn decode(root: &Path, bytes: &[u8]) -> Result<HashMap<PathBuf, SavedFile>, String> {
    if bytes.len() < 8 + 4 + 8 + 40 || &bytes[..8] != MAGIC {
        return Err("not a saved symbol index".into());
    }
    let body = bytes.len() - 40;
    let len = u64::from_le_bytes(bytes[body..body + 8].try_into().expect("8"));
    if len != body as u64 {
        return Err("truncated".into());
    }
    if Sha256::digest(&bytes[..body + 8]).as_slice() != &bytes[body + 8..] {
        return Err("checksum mismatch".into());
    }
    let mut r = Reader {
        b: &bytes[..body],
        at: 8,
    };
    if r.u32()? != FORMAT || r.u64()? != fingerprint() {
        return Err("made by other queries or another format".into());
    }
    if r.bytes()? != root.as_os_str().as_bytes() {
        return Err("saved for another root".into());
    }
    let n = r.u32()? as usize;
    let mut names = Vec::with_capacity(n.min(1 << 24));
    for _ in 0..n {
        names.push(String::from_utf8_lossy(r.bytes()?).into_owned());
    }
    let name = |id: u32| -> Result<String, String> {
        names
            .get(id as usize)
            .cloned()
            .ok_or_else(|| format!("name {id} out of range"))
    };
    let files = r.u32()? as usize;
    let mut out = HashMap::with_capacity(files.min(1 << 22));
    for _ in 0..files {
        let rel = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let (size, mt, ct, ino, dev) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let (mtn, ctn) = (r.u32()?, r.u32()?);
        let stamp = Stamp {
            size,
            mtime: (mt as i64, mtn),
            ctime: (ct as i64, ctn),
            ino,
            dev,
        };
        let lang = r.u8()?;
        let has_errors = r.u8()? != 0;
        let ns = r.u32()? as usize;
        let mut syms = Vec::with_capacity(ns.min(1 << 20));
        for _ in 0..ns {
            let v: Vec<u32> = (0..8).map(|_| r.u32()).collect::<Result<_, _>>()?;
            syms.push(PSym {
                name: name(v[0])?,
                owner: (v[1] != NONE).then(|| name(v[1])).transpose()?,
                rest: CSym {
                    name: NONE,
                    owner: NONE,
                    parent: v[2],
                    kind: u8::try_from(v[3]).map_err(|_| "bad kind")?,
                    line: v[4],
                    column: v[5],
                    end_line: v[6],
                    start: v[7],
                },
            });
        }
        let nr = r.u32()? as usize;
        let mut refs = Vec::with_capacity(nr.min(1 << 20));
        for _ in 0..nr {
            refs.push(name(r.u32()?)?);
        }
        out.insert(
            rel,
            (
                stamp,
                Parsed {
                    stamp,
                    settled: true,
                    lang,
                    has_errors,
                    syms,
                    refs,
                },
            ),
        );
    }
    Ok(out)
}

/// Where a root's symbol index stands, for `coder::info`.
#[derive(Debug, Clone)]
pub struct Status {
    pub phase: Phase,
    pub files: usize,
    pub symbols: usize,
    pub bytes: usize,
    /// While building: files parsed of files to parse.
    pub done: usize,
    pub total: usize,
    /// Files whose symbols the last build took from the saved table.
    pub reused: usize,
    pub why: Option<String>,
}

impl Status {
    fn of(phase: Phase) -> Status {
        Status {
            phase,
            files: 0,
            symbols: 0,
            bytes: 0,
            done: 0,
            total: 0,
            reused: 0,
            why: None,
        }
    }
}

struct Slot {
    root: PathBuf,
    table: Mutex<Option<Table>>,
    status: Mutex<Status>,
    building: AtomicBool,
    done: AtomicUsize,
}

/// Every symbol index of this worker.
#[derive(Default)]
pub struct Symbols {
    roots: Mutex<Vec<Arc<Slot>>>,
}

/// Why a query is not answered from the index (the caller scans).
#[derive(Debug, Clone)]
pub struct NotReady(pub String);

impl Symbols {
    pub fn new() -> Symbols {
        Symbols::default()
    }

    fn slot(&self, root: &Path) -> Arc<Slot> {
        let mut roots = self.roots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = roots.iter().position(|s| s.root == root) {
            let s = roots.remove(i);
            roots.push(s.clone());
            return s;
        }
        let s = Arc::new(Slot {
            root: root.to_path_buf(),
            table: Mutex::new(None),
            status: Mutex::new(Status::of(Phase::None)),
            building: AtomicBool::new(false),
            done: AtomicUsize::new(0),
        });
        roots.push(s.clone());
        if roots.len() > MAX_ROOTS {
            roots.remove(0);
        }
        s
    }

    /// Where each root's symbol index stands.
    pub fn describe(&self) -> Vec<(PathBuf, Status)> {
        let roots = self.roots.lock().unwrap_or_else(|p| p.into_inner()).clone();
        roots
            .iter()
            .map(|s| {
                let mut st = s.status.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if st.phase == Phase::Building {
                    st.done = s.done.load(Ordering::Relaxed);
                }
                (s.root.clone(), st)
            })
            .collect()
    }

    /// Rebuild, in the background, the symbol index of each of `rt`'s
    /// roots that has a saved one, once its content index is back
    /// ([`Indexes::resume`]): a restarted worker answers symbol queries
    /// from its index without waiting for the first one to start a build.
    pub fn resume(self: &Arc<Self>, indexes: &Arc<Indexes>, rt: &Arc<Runtime>) {
        let budget = rt.config.code.search_index_max_bytes;
        if budget == 0 || !indexes.builds() {
            return;
        }
        let dir = saved_dir(rt);
        let roots: Vec<PathBuf> = rt
            .policy
            .coder_roots()
            .iter()
            .take(MAX_ROOTS)
            .filter(|r| std::fs::symlink_metadata(dir.join(persist::file_name(r))).is_ok())
            .cloned()
            .collect();
        if roots.is_empty() {
            return;
        }
        let (me, indexes, rt) = (self.clone(), indexes.clone(), rt.clone());
        let spawned = std::thread::Builder::new()
            .name("ide-symbols-resume".into())
            .spawn(move || {
                indexes.settle(std::time::Duration::from_secs(600));
                for root in roots {
                    let Some(raw) = root.to_str() else { continue };
                    let Ok(at) = rt.policy.resolve_existing(
                        raw,
                        crate::error::Surface::Coder,
                        crate::policy::Tail::Follow,
                        None,
                    ) else {
                        continue;
                    };
                    // starts the build; the answer itself is not needed
                    let _ = me.with(&indexes, &rt, &at, |_, _, _| ());
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("symbol indexes not resumed: no thread ({e})");
        }
    }

    /// Wait until no build runs (tests, benchmarks). Blocking.
    pub fn settle(&self, timeout: std::time::Duration) -> bool {
        let end = std::time::Instant::now() + timeout;
        loop {
            let roots = self.roots.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if !roots.iter().any(|s| s.building.load(Ordering::Acquire)) {
                return true;
            }
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Run `f` over the symbol table of the root holding the folder `at`,
    /// with every file below `at` brought up to date (see the module) and
    /// the round's generation and the content lease (for reading files).
    /// `Err` when no index can answer yet (a build is started when none
    /// runs): the caller scans. Blocking.
    pub fn with<R>(
        &self,
        indexes: &Arc<Indexes>,
        rt: &Arc<Runtime>,
        at: &Resolved,
        f: impl FnOnce(&Table, &Lease, u64) -> R,
    ) -> Result<R, NotReady> {
        let Some((lease, rel)) = indexes.lease(rt, at) else {
            return Err(NotReady(
                "the content index of this root is not ready (building, or off: coder::info says \
                 which); every source file was read"
                    .into(),
            ));
        };
        if !lease.has_dir(&rel) {
            return Err(NotReady("the folder is not in the index's snapshot".into()));
        }
        let slot = self.slot(&lease.root_at().path);
        let mut table = slot.table.lock().unwrap_or_else(|p| p.into_inner());
        let Some(t) = table.as_mut() else {
            drop(table);
            return Err(NotReady(self.start(indexes, rt, &slot, &lease)));
        };
        let round = t.validate(&lease, &rel, rt.config.fs.max_read_bytes);
        let budget = usize::try_from(rt.config.code.search_index_max_bytes).unwrap_or(usize::MAX);
        let mut st = slot.status.lock().unwrap_or_else(|p| p.into_inner());
        st.files = t.len();
        st.symbols = t.symbols();
        st.bytes = t.bytes();
        drop(st);
        if t.bytes() > budget {
            *table = None;
            let why = over_budget(budget);
            slot.status.lock().unwrap_or_else(|p| p.into_inner()).why = Some(why.clone());
            return Err(NotReady(why));
        }
        Ok(f(t, &lease, round))
    }

    /// Start a build of the lease's root unless one runs; what to tell the
    /// caller.
    fn start(
        &self,
        indexes: &Arc<Indexes>,
        rt: &Arc<Runtime>,
        slot: &Arc<Slot>,
        lease: &Lease,
    ) -> String {
        if !indexes.builds() {
            return "a one-shot call builds no symbol index; every source file was read".into();
        }
        if slot.building.swap(true, Ordering::AcqRel) {
            let st = slot
                .status
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            return format!(
                "the symbol index is building ({} of {} files); every source file was read",
                slot.done.load(Ordering::Relaxed),
                st.total
            );
        }
        // the files to read: the snapshot's source files
        let mut files: Vec<(PathBuf, Stamp)> = Vec::new();
        let root_at = lease.root_at().clone();
        lease.replay(
            Path::new(""),
            &root_at.path,
            false,
            None,
            &mut |seen: &Seen<'_>| {
                if seen.known.is_some_and(|k| k.protected || k.excluded) {
                    return if seen.kind == crate::jail::dir::Kind::Dir
                        && seen.known.is_some_and(|k| k.excluded)
                    {
                        Step::Skip
                    } else {
                        Step::Descend
                    };
                }
                if seen.kind == crate::jail::dir::Kind::File && is_source(seen.name.as_bytes()) {
                    if let Some(sm) = seen.summary {
                        files.push((seen.rel.to_path_buf(), sm.stamp));
                    }
                }
                Step::Descend
            },
        );
        let total = files.len();
        slot.done.store(0, Ordering::Relaxed);
        *slot.status.lock().unwrap_or_else(|p| p.into_inner()) = Status {
            total,
            ..Status::of(Phase::Building)
        };
        let slot2 = slot.clone();
        let rt2 = rt.clone();
        let indexes2 = indexes.clone();
        let spawned = std::thread::Builder::new()
            .name("ide-symbols".into())
            .spawn(move || build(&slot2, &rt2, &indexes2, root_at, files));
        if let Err(e) = spawned {
            slot.building.store(false, Ordering::Release);
            return format!(
                "no thread for the symbol index build: {e}; every source file was read"
            );
        }
        format!("the symbol index is building (0 of {total} files); every source file was read")
    }
}

fn over_budget(budget: usize) -> String {
    format!(
        "the symbol index would hold more than code.search_index_max_bytes ({budget} bytes); \
         raise it to index this root, or ask about a smaller folder"
    )
}

fn saved_dir(rt: &Runtime) -> PathBuf {
    rt.turns_dir.join("symbol-index")
}

/// Build a table of `files` (relative to `root_at`), taking what the saved
/// table still has right, and save it.
fn build(
    slot: &Arc<Slot>,
    rt: &Arc<Runtime>,
    indexes: &Arc<Indexes>,
    root_at: Resolved,
    files: Vec<(PathBuf, Stamp)>,
) {
    struct Done<'a>(&'a Slot);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.building.store(false, Ordering::Release);
        }
    }
    let _done = Done(slot);
    let started = std::time::Instant::now();
    let budget = usize::try_from(rt.config.code.search_index_max_bytes).unwrap_or(usize::MAX);
    let name = persist::file_name(&slot.root);
    let mut saved = match super::read_saved(
        &saved_dir(rt),
        &name,
        (budget as u64).saturating_mul(2).saturating_add(1 << 20),
    )
    .and_then(|b| b.map(|b| decode(&slot.root, &b)).transpose())
    {
        Ok(s) => s.unwrap_or_default(),
        Err(why) => {
            tracing::info!(root = %slot.root.display(), "symbol index: saved copy ignored ({why})");
            HashMap::new()
        }
    };
    let mut table = Table::default();
    let mut to_parse: Vec<PathBuf> = Vec::new();
    let mut reused = 0usize;
    for (rel, stamp) in files {
        match saved.remove(&rel) {
            Some((s, p)) if s == stamp => {
                table.insert(rel, p);
                reused += 1;
            }
            _ => to_parse.push(rel),
        }
    }
    drop(saved);
    slot.done.store(reused, Ordering::Relaxed);
    let max_read = rt.config.fs.max_read_bytes;
    // every core, at idle priority, giving way to searches
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Option<Parsed>)>(256);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut over = false;
    std::thread::scope(|s| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, to_parse, root_at) = (&next, &to_parse, &root_at);
            s.spawn(move || {
                let _ = super::at_idle_priority();
                let mut free_until = None;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= to_parse.len() {
                        break;
                    }
                    indexes.give_way(&mut free_until);
                    let p = parse_file(root_at, &to_parse[i], max_read);
                    if tx.send((i, p)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, p) in rx {
            slot.done.fetch_add(1, Ordering::Relaxed);
            if over {
                continue;
            }
            if let Some(p) = p {
                table.insert(to_parse[i].clone(), p);
            }
            if table.bytes() > budget {
                over = true;
                // the workers stop at their next file
                next.store(usize::MAX / 2, Ordering::Relaxed);
            }
        }
    });
    if over {
        tracing::info!(root = %slot.root.display(), "symbol index not built: over budget");
        *slot.status.lock().unwrap_or_else(|p| p.into_inner()) = Status {
            why: Some(over_budget(budget)),
            ..Status::of(Phase::Off)
        };
        super::forget_in(&saved_dir(rt), &name);
        return;
    }
    let (files, symbols, held) = (table.len(), table.symbols(), table.bytes());
    let bytes = encode(&slot.root, &table);
    // in place before it is announced: a caller that waits for the log
    // line finds the index ready
    *slot.table.lock().unwrap_or_else(|p| p.into_inner()) = Some(table);
    *slot.status.lock().unwrap_or_else(|p| p.into_inner()) = Status {
        phase: Phase::Ready,
        files,
        symbols,
        bytes: held,
        done: files,
        total: files,
        reused,
        why: None,
    };
    tracing::info!(
        root = %slot.root.display(),
        files = files,
        symbols = symbols,
        reused,
        bytes = held,
        ms = started.elapsed().as_millis() as u64,
        "symbol index built"
    );
    if let Err(e) = super::store_in(&saved_dir(rt), &name, &bytes) {
        tracing::warn!(root = %slot.root.display(), "symbol index not saved: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn psym(name: &str, parent: u32, kind: &str, line: u32) -> PSym {
        PSym {
            name: name.into(),
            owner: None,
            rest: CSym {
                name: NONE,
                owner: NONE,
                parent,
                kind: kind_id(kind),
                line,
                column: 1,
                end_line: line + 1,
                start: 0,
            },
        }
    }

    fn parsed(name: &str, ino: u64) -> Parsed {
        Parsed {
            stamp: Stamp {
                ino,
                dev: 1,
                size: 10,
                ..Stamp::default()
            },
            settled: true,
            lang: 0,
            has_errors: false,
            syms: vec![psym(name, NONE, "class", 1), psym("run", 0, "method", 2)],
            refs: vec!["os".into(), name.into()],
        }
    }

    #[test]
    fn a_table_round_trips_through_its_saved_bytes_and_refuses_damage() {
        let mut t = Table::default();
        t.insert("a.py".into(), parsed("A", 1));
        t.insert("b/c.py".into(), parsed("B", 2));
        let root = Path::new("/r");
        let bytes = encode(root, &t);
        let back = decode(root, &bytes).unwrap();
        assert_eq!(back.len(), 2);
        let (stamp, p) = &back[Path::new("b/c.py")];
        assert_eq!(stamp.ino, 2);
        assert_eq!(p.syms[0].name, "B");
        assert_eq!(p.syms[1].rest.parent, 0);
        assert_eq!(p.refs, vec!["os".to_string(), "B".to_string()]);
        assert!(decode(Path::new("/other"), &bytes).is_err());
        let mut bad = bytes.clone();
        bad[40] ^= 1;
        assert!(decode(root, &bad).is_err());
        assert!(decode(root, &bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn replacing_a_file_replaces_its_names_and_paths() {
        let mut t = Table::default();
        t.insert("a.py".into(), parsed("A", 1));
        let round = t.round;
        let p = Pattern::parse("A/run").unwrap();
        assert_eq!(t.find(round, &p, false, &[]).len(), 1);
        t.insert("a.py".into(), parsed("Z", 1));
        assert!(t.find(round, &p, false, &[]).is_empty());
        assert_eq!(
            t.find(round, &Pattern::parse("Z/run").unwrap(), false, &[])
                .len(),
            1
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t.symbols(), 2);
        let sub = t.find(
            round,
            &Pattern::parse("ru").unwrap(),
            true,
            &["method".into()],
        );
        assert_eq!(sub.len(), 1);
    }
}
