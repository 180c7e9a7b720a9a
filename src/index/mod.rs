//! The search index: for each root the worker searches, a snapshot of its
//! tree and an n-gram filter of every file's bytes, kept current by the
//! kernel's change events and checked against them before every search.
//!
//! - **Build.** The first content search under a root starts a build on a
//!   thread of its own (the search itself scans, as every search does
//!   while no index is ready). The build walks the root with the handle
//!   walk, adding an inotify watch on each directory *before* the walk
//!   lists it, and reads each file once (after its directory's watch
//!   exists), so every change after what the build saw raises an event.
//! - **Never stale.** A search first drains the index's inotify queue: the
//!   kernel queues an event before the changing call returns, so every
//!   change that completed before the search began is applied before it is
//!   answered — changed files are read again, changed directories listed
//!   again. A lost queue (overflow), a directory moved or renamed, or more
//!   changed entries than [`MAX_SYNC`] drop the index (the search scans)
//!   and start a rebuild. A file with more than one hard link is always
//!   read, since a write through a link outside the root raises no event
//!   here; so is a file the index has no filter for.
//! - **Exact.** The index never answers; it only rules files out. The walk
//!   a search replays is the one the disk walk would produce, and the
//!   search applies its own filters (policy, globs, hidden, excludes) to
//!   it as it does to the disk walk. A file is skipped only when its
//!   filter proves the pattern cannot match ([`query`]); every other file
//!   is read and matched as before.
//! - **Budget.** `code.search_index_max_bytes` bounds the memory held (the
//!   filters and the snapshot's names); a root over it is not indexed and
//!   its searches scan. 0 turns the index off. Files under the default
//!   excludes and protected files get no filter (the index never holds
//!   anything of protected content).
//! - **Kept across restarts.** Each build saves its filters to the
//!   worker's state directory ([`persist`]); the next build of the root (a
//!   restart, `ide mcp` on the same configuration) walks the tree as
//!   always but reads again only the files whose `stat` stamp changed, and
//!   a worker resumes the saved roots as it starts ([`Indexes::resume`]).

pub mod filter;
pub mod persist;
pub mod query;
pub mod symbols;
pub mod tree;

use crate::jail::dir::{self, Kind};
use crate::jail::walk::{Options, Step};
use crate::policy::Resolved;
use crate::runtime::Runtime;
use filter::{Content, Scratch};
use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify, WatchDescriptor};
use std::collections::{BTreeSet, HashMap};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tree::{Dir, Summary};

/// Changed entries one search applies itself; past it the index is
/// rebuilt instead.
pub const MAX_SYNC: usize = 2_000;
/// Roots indexed at once (the least recently searched one is dropped).
const MAX_ROOTS: usize = 4;
/// Largest file given a filter (larger ones are always read).
const MAX_FILE: u64 = 16 * 1024 * 1024;
/// Bookkeeping counted per entry and per filtered file, in bytes.
const ENTRY_OVERHEAD: usize = 48;
const FILE_OVERHEAD: usize = 96;

/// The share of the user's inotify watches (`fs.inotify.max_user_watches`)
/// one index may take: the change feed (`shell::changed`) and other
/// programs need theirs.
fn watch_cap() -> usize {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .map_or(4096, |n| n / 4)
}

fn mask() -> F {
    F::IN_CREATE
        | F::IN_DELETE
        | F::IN_MODIFY
        | F::IN_ATTRIB
        | F::IN_CLOSE_WRITE
        | F::IN_MOVED_FROM
        | F::IN_MOVED_TO
        | F::IN_DELETE_SELF
        | F::IN_MOVE_SELF
        | F::IN_ONLYDIR
}

/// Every index of this worker.
#[derive(Default)]
pub struct Indexes {
    roots: Mutex<Vec<Arc<Slot>>>,
    /// Searches served from an index.
    served: std::sync::atomic::AtomicU64,
    /// False in a process that ends with its one call (`ide call`): an
    /// index it would build is never used, and building one beside the
    /// call's own scan only slows the call.
    no_builds: bool,
    /// Searches running now: a build reads no file while one runs.
    quiet: Arc<Quiet>,
}

/// How many searches run, and a wake-up for the builds waiting for none.
#[derive(Default)]
struct Quiet {
    running: Mutex<usize>,
    none: std::sync::Condvar,
}

/// The longest a build waits for searches to end; then it reads for
/// [`PAUSE_FREE`] before it waits again, so searches that overlap without
/// end still leave it a twenty-first of its (idle-priority) time. Longer
/// than a full scan of a large tree takes (about 1.1 s for a regex with no
/// literal over 170 000 files): a pause shorter than the search it waits
/// for lets the build read beside that search's end (250 ms did, and a
/// search during a build took 1.2× one with no build).
const MAX_PAUSE: std::time::Duration = std::time::Duration::from_secs(2);
const PAUSE_FREE: std::time::Duration = std::time::Duration::from_millis(100);

impl Quiet {
    /// Block while a search runs (a build, between two files), at most
    /// [`MAX_PAUSE`]; `free_until` is when the build must wait again.
    fn wait(&self, free_until: &mut Option<std::time::Instant>) {
        let now = std::time::Instant::now();
        if free_until.is_some_and(|t| now < t) {
            return;
        }
        let end = now + MAX_PAUSE;
        let mut n = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while *n > 0 {
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                *free_until = Some(std::time::Instant::now() + PAUSE_FREE);
                return;
            }
            n = self
                .none
                .wait_timeout(n, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// A search in progress ([`Indexes::searching`]): builds pause until it is
/// dropped.
pub struct Searching(Arc<Quiet>);

impl Drop for Searching {
    fn drop(&mut self) {
        let mut n = self.0.running.lock().unwrap_or_else(|p| p.into_inner());
        *n -= 1;
        if *n == 0 {
            self.0.none.notify_all();
        }
    }
}

/// One root's index and its state.
struct Slot {
    root: PathBuf,
    state: Arc<tokio::sync::Mutex<State>>,
    /// What the state is, for readers that must not wait on a search
    /// (`coder::info`): set at every change of `state`.
    status: Mutex<Status>,
    /// A build thread runs (building, or saving what it built).
    working: std::sync::atomic::AtomicBool,
}

impl Slot {
    fn set(&self, status: Status) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = status;
    }

    fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Where a root's index stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not built yet: the first search of the root starts a build.
    None,
    Building,
    Ready,
    /// Not indexed: see `why`.
    Off,
}

/// What one root's index holds, for `coder::info`, logs and tests.
#[derive(Debug, Clone)]
pub struct Status {
    pub phase: Phase,
    /// Files with a filter.
    pub files: usize,
    /// Bytes held.
    pub bytes: usize,
    /// When the index in use was built (or restored from its saved copy).
    pub since: Option<SystemTime>,
    /// Why the root is not indexed.
    pub why: Option<String>,
    /// Files whose filter the last build took from the saved index
    /// instead of reading them.
    pub reused: usize,
}

impl Status {
    fn of(phase: Phase) -> Status {
        Status {
            phase,
            files: 0,
            bytes: 0,
            since: None,
            why: None,
            reused: 0,
        }
    }
}

enum State {
    /// Never built.
    New,
    /// A build is running.
    Building,
    Ready(Box<RootIndex>),
    /// Not indexed under this runtime and budget (over budget, no watches
    /// left, root gone; the slot's status says why): the configuration it
    /// was tried under (a new one tries again).
    Off {
        config: Box<crate::config::Config>,
    },
}

/// A ready index, synced, held for one search (other searches of the same
/// root wait for it).
pub struct Lease {
    guard: tokio::sync::OwnedMutexGuard<State>,
}

/// What the index knows of a root.
struct RootIndex {
    root_at: Resolved,
    /// The configuration the index was built under: a reload that changes
    /// it (a new policy, new budgets) rebuilds the index.
    config: crate::config::Config,
    tree: Dir,
    /// Files with a filter.
    filtered: usize,
    ino: Inotify,
    wds: HashMap<WatchDescriptor, PathBuf>,
    bytes: usize,
    budget: usize,
    /// Most directories watched.
    watch_cap: usize,
    /// The saved index the build takes filters from (only while building).
    saved: Option<Dir>,
    /// Files whose filter came from `saved`.
    reused: usize,
    /// While building: the searches to give way to. A sync (inside a
    /// search) does not wait.
    quiet: Option<Arc<Quiet>>,
    /// Until when the build reads without waiting ([`Quiet::wait`]).
    free_until: Option<std::time::Instant>,
}

/// What a search sees of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The file cannot match: it would be searched and found nothing.
    NoMatch,
    /// The scan would skip the file unread as far as matches go: binary
    /// (a NUL byte) or over `fs.max_read_bytes`.
    Skipped,
    /// Read and match it.
    Read,
}

impl Indexes {
    pub fn new() -> Indexes {
        Indexes::default()
    }

    /// Indexes that never build: for a process that ends with its one call.
    /// Every search scans.
    pub fn one_shot() -> Indexes {
        Indexes {
            no_builds: true,
            ..Indexes::default()
        }
    }

    /// The index of the root holding the directory `at`, synced with every
    /// change made before this call, under `rt`'s policy, with `at`'s path
    /// relative to the index root. `None` when none is ready: a build is
    /// started when none runs, and the caller scans. Blocking: call it off
    /// the async runtime.
    pub fn lease(&self, rt: &Arc<Runtime>, at: &Resolved) -> Option<(Lease, PathBuf)> {
        let budget = usize::try_from(rt.config.code.search_index_max_bytes).unwrap_or(usize::MAX);
        if budget == 0 || self.no_builds {
            return None;
        }
        let root = at.root.clone().unwrap_or_else(|| at.path.clone());
        let rel = at.path.strip_prefix(&root).ok()?.to_path_buf();
        let slot = self.slot(&root);
        let mut guard = slot.state.clone().blocking_lock_owned();
        let build = match &mut *guard {
            State::Building => false,
            State::New => true,
            State::Off { config, .. } => **config != rt.config,
            State::Ready(ix) if ix.config == rt.config => match ix.sync(rt) {
                Ok(()) => {
                    self.served
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let mut st = slot.status.lock().unwrap_or_else(|p| p.into_inner());
                    st.files = ix.filtered;
                    st.bytes = ix.bytes;
                    drop(st);
                    return Some((Lease { guard }, rel));
                }
                Err(why) => {
                    tracing::info!(root = %root.display(), "search index dropped: {why}; rebuilding");
                    true
                }
            },
            State::Ready(_) => true,
        };
        if build {
            *guard = State::Building;
            slot.set(Status::of(Phase::Building));
            drop(guard);
            start_build(slot, rt.clone(), budget, self.quiet.clone());
        }
        None
    }

    /// Wait while searches run (up to [`MAX_PAUSE`], then read for
    /// [`PAUSE_FREE`]): how background work beside the index (the symbol
    /// index's build) gives way, as the index's own build does.
    pub fn give_way(&self, free_until: &mut Option<std::time::Instant>) {
        self.quiet.wait(free_until);
    }

    /// Whether this process builds indexes (not a one-shot `ide call`).
    pub fn builds(&self) -> bool {
        !self.no_builds
    }

    /// Mark a search as running until the guard is dropped: while any runs,
    /// builds read no file (they resume when the last one ends), so a build
    /// takes neither CPU, nor disk, nor cache from a search.
    pub fn searching(&self) -> Searching {
        *self.quiet.running.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        Searching(self.quiet.clone())
    }

    /// Start restoring, in the background, the saved index of each of
    /// `rt`'s roots that has one, so that a restarted worker answers from
    /// its index as soon as the tree is checked, before its first search.
    /// Nothing happens in a one-shot process or with the index off.
    pub fn resume(&self, rt: &Arc<Runtime>) {
        let budget = usize::try_from(rt.config.code.search_index_max_bytes).unwrap_or(usize::MAX);
        if budget == 0 || self.no_builds {
            return;
        }
        let dir = saved_dir(rt);
        for root in rt.policy.coder_roots().iter().take(MAX_ROOTS) {
            if std::fs::symlink_metadata(dir.join(persist::file_name(root))).is_err() {
                continue;
            }
            let slot = self.slot(root);
            let Ok(mut guard) = slot.state.clone().try_lock_owned() else {
                continue;
            };
            if matches!(*guard, State::New) {
                *guard = State::Building;
                slot.set(Status::of(Phase::Building));
                drop(guard);
                start_build(slot, rt.clone(), budget, self.quiet.clone());
            }
        }
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
            state: Arc::new(tokio::sync::Mutex::new(State::New)),
            status: Mutex::new(Status::of(Phase::None)),
            working: std::sync::atomic::AtomicBool::new(false),
        });
        roots.push(s.clone());
        if roots.len() > MAX_ROOTS {
            roots.remove(0);
        }
        s
    }

    /// Where each root searched so far stands (`coder::info`, logs, tests,
    /// benchmarks), most recently searched last. Never waits on a search.
    pub fn describe(&self) -> Vec<(PathBuf, Status)> {
        let roots = self.roots.lock().unwrap_or_else(|p| p.into_inner()).clone();
        roots.iter().map(|s| (s.root.clone(), s.status())).collect()
    }

    /// How many searches an index served so far.
    pub fn served(&self) -> u64 {
        self.served.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Wait until no build runs, and what it built is saved (tests and
    /// benchmarks). Blocking.
    pub fn settle(&self, timeout: std::time::Duration) -> bool {
        let end = std::time::Instant::now() + timeout;
        loop {
            let roots = self.roots.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let building = roots.iter().any(|s| {
                s.working.load(std::sync::atomic::Ordering::Acquire)
                    || s.status().phase == Phase::Building
            });
            if !building {
                return true;
            }
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Lease {
    /// The indexed root, as the policy resolved it.
    pub fn root_at(&self) -> &Resolved {
        &self.ix().root_at
    }

    fn ix(&self) -> &RootIndex {
        match &*self.guard {
            State::Ready(ix) => ix,
            _ => unreachable!("a lease is only made of a ready index"),
        }
    }

    /// Replay the folder `rel` (relative to the root) at absolute `path`,
    /// loading ahead the filter words of key `ahead` ([`tree::Dir::replay`]).
    /// False when the folder is not a directory of the snapshot.
    pub fn replay(
        &self,
        rel: &Path,
        path: &Path,
        skip_hidden: bool,
        ahead: Option<u64>,
        visit: &mut dyn FnMut(&tree::Seen<'_>) -> Step,
    ) -> bool {
        let Some(dir) = self.ix().tree.find(rel) else {
            return false;
        };
        dir.replay(
            &mut std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec(),
            &mut Vec::new(),
            0,
            skip_hidden,
            ahead,
            visit,
        );
        true
    }

    /// Whether the folder `rel` is a directory of the snapshot.
    pub fn has_dir(&self, rel: &Path) -> bool {
        self.ix().tree.find(rel).is_some()
    }

    /// What a search of `q` (skipping files over `max_read_bytes`, 0: no
    /// limit) does with the file at absolute `path`.
    pub fn verdict(&self, path: &Path, q: &query::Query, max_read_bytes: u64) -> Verdict {
        match path.strip_prefix(&self.ix().root_at.path) {
            Ok(rel) => self.verdict_rel(rel, q, max_read_bytes),
            Err(_) => Verdict::Read,
        }
    }

    /// [`Lease::verdict`] of the file at `rel`, relative to the root.
    pub fn verdict_rel(&self, rel: &Path, q: &query::Query, max_read_bytes: u64) -> Verdict {
        let summary = self
            .ix()
            .tree
            .entry_at(rel)
            .and_then(|e| e.summary.as_ref());
        verdict(summary, q, max_read_bytes)
    }
}

/// What a search of `q` (skipping files over `max_read_bytes`, 0: no limit)
/// does with a file the index summarized as `summary` (`None`: it has no
/// filter, so it is read).
pub fn verdict(summary: Option<&Summary>, q: &query::Query, max_read_bytes: u64) -> Verdict {
    match summary {
        Some(Summary {
            linked: false,
            content,
            size,
            ..
        }) => match content {
            // too large for the scan: it reads nothing either
            _ if max_read_bytes > 0 && *size > max_read_bytes => Verdict::Skipped,
            Content::Binary => Verdict::Skipped,
            Content::Dense => Verdict::Read,
            Content::Filter(f) => {
                if q.admits(&|k| f.has(k)) {
                    Verdict::Read
                } else {
                    Verdict::NoMatch
                }
            }
        },
        _ => Verdict::Read,
    }
}

fn start_build(slot: Arc<Slot>, rt: Arc<Runtime>, budget: usize, quiet: Arc<Quiet>) {
    let state = slot.state.clone();
    let status = slot.clone();
    slot.working
        .store(true, std::sync::atomic::Ordering::Release);
    let spawned = std::thread::Builder::new()
        .name("ide-index".into())
        .spawn(move || {
            // `working` falls back however the thread ends
            struct Done(Arc<Slot>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0
                        .working
                        .store(false, std::sync::atomic::Ordering::Release);
                }
            }
            let _done = Done(slot.clone());
            // the build is background work: it runs on what the machine
            // leaves idle, CPU and disk, so it never slows a caller
            if let Err(e) = at_idle_priority() {
                tracing::debug!("search index build at normal priority: {e}");
            }
            let started = std::time::Instant::now();
            let wall = SystemTime::now();
            let built = build(&rt, &slot.root, budget, quiet);
            // the bytes to save are taken while the build still owns the
            // index, before the lock searches wait on; written after
            let encoded = built
                .as_ref()
                .ok()
                .map(|ix| persist::encode(&slot.root, wall, &ix.tree));
            let mut st = slot.state.blocking_lock();
            let save = match built {
                Ok(ix) => {
                    tracing::info!(
                        root = %slot.root.display(),
                        files = ix.filtered,
                        reused = ix.reused,
                        bytes = ix.bytes,
                        ms = started.elapsed().as_millis() as u64,
                        "search index built"
                    );
                    slot.set(Status {
                        phase: Phase::Ready,
                        files: ix.filtered,
                        bytes: ix.bytes,
                        since: Some(SystemTime::now()),
                        why: None,
                        reused: ix.reused,
                    });
                    *st = State::Ready(Box::new(ix));
                    encoded
                }
                Err(why) => {
                    tracing::info!(root = %slot.root.display(), "search index not built: {why}; searches scan");
                    slot.set(Status {
                        why: Some(why),
                        ..Status::of(Phase::Off)
                    });
                    *st = State::Off {
                        config: Box::new(rt.config.clone()),
                    };
                    // a saved copy would only be loaded to fail again, and
                    // may hold files the policy has protected since
                    forget(&rt, &slot.root);
                    None
                }
            };
            drop(st);
            if let Some((bytes, saved)) = save {
                match store(&rt, &slot.root, &bytes) {
                    Ok(()) => tracing::debug!(
                        root = %slot.root.display(),
                        files = saved.files,
                        racy = saved.racy,
                        bytes = bytes.len(),
                        "search index saved"
                    ),
                    Err(e) => tracing::warn!(root = %slot.root.display(), "search index not saved: {e}"),
                }
            }
        });
    if let Err(e) = spawned {
        status
            .working
            .store(false, std::sync::atomic::Ordering::Release);
        let why = format!("no thread for the build: {e}");
        // called from async code too (`resume` at start-up): never block;
        // the state was just set to Building by the caller, unlocked
        if let Ok(mut st) = state.try_lock() {
            *st = State::Off {
                config: Box::new(crate::config::Config::zero_config()),
            };
        }
        status.set(Status {
            why: Some(why),
            ..Status::of(Phase::Off)
        });
    }
}

/// Where saved indexes live: the worker's own state directory, inside the
/// change journal's (which no surface may reach).
pub fn saved_dir(rt: &Runtime) -> PathBuf {
    rt.turns_dir.join("search-index")
}

/// A state directory of saved indexes, created if missing: refused when
/// it is a symbolic link (it could lead anywhere, a workspace root too).
fn anchor_of(dir: &Path) -> std::io::Result<crate::jail::Anchor> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(std::io::Error::other(format!(
            "{} is not a directory (a link?): saved indexes are not read or written there",
            dir.display()
        )));
    }
    crate::jail::Anchor::create(dir)
}

/// Remove `root`'s saved index, if any.
fn forget(rt: &Runtime, root: &Path) {
    forget_in(&saved_dir(rt), &persist::file_name(root));
}

/// Remove the saved file `name` of the state directory `dir`, if any.
pub(crate) fn forget_in(dir: &Path, name: &str) {
    let Ok(anchor) = anchor_of(dir) else {
        return;
    };
    if let Some(loc) = anchor.locate(&anchor.path().join(name)) {
        if let Ok(parent) = loc.parent() {
            let _ = parent.unlink();
        }
    }
}

/// The saved index of `root`, when there is one that every check passes;
/// why not otherwise (`Ok(None)`: none saved).
fn load(rt: &Runtime, root: &Path, budget: usize) -> Result<Option<persist::Loaded>, String> {
    // a saved index holds less than the index in memory
    let cap = (budget as u64).saturating_mul(2).saturating_add(1 << 20);
    match read_saved(&saved_dir(rt), &persist::file_name(root), cap)? {
        None => Ok(None),
        Some(bytes) => persist::decode(root, &bytes).map(Some),
    }
}

/// The bytes of the saved file `name` in the state directory `dir`, at
/// most `cap`: only a regular file of this worker's user that no one else
/// may write is read (`Ok(None)`: none saved).
pub(crate) fn read_saved(dir: &Path, name: &str, cap: u64) -> Result<Option<Vec<u8>>, String> {
    use std::os::unix::fs::MetadataExt;
    if std::fs::symlink_metadata(dir.join(name)).is_err() {
        return Ok(None);
    }
    let anchor = anchor_of(dir).map_err(|e| e.to_string())?;
    let loc = anchor
        .locate(&anchor.path().join(name))
        .ok_or("not in the state directory")?;
    let file = loc.open_read().map_err(|e| e.to_string())?;
    let md = file.metadata().map_err(|e| e.to_string())?;
    if !md.is_file() {
        return Err("not a regular file".into());
    }
    if md.uid() != nix::unistd::geteuid().as_raw() || md.mode() & 0o022 != 0 {
        return Err(format!(
            "owned by uid {} with mode {:o}: only a file of this worker's user that no one else \
             may write is trusted",
            md.uid(),
            md.mode() & 0o7777
        ));
    }
    let mut buf = Vec::new();
    if read_capped(&file, md.len().min(cap), cap, &mut buf).is_none() {
        return Err(format!(
            "{} bytes, over the {cap} a saved index may have",
            md.len()
        ));
    }
    Ok(Some(buf))
}

/// Save `bytes` as `root`'s index, atomically.
fn store(rt: &Runtime, root: &Path, bytes: &[u8]) -> std::io::Result<()> {
    store_in(&saved_dir(rt), &persist::file_name(root), bytes)
}

/// Save `bytes` as the file `name` of the state directory `dir`,
/// atomically, readable by this worker's user only.
pub(crate) fn store_in(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let anchor = anchor_of(dir)?;
    let loc = anchor
        .locate(&anchor.path().join(name))
        .ok_or_else(|| std::io::Error::other("not in the state directory"))?;
    // what a save killed between its link and its rename left behind
    if let Some(here) = anchor.locate(anchor.path()) {
        crate::jail::atomic::sweep(&here, std::time::Duration::from_secs(60));
    }
    crate::jail::atomic::write_atomic(
        &loc,
        bytes,
        Some(0o600),
        crate::jail::atomic::Clobber::Replace,
        &None,
    )
}

/// Put the calling thread in the idle scheduling class (`SCHED_IDLE`: it
/// runs only when no other thread wants the CPU) and the idle I/O class
/// (its reads wait for a disk nobody else is using). Per thread: the
/// worker's other threads keep their priority.
pub fn at_idle_priority() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscalls on the calling thread (pid 0) with a valid,
    // initialised parameter; no memory is handed over.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // ioprio_set(IOPRIO_WHO_PROCESS, 0 = this thread, class IDLE << 13)
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    const IOPRIO_CLASS_IDLE: libc::c_long = 3;
    // SAFETY: as above; the syscall takes integers only.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            IOPRIO_CLASS_IDLE << 13,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn build(
    rt: &Arc<Runtime>,
    root: &Path,
    budget: usize,
    quiet: Arc<Quiet>,
) -> Result<RootIndex, String> {
    let saved = match load(rt, root, budget) {
        Ok(loaded) => loaded.map(|l| {
            tracing::debug!(root = %root.display(), files = l.files, "search index: saved copy found");
            l.tree
        }),
        Err(why) => {
            tracing::info!(root = %root.display(), "search index: saved copy ignored ({why}); reading the tree");
            None
        }
    };
    let raw = root.to_str().ok_or("the root is not UTF-8")?;
    let root_at = rt
        .policy
        .resolve_existing(
            raw,
            crate::error::Surface::Coder,
            crate::policy::Tail::Follow,
            None,
        )
        .map_err(|e| format!("root not resolvable: {}", e.message))?;
    let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
        .map_err(|e| format!("no inotify instance: {e}"))?;
    let mut ix = RootIndex {
        root_at,
        config: rt.config.clone(),
        tree: Dir::default(),
        filtered: 0,
        ino,
        wds: HashMap::new(),
        bytes: 0,
        budget,
        watch_cap: watch_cap(),
        saved,
        reused: 0,
        quiet: Some(quiet),
        free_until: None,
    };
    let tree = ix.walk_below(rt, Path::new(""))?;
    ix.tree = tree;
    ix.saved = None;
    ix.quiet = None;
    Ok(ix)
}

impl RootIndex {
    /// Snapshot the directory `rel` (relative to the root) and everything
    /// below, watching each directory before it is listed and filtering
    /// each file after.
    fn walk_below(&mut self, rt: &Runtime, rel: &Path) -> Result<Dir, String> {
        let at = self.root_at.below(rel);
        let mut stack: Vec<(usize, Dir)> = vec![(0, Dir::default())];
        let mut failed: Option<String> = None;
        let mut scratch = Scratch::default();
        let opts = Options {
            max_depth: None,
            skip_hidden: false,
            ignore_files: false,
        };
        crate::jail::walk::walk(at.loc(), opts, |node| {
            if failed.is_some() {
                return Step::Stop;
            }
            if node.kind == Kind::Dir {
                let watched = if node.depth == 0 {
                    at.loc().open_dir()
                } else {
                    node.open(nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY)
                };
                // unreadable: the walk does not enter it either
                if self.wds.len() >= self.watch_cap {
                    failed = Some(format!(
                        "the tree has more than {} directories, a quarter of the user's inotify \
                         watches (fs.inotify.max_user_watches); raise that limit to index it",
                        self.watch_cap
                    ));
                    return Step::Stop;
                }
                if let Ok(fd) = watched {
                    let proc = crate::jail::proc_path(fd.as_fd());
                    match self.ino.add_watch(&proc, mask()) {
                        Ok(wd) => {
                            self.wds.insert(wd, rel.join(node.rel));
                        }
                        Err(e) => {
                            failed = Some(format!(
                                "cannot watch a directory ({e}); raise fs.inotify.max_user_watches"
                            ));
                            return Step::Stop;
                        }
                    }
                }
            }
            if node.depth == 0 {
                return Step::Descend;
            }
            while stack.last().is_some_and(|(d, _)| *d >= node.depth) {
                let (_, done) = stack.pop().expect("non-empty");
                attach(&mut stack, done);
            }
            let known = tree::Known {
                protected: rt.policy.is_protected(node.path),
                excluded: rt.policy.is_excluded(node.path),
            };
            // a file is read once, by its handle, after its directory's
            // watch exists
            let summary = (node.kind == Kind::File && !known.protected && !known.excluded)
                .then(|| {
                    if let Some(q) = &self.quiet {
                        q.wait(&mut self.free_until);
                    }
                    self.reuse(&rel.join(node.rel), node)
                        .or_else(|| summary_of(node.open_read(), &mut scratch))
                })
                .flatten();
            self.account(summary.as_ref().map(cost), true);
            self.bytes += ENTRY_OVERHEAD + node.name.len();
            let top = &mut stack.last_mut().expect("the root frame").1;
            top.entries.push(tree::Entry {
                name: node.name.into(),
                kind: node.kind,
                known,
                sub: None,
                summary,
            });
            if node.kind == Kind::Dir {
                stack.push((node.depth, Dir::default()));
            }
            if self.bytes > self.budget {
                failed = Some(self.over_budget());
                return Step::Stop;
            }
            Step::Descend
        });
        if let Some(why) = failed {
            return Err(why);
        }
        while stack.len() > 1 {
            let (_, done) = stack.pop().expect("non-empty");
            attach(&mut stack, done);
        }
        Ok(stack.pop().expect("the root frame").1)
    }

    /// The saved filter of the file at `rel` (relative to the root), when
    /// the file's stamp is the one it was saved with.
    fn reuse(&mut self, rel: &Path, node: &crate::jail::walk::Node<'_>) -> Option<Summary> {
        let saved = self.saved.as_mut()?.entry_at_mut(rel)?.summary.take()?;
        let st = node.lstat().ok()?;
        if st.st_nlink != 1 || persist::Stamp::of_stat(&st) != saved.stamp {
            return None;
        }
        self.reused += 1;
        Some(saved)
    }

    /// Why a root over the budget is not indexed, with what would index it.
    fn over_budget(&self) -> String {
        let per_file = self.bytes / self.filtered.max(1);
        format!(
            "the index would hold more than code.search_index_max_bytes ({} bytes): {} bytes for \
             the first {} files (about {per_file} bytes a file); raise code.search_index_max_bytes \
             to about {per_file} times the tree's files to index it, or search a smaller folder",
            self.budget, self.bytes, self.filtered
        )
    }

    /// Count a summary of `cost` bytes in (`add`) or out of what is held.
    fn account(&mut self, cost: Option<usize>, add: bool) {
        let Some(n) = cost else {
            return;
        };
        if add {
            self.bytes += n;
            self.filtered += 1;
        } else {
            self.bytes = self.bytes.saturating_sub(n);
            self.filtered = self.filtered.saturating_sub(1);
        }
    }

    /// (Re)filter the file at `rel` (an entry of the snapshot); a file that
    /// is protected, under a default exclude, too large or unreadable gets
    /// no filter (always read). The policy's word is the one the entry
    /// keeps (a new configuration rebuilds the index); a file gone from the
    /// snapshot since (its directory is listed again) is not read.
    fn summarize(&mut self, rel: &Path, scratch: &mut Scratch) {
        let Some(entry) = self.tree.entry_at_mut(rel) else {
            return;
        };
        let fresh = if entry.known.protected || entry.known.excluded {
            None
        } else {
            summary_of(self.root_at.below(rel).loc().open_read(), scratch)
        };
        let fresh_cost = fresh.as_ref().map(cost);
        let old = std::mem::replace(&mut entry.summary, fresh);
        self.account(old.as_ref().map(cost), false);
        self.account(fresh_cost, true);
    }

    /// Apply every change event queued so far. An error drops the index.
    fn sync(&mut self, rt: &Runtime) -> Result<(), String> {
        let mut files: BTreeSet<PathBuf> = BTreeSet::new();
        let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
        let mut created: BTreeSet<PathBuf> = BTreeSet::new();
        loop {
            let events = match self.ino.read_events() {
                Ok(ev) => ev,
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(e) => return Err(format!("cannot read change events: {e}")),
            };
            if events.is_empty() {
                break;
            }
            for ev in events {
                if ev.mask.contains(F::IN_Q_OVERFLOW) {
                    return Err("the kernel's event queue overflowed".into());
                }
                if ev.mask.contains(F::IN_IGNORED) {
                    self.wds.remove(&ev.wd);
                    continue;
                }
                let Some(dir) = self.wds.get(&ev.wd).cloned() else {
                    continue;
                };
                let Some(name) = ev.name else {
                    if dir.as_os_str().is_empty()
                        && ev.mask.intersects(F::IN_DELETE_SELF | F::IN_MOVE_SELF)
                    {
                        return Err("the root itself moved or went away".into());
                    }
                    continue;
                };
                let path = dir.join(&name);
                let is_dir = ev.mask.contains(F::IN_ISDIR);
                if is_dir && ev.mask.intersects(F::IN_MOVED_FROM | F::IN_MOVED_TO) {
                    return Err(format!("directory {} moved", path.display()));
                }
                if ev
                    .mask
                    .intersects(F::IN_CREATE | F::IN_DELETE | F::IN_MOVED_FROM | F::IN_MOVED_TO)
                {
                    if ev.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) {
                        created.insert(path.clone());
                    }
                    dirs.insert(dir);
                } else if is_dir {
                    // a directory's mode changed: it may have become
                    // (un)readable; list it again
                    dirs.insert(path);
                } else {
                    files.insert(path);
                }
            }
            if files.len() + dirs.len() > MAX_SYNC {
                return Err(format!("more than {MAX_SYNC} entries changed"));
            }
        }
        let mut scratch = None::<Scratch>;
        for d in &dirs {
            self.relist(rt, d, &created, &mut scratch)?;
        }
        for f in files {
            let s = scratch.get_or_insert_with(Scratch::default);
            self.summarize(&f, s);
        }
        if self.bytes > self.budget {
            return Err(self.over_budget());
        }
        Ok(())
    }

    /// List the directory `rel` again: entries gone are dropped (with what
    /// was below them), new ones added (a new directory walked whole), and
    /// files that are new or were created again get a fresh filter.
    fn relist(
        &mut self,
        rt: &Runtime,
        rel: &Path,
        created: &BTreeSet<PathBuf>,
        scratch: &mut Option<Scratch>,
    ) -> Result<(), String> {
        let at = self.root_at.below(rel);
        let listed = at
            .loc()
            .open_dir()
            .and_then(|fd| dir::read_sorted(fd.as_fd()));
        let Some(old) = self.tree.find_mut(rel) else {
            // not in the snapshot (below a directory being dropped)
            return Ok(());
        };
        let mut old_entries = std::mem::take(&mut old.entries);
        let entries = listed.unwrap_or_default();
        let mut next = Vec::with_capacity(entries.len());
        let mut dropped: Vec<tree::Entry> = Vec::new();
        let mut walk_new: Vec<(usize, PathBuf)> = Vec::new();
        let mut refilter: Vec<PathBuf> = Vec::new();
        let mut old_iter = old_entries.drain(..).peekable();
        for e in entries {
            // drop old entries sorting before this one
            while old_iter
                .peek()
                .is_some_and(|o| o.name.as_encoded_bytes() < e.name.as_encoded_bytes())
            {
                dropped.push(old_iter.next().expect("peeked"));
            }
            let path = rel.join(&e.name);
            let same = old_iter
                .peek()
                .is_some_and(|o| *o.name == *e.name && o.kind == e.kind)
                && !created.contains(&path);
            if same {
                next.push(old_iter.next().expect("peeked"));
                continue;
            }
            if old_iter.peek().is_some_and(|o| *o.name == *e.name) {
                dropped.push(old_iter.next().expect("peeked"));
            }
            let abs = self.root_at.path.join(&path);
            match e.kind {
                Kind::Dir => walk_new.push((next.len(), path)),
                Kind::File => refilter.push(path),
                _ => {}
            }
            self.bytes += ENTRY_OVERHEAD + e.name.len();
            next.push(tree::Entry {
                known: tree::Known {
                    protected: rt.policy.is_protected(&abs),
                    excluded: rt.policy.is_excluded(&abs),
                },
                name: e.name.as_os_str().into(),
                kind: e.kind,
                sub: (e.kind == Kind::Dir).then(Box::default),
                summary: None,
            });
        }
        dropped.extend(old_iter);
        drop(old_entries);
        for d in dropped {
            self.forget(rel, d);
        }
        for (i, path) in walk_new {
            let sub = self.walk_below(rt, &path)?;
            next[i].sub = Some(Box::new(sub));
        }
        if let Some(dir) = self.tree.find_mut(rel) {
            dir.entries = next;
        }
        let s = scratch.get_or_insert_with(Scratch::default);
        for f in refilter {
            self.summarize(&f, s);
        }
        Ok(())
    }

    /// Drop an entry of `parent` and everything below it.
    fn forget(&mut self, parent: &Path, e: tree::Entry) {
        self.bytes = self.bytes.saturating_sub(ENTRY_OVERHEAD + e.name.len());
        let path = parent.join(&e.name);
        self.account(e.summary.as_ref().map(cost), false);
        if let Some(sub) = e.sub {
            let wds: Vec<WatchDescriptor> = self
                .wds
                .iter()
                .filter(|(_, p)| **p == path)
                .map(|(w, _)| *w)
                .collect();
            for wd in wds {
                self.wds.remove(&wd);
                let _ = self.ino.rm_watch(wd);
            }
            for child in sub.entries {
                self.forget(&path, child);
            }
        }
    }
}

fn attach(stack: &mut [(usize, Dir)], done: Dir) {
    if let Some((_, parent)) = stack.last_mut() {
        if let Some(last) = parent.entries.last_mut() {
            last.sub = Some(Box::new(done));
        }
    }
}

/// Bytes a summary holds, with its bookkeeping.
fn cost(sm: &Summary) -> usize {
    sm.content.bytes() + FILE_OVERHEAD
}

/// What the index keeps of a file opened for reading (`None`: it gets no
/// filter and is always read).
fn summary_of(file: std::io::Result<std::fs::File>, scratch: &mut Scratch) -> Option<Summary> {
    use std::os::unix::fs::MetadataExt;
    let file = file.ok()?;
    let md = file.metadata().ok()?;
    if !md.is_file() || md.len() > MAX_FILE {
        return None;
    }
    // the read buffer is the scratch's, kept between files (a fresh one a
    // file cost a page fault per page of every file the build read)
    let mut buf = std::mem::take(&mut scratch.read);
    let summary = read_capped(&file, md.len(), MAX_FILE, &mut buf).map(|bytes| Summary {
        content: scratch.summarize(bytes),
        size: bytes.len() as u64,
        linked: md.nlink() > 1,
        stamp: persist::Stamp::of_metadata(&md),
    });
    scratch.keep_read(buf);
    summary
}

/// All of `file` (`size` bytes when its size was taken) into `buf`; `None`
/// when it cannot be read or has grown past `cap` since.
pub(crate) fn read_capped<'b>(
    file: &std::fs::File,
    size: u64,
    cap: u64,
    buf: &'b mut Vec<u8>,
) -> Option<&'b [u8]> {
    use std::io::Read;
    buf.clear();
    // room for the whole file (and the read that sees its end) up front,
    // not grown as `read_to_end` goes
    buf.reserve(size as usize + 1);
    file.take(cap + 1).read_to_end(buf).ok()?;
    (buf.len() as u64 <= cap).then_some(buf.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build waits while a search runs, but not without end: searches
    /// that overlap forever still leave it time to read.
    #[test]
    fn a_build_gives_way_to_searches_but_is_never_starved() {
        let ix = Indexes::new();
        let quiet = ix.quiet.clone();
        let mut free = None;
        // no search: no wait, no free period
        quiet.wait(&mut free);
        assert!(free.is_none());
        // a search that never ends: the wait gives up, then reads freely
        let held = ix.searching();
        quiet.wait(&mut free);
        let until = free.expect("a free period after the longest pause");
        let again = std::time::Instant::now();
        quiet.wait(&mut free);
        if again < until {
            assert_eq!(free, Some(until), "inside the free period: no wait");
        } else {
            // a machine so busy the period ran out: a new pause, a new period
            assert!(free.is_some_and(|t| t > until));
        }
        drop(held);
        // the search ended: a waiting build wakes at once
        let (tx, rx) = std::sync::mpsc::channel();
        let held = ix.searching();
        let q2 = quiet.clone();
        let t = std::thread::spawn(move || {
            q2.wait(&mut None);
            tx.send(()).unwrap();
        });
        drop(held);
        rx.recv().unwrap();
        t.join().unwrap();
        assert_eq!(*quiet.running.lock().unwrap(), 0);
    }
}
