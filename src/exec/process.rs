//! Host processes: spawn in their own process group, capture, reap, kill.
//!
//! Every command leads a process group of its own (pgid = its pid), so the
//! group holds everything it starts and killing the group reaches
//! grandchildren. When the worker itself has a controlling terminal (run by
//! hand), the command also gets a new session (`setsid`), so nothing it
//! starts can prompt on, read or stop on that terminal; a worker without one
//! (the deployed case) uses `setpgid`, which keeps the spawn on the fast
//! `posix_spawn` path. See [`Detach`]. One supervisor task per process owns the
//! child handle and always waits for it, so every child is reaped whatever
//! happens to the call that started it.
//!
//! A process is *done* when its leader has exited and both output pipes
//! reached end of file — or, when something it left behind (a daemonized
//! grandchild) still holds a pipe open, [`DRAIN_GRACE`] after the leader
//! exited. Reading then stops and whatever the leftover writes later is
//! dropped; the call does not wait for it.
//!
//! Killing is TERM to the group and to every other member of the command's
//! [`Tree`] (descendants that left the group: daemons, `timeout`,
//! `setpgrp`), then KILL after [`KILL_GRACE`] unless all of them ended. The
//! group id is the leader's pid; it is only signalled while the leader is
//! unreaped or the group still has members, so it cannot name a recycled
//! pid; other members are signalled through pidfds (see [`tree`]).

use super::capture::{self, Capture, Shape};
use super::env_gate::ChildEnv;
use super::tree::{self, Tree};
use crate::error::Failure;
use dashmap::DashMap;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long output pipes may stay open after the leader exited.
pub const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How long a TERMed group has to exit before it is KILLed.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// Everything needed to start one command (already checked by the policy).
#[derive(Debug, Clone)]
pub struct Spec {
    pub argv: Vec<String>,
    /// Where the command starts (for messages, and when no handle is held).
    pub cwd: PathBuf,
    /// The start directory held open by the policy's resolution: the child
    /// enters it through `/proc/self/fd/N` (the descriptor's magic link, so
    /// the directory itself, not its path), which keeps the `posix_spawn`
    /// path (`posix_spawn_file_actions_addchdir_np`).
    pub cwd_handle: Option<Arc<std::os::fd::OwnedFd>>,
    /// The child environment, relative to the worker's.
    pub env: ChildEnv,
    /// Written to stdin, then EOF; `None` = /dev/null.
    pub stdin: Option<String>,
    pub detach: Detach,
}

/// How a command is set apart from the worker. Both make it the leader of
/// a new process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detach {
    /// `setsid`: a new session too, without a controlling terminal. Needs a
    /// `pre_exec` hook, so the spawn forks.
    Session,
    /// `setpgid(0, 0)`: spawned with `posix_spawn`, the cheaper path.
    Group,
}

impl Detach {
    /// `Session` when this worker has a controlling terminal (whose
    /// prompts a command could otherwise reach), `Group` otherwise. Decided
    /// once per process.
    pub fn for_this_worker() -> Detach {
        static MODE: OnceLock<Detach> = OnceLock::new();
        *MODE.get_or_init(|| {
            // Opening /dev/tty fails (ENXIO) exactly when there is no
            // controlling terminal; it acquires nothing.
            if std::fs::File::open("/dev/tty").is_ok() {
                Detach::Session
            } else {
                Detach::Group
            }
        })
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The terminating signal, when a signal ended it.
    pub signal: Option<i32>,
    /// Waiting for it failed (the status is unknown).
    pub wait_failed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// The leader exited and was reaped; output is still draining.
    Exited(Exit),
    Done(Exit),
}

/// Where a command's two output streams are captured, each kept to `shape`.
#[derive(Debug, Clone)]
pub struct Outputs {
    pub stdout: Arc<Capture>,
    pub stderr: Arc<Capture>,
}

impl Outputs {
    pub fn new(shape: Shape) -> Outputs {
        Outputs {
            stdout: Capture::new(shape),
            stderr: Capture::new(shape),
        }
    }
}

/// A spawned command.
#[derive(Debug)]
pub struct Process {
    /// Leader pid = process group id.
    pid: i32,
    pub outputs: Outputs,
    phase: watch::Receiver<Phase>,
    /// Everything it started, in the group or not.
    tree: Arc<Tree>,
}

impl Process {
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Wait until the process is done (leader reaped, output drained).
    pub async fn wait(&self) -> Exit {
        let mut rx = self.phase.clone();
        loop {
            if let Phase::Done(exit) = *rx.borrow_and_update() {
                return exit;
            }
            if rx.changed().await.is_err() {
                // The supervisor is gone without reporting: it always
                // reports before it ends, so this means it panicked.
                return Exit {
                    code: None,
                    signal: None,
                    wait_failed: true,
                };
            }
        }
    }

    /// The exit once done, without waiting.
    pub fn done(&self) -> Option<Exit> {
        match *self.phase.borrow() {
            Phase::Done(exit) => Some(exit),
            _ => None,
        }
    }

    fn leader_exited(&self) -> bool {
        !matches!(*self.phase.borrow(), Phase::Running)
    }

    fn signal_group(&self, signal: Option<Signal>) -> Result<(), Errno> {
        killpg(Pid::from_raw(self.pid), signal)
    }

    /// Whether any member of the group is still running. Zombies do not
    /// count: a killed grandchild is dead even while nobody has reaped it yet
    /// (orphans wait for init, which may reap only now and then).
    fn group_alive(&self) -> bool {
        // EPERM: a member exists that we may not signal; still alive.
        if matches!(self.signal_group(None), Err(Errno::ESRCH)) {
            return false;
        }
        live_member_of(self.pid).unwrap_or(true)
    }

    /// Kill the command: TERM to its group and to every other descendant,
    /// then KILL after `grace` unless all of them ended first. Returns once
    /// they ended or were KILLed. A process already done is left alone
    /// (false).
    pub async fn terminate(&self, grace: Duration) -> bool {
        if self.done().is_some() {
            return false;
        }
        let _ = self.signal_group(Some(Signal::SIGTERM));
        self.signal_tree(Signal::SIGTERM).await;
        let deadline = Instant::now() + grace;
        loop {
            if self.leader_exited() && !self.group_alive() && self.member_count().await == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill_all().await;
        true
    }

    /// Signal every member of the tree (a full scan, on the blocking pool);
    /// how many there were.
    async fn signal_tree(&self, signal: Signal) -> usize {
        let tree = self.tree.clone();
        tokio::task::spawn_blocking(move || tree.signal(signal))
            .await
            .unwrap_or(0)
    }

    /// How many members the tree still has.
    async fn member_count(&self) -> usize {
        let tree = self.tree.clone();
        tokio::task::spawn_blocking(move || tree.members().len())
            .await
            .unwrap_or(0)
    }

    /// KILL the group and every member, again until none is left (a member
    /// may fork between a scan and its KILL), for at most [`KILL_SWEEP`].
    async fn kill_all(&self) {
        let deadline = Instant::now() + KILL_SWEEP;
        loop {
            if self.group_alive() {
                let _ = self.signal_group(Some(Signal::SIGKILL));
            }
            let left = self.signal_tree(Signal::SIGKILL).await;
            if (left == 0 && !self.group_alive()) || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// After the leader exited: TERM what it left behind, KILL it after
    /// [`LEFTOVER_GRACE`]. Cheap when it left nothing.
    async fn end_leftovers(&self) {
        let tree = self.tree.clone();
        if !self.group_alive() && !tree.may_have_leftovers() {
            return;
        }
        let _ = self.signal_group(Some(Signal::SIGTERM));
        if self.signal_tree(Signal::SIGTERM).await == 0 && !self.group_alive() {
            return;
        }
        let deadline = Instant::now() + LEFTOVER_GRACE;
        while Instant::now() < deadline {
            if !self.group_alive() && self.member_count().await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill_all().await;
    }
}

/// Whether some process in group `pgid` is not a zombie, from `/proc`
/// (`None` when `/proc` cannot be read).
fn live_member_of(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone meanwhile
        };
        // after the command name: state, ppid, pgrp, ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        if pgrp == Some(pgid) && state != "Z" && state != "X" {
            return Some(true);
        }
    }
    Some(false)
}

/// How long processes a command left behind get between TERM and KILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(1);
/// How long KILL is repeated while members remain (forking, or stuck).
const KILL_SWEEP: Duration = Duration::from_secs(1);

/// The process groups currently alive, so worker shutdown can kill them all.
#[derive(Debug, Default)]
pub struct LiveGroups {
    groups: DashMap<i32, Arc<Process>>,
}

impl LiveGroups {
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Kill every live group and wait until each is done.
    pub async fn terminate_all(&self, grace: Duration) {
        let all: Vec<Arc<Process>> = self.groups.iter().map(|e| e.value().clone()).collect();
        let kills = all.iter().map(|p| async move {
            p.terminate(grace).await;
            p.wait().await;
        });
        futures_util::future::join_all(kills).await;
    }
}

/// Start `spec`, capturing into `outputs`. Fails only if the program cannot
/// be started; everything after that is reported through [`Process::wait`].
pub fn spawn(
    spec: &Spec,
    live: &Arc<LiveGroups>,
    outputs: Outputs,
) -> Result<Arc<Process>, Failure> {
    spawn_with(spec, live, outputs, false).map(|(p, _)| p)
}

/// The two ends of a conversation with a process: what the worker writes
/// to its stdin and reads from its stdout.
pub struct Pipes {
    pub stdin: tokio::process::ChildStdin,
    pub stdout: tokio::process::ChildStdout,
}

/// Start `spec` as a process the worker talks to (a language server):
/// stdin and stdout are handed back as [`Pipes`] instead of being fed and
/// captured; stderr is captured into `outputs.stderr`. Everything else is
/// as [`spawn`]: its own process group, tracked tree, reaped, killed whole.
/// `spec.stdin` is ignored.
pub fn spawn_piped(
    spec: &Spec,
    live: &Arc<LiveGroups>,
    outputs: Outputs,
) -> Result<(Arc<Process>, Pipes), Failure> {
    let (p, pipes) = spawn_with(spec, live, outputs, true)?;
    match pipes {
        Some(pipes) => Ok((p, pipes)),
        None => Err(Failure::io(format!(
            "{:?} started without its pipes",
            spec.argv[0]
        ))),
    }
}

fn spawn_with(
    spec: &Spec,
    live: &Arc<LiveGroups>,
    outputs: Outputs,
    piped: bool,
) -> Result<(Arc<Process>, Option<Pipes>), Failure> {
    let mut cmd = tokio::process::Command::new(&spec.argv[0]);
    let dir = match &spec.cwd_handle {
        Some(fd) => crate::jail::proc_path(std::os::fd::AsFd::as_fd(&**fd)),
        None => spec.cwd.clone(),
    };
    cmd.args(&spec.argv[1..]).current_dir(&dir);
    if spec.env.clear {
        cmd.env_clear();
    }
    cmd.envs(&spec.env.vars)
        .stdin(if piped || spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Inherited by every descendant that keeps its environment: how an
    // orphan re-parented to the worker is told apart (see [`tree`]).
    let id = tree::new_id();
    cmd.env(tree::MARKER, &id);
    match spec.detach {
        Detach::Group => {
            cmd.process_group(0);
        }
        // SAFETY: the closure runs in the forked child before exec and only
        // calls setsid(2), which is async-signal-safe, allocates nothing and
        // touches no lock; it makes the child the leader of a new session
        // and process group (pgid = its pid) with no controlling terminal.
        Detach::Session => unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid()
                    .map(|_| ())
                    .map_err(std::io::Error::from)
            });
        },
    }
    let spawning = tree::spawning();
    let mut child = cmd.spawn().map_err(|e| spawn_failure(&spec.argv[0], &e))?;
    let Some(pid) = child.id().map(|p| p as i32) else {
        return Err(Failure::io(format!(
            "{:?} exited before it could be tracked",
            spec.argv[0]
        )));
    };
    // Ours to reap: the orphan reaper leaves it alone until dropped.
    let owned = spawning.own(pid);
    let tree = Tree::open(id, pid);
    let mut readers = Vec::new();
    let mut pipes = None;
    if piped {
        if let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) {
            pipes = Some(Pipes { stdin, stdout });
        }
    } else if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(capture::drain(out, outputs.stdout.clone())));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(capture::drain(err, outputs.stderr.clone())));
    }
    let writer = match (child.stdin.take(), spec.stdin.clone()) {
        (Some(mut pipe), Some(text)) => Some(tokio::spawn(async move {
            // A child that exits without reading gets its pipe closed; the
            // write error that follows is expected and not reported.
            let _ = pipe.write_all(text.as_bytes()).await;
            let _ = pipe.shutdown().await;
        })),
        _ => None,
    };
    let (tx, rx) = watch::channel(Phase::Running);
    let process = Arc::new(Process {
        pid,
        outputs,
        phase: rx,
        tree,
    });
    live.groups.insert(pid, process.clone());
    let live = live.clone();
    let me = process.clone();
    tokio::spawn(async move {
        let exit = match child.wait().await {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                Exit {
                    code: status.code(),
                    signal: status.signal(),
                    wait_failed: false,
                }
            }
            Err(e) => {
                tracing::error!(pid, error = %e, "waiting for a command failed");
                Exit {
                    code: None,
                    signal: None,
                    wait_failed: true,
                }
            }
        };
        me.tree.leader_reaped();
        drop(owned);
        let _ = tx.send(Phase::Exited(exit));
        let drained = futures_util::future::join_all(readers.iter_mut());
        if tokio::time::timeout(DRAIN_GRACE, drained).await.is_err() {
            for r in &readers {
                r.abort();
            }
        }
        if let Some(w) = writer {
            w.abort();
        }
        // Whatever the command left running, in its group or not (`cmd &`,
        // a `setsid` daemon), ends with it: nothing outlives the call, the
        // job, a kill or shutdown.
        me.end_leftovers().await;
        me.tree.close();
        live.groups.remove(&pid);
        let _ = tx.send(Phase::Done(exit));
    });
    Ok((process, pipes))
}

fn spawn_failure(program: &str, e: &std::io::Error) -> Failure {
    use std::io::ErrorKind;
    let why = match e.kind() {
        // the OS's own words first ("No such file or directory (os error
        // 2)"): callers of the original worker match them
        ErrorKind::NotFound => format!(
            "{e}: no such program on PATH or at that path (or the working directory vanished)"
        ),
        ErrorKind::PermissionDenied => "it is not executable by the worker".to_string(),
        _ => e.to_string(),
    };
    let hint = if program.contains(char::is_whitespace) {
        "; `command` holds spaces: put only the program in `command` and each argument in `args`"
    } else {
        "; check the name (shell::exec {command: \"which\", args: [...]}) or pass an absolute path"
    };
    Failure::io(format!("cannot start {program:?}: {why}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::capture::Keep;
    use crate::testkit::pid_alive;

    const MIB: Shape = Shape {
        head: 1 << 20,
        tail: 0,
    };

    fn spec(argv: &[&str]) -> Spec {
        Spec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
            cwd_handle: None,
            env: ChildEnv::default(),
            stdin: None,
            detach: Detach::for_this_worker(),
        }
    }

    #[tokio::test]
    async fn output_exit_code_and_reaping() {
        let live = Arc::new(LiveGroups::default());
        let p = spawn(
            &spec(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
            &live,
            Outputs::new(MIB),
        )
        .unwrap();
        let exit = p.wait().await;
        assert_eq!(exit.code, Some(3));
        assert_eq!(p.outputs.stdout.snapshot().0, "out\n");
        assert_eq!(p.outputs.stderr.snapshot().0, "err\n");
        assert!(live.is_empty());
        assert!(!pid_alive(p.pid() as i32), "leader must be reaped");
    }

    #[tokio::test]
    async fn stdin_is_written_then_closed_and_defaults_to_dev_null() {
        let live = Arc::new(LiveGroups::default());
        let mut s = spec(&["cat"]);
        s.stdin = Some("fed\n".into());
        let p = spawn(&s, &live, Outputs::new(MIB)).unwrap();
        p.wait().await;
        assert_eq!(p.outputs.stdout.snapshot().0, "fed\n");
        let p = spawn(&spec(&["cat"]), &live, Outputs::new(MIB)).unwrap();
        assert_eq!(p.wait().await.code, Some(0));
        assert_eq!(p.outputs.stdout.snapshot().0, "");
    }

    #[tokio::test]
    async fn a_chatty_child_is_drained_but_capture_is_capped() {
        let live = Arc::new(LiveGroups::default());
        let s = spec(&["head", "-c", "5000000", "/dev/zero"]);
        let p = spawn(&s, &live, Outputs::new(Shape::for_answer(Keep::Head, 1000))).unwrap();
        assert_eq!(p.wait().await.code, Some(0));
        let (out, truncated) = p.outputs.stdout.snapshot();
        assert_eq!(out.len(), 1000);
        assert!(truncated);
        let (err, truncated) = p.outputs.stderr.snapshot();
        assert_eq!((err.as_str(), truncated), ("", false));
    }

    #[tokio::test]
    async fn terminate_kills_the_grandchildren_too() {
        let live = Arc::new(LiveGroups::default());
        // The grandchild ignores TERM, so only the KILL sweep ends it.
        let p = spawn(
            &spec(&[
                "sh",
                "-c",
                "sh -c 'trap \"\" TERM; sleep 300' & echo $!; wait",
            ]),
            &live,
            Outputs::new(MIB),
        )
        .unwrap();
        let grandchild: i32 = loop {
            let (out, _) = p.outputs.stdout.snapshot();
            if let Ok(pid) = out.trim().parse() {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(pid_alive(grandchild));
        assert!(p.terminate(Duration::from_millis(300)).await);
        let exit = p.wait().await;
        assert_eq!(exit.signal, Some(libc_sigterm()));
        let gone = async {
            while pid_alive(grandchild) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), gone)
            .await
            .expect("grandchild killed");
        // a finished process is left alone
        assert!(!p.terminate(Duration::from_millis(10)).await);
    }

    fn libc_sigterm() -> i32 {
        Signal::SIGTERM as i32
    }

    #[tokio::test]
    async fn a_leftover_holding_the_pipe_does_not_hold_the_call() {
        let live = Arc::new(LiveGroups::default());
        let started = Instant::now();
        let p = spawn(
            &spec(&["sh", "-c", "sleep 30 & echo started"]),
            &live,
            Outputs::new(MIB),
        )
        .unwrap();
        assert_eq!(p.wait().await.code, Some(0));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(p.outputs.stdout.snapshot().0, "started\n");
        // clean up the leftover (it is in the same group)
        let _ = killpg(Pid::from_raw(p.pid), Signal::SIGKILL);
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_failure() {
        let live = Arc::new(LiveGroups::default());
        let err = spawn(
            &spec(&["definitely-not-a-program-xyz"]),
            &live,
            Outputs::new(MIB),
        )
        .unwrap_err();
        assert_eq!(err.class, crate::error::Class::Io);
        assert!(err.message.contains("definitely-not-a-program-xyz"));
        assert!(live.is_empty());
    }

    #[tokio::test]
    async fn each_command_leads_its_own_group_in_both_modes() {
        let live = Arc::new(LiveGroups::default());
        // fields 5 and 6 of /proc/PID/stat: process group and session
        for detach in [Detach::Group, Detach::Session] {
            let mut s = spec(&["sh", "-c", "cut -d' ' -f5,6 /proc/$$/stat"]);
            s.detach = detach;
            let p = spawn(&s, &live, Outputs::new(MIB)).unwrap();
            p.wait().await;
            let out = p.outputs.stdout.snapshot().0;
            let ids: Vec<u32> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
            assert_eq!(ids[0], p.pid(), "{detach:?}");
            // only Session makes the command lead a new session
            assert_eq!(ids[1] == p.pid(), detach == Detach::Session, "{detach:?}");
        }
    }

    #[tokio::test]
    async fn terminate_all_ends_every_live_group() {
        let live = Arc::new(LiveGroups::default());
        let a = spawn(&spec(&["sleep", "300"]), &live, Outputs::new(MIB)).unwrap();
        let b = spawn(&spec(&["sleep", "300"]), &live, Outputs::new(MIB)).unwrap();
        assert_eq!(live.len(), 2);
        live.terminate_all(Duration::from_secs(1)).await;
        assert!(a.done().is_some() && b.done().is_some());
        assert!(live.is_empty());
    }

    /// A descendant that scrubbed its environment (no marker) and left the
    /// group (`setsid`) is still killed at the command's end once a snapshot
    /// recorded it before it was orphaned; an unrelated child of the worker
    /// is left alone.
    #[tokio::test]
    async fn a_recorded_descendant_without_the_marker_is_killed_and_strangers_are_not() {
        let dir = tempfile::TempDir::new().unwrap();
        let go = dir.path().join("go");
        let script = format!(
            "env -i /usr/bin/setsid /bin/sh -c '/bin/sleep 356 & while [ ! -e {go} ]; do /bin/sleep 0.01; done'; echo done",
            go = go.display()
        );
        let mut stranger = std::process::Command::new("sleep")
            .arg("365")
            .spawn()
            .unwrap();
        let live = Arc::new(LiveGroups::default());
        let p = spawn(&spec(&["sh", "-c", &script]), &live, Outputs::new(MIB)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let scrubbed = loop {
            let members = p.tree.members();
            let found = members.iter().find(|m| {
                std::fs::read(format!("/proc/{}/cmdline", m.pid))
                    .is_ok_and(|c| c == b"/bin/sleep\x00356\x00")
            });
            if let Some(m) = found {
                break m.pid;
            }
            assert!(
                Instant::now() < deadline,
                "the scrubbed sleep never started"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(
            tree::marker_of(scrubbed).is_none(),
            "its environment was scrubbed"
        );
        std::fs::write(&go, "").unwrap();
        assert_eq!(p.wait().await.code, Some(0));
        assert_eq!(p.outputs.stdout.snapshot().0, "done\n");
        let gone = async {
            while pid_alive(scrubbed) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), gone)
            .await
            .expect("the recorded descendant was killed");
        assert!(pid_alive(stranger.id() as i32), "a stranger was killed");
        let _ = stranger.kill();
        let _ = stranger.wait();
    }
}
