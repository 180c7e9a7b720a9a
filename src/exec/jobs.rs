//! The background job table and the `shell::job-finished` fan-out.
//!
//! A job is a record keyed by its id: argv, timings, captured output and a
//! status that moves once from `running` to a terminal one (`finished`,
//! `killed`, `failed`). The table owns:
//!
//! - **Reservation.** An id is claimed with the map's entry API before any
//!   process starts or any sandbox request is sent, so two calls with the
//!   same id cannot both run; a retained duplicate is refused untouched.
//! - **Admission.** At most `max_concurrent_jobs` jobs are running; the
//!   slot is taken with one atomic update and given back exactly once, by
//!   the transition to a terminal status.
//! - **Retention.** Terminal records are pruned `job_retention_secs` after
//!   they ended. To keep memory bounded whatever the settings, the oldest
//!   terminal records also go early once more than [`MAX_RETAINED`] are kept
//!   or their output exceeds [`MAX_RETAINED_OUTPUT`].
//! - **Completion fan-out.** Each terminal transition fires every matching
//!   `shell::job-finished` binding, fire-and-forget. A binding filtered by
//!   `job_id` also gets the result at registration when the job already
//!   ended; registration and completion meet under one lock, so such a
//!   binding is fired exactly once.
//!
//! A job keeps the runtime snapshot it was spawned under: a reload never
//! re-checks or re-limits a job that is already running.

use super::capture::Keep;
use super::process::{DRAIN_GRACE, KILL_GRACE, LiveGroups, Outputs, Process};
use crate::error::{Class, Failure};
use crate::ports::{Binding, Outbound};
use crate::runtime::Runtime;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::time::Instant;

/// Most terminal records kept at once (oldest pruned first past it).
pub const MAX_RETAINED: usize = 1024;
/// Most captured output held by terminal records, in bytes.
pub const MAX_RETAINED_OUTPUT: usize = 256 * 1024 * 1024;

// A job's lifecycle state; `running` until it ends, then one terminal state.
/// What ended; the job's output is one `shell::status` call away.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "JobFinishedEvent",
    description = "What ended. Lean by design, like [`crate::events::ChangedEvent`]: a subscriber \
                   that wants the job's output asks `shell::status`."
)]
pub struct JobFinishedEvent {
    // no description: the contract publishes none for this field
    pub job_id: String,
    /// The command as spawned, so a subscriber bound without a `job_id` filter can tell jobs apart without a second call.
    pub argv: Vec<String>,
    /// `finished`, `killed`, or `failed` — never `running`.
    pub status: JobStatus,
    /// `None` when the job never produced one (killed before exit, or a sandbox response that carried no code).
    pub exit_code: Option<i32>,
    // milliseconds since the Unix epoch
    pub started_at_ms: u64,
    // milliseconds since the Unix epoch
    pub finished_at_ms: u64,
    // elapsed milliseconds, from a monotonic clock
    pub duration_ms: u64,
    /// The signal that ended the process (`SIGKILL`, `SIGTERM`, ...); absent when it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Running,
    Finished,
    Killed,
    Failed,
}

impl JobStatus {
    pub fn is_terminal(self) -> bool {
        self != JobStatus::Running
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Finished => "finished",
            JobStatus::Killed => "killed",
            JobStatus::Failed => "failed",
        }
    }
}

/// Where a job runs.
#[derive(Debug)]
pub enum Runner {
    /// A host process group (set once spawned).
    Host(OnceLock<Arc<Process>>),
    /// A forwarded `sandbox::exec`; cannot be hard-killed.
    Sandbox,
}

#[derive(Debug)]
struct State {
    status: JobStatus,
    exit_code: Option<i32>,
    finished_at_ms: Option<u64>,
    finished_at: Option<Instant>,
    duration_ms: u64,
    /// Why the job was killed or failed.
    reason: Option<String>,
    /// The signal that ended the process (`SIGKILL`, ...).
    signal: Option<String>,
}

/// One job record.
#[derive(Debug)]
pub struct Job {
    pub id: String,
    pub argv: Vec<String>,
    pub started_at_ms: u64,
    started: Instant,
    pub runner: Runner,
    pub outputs: Outputs,
    /// The snapshot the job was started under.
    pub runtime: Arc<Runtime>,
    state: Mutex<State>,
    /// Set when a kill was asked for; read by the host runner.
    kill_reason: Mutex<Option<String>>,
    kill_requested: AtomicBool,
    terminal: watch::Sender<bool>,
}

/// A consistent copy of a job's record.
#[derive(Debug, Clone)]
pub struct JobView {
    pub id: String,
    pub argv: Vec<String>,
    pub status: JobStatus,
    pub exit_code: Option<i32>,
    pub started_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    pub duration_ms: u64,
    pub reason: Option<String>,
    /// The signal that ended the process, by name (`SIGKILL`).
    pub signal: Option<String>,
    /// Killed because it outlived `max_bg_timeout_ms`.
    pub timed_out: bool,
    pub stdout: String,
    pub stdout_truncated: bool,
    pub stdout_dropped_bytes: u64,
    pub stderr: String,
    pub stderr_truncated: bool,
    pub stderr_dropped_bytes: u64,
}

/// How the reason of a job killed by `max_bg_timeout_ms` starts.
const TIMED_OUT_PREFIX: &str = "exceeded max_bg_timeout_ms";

/// `SIGKILL` for 9; the number for a signal this platform does not name.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// When a job started: now, or earlier for a foreground command handed
/// over at its deadline.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    pub at_ms: u64,
    pub at: Instant,
}

impl Started {
    pub fn now() -> Started {
        Started {
            at_ms: now_ms(),
            at: Instant::now(),
        }
    }
}

/// What a new record is made of.
pub struct NewJob<'a> {
    /// The caller's id; `None` draws `job-<uuid>`.
    pub id: Option<&'a str>,
    pub argv: Vec<String>,
    pub runner: Runner,
    pub outputs: Outputs,
    pub started: Started,
}

impl Job {
    fn new(id: String, new: NewJob<'_>, runtime: Arc<Runtime>) -> Job {
        Job {
            id,
            argv: new.argv,
            started_at_ms: new.started.at_ms,
            started: new.started.at,
            runner: new.runner,
            outputs: new.outputs,
            runtime,
            state: Mutex::new(State {
                status: JobStatus::Running,
                exit_code: None,
                finished_at_ms: None,
                finished_at: None,
                duration_ms: 0,
                reason: None,
                signal: None,
            }),
            kill_reason: Mutex::new(None),
            kill_requested: AtomicBool::new(false),
            terminal: watch::channel(false).0,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> JobStatus {
        self.state().status
    }

    /// The record with the first `max_output_bytes` of each stream.
    pub fn view(&self) -> JobView {
        self.view_as(Keep::Head, super::output_cap(&self.runtime))
    }

    /// The record with `keep` of each stream in at most `limit` bytes.
    pub fn view_as(&self, keep: Keep, limit: usize) -> JobView {
        let st = self.state();
        let stdout = self.outputs.stdout.view(keep, limit);
        let stderr = self.outputs.stderr.view(keep, limit);
        JobView {
            id: self.id.clone(),
            argv: self.argv.clone(),
            status: st.status,
            exit_code: st.exit_code,
            started_at_ms: self.started_at_ms,
            finished_at_ms: st.finished_at_ms,
            duration_ms: st.duration_ms,
            reason: st.reason.clone(),
            signal: st.signal.clone(),
            timed_out: st.status == JobStatus::Killed
                && st
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with(TIMED_OUT_PREFIX)),
            stdout: stdout.text,
            stdout_truncated: stdout.truncated,
            stdout_dropped_bytes: stdout.dropped,
            stderr: stderr.text,
            stderr_truncated: stderr.truncated,
            stderr_dropped_bytes: stderr.dropped,
        }
    }

    /// The completion event, once the job is terminal.
    pub fn event(&self) -> Option<JobFinishedEvent> {
        let st = self.state();
        if !st.status.is_terminal() {
            return None;
        }
        Some(JobFinishedEvent {
            job_id: self.id.clone(),
            argv: self.argv.clone(),
            status: st.status,
            exit_code: st.exit_code,
            started_at_ms: self.started_at_ms,
            finished_at_ms: st.finished_at_ms.unwrap_or(self.started_at_ms),
            duration_ms: st.duration_ms,
            signal: st.signal.clone(),
        })
    }

    /// Wait (at most `limit`) until the job is terminal.
    pub async fn wait_terminal(&self, limit: Duration) -> bool {
        let mut rx = self.terminal.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|t| *t))
            .await
            .is_ok()
    }

    fn expired(&self, now: Instant, retention: Duration) -> bool {
        self.state()
            .finished_at
            .is_some_and(|t| now.saturating_duration_since(t) >= retention)
    }

    fn process(&self) -> Option<&Arc<Process>> {
        match &self.runner {
            Runner::Host(p) => p.get(),
            Runner::Sandbox => None,
        }
    }

    fn held_bytes(&self) -> usize {
        self.outputs.stdout.held_bytes() + self.outputs.stderr.held_bytes()
    }
}

/// One `shell::job-finished` binding.
#[derive(Debug)]
struct Subscriber {
    binding: Binding,
    job_id: Option<String>,
    /// A filtered binding fires once, whichever of registration and
    /// completion gets there first.
    delivered: bool,
}

/// What `kill` did.
#[derive(Debug, Clone)]
pub struct KillOutcome {
    pub killed: bool,
    pub status: JobStatus,
    pub reason: Option<String>,
}

/// The job table (one per worker process).
pub struct JobTable {
    jobs: DashMap<String, Arc<Job>>,
    running: AtomicU32,
    retention_secs: AtomicU64,
    live: Arc<LiveGroups>,
    subscribers: Mutex<BTreeMap<String, Subscriber>>,
    outbound: Option<Arc<dyn Outbound>>,
}

impl std::fmt::Debug for JobTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobTable")
            .field("jobs", &self.jobs.len())
            .field("running", &self.running.load(Ordering::SeqCst))
            .finish()
    }
}

impl JobTable {
    /// A table that fires completions through `outbound` (none: no fan-out).
    pub fn new(outbound: Option<Arc<dyn Outbound>>) -> JobTable {
        JobTable {
            jobs: DashMap::new(),
            running: AtomicU32::new(0),
            retention_secs: AtomicU64::new(3600),
            live: Arc::new(LiveGroups::default()),
            subscribers: Mutex::new(BTreeMap::new()),
            outbound,
        }
    }

    /// Every live process group (foreground commands included).
    pub fn live(&self) -> &Arc<LiveGroups> {
        &self.live
    }

    fn subscribers(&self) -> MutexGuard<'_, BTreeMap<String, Subscriber>> {
        self.subscribers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Jobs currently holding a running slot.
    pub fn running(&self) -> u32 {
        self.running.load(Ordering::SeqCst)
    }

    /// Claim `id` (or a fresh `job-<uuid>`) and a running slot, before
    /// anything runs. The id is decided first, so a duplicate is always
    /// told so (213) even when the table is also full; a reservation refused
    /// for want of a slot is removed again before this returns.
    pub fn reserve(&self, new: NewJob<'_>, runtime: &Arc<Runtime>) -> Result<Arc<Job>, Failure> {
        self.prune(runtime);
        let max = runtime.config.max_concurrent_jobs;
        let requested = new.id;
        let mut new = Some(new);
        loop {
            let id = match requested {
                Some(id) => id.to_string(),
                None => format!("job-{}", uuid::Uuid::new_v4()),
            };
            let job = match self.jobs.entry(id.clone()) {
                Entry::Occupied(e) => {
                    if requested.is_some() {
                        let status = e.get().status();
                        return Err(Failure::new(
                            Class::Exists,
                            format!(
                                "job_id {id:?} already belongs to a {} job retained by this \
                                 worker; nothing was run. Job ids are single-use: generate a \
                                 fresh one (e.g. job-<uuid>) or omit job_id",
                                status.as_str()
                            ),
                        ));
                    }
                    continue; // a generated id collided: draw another
                }
                Entry::Vacant(v) => {
                    let Some(new) = new.take() else {
                        return Err(Failure::io("job reservation reused its request"));
                    };
                    let job = Arc::new(Job::new(id, new, runtime.clone()));
                    v.insert(job.clone());
                    job
                }
            };
            let admitted = self
                .running
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok();
            if !admitted {
                self.jobs
                    .remove_if(&job.id, |_, held| Arc::ptr_eq(held, &job));
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "max concurrent jobs reached: {max} background jobs are already \
                         running (max_concurrent_jobs); \
                         nothing was run. Wait for one to end (shell::list, \
                         shell::job-finished) or stop one with shell::kill, then retry"
                    ),
                ));
            }
            return Ok(job);
        }
    }

    /// Give back a reservation whose job never started (spawn failed). No
    /// completion is fired: the job never existed.
    pub fn release(&self, job: &Arc<Job>) {
        let removed = self
            .jobs
            .remove_if(&job.id, |_, held| Arc::ptr_eq(held, job))
            .is_some();
        if removed {
            let mut st = job.state();
            if st.status == JobStatus::Running {
                st.status = JobStatus::Failed;
                drop(st);
                self.running.fetch_sub(1, Ordering::SeqCst);
                job.terminal.send_replace(true);
            }
        }
    }

    /// Attach the spawned process to a host job and supervise it until it
    /// ends: exit, `max_bg_timeout_ms` (of the job's snapshot), or a kill.
    pub fn run_host(self: &Arc<Self>, job: Arc<Job>, process: Arc<Process>) {
        if let Runner::Host(slot) = &job.runner {
            let _ = slot.set(process.clone());
        }
        let table = self.clone();
        let cap_ms = job.runtime.config.max_bg_timeout_ms;
        tokio::spawn(async move {
            // A kill that arrived before the process was attached.
            if job.kill_requested.load(Ordering::SeqCst) {
                process.terminate(KILL_GRACE).await;
            }
            let exit = if cap_ms > 0 {
                let remaining = Duration::from_millis(cap_ms).saturating_sub(job.started.elapsed());
                tokio::select! {
                    exit = process.wait() => exit,
                    _ = tokio::time::sleep(remaining) => {
                        job.request_kill(format!(
                            "{TIMED_OUT_PREFIX} ({cap_ms} ms); the process group was killed"
                        ));
                        process.terminate(KILL_GRACE).await;
                        let exit = process.wait().await;
                        // as the original worker did: the job's own stderr says why
                        if job.kill_reason().is_some_and(|r| r.starts_with(TIMED_OUT_PREFIX)) {
                            job.outputs.stderr.push(
                                format!(
                                    "\n[ide] killed: exceeded max_bg_timeout_ms ({cap_ms} ms), the hard cap on a background job's run time\n"
                                )
                                    .as_bytes(),
                            );
                        }
                        exit
                    }
                }
            } else {
                process.wait().await
            };
            let (status, reason) = if job.kill_requested.load(Ordering::SeqCst) {
                (JobStatus::Killed, job.kill_reason())
            } else if exit.wait_failed {
                (
                    JobStatus::Failed,
                    Some("the worker lost track of the process (wait failed)".to_string()),
                )
            } else {
                (JobStatus::Finished, None)
            };
            let signal = exit.signal.map(signal_name);
            table.finish_signalled(&job, status, exit.code, signal, reason);
        });
    }

    /// Move a job to a terminal status (once), give back its slot and fire
    /// its bindings. Later calls for the same job change nothing.
    pub fn finish(
        &self,
        job: &Arc<Job>,
        status: JobStatus,
        exit_code: Option<i32>,
        reason: Option<String>,
    ) -> bool {
        self.finish_signalled(job, status, exit_code, None, reason)
    }

    /// [`Self::finish`] of a process a signal ended.
    pub fn finish_signalled(
        &self,
        job: &Arc<Job>,
        status: JobStatus,
        exit_code: Option<i32>,
        signal: Option<String>,
        reason: Option<String>,
    ) -> bool {
        debug_assert!(status.is_terminal());
        {
            let mut st = job.state();
            if st.status.is_terminal() {
                return false;
            }
            st.status = status;
            st.exit_code = exit_code;
            st.finished_at_ms = Some(now_ms());
            st.finished_at = Some(Instant::now());
            st.duration_ms = job.started.elapsed().as_millis() as u64;
            st.reason = reason;
            st.signal = signal;
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        job.terminal.send_replace(true);
        if let Some(event) = job.event() {
            self.fan_out(&event);
        }
        self.prune_with(Duration::from_secs(
            self.retention_secs.load(Ordering::SeqCst),
        ));
        true
    }

    fn fan_out(&self, event: &JobFinishedEvent) {
        let mut subs = self.subscribers();
        for sub in subs.values_mut() {
            let matches = match &sub.job_id {
                Some(id) => id == &event.job_id && !sub.delivered,
                None => true,
            };
            if matches {
                sub.delivered = sub.job_id.is_some();
                self.fire(&sub.binding, event);
            }
        }
    }

    fn fire(&self, binding: &Binding, event: &JobFinishedEvent) {
        let Some(out) = &self.outbound else {
            return;
        };
        match serde_json::to_value(event) {
            Ok(payload) => out.fire(binding, payload),
            Err(e) => tracing::error!(error = %e, "cannot encode a job-finished event"),
        }
    }

    /// Add (or refresh) a `shell::job-finished` binding; a filtered one
    /// whose job already ended and is retained is fired now.
    pub fn subscribe(&self, binding: Binding, job_id: Option<String>, runtime: &Runtime) {
        self.prune(runtime);
        let mut subs = self.subscribers();
        let delivered = subs
            .get(&binding.id)
            .is_some_and(|s| s.delivered && s.job_id == job_id);
        let id = binding.id.clone();
        subs.insert(
            id.clone(),
            Subscriber {
                binding,
                job_id: job_id.clone(),
                delivered,
            },
        );
        let Some(job_id) = job_id else {
            return;
        };
        if delivered {
            return;
        }
        let event = self.jobs.get(&job_id).and_then(|job| job.event());
        if let (Some(event), Some(sub)) = (event, subs.get_mut(&id)) {
            sub.delivered = true;
            self.fire(&sub.binding, &event);
        }
    }

    pub fn unsubscribe(&self, binding_id: &str) {
        self.subscribers().remove(binding_id);
    }

    /// Number of bindings held (for tests and diagnostics).
    pub fn subscriber_count(&self) -> usize {
        self.subscribers().len()
    }

    /// A retained job.
    pub fn get(&self, id: &str, runtime: &Runtime) -> Result<Arc<Job>, Failure> {
        self.prune(runtime);
        self.jobs
            .get(id)
            .map(|j| j.value().clone())
            .ok_or_else(|| no_such_job(id, runtime))
    }

    /// Every retained job, oldest first.
    pub fn all(&self, runtime: &Runtime) -> Vec<Arc<Job>> {
        self.prune(runtime);
        let mut jobs: Vec<Arc<Job>> = self.jobs.iter().map(|e| e.value().clone()).collect();
        jobs.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.id.cmp(&b.id)));
        jobs
    }

    /// Kill a job's process group (host) or mark it killed (sandbox).
    pub async fn kill(&self, id: &str, runtime: &Runtime) -> Result<KillOutcome, Failure> {
        let job = self.get(id, runtime)?;
        let status = job.status();
        if status.is_terminal() {
            return Ok(KillOutcome {
                killed: false,
                status,
                reason: Some(format!(
                    "job already ended ({}); nothing to kill. shell::status {{job_id: {id:?}}} \
                     shows its result",
                    status.as_str()
                )),
            });
        }
        match &job.runner {
            Runner::Sandbox => {
                let reason = "marked killed; a sandbox job cannot be hard-killed, its in-VM \
                              process runs until its timeout_ms (or sandbox::stop)"
                    .to_string();
                let killed = self.finish(&job, JobStatus::Killed, None, Some(reason.clone()));
                let st = job.status();
                Ok(KillOutcome {
                    killed,
                    status: st,
                    reason: Some(reason),
                })
            }
            Runner::Host(_) => {
                if job.process().is_some_and(|p| p.done().is_some()) {
                    // It already exited and is only draining its output.
                    job.wait_terminal(DRAIN_GRACE + Duration::from_secs(1))
                        .await;
                    let view = job.view();
                    return Ok(KillOutcome {
                        killed: false,
                        status: view.status,
                        reason: Some("the job exited on its own before the kill".to_string()),
                    });
                }
                job.request_kill("killed by shell::kill".to_string());
                if let Some(p) = job.process() {
                    p.terminate(KILL_GRACE).await;
                }
                // The runner records the end once the output has drained.
                let ended = job
                    .wait_terminal(KILL_GRACE + DRAIN_GRACE + Duration::from_secs(1))
                    .await;
                let view = job.view();
                if !ended {
                    let pid = job.process().map(|p| p.pid()).unwrap_or(0);
                    return Err(Failure::io(format!(
                        "job {id:?} is still running after TERM and KILL to its process group                          {pid} (signal delivery failed, or it is stuck in the kernel); check                          shell::status {{job_id: {id:?}}} again, or stop it from the host"
                    )));
                }
                Ok(KillOutcome {
                    killed: view.status == JobStatus::Killed,
                    status: view.status,
                    reason: view.reason,
                })
            }
        }
    }

    /// Kill every live process group and wait for the records to settle
    /// (worker shutdown).
    pub async fn shutdown(&self) {
        for job in self.jobs.iter() {
            if !job.status().is_terminal() {
                job.request_kill("the worker shut down".to_string());
            }
        }
        self.live.terminate_all(KILL_GRACE).await;
        let pending: Vec<Arc<Job>> = self
            .jobs
            .iter()
            .filter(|j| matches!(j.runner, Runner::Host(_)) && !j.status().is_terminal())
            .map(|j| j.value().clone())
            .collect();
        for job in pending {
            job.wait_terminal(DRAIN_GRACE + Duration::from_millis(500))
                .await;
        }
    }

    fn prune(&self, runtime: &Runtime) {
        let secs = runtime.config.job_retention_secs;
        self.retention_secs.store(secs, Ordering::SeqCst);
        self.prune_with(Duration::from_secs(secs));
    }

    /// Drop terminal records older than `retention`, then the oldest
    /// terminal ones past the count and output budgets.
    pub fn prune_with(&self, retention: Duration) {
        let now = Instant::now();
        self.jobs.retain(|_, job| !job.expired(now, retention));
        let mut ended: Vec<(Instant, String, usize)> = Vec::new();
        let mut bytes = 0usize;
        for e in self.jobs.iter() {
            if let Some(t) = e.state().finished_at {
                let held = e.held_bytes();
                bytes += held;
                ended.push((t, e.id.clone(), held));
            }
        }
        if ended.len() <= MAX_RETAINED && bytes <= MAX_RETAINED_OUTPUT {
            return;
        }
        ended.sort();
        let mut count = ended.len();
        for (_, id, held) in ended {
            if count <= MAX_RETAINED && bytes <= MAX_RETAINED_OUTPUT {
                break;
            }
            tracing::info!(job_id = %id, "pruning a finished job early: retained-record budget reached");
            self.jobs.remove(&id);
            count -= 1;
            bytes = bytes.saturating_sub(held);
        }
    }
}

impl Job {
    fn request_kill(&self, reason: String) {
        {
            let mut r = self.kill_reason.lock().unwrap_or_else(|p| p.into_inner());
            if r.is_none() {
                *r = Some(reason);
            }
        }
        self.kill_requested.store(true, Ordering::SeqCst);
    }

    fn kill_reason(&self) -> Option<String> {
        self.kill_reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The S211 for an unknown or pruned job.
pub fn no_such_job(id: &str, runtime: &Runtime) -> Failure {
    Failure::new(
        Class::NotFound,
        format!(
            "no such job: {id:?} (never started by this worker, or pruned {} s after it ended, \
             or lost in a worker restart); shell::list shows the retained jobs",
            runtime.config.job_retention_secs
        ),
    )
}
