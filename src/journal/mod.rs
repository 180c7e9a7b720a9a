//! The change journal: every mutation the worker makes, recorded by the
//! write layer itself ([`crate::jail::atomic`]), with the exact bytes before and
//! after in a content-addressed blob store.
//!
//! Who and why: the catalog wraps every call in a [`Scope`] (function id,
//! the engine-stamped `_caller_worker_id`, the optional `turn_id` /
//! `session_id` of the request, the runtime's `turns` settings). The scope
//! travels into the blocking pool with [`crate::runtime::blocking`], and the
//! write layer asks [`capture`] for it: no scope, no journal (unit code
//! calling the write layer directly), so no handler can forget to record.
//!
//! On disk, under `turns.data_dir` (see [`crate::runtime::state_home`] for
//! where a relative one is anchored):
//! - `lock`: `flock`ed exclusively around every append (and the repair on
//!   open), so two processes on one journal (`ide call` beside the served
//!   worker) never hand out one sequence number twice; each process reads
//!   the lines the other appended before it answers (see `Journal::state`).
//! - `journal.log`: one JSON line per change, appended and fsynced after
//!   the mutation succeeded. A torn last line (kill -9 mid-append) is cut
//!   off when the journal is opened: at worst the last change is missing.
//! - `index.bin`: one fixed 48-byte record per change (offset and length
//!   of its line, time, hashes of turn, session and path), so listing pages
//!   newest-first through 100k changes without parsing them. Rebuilt from
//!   the journal when it lags (it is not fsynced: the journal is the truth).
//! - `blobs/<sha256>`: each distinct body once (written to an `O_TMPFILE`,
//!   fsynced, linked in: never a partial blob under a hash name).
//! - `refs/<seq>.before|after`: hard links to the blobs a change uses. The
//!   link count is the reference count: evicting a change unlinks its refs
//!   and then the blob when nothing else links it. Bodies are read back
//!   only after their hash is re-checked.
//! - `evicted`: the sequence number below which bodies are gone.
//!
//! Memory holds no per-change state; the journal grows on disk only, and
//! `turns.max_blob_bytes` bounds the blob store (oldest bodies go first;
//! their changes stay listed with `diff_available: false`).

pub mod marks;
pub mod scope;
pub mod seen;

pub use scope::{Call, Journals, Scope};

use crate::error::Failure;
use crate::jail::atomic::hex;
pub use crate::jail::record::{ChangeKind, Image, Version, write_kind};
use crate::jail::{self, Anchor, beside};
use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

const INDEX_RECORD: u64 = 48;

// ───────────────────────────── records ─────────────────────────────

/// One journaled change.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChangeRecord {
    pub change_id: String,
    pub seq: u64,
    /// Unix epoch milliseconds.
    pub time_ms: u64,
    pub function_id: String,
    /// The engine-stamped `_caller_worker_id`, when the call carried one.
    pub caller: Option<String>,
    pub session_id: Option<String>,
    /// The request's `turn_id`, else the change's own id.
    pub turn_id: String,
    pub kind: ChangeKind,
    /// Canonical absolute path (the destination of a move).
    pub path: String,
    /// The source of a move.
    pub from_path: Option<String>,
    /// The file before (none: it did not exist).
    pub before: Option<Version>,
    /// The file after (none: it was deleted).
    pub after: Option<Version>,
}

// ───────────────────────────── the store ─────────────────────────────

/// One journal directory.
pub struct Journal {
    root: Anchor,
    /// The cross-process append lock (`flock` on `lock`).
    lock: std::fs::File,
    state: Mutex<State>,
    /// Versions of files this worker just wrote, by inode and change
    /// stamp, so the next change of the same file need not read and hash
    /// its old body again (bounded; any change of the inode bumps ctime).
    known: Mutex<HashMap<(u64, u64), (Stamp, Image)>>,
    /// An unnamed file in `blobs/` opened ahead for the next new body:
    /// creating one costs a commit's worth of metadata work, so it is done
    /// on a helper thread after each use, not while a write waits.
    spare: Arc<Mutex<Option<std::fs::File>>>,
}

/// What identifies one content of an inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

const KNOWN_MAX: usize = 4096;

fn stamp_of(file: &std::fs::File) -> Option<((u64, u64), Stamp)> {
    let st = nix::sys::stat::fstat(file.as_fd()).ok()?;
    Some((
        (st.st_dev as u64, st.st_ino as u64),
        Stamp {
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        },
    ))
}

struct State {
    /// Shared so a record's `fdatasync` can run outside the lock, beside
    /// the mutation's own directory flush (and other calls' appends).
    log: Arc<std::fs::File>,
    index: std::fs::File,
    blobs: OwnedFd,
    refs: OwnedFd,
    store_id: String,
    next_seq: u64,
    log_len: u64,
    evicted_below: u64,
    blob_bytes: u64,
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// A fixed-size index record.
#[derive(Debug, Clone, Copy)]
pub struct IndexEntry {
    pub offset: u64,
    pub len: u32,
    pub time_ms: u64,
    pub turn: u64,
    pub session: u64,
    pub path: u64,
}

impl IndexEntry {
    fn of(offset: u64, len: u32, r: &ChangeRecord) -> IndexEntry {
        IndexEntry {
            offset,
            len,
            time_ms: r.time_ms,
            turn: fnv(&r.turn_id),
            session: r.session_id.as_deref().map_or(0, fnv),
            path: fnv(&r.path),
        }
    }

    fn to_bytes(self) -> [u8; INDEX_RECORD as usize] {
        let mut b = [0u8; INDEX_RECORD as usize];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.time_ms.to_le_bytes());
        b[24..32].copy_from_slice(&self.turn.to_le_bytes());
        b[32..40].copy_from_slice(&self.session.to_le_bytes());
        b[40..48].copy_from_slice(&self.path.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> IndexEntry {
        let u = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().unwrap_or([0; 8]));
        IndexEntry {
            offset: u(0..8),
            len: u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4])),
            time_ms: u(16..24),
            turn: u(24..32),
            session: u(32..40),
            path: u(40..48),
        }
    }
}

/// Hash of a session id or path as the index keeps it.
pub fn key(s: &str) -> u64 {
    fnv(s)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn open_in(dir: &OwnedFd, name: &str, flags: OFlag) -> std::io::Result<std::fs::File> {
    jail::file_in(dir.as_fd(), name, flags)
}

impl Journal {
    pub(crate) fn open(dir: &Path) -> std::io::Result<Journal> {
        let root = Anchor::create(dir)?;
        let top = root.open_dir()?;
        let lock = open_in(&top, "lock", OFlag::O_RDWR | OFlag::O_CREAT)?;
        // Another process may be appending: the repair below (cutting a torn
        // last line, rebuilding the index, creating the store id) must not
        // race its line.
        let _held = Exclusive::take(&lock)?;
        let blobs = jail::subdir_in(top.as_fd(), "blobs")?;
        let refs = jail::subdir_in(top.as_fd(), "refs")?;
        let rw = OFlag::O_RDWR | OFlag::O_CREAT;
        let mut log = open_in(&top, "journal.log", rw)?;
        let index = open_in(&top, "index.bin", rw)?;
        let mut id_file = open_in(&top, "store-id", rw)?;
        let mut store_id = String::new();
        id_file.read_to_string(&mut store_id)?;
        let store_id = match store_id.trim() {
            "" => {
                let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
                id_file.write_all(id.as_bytes())?;
                id_file.sync_all()?;
                id
            }
            s => s.to_string(),
        };
        let mut evicted = String::new();
        if let Ok(mut f) = open_in(&top, "evicted", OFlag::O_RDONLY) {
            let _ = f.read_to_string(&mut evicted);
        }
        let evicted_below = evicted.trim().parse().unwrap_or(1);
        // Cut a torn last line, then bring the index up to the journal.
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes)?;
        let good = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if good < bytes.len() {
            log.set_len(good as u64)?;
            log.sync_all()?;
            tracing::warn!(dir = %dir.display(), "change journal: cut a torn last line");
        }
        let indexed = index.metadata()?.len() / INDEX_RECORD;
        let mut entries = Vec::new();
        let mut offset = 0usize;
        for line in bytes[..good].split_inclusive(|b| *b == b'\n') {
            if let Ok(r) = serde_json::from_slice::<ChangeRecord>(line) {
                entries.push(IndexEntry::of(offset as u64, line.len() as u32, &r));
            }
            offset += line.len();
        }
        if indexed != entries.len() as u64 {
            index.set_len(0)?;
            let mut buf = Vec::with_capacity(entries.len() * INDEX_RECORD as usize);
            for e in &entries {
                buf.extend_from_slice(&e.to_bytes());
            }
            index.write_all_at(&buf, 0)?;
        }
        drop(bytes);
        let blob_bytes = blob_bytes_in(&blobs)?;
        log.seek(SeekFrom::End(0))?;
        Ok(Journal {
            root,
            lock,
            known: Mutex::new(HashMap::new()),
            spare: Arc::default(),
            state: Mutex::new(State {
                log: Arc::new(log),
                index,
                blobs,
                refs,
                store_id,
                next_seq: entries.len() as u64 + 1,
                log_len: good as u64,
                evicted_below,
                blob_bytes,
            }),
        })
    }

    /// The state, brought up to the lines another process appended since
    /// (one `fstat` when there are none).
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = self.catch_up(&mut st) {
            tracing::warn!(dir = %self.dir().display(), error = %e, "change journal: reading another process's changes failed");
        }
        st
    }

    /// Take in the complete lines past `log_len` (another process's
    /// appends): their index records, the sequence, the eviction mark and
    /// the blob store's size. A partial last line is left for later (its
    /// writer holds the lock and is still writing it).
    fn catch_up(&self, st: &mut State) -> std::io::Result<()> {
        let len = st.log.metadata()?.len();
        if len <= st.log_len {
            return Ok(());
        }
        let mut tail = vec![0u8; (len - st.log_len) as usize];
        st.log.read_exact_at(&mut tail, st.log_len)?;
        let good = tail.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut offset = st.log_len;
        for line in tail[..good].split_inclusive(|b| *b == b'\n') {
            if let Ok(r) = serde_json::from_slice::<ChangeRecord>(line) {
                let entry = IndexEntry::of(offset, line.len() as u32, &r);
                st.index
                    .write_all_at(&entry.to_bytes(), (st.next_seq - 1) * INDEX_RECORD)?;
                st.next_seq += 1;
            }
            offset += line.len() as u64;
        }
        if good == 0 {
            return Ok(());
        }
        st.log_len = offset;
        // The other process may have evicted and stored bodies.
        if let Ok(top) = self.root.open_dir() {
            if let Ok(mut f) = open_in(&top, "evicted", OFlag::O_RDONLY) {
                let mut mark = String::new();
                if f.read_to_string(&mut mark).is_ok() {
                    if let Ok(n) = mark.trim().parse::<u64>() {
                        st.evicted_below = st.evicted_below.max(n);
                    }
                }
            }
        }
        st.blob_bytes = blob_bytes_in(&st.blobs)?;
        Ok(())
    }

    /// The directory this journal lives in.
    pub fn dir(&self) -> &Path {
        self.root.path()
    }

    /// The image of `file` when this journal saw its bytes last (it wrote
    /// them, or stored them, and the file's stamp has not moved since) and
    /// still holds them: no read.
    fn known_image(&self, file: &std::fs::File, mode: u32) -> Option<Image> {
        let (key, stamp) = stamp_of(file)?;
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let (s, img) = known.get(&key)?;
        let still_held = img
            .blob
            .as_deref()
            .is_none_or(|h| jail::stat_in(self.state().blobs.as_fd(), h).is_ok());
        if *s != stamp || !still_held {
            return None;
        }
        let mut img = img.clone();
        img.version.mode = mode;
        img.pending = None;
        Some(img)
    }

    /// Store a body read from `file` (from its start) unless it is over
    /// `cap` (then only its version is known). Returns the image.
    fn store_file(&self, file: &std::fs::File, mode: u32, cap: u64) -> std::io::Result<Image> {
        if let Some(img) = self.known_image(file, mode) {
            return Ok(img);
        }
        let size = file.metadata()?.len();
        let keep = cap > 0 && size <= cap;
        self.copy_body(file, keep, None, mode)
    }

    /// The image of a new version whose hash and size the write layer took
    /// as it wrote it, when no copy is needed: the store holds that body
    /// already, or the body is over the cap (version only).
    fn held_image(&self, digest: &[u8], size: u64, mode: u32, cap: u64) -> Option<Image> {
        let revision = hex(digest);
        let keep = cap > 0 && size <= cap;
        let held = keep && jail::stat_in(self.state().blobs.as_fd(), revision.as_str()).is_ok();
        (held || !keep).then(|| Image {
            version: Version {
                revision: revision.clone(),
                size,
                mode,
                stored: held,
            },
            blob: held.then_some(revision),
            pending: None,
        })
    }

    /// Store the body of a new version whose hash and size the write layer
    /// took as it wrote it: no read-back to hash it, and no copy at all when
    /// the store already holds that body.
    fn store_new(
        &self,
        file: &std::fs::File,
        digest: &[u8],
        size: u64,
        mode: u32,
        cap: u64,
    ) -> std::io::Result<Image> {
        if let Some(img) = self.held_image(digest, size, mode, cap) {
            return Ok(img);
        }
        self.copy_body(file, true, Some(hex(digest)), mode)
    }

    /// Read `file` from its start, hashing it unless `known` names it
    /// already, and copy it into a new blob when `keep`.
    fn copy_body(
        &self,
        file: &std::fs::File,
        keep: bool,
        known: Option<String>,
        mode: u32,
    ) -> std::io::Result<Image> {
        let blobs = { nix::unistd::dup(self.state().blobs.as_fd())? };
        let mut tmp: Option<std::fs::File> = if keep {
            Some(self.blob_file(&blobs)?)
        } else {
            None
        };
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut at = 0u64;
        loop {
            let n = file.read_at(&mut buf, at)?;
            if n == 0 {
                break;
            }
            if known.is_none() {
                hasher.update(&buf[..n]);
            }
            if let Some(t) = tmp.as_mut() {
                t.write_all(&buf[..n])?;
            }
            at += n as u64;
        }
        let revision = known.unwrap_or_else(|| hex(&hasher.finalize()));
        let (stored, pending) = match tmp {
            Some(t) => {
                let (stored, fresh) = self.link_blob(&blobs, &t, &revision, at)?;
                (stored, fresh.then(|| Arc::new(t)))
            }
            None => (false, None),
        };
        Ok(Image {
            version: Version {
                revision: revision.clone(),
                size: at,
                mode,
                stored,
            },
            blob: stored.then_some(revision),
            pending,
        })
    }

    /// An unnamed file in `blobs/` for a new body: the spare when there is
    /// one (and another is opened on a helper thread), else a new one.
    fn blob_file(&self, blobs: &OwnedFd) -> std::io::Result<std::fs::File> {
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (dir, slot) = (nix::unistd::dup(blobs.as_fd())?, self.spare.clone());
        beside::detach(move || {
            if let Ok(f) = unnamed_in(&dir) {
                let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
                if slot.is_none() {
                    *slot = Some(f);
                }
            }
        });
        match spare {
            Some(f) => Ok(f),
            None => unnamed_in(blobs),
        }
    }

    /// Give a finished temp blob its hash name (unless one exists: dedupe).
    fn link_blob(
        &self,
        blobs: &OwnedFd,
        t: &std::fs::File,
        hash: &str,
        size: u64,
    ) -> std::io::Result<(bool, bool)> {
        let exists = jail::stat_in(blobs.as_fd(), hash).is_ok();
        if exists {
            return Ok((true, false));
        }
        // Start the write-back now; `append` waits for it (fdatasync) just
        // before the record that names the blob, so it overlaps the
        // mutation's own fsyncs instead of adding to them.
        // SAFETY: a plain syscall on a descriptor this function borrows.
        unsafe {
            nix::libc::sync_file_range(t.as_raw_fd(), 0, 0, nix::libc::SYNC_FILE_RANGE_WRITE);
        }
        match jail::link_unnamed(t.as_fd(), blobs.as_fd(), OsStr::new(hash)) {
            Ok(()) => {
                self.state().blob_bytes += size;
                Ok((true, true))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok((true, false)),
            Err(e) => Err(e),
        }
    }

    /// Append one change; returns its id.
    #[allow(clippy::too_many_arguments)]
    fn append(
        &self,
        scope: &Call,
        kind: ChangeKind,
        path: &Path,
        from: Option<&Path>,
        before: Option<Image>,
        after: Option<Image>,
        flush: Flush,
    ) -> std::io::Result<String> {
        // Bodies reach the disk before the record that names them (a batch
        // flushed them all at once before its first record).
        if flush != Flush::Nothing {
            for img in [&before, &after].into_iter().flatten() {
                if let Some(f) = &img.pending {
                    f.sync_data()?;
                }
            }
        }
        // The state's mutex first, then the file lock: one description's
        // `flock` is shared by this process's threads, so the mutex is what
        // keeps them apart, and the lock is released before the mutex.
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let _held = Exclusive::take(&self.lock)?;
        self.catch_up(&mut st)?;
        // Past the last complete line: a writer that died mid-line (it held
        // the lock we now hold, so nobody is writing it).
        if st.log.metadata()?.len() > st.log_len {
            st.log.set_len(st.log_len)?;
        }
        let seq = st.next_seq;
        // The random tail keeps ids unique even when a torn last line gave
        // its sequence number back.
        let tail = &uuid::Uuid::new_v4().simple().to_string()[..6];
        let change_id = format!("{}-{seq}.{tail}", st.store_id);
        // References first: a line never names a body that is not linked.
        for (side, img) in [("before", &before), ("after", &after)] {
            let name = format!("{seq}.{side}");
            let unlink = || jail::unlink_in(st.refs.as_fd(), name.as_str());
            let Some(hash) = img.as_ref().and_then(|i| i.blob.as_deref()) else {
                // A line lost to a crash may have left a ref under this
                // number, and nothing would ever unlink it (this change
                // stores no body on this side): remove it. Usually there is
                // none, and this is one failed lookup.
                let _ = unlink();
                continue;
            };
            let link = || jail::link_in(st.blobs.as_fd(), hash, st.refs.as_fd(), name.as_str());
            match link() {
                Ok(()) => {}
                // a ref a lost line left under this number: replace it,
                // never trust it (it may name another body)
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let _ = unlink();
                    link()?;
                }
                Err(e) => return Err(e),
            }
        }
        let record = ChangeRecord {
            change_id: change_id.clone(),
            seq,
            time_ms: now_ms(),
            function_id: scope.function_id.clone(),
            caller: scope.caller.clone(),
            session_id: scope.session_id.clone(),
            turn_id: scope.turn_id.clone().unwrap_or_else(|| change_id.clone()),
            kind,
            path: path.display().to_string(),
            from_path: from.map(|p| p.display().to_string()),
            before: before.map(|i| i.version),
            after: after.map(|i| i.version),
        };
        let mut line = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let offset = st.log_len;
        // At the end as the lock holder sees it (another process may have
        // appended since this one last wrote). Flushed by the caller,
        // outside the lock (see `Capture::record`).
        st.log.write_all_at(&line, offset)?;
        st.log_len += line.len() as u64;
        let entry = IndexEntry::of(offset, line.len() as u32, &record);
        st.index
            .write_all_at(&entry.to_bytes(), (seq - 1) * INDEX_RECORD)?;
        st.next_seq += 1;
        let cap = scope.max_blob_bytes;
        self.evict_to(&mut st, cap);
        Ok(change_id)
    }

    /// Drop the oldest bodies until the blob store fits `cap`.
    fn evict_to(&self, st: &mut State, cap: u64) {
        let start = st.evicted_below;
        while st.blob_bytes > cap && st.evicted_below < st.next_seq {
            let seq = st.evicted_below;
            if let Some(r) = record_locked(st, seq) {
                for (side, v) in [("before", &r.before), ("after", &r.after)] {
                    let Some(v) = v.as_ref().filter(|v| v.stored) else {
                        continue;
                    };
                    let name = format!("{seq}.{side}");
                    let _ = jail::unlink_in(st.refs.as_fd(), name.as_str());
                    // blobs/<hash> alone holds it now: the body goes.
                    let alone = jail::stat_in(st.blobs.as_fd(), v.revision.as_str())
                        .is_ok_and(|s| s.st_nlink == 1);
                    if alone && jail::unlink_in(st.blobs.as_fd(), v.revision.as_str()).is_ok() {
                        st.blob_bytes = st.blob_bytes.saturating_sub(v.size);
                    }
                }
            }
            st.evicted_below += 1;
        }
        if st.evicted_below != start {
            if let Ok(top) = jail::open_beneath(
                self.root.fd(),
                Path::new(""),
                OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            ) {
                if let Ok(mut f) = open_in(
                    &top,
                    "evicted",
                    OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC,
                ) {
                    let _ = f.write_all(st.evicted_below.to_string().as_bytes());
                }
            }
        }
    }

    /// Number of changes.
    pub fn len(&self) -> u64 {
        self.state().next_seq - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sequence number a change id names in this store.
    pub fn seq_of(&self, change_id: &str) -> Option<u64> {
        let (store, rest) = change_id.rsplit_once('-')?;
        let seq: u64 = rest.split('.').next()?.parse().ok()?;
        let ok = {
            let st = self.state();
            store == st.store_id && seq >= 1 && seq < st.next_seq
        };
        (ok && self.get(seq)?.change_id == change_id).then_some(seq)
    }

    /// Index entries `[from, to)` (1-based sequence numbers).
    pub fn entries(&self, from: u64, to: u64) -> Vec<(u64, IndexEntry)> {
        let st = self.state();
        let to = to.min(st.next_seq);
        if from >= to {
            return Vec::new();
        }
        let mut buf = vec![0u8; ((to - from) * INDEX_RECORD) as usize];
        if st
            .index
            .read_exact_at(&mut buf, (from - 1) * INDEX_RECORD)
            .is_err()
        {
            return Vec::new();
        }
        buf.chunks(INDEX_RECORD as usize)
            .enumerate()
            .map(|(i, b)| (from + i as u64, IndexEntry::from_bytes(b)))
            .collect()
    }

    /// The record of one change.
    pub fn get(&self, seq: u64) -> Option<ChangeRecord> {
        let st = self.state();
        if seq == 0 || seq >= st.next_seq {
            return None;
        }
        record_locked(&st, seq)
    }

    /// Whether both bodies of a change are still held.
    pub fn diff_available(&self, r: &ChangeRecord) -> bool {
        let st = self.state();
        if r.seq < st.evicted_below {
            return false;
        }
        [("before", &r.before), ("after", &r.after)]
            .iter()
            .all(|(side, v)| match v {
                None => true,
                Some(v) => {
                    v.stored
                        && jail::stat_in(st.refs.as_fd(), format!("{}.{side}", r.seq).as_str())
                            .is_ok()
                }
            })
    }

    /// One body of a change, re-checked against its revision.
    pub fn body(&self, r: &ChangeRecord, after: bool) -> Option<Vec<u8>> {
        let (side, v) = if after {
            ("after", &r.after)
        } else {
            ("before", &r.before)
        };
        let v = v.as_ref()?;
        let file = {
            let st = self.state();
            if r.seq < st.evicted_below {
                return None;
            }
            open_in(&st.refs, &format!("{}.{side}", r.seq), OFlag::O_RDONLY).ok()?
        };
        let mut bytes = Vec::with_capacity(v.size as usize);
        (&file).take(v.size + 1).read_to_end(&mut bytes).ok()?;
        (hex(&Sha256::digest(&bytes)) == v.revision).then_some(bytes)
    }
}

/// Total size of the bodies in `blobs/`.
fn blob_bytes_in(blobs: &OwnedFd) -> std::io::Result<u64> {
    let mut total = 0;
    for e in jail::dir::read(blobs.as_fd())? {
        if let Ok(st) = jail::stat_in(blobs.as_fd(), e.name.as_os_str()) {
            total += st.st_size as u64;
        }
    }
    Ok(total)
}

/// The journal's cross-process lock, held while alive (the descriptor
/// outlives it: the journal's `lock` file).
struct Exclusive(std::os::fd::RawFd);

impl Exclusive {
    fn take(lock: &std::fs::File) -> std::io::Result<Exclusive> {
        loop {
            // SAFETY: a plain syscall on a descriptor this function borrows.
            let rc = unsafe { nix::libc::flock(lock.as_raw_fd(), nix::libc::LOCK_EX) };
            if rc == 0 {
                return Ok(Exclusive(lock.as_raw_fd()));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        // SAFETY: as in `take`; the journal keeps the descriptor open.
        unsafe { nix::libc::flock(self.0, nix::libc::LOCK_UN) };
    }
}

/// Read one record with the state already locked.
fn record_locked(st: &State, seq: u64) -> Option<ChangeRecord> {
    let mut b = [0u8; INDEX_RECORD as usize];
    st.index
        .read_exact_at(&mut b, (seq - 1) * INDEX_RECORD)
        .ok()?;
    let e = IndexEntry::from_bytes(&b);
    let mut line = vec![0u8; e.len as usize];
    st.log.read_exact_at(&mut line, e.offset).ok()?;
    serde_json::from_slice(&line).ok()
}

/// What [`Journal::append`] makes durable itself; the line is always the
/// caller's to flush.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flush {
    /// The bodies it names, before writing the line.
    Bodies,
    /// Nothing: the caller flushed the bodies already.
    Nothing,
}

/// A new unnamed file in `dir`, for a blob.
fn unnamed_in(dir: &OwnedFd) -> std::io::Result<std::fs::File> {
    jail::unnamed_in(dir.as_fd())
}

/// Map an I/O failure of the journal for an answer.
pub fn io(e: std::io::Error) -> Failure {
    Failure::io(format!("change journal: {e}"))
}

#[cfg(test)]
mod tests;
