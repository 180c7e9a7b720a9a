//! Every descendant of a command, wherever it went, and the worker's orphans.
//!
//! A process group holds what a command starts only until something leaves
//! it (`setsid`/`setpgid`: a daemon, GNU `timeout`, Python's `os.setpgrp()`).
//! To end those with their command too, the worker is a *child subreaper*
//! (`PR_SET_CHILD_SUBREAPER`, set once before the first spawn): an orphan is
//! re-parented to the worker instead of init, so its ancestry never leaves
//! the worker. Each command is a [`Tree`]:
//!
//! - **Marker.** The command's environment carries [`MARKER`]`=<id>`, which
//!   everything it starts inherits unless it scrubs its environment. An
//!   orphan re-parented to the worker is attributed by it (read from
//!   `/proc/<pid>/environ`).
//! - **Members** are the leader (until reaped), its process group, the
//!   worker's orphans carrying the marker, the members recorded earlier, and
//!   every descendant of those (ppid links from `/proc/*/stat`). A member is
//!   recorded with its start time (`/proc/<pid>/stat` field 22); a recorded
//!   pid counts only while the start time matches, so a recycled pid is never
//!   taken for it. A background thread records the members of every live
//!   tree every [`TICK`], so a descendant that scrubs its environment and is
//!   orphaned later is still known; every kill takes a fresh snapshot first.
//! - **Signals** go through a pidfd opened *before* the start time is checked
//!   again (`pidfd_open` + `pidfd_send_signal`), so the process checked is the
//!   one signalled; a kernel without pidfds gets `kill(2)` after the check.
//! - **The end of a short command** (under 100 ms, so pids cannot have
//!   wrapped) costs one read of `ns_last_pid` plus one
//!   `waitid(WNOWAIT)` per pid allocated meanwhile: descendants have pids
//!   allocated after the leader, and once the leader is gone every survivor
//!   hangs below a live orphan, i.e. a child of the worker it did not spawn
//!   ([`Tree::may_have_leftovers`]); a full scan runs only when one is found.
//!
//! **Reaping.** Orphans that die become the worker's zombies; the same
//! thread reaps them, but never a pid some spawner in the worker owns.
//! Spawners register each child through [`spawning`] (a read lock held across
//! the spawn; the reaper reaps under the write lock) and keep it registered
//! ([`Owned`]) until they reaped it themselves, so `tokio`'s `Child::wait` (or
//! any later spawner's, e.g. a terminal's) keeps its exit status. A zombie is
//! reaped only after two passes saw it, so a child of code that does not
//! register (a plain `std::process::Command::output`) is reaped by its owner
//! first.

use dashmap::DashMap;
use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::Signal;
use std::collections::{HashMap, HashSet};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard};
use std::time::Duration;

/// The environment variable naming the command a process belongs to.
pub const MARKER: &str = "IDE_COMMAND_ID";
/// How often the members of live commands are recorded.
pub const TICK: Duration = Duration::from_millis(250);
/// How often orphaned zombies are looked for while no command runs.
const IDLE_TICK: Duration = Duration::from_secs(1);
/// Most pids allocated since a command's spawn that its end still checks
/// one by one (a syscall each); past it, a full scan.
const PROBE_SPAN: i32 = 4096;
/// Commands that ran longer get a full scan at their end instead of the
/// pid probe: the pids could have wrapped around meanwhile, and a scan is
/// cheap next to such a command.
const PROBE_MAX_AGE: Duration = Duration::from_millis(100);

struct Worker {
    pid: i32,
    subreaper: bool,
    prefix: String,
    seq: AtomicU64,
}

static WORKER: OnceLock<Worker> = OnceLock::new();

fn worker() -> &'static Worker {
    WORKER.get_or_init(|| {
        super::signals::children_start_with_defaults();
        let subreaper = match nix::sys::prctl::set_child_subreaper(true) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "cannot become a child subreaper: processes that leave a command's group \
                     are found only while their parent lives"
                );
                false
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("ide-reaper".into())
            .spawn(reaper_loop)
        {
            tracing::warn!(error = %e, "cannot start the orphan reaper thread");
        }
        Worker {
            pid: std::process::id() as i32,
            subreaper,
            prefix: uuid::Uuid::new_v4().simple().to_string(),
            seq: AtomicU64::new(0),
        }
    })
}

/// Make the worker a child subreaper and start the reaper (once; later
/// calls do nothing). Returns whether the worker is a subreaper.
pub fn init() -> bool {
    worker().subreaper
}

// ---- the registry of children the worker reaps itself ----

static WINDOW: RwLock<()> = RwLock::new(());
static OWNED: LazyLock<Mutex<HashSet<i32>>> = LazyLock::new(Mutex::default);

fn owned() -> MutexGuard<'static, HashSet<i32>> {
    OWNED.lock().unwrap_or_else(|p| p.into_inner())
}

fn is_owned(pid: i32) -> bool {
    owned().contains(&pid)
}

/// Held across a spawn: the reaper cannot reap the new child before it is
/// registered with [`Spawning::own`].
pub struct Spawning {
    _window: RwLockReadGuard<'static, ()>,
}

/// Enter the spawn window (and set the worker up on first use).
pub fn spawning() -> Spawning {
    init();
    Spawning {
        _window: WINDOW.read().unwrap_or_else(|p| p.into_inner()),
    }
}

impl Spawning {
    /// Register the child just spawned; it stays the spawner's to reap
    /// until the returned guard is dropped (drop it once reaped).
    pub fn own(self, pid: i32) -> Owned {
        owned().insert(pid);
        Owned(pid)
    }
}

/// A child some spawner in the worker reaps itself.
#[derive(Debug)]
pub struct Owned(i32);

impl Drop for Owned {
    fn drop(&mut self) {
        owned().remove(&self.0);
    }
}

// ---- /proc ----

/// What `/proc/<pid>/stat` says about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub state: u8,
    /// Start time after boot, in clock ticks (field 22).
    pub start: u64,
}

impl Stat {
    /// Running (or sleeping, stopped...), not a zombie.
    pub fn live(&self) -> bool {
        !matches!(self.state, b'Z' | b'X' | b'x')
    }
}

fn parse_stat(pid: i32, raw: &[u8]) -> Option<Stat> {
    // The command name (field 2) may hold anything; it ends at the last ')'.
    let close = raw.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&raw[close + 1..]).ok()?;
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.bytes().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    // the next field is 6; field 22 is 16 further
    let start = f.nth(16)?.parse().ok()?;
    Some(Stat {
        pid,
        ppid,
        pgrp,
        state,
        start,
    })
}

/// One process, `None` once it is gone (or reaped).
pub fn stat(pid: i32) -> Option<Stat> {
    let raw = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &raw)
}

/// Every process (thread-group leaders only).
pub fn scan() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// The command id in a process's environment, if readable and present.
pub(crate) fn marker_of(pid: i32) -> Option<Vec<u8>> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = MARKER.as_bytes();
    env.split(|&b| b == 0).find_map(|var| {
        (var.len() > key.len() && var.starts_with(key) && var[key.len()] == b'=')
            .then(|| var[key.len() + 1..].to_vec())
    })
}

/// The last pid the kernel handed out in this pid namespace (the file is
/// kept open and read with `pread`: one syscall a command).
fn last_pid() -> Option<i32> {
    use std::os::unix::fs::FileExt;
    static FILE: OnceLock<Option<std::fs::File>> = OnceLock::new();
    let file = FILE
        .get_or_init(|| std::fs::File::open("/proc/sys/kernel/ns_last_pid").ok())
        .as_ref()?;
    let mut buf = [0u8; 16];
    let n = file.read_at(&mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
}

/// Send `signal` to `member` if it is still that process (same start time).
fn send(member: &Stat, signal: Signal) -> bool {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1;
    // no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, member.pid, 0) };
    let same = || stat(member.pid).is_some_and(|s| s.start == member.start);
    if fd < 0 {
        return match Errno::last() {
            // no pidfds here: check, then signal by pid
            Errno::ENOSYS | Errno::EINVAL if same() => {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(member.pid), signal).is_ok()
            }
            _ => false,
        };
    }
    // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    if !same() {
        return false; // the pid now names another process
    }
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal(2) on a pidfd we own, with no siginfo
    // (NULL) and no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal as libc::c_int,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    rc == 0
}

// ---- trees ----

/// Every process at one moment, with the ppid links and the markers of the
/// worker's orphans (the only processes whose marker is read).
struct Snapshot {
    all: Vec<Stat>,
    /// ppid → indexes into `all`.
    children: HashMap<i32, Vec<usize>>,
    /// orphan pid → its marker, if any.
    markers: HashMap<i32, Option<Vec<u8>>>,
}

impl Snapshot {
    fn take() -> Snapshot {
        let w = worker();
        let all = scan();
        let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
        let mut markers = HashMap::new();
        for (i, s) in all.iter().enumerate() {
            children.entry(s.ppid).or_default().push(i);
            let orphan = s.ppid == w.pid || (!w.subreaper && s.ppid == 1);
            if orphan && s.live() && !is_owned(s.pid) {
                markers.insert(s.pid, marker_of(s.pid));
            }
        }
        Snapshot {
            all,
            children,
            markers,
        }
    }
}

static LIVE: LazyLock<DashMap<String, Arc<Tree>>> = LazyLock::new(DashMap::new);

/// A fresh command id for [`MARKER`] (unique within the worker, and across
/// workers by a random prefix).
pub fn new_id() -> String {
    let w = worker();
    format!("{}-{}", w.prefix, w.seq.fetch_add(1, Ordering::Relaxed))
}

/// One command's processes.
#[derive(Debug)]
pub struct Tree {
    id: String,
    leader: i32,
    leader_reaped: AtomicBool,
    opened: std::time::Instant,
    /// Members seen before: pid → start time.
    seen: Mutex<HashMap<i32, u64>>,
}

impl Tree {
    /// Start tracking the command `leader` spawned with `MARKER=id`.
    pub fn open(id: String, leader: i32) -> Arc<Tree> {
        let tree = Arc::new(Tree {
            id: id.clone(),
            leader,
            leader_reaped: AtomicBool::new(false),
            opened: std::time::Instant::now(),
            seen: Mutex::new(HashMap::new()),
        });
        LIVE.insert(id, tree.clone());
        tree
    }

    /// Stop tracking (the command is over).
    pub fn close(&self) {
        LIVE.remove(&self.id);
    }

    /// The leader was reaped: its pid no longer names it.
    pub fn leader_reaped(&self) {
        self.leader_reaped.store(true, Ordering::SeqCst);
    }

    fn seen(&self) -> MutexGuard<'_, HashMap<i32, u64>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live members in `snap`, recorded for later.
    fn members_in(&self, snap: &Snapshot) -> Vec<Stat> {
        let w = worker();
        let reaped = self.leader_reaped.load(Ordering::SeqCst);
        let seen = self.seen().clone();
        let mut roots: Vec<&Stat> = Vec::new();
        for s in &snap.all {
            if s.pid == w.pid || s.pid == 1 || !s.live() {
                continue;
            }
            let ours = (!reaped && s.pid == self.leader)
                || s.pgrp == self.leader
                || seen.get(&s.pid) == Some(&s.start)
                || snap
                    .markers
                    .get(&s.pid)
                    .is_some_and(|m| m.as_deref() == Some(self.id.as_bytes()));
            if ours {
                roots.push(s);
            }
        }
        let mut found: HashMap<i32, Stat> = HashMap::new();
        while let Some(s) = roots.pop() {
            if s.pid == w.pid || !s.live() || found.insert(s.pid, *s).is_some() {
                continue;
            }
            if let Some(kids) = snap.children.get(&s.pid) {
                roots.extend(kids.iter().map(|&i| &snap.all[i]));
            }
        }
        *self.seen() = found.iter().map(|(&p, s)| (p, s.start)).collect();
        found.into_values().collect()
    }

    /// The live members now (a full scan).
    pub fn members(&self) -> Vec<Stat> {
        self.members_in(&Snapshot::take())
    }

    /// Signal every live member; returns how many there were.
    pub fn signal(&self, signal: Signal) -> usize {
        let members = self.members();
        for m in &members {
            send(m, signal);
        }
        members.len()
    }

    /// Whether anything of this command may still run after its leader
    /// was reaped; cheap when nothing was forked since the spawn. `false` is
    /// certain, `true` asks for [`Tree::members`].
    pub fn may_have_leftovers(&self) -> bool {
        let w = worker();
        if !w.subreaper || self.opened.elapsed() > PROBE_MAX_AGE {
            return true;
        }
        let recorded: Vec<(i32, u64)> = self.seen().iter().map(|(&p, &s)| (p, s)).collect();
        if recorded
            .iter()
            .any(|&(pid, start)| stat(pid).is_some_and(|s| s.start == start && s.live()))
        {
            return true;
        }
        let Some(last) = last_pid() else {
            return true;
        };
        let span = last.wrapping_sub(self.leader);
        if !(0..=PROBE_SPAN).contains(&span) {
            return true; // many forks, or the pids wrapped: scan instead
        }
        // Only a live orphan (a child of the worker it did not spawn) can
        // hold a survivor; the group is checked by the caller. The worker's
        // own children are skipped by a lookup, every other pid by one
        // `waitid(WNOWAIT)`: no /proc read, nothing reaped.
        // An orphan carrying another command's marker (from this worker) is
        // that command's, like everything below it; a child still being
        // spawned by a concurrent command is one too.
        let own_prefix = format!("{}-", w.prefix);
        (self.leader + 1..=last).any(|pid| {
            if is_owned(pid) || !live_child(pid) {
                return false;
            }
            match marker_of(pid) {
                Some(m) if m == self.id.as_bytes() => true,
                Some(m) => !m.starts_with(own_prefix.as_bytes()),
                None => true,
            }
        })
    }
}

/// Whether `pid` is a live (not yet exited) child of the worker. Threads,
/// other processes and missing pids answer ECHILD; a zombie is left as is.
fn live_child(pid: i32) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    matches!(
        waitid(Id::Pid(nix::unistd::Pid::from_raw(pid)), flags),
        Ok(WaitStatus::StillAlive)
    )
}

// ---- the reaper thread ----

fn reaper_loop() {
    let mut zombies_before: HashMap<i32, u64> = HashMap::new();
    loop {
        std::thread::sleep(if LIVE.is_empty() { IDLE_TICK } else { TICK });
        let Some(w) = WORKER.get() else {
            continue;
        };
        let snap = Snapshot::take();
        let trees: Vec<Arc<Tree>> = LIVE.iter().map(|e| e.value().clone()).collect();
        for tree in trees {
            tree.members_in(&snap);
        }
        let zombies: HashMap<i32, u64> = snap
            .all
            .iter()
            .filter(|s| s.ppid == w.pid && !s.live())
            .map(|s| (s.pid, s.start))
            .collect();
        let ripe: Vec<(i32, u64)> = zombies
            .iter()
            .filter(|(pid, start)| zombies_before.get(pid) == Some(start))
            .map(|(&p, &s)| (p, s))
            .collect();
        if !ripe.is_empty() {
            let _window = WINDOW.write().unwrap_or_else(|p| p.into_inner());
            for (pid, start) in ripe {
                if is_owned(pid) {
                    continue;
                }
                let still =
                    stat(pid).is_some_and(|s| s.start == start && s.ppid == w.pid && !s.live());
                if still {
                    let _ = nix::sys::wait::waitpid(
                        nix::unistd::Pid::from_raw(pid),
                        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                    );
                }
            }
        }
        zombies_before = zombies;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_an_odd_command_name() {
        let raw = b"42 (a) b (c) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        let s = parse_stat(42, raw).unwrap();
        assert_eq!((s.ppid, s.pgrp, s.state, s.start), (7, 42, b'S', 98765));
        assert!(s.live());
        let me = stat(std::process::id() as i32).unwrap();
        assert!(me.start > 0 && me.live());
    }

    #[test]
    fn the_last_pid_follows_each_spawn() {
        for _ in 0..2 {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id() as i32;
            let last = last_pid().expect("ns_last_pid readable");
            // later pids may have been handed out meanwhile (or wrapped)
            assert!(last >= pid || last < 1000, "{last} < {pid}");
            let _ = child.wait();
        }
    }
}
