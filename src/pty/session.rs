//! One terminal session and the table of them.
//!
//! Three tasks per session, none ever blocked in an uncancellable read:
//!
//! - the **reader** waits on the master under `AsyncFd`, coalesces reads into
//!   frames (up to [`FRAME_MAX`]; the first bytes after a quiet spell, or
//!   while the console has nothing in flight, go out at once, a burst lingers up to [`LINGER`] to fill a frame), holds back a
//!   cut UTF-8 character, and appends to the ring; the screen emulator is
//!   fed from the ring in batches ([`SCREEN_BATCH`]) and before anything
//!   reads it. While
//!   someone is attached and [`WINDOW`] frames are undelivered it stops
//!   reading (the program then blocks on its own writes; input, Ctrl+C
//!   included, still gets through). Detached, it reads on and the ring evicts.
//! - the **delivery** task keeps up to [`IN_FLIGHT`] calls to the output
//!   function in flight, dispatched in sequence order. The engine runs each
//!   invocation as its own task, so they may land out of order: the page
//!   reorders by `sequence` (at most [`WINDOW`] frames apart).
//! - the **waiter** reaps the child: exit is noticed by waiting on it, not by
//!   EOF on the master, and what the program left running is ended with it.

use super::creds::{self, Credentials};
use super::emulator::{Rendered, Screen};
use super::ring::{End, Frame, Ring};
use super::spawn::{self, Spawned};
use super::utf8;
use crate::error::{Class, Failure, quote};
use crate::exec::tree::Tree;
use crate::ports::Outbound;
use base64::Engine as _;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Largest frame, in raw bytes.
pub const FRAME_MAX: usize = 64 * 1024;
/// Frames produced but not yet delivered, past which reading stops.
pub const WINDOW: u64 = 4;
/// Deliveries awaited at once (each one frame), at most [`WINDOW`].
pub const IN_FLIGHT: usize = 4;
/// How long a frame in a burst waits to fill up.
pub const LINGER: Duration = Duration::from_millis(4);
/// How long output is still read after the program exited (a job it left
/// holding the terminal must not hold the exit back).
const EXIT_DRAIN: Duration = Duration::from_millis(300);
/// One delivery's timeout. Short, because an answer can be lost on its way
/// back (the engine drops an answer that beats its own bookkeeping,
/// ENGINE-FACTS.md): the frame is then sent again, and the page drops what
/// it already applied. A long timeout would stall the terminal that long.
const DELIVERY_TIMEOUT_MS: u64 = 2_000;
/// How long an unanswered delivery may lag behind the answer of a later
/// frame before it is sent again. The page applies frames strictly in
/// sequence order and answers each once applied, so a later frame's answer
/// means this one landed and its answer was lost (the engine drops an
/// answer that beats its own bookkeeping, ENGINE-FACTS.md). Without this
/// the window of [`WINDOW`] frames stays full until [`DELIVERY_TIMEOUT_MS`]
/// runs out: a 2 s stall of the terminal, seen under load as a Ctrl+C that
/// took 2 s to show the prompt. A spurious resend costs nothing: the page
/// drops a frame it already applied, and answers it.
const GAP_GRACE: Duration = Duration::from_millis(50);
/// Failed deliveries in a row after which the target counts as gone.
const MAX_FAILURES: u32 = 5;
/// Deliveries that time out are retried without counting as failures until
/// they have done so for this long in a row: only then is the page gone (a
/// frozen or closed tab), as a failing one is after [`MAX_FAILURES`].
const TIMEOUTS_GONE_AFTER: Duration = Duration::from_secs(120);
/// Output is emulated in batches of up to this many bytes (at most half
/// the ring): the bulk-text shortcut's fixed cost (a screenful through the
/// emulator) is then paid per batch rather than per frame. Whatever reads
/// the screen catches up first.
const SCREEN_BATCH: usize = 512 * 1024;
/// A cut character held longer than this is sent anyway.
const HOLD_MAX: Duration = Duration::from_millis(50);
/// How long detach waits for a delivery in flight.
const DETACH_WAIT: Duration = Duration::from_secs(2);
/// The longest the reader holds off after an interrupt key (Ctrl+C, Ctrl+\\,
/// Ctrl+Z) was written to a program that was flooding the terminal; see
/// [`Session::write`]. Normally the hold ends sooner, when the terminal's
/// foreground process group changes (the program stopped or died and its
/// shell took the terminal back).
pub const INTERRUPT_HOLD: Duration = Duration::from_millis(500);
/// How often a held reader looks at the foreground process group.
const INTERRUPT_POLL: Duration = Duration::from_millis(2);
/// How long a write waits for the program to take its input.
const WRITE_WAIT: Duration = Duration::from_secs(5);
/// How long an attached session's write waits, after the program took the
/// input, for output that followed it to be delivered to the page before it
/// answers. The engine keeps Nagle on the page's socket, and it forwards an
/// answer faster than it routes a call: a write answered as soon as the echo
/// went out reaches the page first, and the echo then waits for the page's
/// delayed ACK (~40 ms; seen on the wire). Answered after the page took the
/// echo, the answer follows it. The wait adapts: while the program echoes,
/// up to [`ECHO_WAIT`] (a loaded machine can take tens of ms to echo, and
/// an answer that goes first costs the 40 ms wait on top); once a write's
/// echo did not come in time (a program that does not echo, a password
/// prompt), the next writes wait only [`ECHO_WAIT_QUIET`], until one is
/// echoed again. Only the answer waits, never the input itself.
pub const ECHO_WAIT: Duration = Duration::from_millis(100);
/// The wait of a write to a program that did not echo the last one.
pub const ECHO_WAIT_QUIET: Duration = Duration::from_millis(5);

/// Where output goes while someone is attached.
#[derive(Debug, Clone)]
struct Attachment {
    function_id: String,
    epoch: u64,
}

/// A remembered attach, so a retry with the same `request_id` gets the
/// same answer instead of a lock-out.
#[derive(Debug, Clone)]
struct AttachMemo {
    request_id: String,
    token_used: String,
    creds: Credentials,
    after_sequence: u64,
    next_sequence: u64,
}

struct State {
    ring: Ring,
    /// Fed in batches: every frame up to `fed` went through it; read it
    /// through [`State::screen`], which catches up first.
    screen: Screen,
    fed: u64,
    /// Bytes of the frames after `fed`.
    unfed: usize,
    creds: Credentials,
    ui: Option<String>,
    target: Option<Attachment>,
    /// Opened without an output target (`shell::pty::start`): driven by
    /// calls that pull its output, so unattached it is `running`.
    driven: bool,
    epoch: u64,
    /// Every frame up to this one was delivered (this epoch).
    delivered: u64,
    /// The highest frame dispatched (this epoch).
    sent: u64,
    /// Delivered frames above `delivered` (acknowledged out of order).
    acked: std::collections::BTreeSet<u64>,
    /// Frames whose delivery failed, to dispatch again after a backoff.
    retry: std::collections::BTreeSet<u64>,
    failures: u32,
    /// Since when every answered delivery has timed out (this epoch).
    timing_out_since: Option<Instant>,
    /// Set with the last frame (status `exited`).
    end: Option<End>,
    ended_at: Option<std::time::Instant>,
    cols: u16,
    rows: u16,
    memo: Option<AttachMemo>,
    /// Reads held after an interrupt key: until the foreground process
    /// group is no longer this one, or until the instant.
    interrupt: Option<(Option<nix::unistd::Pid>, Instant)>,
}

/// A session's status as the contract reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Attached,
    Detached,
    /// Unattached, and driven by pull calls from the start.
    Running,
    Exited(End),
}

/// What attach and adopt return.
#[derive(Debug, Clone)]
pub struct AttachOut {
    pub creds: Credentials,
    pub cwd: String,
    /// `(sequence, raw bytes)`.
    pub frames: Vec<(u64, Vec<u8>)>,
    pub next_sequence: u64,
    pub status: Status,
    pub truncated: bool,
}

/// What `shell::pty::read` returns.
#[derive(Debug, Clone)]
pub struct ReadOut {
    pub raw: Vec<u8>,
    pub next_sequence: u64,
    pub truncated: bool,
    pub status: Status,
}

/// One session, for `shell::pty::sessions`.
#[derive(Debug, Clone)]
pub struct Summary {
    pub session_id: String,
    pub cwd: String,
    pub pid: u32,
    pub program: Option<String>,
    pub status: Status,
    pub sequence: u64,
    pub frames: usize,
    pub frame_bytes: usize,
    pub truncated: bool,
    pub output_function_id: Option<String>,
    pub ui: Option<String>,
}

pub struct Session {
    pub id: String,
    pub program: Option<String>,
    pub cwd: String,
    pub pid: u32,
    master: AsyncFd<OwnedFd>,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    /// Every frame up to this sequence was delivered to the output
    /// function (mirrors `State::delivered` for waiters).
    delivered: watch::Sender<u64>,
    /// The last write's echo was delivered within its wait.
    echoes: std::sync::atomic::AtomicBool,
    exit: watch::Receiver<Option<End>>,
    tree: Arc<Tree>,
    outbound: Option<Arc<dyn Outbound>>,
    write_gate: tokio::sync::Mutex<()>,
    /// Read-held by every delivery in flight; detach takes it for writing
    /// to wait for them all.
    in_flight: Arc<tokio::sync::RwLock<()>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// Everything [`Session::start`] needs.
pub struct Start {
    pub spec: spawn::Spec,
    pub program: Option<String>,
    pub cwd: String,
    pub ring_bytes: usize,
    pub target: Option<super::target::Target>,
    pub outbound: Option<Arc<dyn Outbound>>,
}

fn no_access(id: &str, what: &str) -> Failure {
    Failure::new(
        Class::NotFound,
        format!(
            "session {} does not exist or the {what} is not its current one (attach and adopt \
             rotate credentials); shell::pty::sessions lists live sessions, and a page that lost \
             its credentials takes its own unattached session back with shell::pty::adopt",
            quote(id)
        ),
    )
}

/// The agent surface's S211: names the agent's next calls, not a console's.
fn no_agent_access(id: &str) -> Failure {
    Failure::new(
        Class::NotFound,
        format!(
            "session {} does not exist or the access_key is not the one shell::pty::start \
             answered for it (a session whose program exited is forgotten \
             pty.exited_retention_secs after its exit); shell::pty::sessions lists this \
             worker's sessions, shell::pty::start starts a new one",
            quote(id)
        ),
    )
}

fn signal_name(sig: i32) -> String {
    Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

impl Session {
    /// Spawn the program and start the session's tasks.
    pub fn start(id: String, start: Start) -> Result<Arc<Session>, Failure> {
        let Spawned {
            master,
            mut child,
            pid,
            owned,
            tree,
        } = spawn::spawn(&start.spec)?;
        // SAFETY: `master` is an OwnedFd moved into the AsyncFd: it stays
        // open and names the same descriptor for the AsyncFd's whole life.
        let master = unsafe { AsyncFd::register(master) }
            .map_err(|e| Failure::io(format!("cannot watch the pseudo-terminal: {e}")))?;
        let (exit_tx, exit_rx) = watch::channel(None);
        let (changed, _) = watch::channel(0u64);
        let epoch = u64::from(start.target.is_some());
        let session = Arc::new(Session {
            id,
            program: start.program,
            cwd: start.cwd,
            pid: pid as u32,
            master,
            state: Mutex::new(State {
                ring: Ring::new(start.ring_bytes),
                screen: Screen::new(start.spec.cols, start.spec.rows),
                fed: 0,
                unfed: 0,
                creds: Credentials::fresh()?,
                ui: start.target.as_ref().map(|t| t.ui.clone()),
                driven: start.target.is_none(),
                target: start.target.map(|t| Attachment {
                    function_id: t.function_id,
                    epoch,
                }),
                epoch,
                delivered: 0,
                sent: 0,
                acked: Default::default(),
                retry: Default::default(),
                failures: 0,
                timing_out_since: None,
                end: None,
                ended_at: None,
                cols: start.spec.cols,
                rows: start.spec.rows,
                memo: None,
                interrupt: None,
            }),
            changed,
            delivered: watch::channel(0u64).0,
            echoes: std::sync::atomic::AtomicBool::new(true),
            exit: exit_rx,
            tree: tree.clone(),
            outbound: start.outbound,
            write_gate: tokio::sync::Mutex::new(()),
            in_flight: Arc::new(tokio::sync::RwLock::new(())),
            tasks: Mutex::new(Vec::new()),
        });
        let waiter = {
            let tree = tree.clone();
            tokio::spawn(async move {
                let end = match child.wait().await {
                    Ok(status) => {
                        use std::os::unix::process::ExitStatusExt;
                        End {
                            exit_code: status.code().map(|c| c as u32),
                            signal: status.signal().map(signal_name),
                            error: None,
                        }
                    }
                    Err(e) => End {
                        exit_code: None,
                        signal: None,
                        error: Some(format!("waiting for the session's program failed: {e}")),
                    },
                };
                tree.leader_reaped();
                drop(owned);
                let _ = exit_tx.send(Some(end));
                // What the program left running (a job holding the terminal)
                // ends with it: no orphan outlives its session.
                end_tree(&tree, None).await;
                tree.close();
            })
        };
        let reader = tokio::spawn(read_loop(session.clone()));
        let delivery = tokio::spawn(deliver_loop(Arc::downgrade(&session)));
        session.lock_tasks().extend([waiter, reader, delivery]);
        Ok(session)
    }

    fn st(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_tasks(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub fn credentials(&self) -> Credentials {
        self.st().creds.clone()
    }

    fn status_of(st: &State) -> Status {
        match (&st.end, &st.target) {
            (Some(end), _) => Status::Exited(end.clone()),
            (None, Some(_)) => Status::Attached,
            (None, None) if st.driven => Status::Running,
            (None, None) => Status::Detached,
        }
    }

    pub fn status(&self) -> Status {
        Self::status_of(&self.st())
    }

    /// When the last frame was produced, if the session exited.
    pub fn ended_at(&self) -> Option<std::time::Instant> {
        self.st().ended_at
    }

    /// How the program ended, once it was reaped.
    pub fn exit_status(&self) -> Option<End> {
        self.exit.borrow().clone()
    }

    pub fn check_key(&self, key: &str) -> Result<(), Failure> {
        if creds::same(key, &self.st().creds.access_key) {
            Ok(())
        } else {
            Err(no_access(&self.id, "access_key"))
        }
    }

    /// Frames produced while someone is attached that were not delivered.
    pub fn undelivered(&self) -> u64 {
        let st = self.st();
        st.ring.last_seq().saturating_sub(st.delivered)
    }

    /// `(room, idle)`: whether the delivery window has room for another
    /// frame, and whether a console is attached with nothing in flight.
    fn flow(&self) -> (bool, bool) {
        let st = self.st();
        let behind = st.ring.last_seq().saturating_sub(st.delivered);
        match st.target {
            Some(_) => (behind < WINDOW, behind == 0),
            None => (true, false),
        }
    }

    fn push(&self, data: &[u8], end: Option<End>) {
        {
            let mut st = self.st();
            // Frames not yet emulated are the newest ones and stay under
            // half the ring, so the ring never evicts one before it is fed.
            let batch = (st.ring.capacity() / 2).min(SCREEN_BATCH);
            if st.unfed + data.len() > batch {
                st.catch_up();
            }
            let ended = end.is_some();
            if ended {
                st.end = end.clone();
                st.ended_at = Some(std::time::Instant::now());
            }
            st.ring.push(data, end);
            st.unfed += data.len();
            if ended {
                st.catch_up();
            }
        }
        self.bump();
    }

    pub fn summary(&self) -> Summary {
        let st = self.st();
        Summary {
            session_id: self.id.clone(),
            cwd: self.cwd.clone(),
            pid: self.pid,
            program: self.program.clone(),
            status: Self::status_of(&st),
            sequence: st.ring.last_seq(),
            frames: st.ring.len(),
            frame_bytes: st.ring.bytes(),
            truncated: st.ring.truncated(),
            output_function_id: st.target.as_ref().map(|t| t.function_id.clone()),
            ui: st.ui.clone(),
        }
    }

    /// Frames after `after` (a redraw of the current screen when the ring
    /// lost some of them), as of now.
    fn replay(st: &mut State, after: u64, upto: u64) -> (Vec<(u64, Vec<u8>)>, bool) {
        if st.ring.lost_after(after) {
            // One synthesized frame that redraws the screen as of the last
            // frame, numbered like it: live frames continue after it.
            return (vec![(st.ring.last_seq(), st.screen().redraw())], true);
        }
        let frames = st
            .ring
            .after(after)
            .frames
            .into_iter()
            .filter(|f| f.seq <= upto)
            .map(|f| (f.seq, f.data))
            .collect();
        (frames, false)
    }

    fn resize_locked(&self, st: &mut State, cols: u16, rows: u16) -> Result<(), Failure> {
        if (st.cols, st.rows) != (cols, rows) {
            spawn::set_size(self.master.get_ref().as_fd(), cols, rows)?;
            // what was printed at the old size is emulated at it
            st.screen().resize(cols, rows);
            st.cols = cols;
            st.rows = rows;
        }
        Ok(())
    }

    pub fn resize(&self, cols: u16, rows: u16) -> Result<(), Failure> {
        let mut st = self.st();
        self.resize_locked(&mut st, cols, rows)
    }

    fn attach_locked(
        &self,
        st: &mut State,
        target: super::target::Target,
        after: u64,
        cols: u16,
        rows: u16,
    ) -> Result<AttachOut, Failure> {
        if st.end.is_none() {
            self.resize_locked(st, cols, rows)?;
        }
        st.creds = Credentials::fresh()?;
        st.epoch += 1;
        st.delivered = st.ring.last_seq();
        st.sent = st.delivered;
        st.acked.clear();
        st.retry.clear();
        st.failures = 0;
        st.timing_out_since = None;
        if st.ui.is_none() {
            st.ui = Some(target.ui.clone());
        }
        st.target = Some(Attachment {
            function_id: target.function_id,
            epoch: st.epoch,
        });
        let last = st.ring.last_seq();
        let (frames, truncated) = Self::replay(st, after, last);
        Ok(AttachOut {
            creds: st.creds.clone(),
            cwd: self.cwd.clone(),
            frames,
            next_sequence: last + 1,
            status: Self::status_of(st),
            truncated,
        })
    }

    /// `shell::pty::attach`: the current reconnect token (or a retry of the
    /// attach that rotated it, by `request_id`).
    pub fn attach(
        &self,
        token: &str,
        request_id: Option<&str>,
        target: super::target::Target,
        after: u64,
        cols: u16,
        rows: u16,
    ) -> Result<AttachOut, Failure> {
        let out = {
            let mut st = self.st();
            if let (Some(rid), Some(memo)) = (request_id, st.memo.clone())
                && memo.request_id == rid
                && creds::same(token, &memo.token_used)
            {
                let (frames, truncated) =
                    Self::replay(&mut st, memo.after_sequence, memo.next_sequence - 1);
                return Ok(AttachOut {
                    creds: memo.creds,
                    cwd: self.cwd.clone(),
                    frames,
                    next_sequence: memo.next_sequence,
                    status: Self::status_of(&st),
                    truncated,
                });
            }
            if !creds::same(token, &st.creds.reconnect_token) {
                return Err(no_access(&self.id, "reconnect_token"));
            }
            let used = st.creds.reconnect_token.clone();
            let out = self.attach_locked(&mut st, target, after, cols, rows)?;
            st.memo = request_id.map(|rid| AttachMemo {
                request_id: rid.to_string(),
                token_used: used,
                creds: out.creds.clone(),
                after_sequence: after,
                next_sequence: out.next_sequence,
            });
            out
        };
        self.bump();
        Ok(out)
    }

    /// `shell::pty::adopt`: only an unattached session, only from its own
    /// console page.
    pub fn adopt(
        &self,
        target: super::target::Target,
        after: u64,
        cols: u16,
        rows: u16,
    ) -> Result<AttachOut, Failure> {
        let out = {
            let mut st = self.st();
            if st.ui.as_deref() != Some(target.ui.as_str()) {
                return Err(Failure::new(
                    Class::NotFound,
                    format!(
                        "no session {} belongs to console page {}; a page adopts only its own \
                         sessions (shell::pty::sessions reports each session's `ui`)",
                        quote(&self.id),
                        quote(&target.ui)
                    ),
                ));
            }
            if let Some(t) = &st.target {
                return Err(Failure::bad_input(format!(
                    "session {} is attached (output goes to {}); a watched terminal is never \
                     taken — its holder detaches it (shell::pty::detach) or attaches with its \
                     reconnect token",
                    quote(&self.id),
                    quote(&t.function_id)
                )));
            }
            let out = self.attach_locked(&mut st, target, after, cols, rows)?;
            // an in-flight retry of an older attach cannot resurrect it
            st.memo = None;
            out
        };
        self.bump();
        Ok(out)
    }

    /// `shell::pty::detach`: stop delivering, keep the session. Returns
    /// once the deliveries in flight finished (at most [`DETACH_WAIT`]), so
    /// no frame lands after it.
    pub async fn detach(&self) -> Status {
        let status = {
            let mut st = self.st();
            st.target = None;
            Self::status_of(&st)
        };
        self.bump();
        drop(tokio::time::timeout(DETACH_WAIT, self.in_flight.write()).await);
        // an attach that raced this detach may wait for the lock to dispatch
        self.bump();
        status
    }

    /// Write input to the program; how many bytes it took (fewer when it
    /// stopped reading for [`WRITE_WAIT`]).
    pub async fn write(&self, data: &[u8]) -> Result<usize, Failure> {
        if let Status::Exited(end) = self.status() {
            let how = match (end.exit_code, &end.signal) {
                (Some(c), _) => format!(" with exit code {c}"),
                (None, Some(sig)) => format!(" by {sig}"),
                _ => String::new(),
            };
            let next = if self.st().driven {
                "shell::pty::read still answers its last output, shell::pty::stop forgets it, \
                 shell::pty::start starts a new one"
            } else {
                "its output stays attachable until shell::pty::close"
            };
            return Err(Failure::bad_input(format!(
                "session {}'s program has exited{how}; {next}",
                quote(&self.id)
            )));
        }
        let gate = self.write_gate.lock().await;
        if self.interrupts_a_flood(data) {
            let pgrp = nix::unistd::tcgetpgrp(self.master.get_ref()).ok();
            self.st().interrupt = Some((pgrp, Instant::now() + INTERRUPT_HOLD));
            self.bump();
        }
        let (before, attached) = {
            let st = self.st();
            (st.ring.last_seq(), st.target.is_some())
        };
        let deadline = Instant::now() + WRITE_WAIT;
        let mut off = 0;
        while off < data.len() {
            let Ok(ready) = tokio::time::timeout_at(deadline, self.master.writable()).await else {
                break;
            };
            let mut guard =
                ready.map_err(|e| Failure::io(format!("cannot write to the terminal: {e}")))?;
            match guard.try_io(|fd| {
                nix::unistd::write(fd.get_ref(), &data[off..]).map_err(std::io::Error::from)
            }) {
                Ok(Ok(n)) => off += n,
                Ok(Err(e)) if off == 0 => {
                    return Err(Failure::io(format!(
                        "cannot write to session {}: {e}",
                        quote(&self.id)
                    )));
                }
                Ok(Err(_)) => break,
                Err(_would_block) => continue,
            }
        }
        drop(gate);
        if attached && off > 0 {
            // answer after the page took the echo ([`ECHO_WAIT`])
            use std::sync::atomic::Ordering::Relaxed;
            let wait = if self.echoes.load(Relaxed) {
                ECHO_WAIT
            } else {
                ECHO_WAIT_QUIET
            };
            let mut rx = self.delivered.subscribe();
            let echoed = tokio::time::timeout(wait, rx.wait_for(|&d| d > before))
                .await
                .is_ok_and(|r| r.is_ok());
            self.echoes.store(echoed, Relaxed);
        }
        Ok(off)
    }

    /// Whether `data` holds a key the terminal turns into a signal for its
    /// foreground program (its `intr`, `quit` or `susp` character, with
    /// `isig` on), while that program's output waits unread in the
    /// terminal. The kernel then discards that output when it signals
    /// (unless `noflsh`), as a terminal does; the reader holds off reading
    /// (see [`read_loop`]) so that a flood does not run on, read and
    /// delivered, while the signal is on its way. Whatever the machine's
    /// speed, what reaches the console after the key is then at most the
    /// frames already queued (the window) and the frame the reader held.
    fn interrupts_a_flood(&self, data: &[u8]) -> bool {
        use nix::sys::termios::{LocalFlags, SpecialCharacterIndices as C};
        let Ok(t) = nix::sys::termios::tcgetattr(self.master.get_ref()) else {
            return false;
        };
        if !t.local_flags.contains(LocalFlags::ISIG) || t.local_flags.contains(LocalFlags::NOFLSH) {
            return false;
        }
        let keys = [C::VINTR, C::VQUIT, C::VSUSP].map(|c| t.control_chars[c as usize]);
        // 0 is _POSIX_VDISABLE: the key is switched off
        if !data.iter().any(|b| *b != 0 && keys.contains(b)) {
            return false;
        }
        let mut pending: nix::libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer it is given.
        let r = unsafe {
            nix::libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(self.master.get_ref()),
                nix::libc::FIONREAD,
                &mut pending,
            )
        };
        r == 0 && pending > 0
    }

    /// Whether the reader holds off after an interrupt key: until the
    /// foreground process group changed, or [`INTERRUPT_HOLD`] passed.
    fn reads_held(&self) -> bool {
        let mut st = self.st();
        let Some((pgrp, until)) = st.interrupt else {
            return false;
        };
        let now = nix::unistd::tcgetpgrp(self.master.get_ref()).ok();
        if now != pgrp || Instant::now() >= until {
            st.interrupt = None;
            return false;
        }
        true
    }

    /// Whether the next write waits up to [`ECHO_WAIT`] for its echo (the
    /// last one was echoed in time) rather than [`ECHO_WAIT_QUIET`].
    pub fn expects_echo(&self) -> bool {
        self.echoes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The sequence number of the last frame so far (0: none yet).
    pub fn last_sequence(&self) -> u64 {
        self.st().ring.last_seq()
    }

    /// Output after `after` (raw), waiting up to `wait` until `done`
    /// accepts what arrived. Returns it with whether `done` accepted it and
    /// whether the wait ran out (neither: the session exited first).
    pub async fn read(
        &self,
        after: u64,
        wait: Duration,
        done: impl Fn(&[u8]) -> bool,
    ) -> (ReadOut, bool, bool) {
        let deadline = Instant::now() + wait;
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            let out = {
                let st = self.st();
                let replay = st.ring.after(after);
                let mut raw = Vec::new();
                for f in &replay.frames {
                    raw.extend_from_slice(&f.data);
                }
                ReadOut {
                    raw,
                    next_sequence: st.ring.last_seq() + 1,
                    truncated: replay.truncated,
                    status: Self::status_of(&st),
                }
            };
            if done(&out.raw) {
                return (out, true, false);
            }
            if matches!(out.status, Status::Exited(_)) {
                return (out, false, false);
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return (out, false, true);
            }
        }
    }

    /// The key-encoding modes the program last set (the emulator caught up
    /// with every frame first).
    pub fn key_modes(&self) -> super::keys::Modes {
        self.st().screen().key_modes()
    }

    pub fn render(&self) -> (Rendered, u64) {
        let mut st = self.st();
        (st.screen().render(), st.ring.last_seq())
    }

    /// End the session's processes: HUP, TERM, then KILL to its group and
    /// every descendant; returns once the program was reaped.
    pub async fn terminate(&self) {
        let mut exit = self.exit.clone();
        if exit.borrow().is_none() {
            end_tree(&self.tree, Some((exit.clone(), self.pid as i32))).await;
        }
        // reaped (the waiter is the one reaping)
        let _ = tokio::time::timeout(Duration::from_secs(5), exit.wait_for(|e| e.is_some())).await;
        for t in self.lock_tasks().drain(..) {
            t.abort();
        }
    }
}

/// HUP, TERM, then KILL the leader's group (while the leader is unreaped)
/// and every member of the tree, each stage until none is left or its
/// grace ran out. Never the worker's own group.
async fn end_tree(tree: &Arc<Tree>, leader: Option<(watch::Receiver<Option<End>>, i32)>) {
    let own_group = nix::unistd::getpgrp().as_raw();
    let leader_alive = || leader.as_ref().is_some_and(|(e, _)| e.borrow().is_none());
    for (signal, grace) in [
        (Signal::SIGHUP, Duration::from_millis(300)),
        (Signal::SIGTERM, Duration::from_millis(1000)),
        (Signal::SIGKILL, Duration::from_millis(1000)),
    ] {
        if let Some((_, pid)) = &leader
            && leader_alive()
            && *pid > 1
            && *pid != own_group
        {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(*pid), signal);
        }
        let t = tree.clone();
        let _ = tokio::task::spawn_blocking(move || t.signal(signal)).await;
        let deadline = Instant::now() + grace;
        loop {
            if !leader_alive() {
                let t = tree.clone();
                let left = tokio::task::spawn_blocking(move || t.members().len())
                    .await
                    .unwrap_or(0);
                if left == 0 {
                    return;
                }
            }
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The event a console page consumes, for one frame.
pub fn event(session_id: &str, f: &Frame) -> Value {
    let data =
        (!f.data.is_empty()).then(|| base64::engine::general_purpose::STANDARD.encode(&f.data));
    let end = f.end.clone().unwrap_or_default();
    json!({
        "session_id": session_id,
        "sequence": f.seq,
        "data": data,
        "eof": f.end.is_some(),
        "exit_code": end.exit_code,
        "signal": end.signal,
        "error": end.error,
    })
}

/// `read(2)` into the spare capacity of `buf` (no zero-filling of 64 KiB
/// per read), growing its length by what was read.
fn read_spare(fd: &OwnedFd, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd as _;
    let spare = buf.spare_capacity_mut();
    // SAFETY: the kernel writes at most `spare.len()` bytes into memory this
    // Vec owns; exactly the `n` bytes it reports become initialized.
    let n = unsafe { nix::libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: see above; `n <= spare.len()`.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

async fn read_loop(s: Arc<Session>) {
    let mut rx = s.changed.subscribe();
    let mut exit = s.exit.clone();
    let mut buf: Vec<u8> = Vec::new();
    let mut eagain = false;
    let mut eof = false;
    let mut frame_started: Option<Instant> = None;
    let mut last_seal = Instant::now() - Duration::from_secs(1);
    let mut drain_until: Option<Instant> = None;
    loop {
        let (room, idle) = s.flow();
        if !buf.is_empty() && (room || eof) {
            let started = frame_started.unwrap_or_else(Instant::now);
            // Nothing in flight, or a quiet spell before: send at once
            // (keystroke echo). Otherwise a burst fills the frame a while.
            let quiet = idle || last_seal.elapsed() >= LINGER;
            let due =
                eof || buf.len() >= FRAME_MAX || (eagain && (quiet || started.elapsed() >= LINGER));
            if due {
                let n = if eof || started.elapsed() >= HOLD_MAX {
                    buf.len()
                } else {
                    utf8::sendable(&buf)
                };
                if n > 0 {
                    s.push(&buf[..n], None);
                    buf.drain(..n);
                    if buf.is_empty() {
                        // an idle session keeps no read buffer
                        buf = Vec::new();
                    }
                    last_seal = Instant::now();
                    frame_started = (!buf.is_empty()).then(Instant::now);
                    continue;
                }
            }
        }
        if eof && buf.is_empty() {
            break;
        }
        let held = !eof && s.reads_held();
        let can_read = !eof && buf.len() < FRAME_MAX && !held;
        let linger_at = frame_started
            .map(|t| t + LINGER)
            .unwrap_or_else(Instant::now);
        let hold_at = frame_started
            .map(|t| t + HOLD_MAX)
            .unwrap_or_else(Instant::now);
        let wake_at = if utf8::sendable(&buf) == 0 {
            hold_at
        } else {
            linger_at
        };
        tokio::select! {
            ready = s.master.readable(), if can_read => {
                let mut guard = match ready {
                    Ok(g) => g,
                    Err(_) => { eof = true; continue; }
                };
                buf.reserve_exact(FRAME_MAX - buf.len());
                // Read until the master has nothing more (or the frame is
                // full) before looking at anything else: a PTY hands out a
                // few KiB per read.
                loop {
                    match guard.try_io(|fd| read_spare(fd.get_ref(), &mut buf)) {
                        Ok(Ok(0)) => eof = true,
                        Ok(Ok(_)) => {
                            eagain = false;
                            frame_started.get_or_insert_with(Instant::now);
                            if buf.len() < FRAME_MAX {
                                continue;
                            }
                        }
                        // EIO: every holder of the slave side is gone
                        Ok(Err(_)) => eof = true,
                        Err(_would_block) => eagain = true,
                    }
                    break;
                }
            }
            r = rx.changed() => { if r.is_err() { return; } }
            _ = tokio::time::sleep_until(wake_at), if !buf.is_empty() && eagain && room => {}
            _ = tokio::time::sleep(INTERRUPT_POLL), if held => {}
            r = exit.changed(), if drain_until.is_none() => {
                if r.is_err() || exit.borrow().is_some() {
                    drain_until = Some(Instant::now() + EXIT_DRAIN);
                }
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now)), if drain_until.is_some() => {
                eof = true;
            }
        }
    }
    // The last frame carries the exit, once the program was reaped.
    let end = match exit.wait_for(|e| e.is_some()).await {
        Ok(e) => e.clone().unwrap_or_default(),
        Err(_) => End {
            error: Some("the session's program was lost".into()),
            ..End::default()
        },
    };
    s.push(&[], Some(end));
}

impl State {
    /// Feed the emulator every frame it has not seen yet.
    fn catch_up(&mut self) {
        if self.fed < self.ring.last_seq() {
            let (a, b) = self.ring.bytes_after(self.fed);
            self.screen.process(a);
            self.screen.process(b);
            self.fed = self.ring.last_seq();
            self.unfed = 0;
        }
    }

    /// The emulator, up to date with every frame.
    fn screen(&mut self) -> &mut Screen {
        self.catch_up();
        &mut self.screen
    }
}

/// One delivery's outcome: `(epoch, sequence, result)`.
type Delivery = (u64, u64, Result<Value, crate::error::WireError>);

/// The frames to dispatch now, in order: retries first, then new frames,
/// while fewer than [`IN_FLIGHT`] calls are out and the page would have to
/// hold at most [`WINDOW`] frames to reorder them.
fn dispatchable(st: &mut State, in_flight: usize) -> Vec<Frame> {
    let mut out = Vec::new();
    if st.target.is_none() {
        return out;
    }
    while in_flight + out.len() < IN_FLIGHT {
        let seq = match st.retry.pop_first() {
            Some(seq) => seq,
            None if st.sent < st.ring.last_seq() && st.sent - st.delivered < WINDOW => st.sent + 1,
            None => break,
        };
        match st.ring.get(seq) {
            Some(f) => {
                st.sent = st.sent.max(seq);
                out.push(f);
            }
            None => {
                // evicted before it went out (a ring smaller than the
                // window): what is gone counts as delivered
                let first = st.ring.first_seq().unwrap_or(st.ring.last_seq() + 1);
                st.sent = st.sent.max(first - 1);
                st.delivered = st.delivered.max(first - 1);
                st.acked.retain(|&a| a > first - 1);
                st.retry.retain(|&r| r > first - 1);
            }
        }
    }
    out
}

async fn deliver_loop(weak: std::sync::Weak<Session>) {
    use futures_util::StreamExt as _;
    let Some(mut rx) = weak.upgrade().map(|s| s.changed.subscribe()) else {
        return;
    };
    let mut calls = futures_util::stream::FuturesUnordered::<
        std::pin::Pin<Box<dyn std::future::Future<Output = Delivery> + Send>>,
    >::new();
    let mut backoff_until: Option<Instant> = None;
    // A delivery left unanswered while a later one was answered ([`GAP_GRACE`]).
    let mut gap = Gap::default();
    loop {
        {
            let Some(s) = weak.upgrade() else { return };
            let Some(outbound) = s.outbound.clone() else {
                return;
            };
            rx.borrow_and_update();
            if gap.due.is_some_and(|t| t <= Instant::now()) {
                gap.resend(&mut s.st(), &s.id);
            }
            if backoff_until.is_none_or(|t| t <= Instant::now()) {
                backoff_until = None;
                // Read-held per call: detach waits for every one. Taken
                // before the frames, so a pending detach dispatches nothing.
                let guards: Vec<_> =
                    std::iter::from_fn(|| s.in_flight.clone().try_read_owned().ok())
                        .take(IN_FLIGHT.saturating_sub(calls.len()))
                        .collect();
                let (target, frames) = {
                    let mut st = s.st();
                    let frames = dispatchable(&mut st, IN_FLIGHT - guards.len());
                    (st.target.clone(), frames)
                };
                if let Some(target) = target {
                    for (frame, guard) in frames.into_iter().zip(guards) {
                        let outbound = outbound.clone();
                        let function_id = target.function_id.clone();
                        let payload = event(&s.id, &frame);
                        let epoch = target.epoch;
                        calls.push(Box::pin(async move {
                            let result = outbound
                                .call_in(
                                    super::target::CONSOLE_NAMESPACE,
                                    &function_id,
                                    payload,
                                    Some(DELIVERY_TIMEOUT_MS),
                                )
                                .await;
                            drop(guard);
                            (epoch, frame.seq, result)
                        }));
                    }
                }
            }
        }
        let wake_at = backoff_until.unwrap_or_else(Instant::now);
        let gap_at = gap.due.unwrap_or_else(Instant::now);
        let done = tokio::select! {
            Some(d) = calls.next(), if !calls.is_empty() => Some(d),
            _ = tokio::time::sleep_until(gap_at), if gap.due.is_some() => None,
            r = rx.changed() => {
                if r.is_err() && calls.is_empty() {
                    return;
                }
                None
            }
            _ = tokio::time::sleep_until(wake_at), if backoff_until.is_some() => None,
        };
        let Some((epoch, seq, result)) = done else {
            continue;
        };
        let Some(s) = weak.upgrade() else { return };
        {
            let mut st = s.st();
            if st.target.as_ref().map(|t| t.epoch) == Some(epoch) {
                match result {
                    // delivered meanwhile by the frame sent again after a gap
                    Err(_) if seq <= st.delivered || st.acked.contains(&seq) => {}
                    Ok(_) => {
                        st.failures = 0;
                        st.timing_out_since = None;
                        if seq > st.delivered {
                            st.acked.insert(seq);
                        }
                        while st.acked.first() == Some(&(st.delivered + 1)) {
                            st.acked.pop_first();
                            st.delivered += 1;
                        }
                    }
                    Err(e) if e.code == crate::ports::CALL_TIMED_OUT => {
                        // the page may have applied it: sent again at once,
                        // it drops a frame it already has
                        let since = *st.timing_out_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= TIMEOUTS_GONE_AFTER {
                            tracing::info!(
                                session = %s.id,
                                target = ?st.target.as_ref().map(|t| &t.function_id),
                                "pty output target has not answered for {TIMEOUTS_GONE_AFTER:?}; \
                                 session detached"
                            );
                            st.target = None;
                        } else {
                            tracing::debug!(session = %s.id, seq, "pty delivery timed out; sending again");
                            st.retry.insert(seq);
                        }
                    }
                    Err(e) => {
                        st.failures += 1;
                        let gone = e.code == "function_not_found";
                        if gone || st.failures >= MAX_FAILURES {
                            tracing::info!(
                                session = %s.id,
                                target = ?st.target.as_ref().map(|t| &t.function_id),
                                code = %e.code,
                                failures = st.failures,
                                "pty output target gone; session detached"
                            );
                            st.target = None;
                        } else {
                            tracing::debug!(session = %s.id, code = %e.code, "pty delivery failed; retrying");
                            st.retry.insert(seq);
                            backoff_until = Some(
                                Instant::now() + Duration::from_millis(50 << st.failures.min(5)),
                            );
                        }
                    }
                }
            }
            gap.observe(&st);
            let delivered = st.delivered;
            s.delivered.send_if_modified(|d| {
                let newer = delivered > *d;
                *d = (*d).max(delivered);
                newer
            });
        }
        s.bump();
    }
}

/// The first unanswered frame while a later one was answered: when it is
/// due to be sent again ([`GAP_GRACE`]), and the last gap already acted on.
#[derive(Default)]
struct Gap {
    /// `(epoch, first unanswered sequence)` of the gap being timed.
    at: Option<(u64, u64)>,
    due: Option<Instant>,
    /// The gap that was already sent again (each is, once; after that the
    /// delivery's own timeout applies).
    done: Option<(u64, u64)>,
}

impl Gap {
    /// Look at the delivery state after an answer: time a new gap, forget a
    /// closed one.
    fn observe(&mut self, st: &State) {
        let now = match (&st.target, st.acked.is_empty()) {
            (Some(t), false) => Some((t.epoch, st.delivered + 1)),
            _ => None,
        };
        if now.is_none() {
            self.at = None;
            self.due = None;
        } else if now != self.at && now != self.done {
            self.at = now;
            self.due = Some(Instant::now() + GAP_GRACE);
        }
    }

    /// The gap is due: if it is still open, dispatch its unanswered frames
    /// again (they go first, [`dispatchable`]).
    fn resend(&mut self, st: &mut State, session: &str) {
        let at = self.at.take();
        self.due = None;
        let (Some((epoch, first)), Some(next_acked)) = (at, st.acked.first().copied()) else {
            return;
        };
        if st.target.as_ref().map(|t| t.epoch) != Some(epoch) || st.delivered + 1 != first {
            return;
        }
        self.done = at;
        tracing::debug!(
            session,
            first,
            next_acked,
            "pty delivery unanswered while a later one was answered; sending it again"
        );
        st.retry.extend(first..next_acked);
    }
}

/// A remembered open: (output target, session id, credentials handed out).
pub type OpenMemo = (Option<String>, String, Credentials);

/// Every session of this worker.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    /// Opens run one at a time: the cap and `request_id` are checked atomically.
    pub(super) open_gate: tokio::sync::Mutex<()>,
    /// `request_id` → (target, session id, credentials handed out).
    pub(super) opens: Mutex<HashMap<String, OpenMemo>>,
    sweeper: Mutex<Option<JoinHandle<()>>>,
    /// Sessions `shell::pty::stop` ended: (id, access key, how it ended),
    /// newest last, so a repeated stop answers instead of failing.
    stopped: Mutex<std::collections::VecDeque<(String, String, End)>>,
}

/// How many stopped sessions a repeated `shell::pty::stop` still knows.
pub const STOPPED_KEPT: usize = 256;

impl Sessions {
    pub fn new() -> Sessions {
        Sessions::default()
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn opens(&self) -> MutexGuard<'_, HashMap<String, OpenMemo>> {
        self.opens.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: &str) -> Result<Arc<Session>, Failure> {
        self.map()
            .get(id)
            .cloned()
            .ok_or_else(|| no_access(id, "credential"))
    }

    /// Look up `id` and check its access key.
    pub fn with_key(&self, id: &str, key: &str) -> Result<Arc<Session>, Failure> {
        let s = self.map().get(id).cloned();
        match s {
            Some(s) => {
                s.check_key(key)?;
                Ok(s)
            }
            None => Err(no_access(id, "access_key")),
        }
    }

    /// [`Sessions::with_key`] for the agent functions (start, send, read,
    /// screen, stop): the same check, an error that names their next call.
    pub fn for_agent(&self, id: &str, key: &str) -> Result<Arc<Session>, Failure> {
        let s = self.map().get(id).cloned();
        match s {
            Some(s) if creds::same(key, &s.st().creds.access_key) => Ok(s),
            _ => Err(no_agent_access(id)),
        }
    }

    /// `shell::pty::stop`: end the session (its whole tree killed and
    /// reaped) and forget it. Answers whether this call ended a running
    /// program, and how the program ended. A session stopped before answers
    /// the same again, to its own key, for a while ([`STOPPED_KEPT`] of them).
    pub async fn stop(&self, id: &str, key: &str) -> Result<(bool, End), Failure> {
        let s = match self.for_agent(id, key) {
            Ok(s) => s,
            Err(e) => {
                let stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
                return match stopped
                    .iter()
                    .find(|(sid, skey, _)| sid == id && creds::same(key, skey))
                {
                    Some((_, _, end)) => Ok((false, end.clone())),
                    None => Err(e),
                };
            }
        };
        let running = s.exit_status().is_none();
        let key = s.st().creds.access_key.clone();
        self.close(id).await;
        let end = s.exit_status().unwrap_or_else(|| End {
            error: Some("the program was not reaped within 5 s of SIGKILL".into()),
            ..End::default()
        });
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        if stopped.len() >= STOPPED_KEPT {
            stopped.pop_front();
        }
        stopped.push_back((id.to_string(), key, end.clone()));
        Ok((running, end))
    }

    pub fn insert(&self, s: Arc<Session>) {
        self.map().insert(s.id.clone(), s);
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.map().is_empty()
    }

    pub fn all(&self) -> Vec<Arc<Session>> {
        let mut all: Vec<Arc<Session>> = self.map().values().cloned().collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Make room for one more under `max`: drop the oldest exited session
    /// if that is what it takes.
    pub async fn make_room(&self, max: usize) -> Result<(), Failure> {
        if self.len() < max {
            return Ok(());
        }
        let oldest = self
            .all()
            .into_iter()
            .filter_map(|s| s.ended_at().map(|t| (t, s)))
            .min_by_key(|(t, _)| *t);
        if let Some((_, s)) = oldest {
            self.close(&s.id).await;
            if self.len() < max {
                return Ok(());
            }
        }
        Err(Failure::new(
            Class::TooLarge,
            format!(
                "{} terminal sessions are open, the most pty.max_sessions ({max}) allows; end \
                 one (shell::pty::sessions lists them; shell::pty::stop ends a session an agent \
                 started, shell::pty::close a console's) or raise pty.max_sessions",
                self.len()
            ),
        ))
    }

    /// Terminate and forget one session.
    pub async fn close(&self, id: &str) -> bool {
        let Some(s) = self.map().get(id).cloned() else {
            return false;
        };
        s.terminate().await;
        self.map().remove(id);
        self.opens().retain(|_, (_, sid, _)| sid != id);
        true
    }

    /// Drop exited sessions kept longer than `retention` (0: keep).
    pub async fn sweep(&self, retention: Duration) {
        if retention.is_zero() {
            return;
        }
        let old: Vec<String> = self
            .all()
            .into_iter()
            .filter(|s| s.ended_at().is_some_and(|t| t.elapsed() >= retention))
            .map(|s| s.id.clone())
            .collect();
        for id in old {
            self.close(&id).await;
        }
    }

    /// Start the retention sweeper once.
    pub fn ensure_sweeper(self: &Arc<Self>, live: Arc<crate::runtime::LiveRuntime>) {
        let mut slot = self.sweeper.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return;
        }
        let weak = Arc::downgrade(self);
        *slot = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let Some(me) = weak.upgrade() else { return };
                let secs = live.snapshot().config.pty.exited_retention_secs;
                me.sweep(Duration::from_secs(secs)).await;
            }
        }));
    }

    /// Worker shutdown: every session's processes ended and reaped.
    pub async fn shutdown(&self) {
        let all = self.all();
        futures_util::future::join_all(all.iter().map(|s| s.terminate())).await;
        self.map().clear();
        self.opens().clear();
        if let Some(t) = self
            .sweeper
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            t.abort();
        }
    }
}
