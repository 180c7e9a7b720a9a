//! `shell::exec`: run a command in the foreground and return its output.
//!
//! The deadline is `timeout_ms` clamped to `max_timeout_ms` (omitted, zero,
//! negative or fractional → `default_timeout_ms`). At the deadline the
//! command's whole process group is killed (TERM, then KILL after a short
//! grace) and the call returns `timed_out: true` with the output so far —
//! unless the call passed `on_timeout: "background"`: then the command keeps
//! running as a background job, and the response carries its `job_id` for
//! `shell::status`, `shell::kill` and `shell::job-finished`. (When no job
//! slot is free, `max_concurrent_jobs`, the command is killed as usual.)
//!
//! Errors: S210 bad request (empty command, denylist hit, dangerous env key,
//! host-only field on a sandbox target, cwd not a directory), S211 cwd
//! missing or not accessible, S215 cwd escapes the jail, S216 the program
//! cannot be started; sandbox codes pass through.

use super::capture::{Keep, Shape};
use super::jobs::{NewJob, Runner, Started};
use super::process::{self, KILL_GRACE, Outputs};
use super::{
    HostFields, argv, denylist, host_spec, output_cap, output_limit, sandbox_target, timeout,
};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::sandbox::{Target, check_sandbox_call};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

/// Wire request for `shell::exec`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ExecRequest")]
pub struct ExecRequest {
    /// Program name (PATH-resolved) or path to an executable, as a string; put arguments in `args`.
    pub command: String,
    /// Arguments, in order (all strings). Omit/null to tokenize `command` shell-words style; pass an array (even empty) to use it verbatim.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Working directory (host only, S210 on sandbox); jail-confined like `shell::fs::*` paths (S215 on escape), must be an existing directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Per-call env values (host only, S210 on sandbox); exec-hijacking keys (PATH, IFS, HOME, `LD_*`/`DYLD_*`, …) reject the whole call S210.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Bytes written to the program's stdin, then EOF (host only, S210 on sandbox); omit to leave stdin at /dev/null.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Where to run the command. Defaults to the host worker; pass `{ kind: "sandbox", sandbox_id }` to forward the call to a microVM.
    #[serde(default)]
    pub target: Target,
    /// Per-call timeout in milliseconds, capped at the configured max; negative or fractional values fall back to the default (so do omitting it, null and 0).
    #[serde(default, deserialize_with = "timeout::lenient")]
    #[schemars(schema_with = "timeout::schema")]
    pub timeout_ms: Option<u64>,
    /// What to do with a host command still running at its deadline: "kill" (default) kills its process group; "background" keeps it running as a background job and returns timed_out: true, the output so far and its job_id (then use shell::status, shell::kill, shell::job-finished). Host only.
    #[serde(default)]
    pub on_timeout: OnTimeout,
    /// Bytes of each stream (stdout, stderr) this answer keeps, clamped to the configured `max_output_bytes` (default: that cap, 1 MiB unless configured). The command's output is read to its end either way; `*_dropped_bytes` says how much was left out.
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// Which part of a longer stream to keep: "head" (default: the first `max_output_bytes`), "tail" (the last ones — where test runners and compilers print their summary) or "both" (the first and last halves, joined by a line `[… N bytes cut …]`).
    #[serde(default)]
    pub keep: Keep,
}

/// What happens to a command still running at its deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    /// Kill its process group (TERM, then KILL).
    #[default]
    Kill,
    /// Keep it running as a background job.
    Background,
}

// The result of a foreground command. The published fields carry no
// descriptions, as published; `job_id`, `*_dropped_bytes` and `note` are
// this worker's additions (optional in the schema).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ExecResponse")]
pub struct ExecResponse {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// Bytes of stdout the command wrote that are not in `stdout` (0 when `stdout_truncated` is false); with `keep: "both"` they are the ones the cut marker stands for.
    #[serde(default)]
    pub stdout_dropped_bytes: u64,
    /// Bytes of stderr the command wrote that are not in `stderr`.
    #[serde(default)]
    pub stderr_dropped_bytes: u64,
    /// Present when the argv holds a bare shell operator (`|`, `||`, `&&`, `;`, `>`, `>>`, `<`): no shell interpreted it, the program received it as an argument, and the note says how to run a shell instead (the command still ran as given). Present too when the command timed out: what to call next (its job, or how to give it more time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Present only when `on_timeout: "background"` handed the still-running command over to a background job: its id for shell::status, shell::kill and shell::job-finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::exec",
        "Run a command in the foreground and return its output. No shell interprets it: put \
         the program in `command` and its arguments in `args` (string[]), or omit `args` and \
         `command` is split into words shell-words style (quotes and backslashes only; `|`, \
         `&&`, `;`, `>`, globs and `$VARS` reach the program as plain arguments, and the answer \
         carries a `note`). For shell syntax ask for a shell: command: \"sh\", args: [\"-c\", \
         \"git diff --stat | tail -1\"]. Output: each stream keeps `max_output_bytes` (per \
         call, clamped to the configured cap) — `keep: head` (default), `tail` or `both`; \
         `*_truncated` and `*_dropped_bytes` say what was left out. Not confined by \
         code.non_accessible_globs: a command reads what the worker's OS user can (`cat .env` \
         works); only cwd goes through the jail — host exec is not a security boundary. \
         Host-only cwd/env/stdin reject S210 on a sandbox target. Deadline: `timeout_ms`, or \
         with none default_timeout_ms but at most 25 s, so the answer beats the SDKs' 30 s call \
         timeout; a timed-out answer keeps the output so far and its `note` names the next call \
         (on_timeout: \"background\" hands the command to a job instead of killing it). \
         Errors return { code, message }; common: S216 host exec error, S300 VM boot failed, S200 in-VM failure.",
        Flags::NONE,
        exec,
    )
}

pub async fn exec(ctx: Ctx, req: ExecRequest) -> Result<ExecResponse, Failure> {
    let started = Started::now();
    let argv = argv::build(&req.command, req.args.as_deref())?;
    let limit = output_limit(&ctx.runtime, req.max_output_bytes);
    let fields = HostFields {
        cwd: req.cwd,
        env: req.env,
        stdin: req.stdin,
    };
    let deadline_ms = timeout::effective(
        req.timeout_ms,
        ctx.runtime.config.default_timeout_ms,
        ctx.runtime.config.max_timeout_ms,
    );
    if let Target::Sandbox { sandbox_id } = &req.target {
        check_sandbox_call(&ctx, &fields.presence())?;
        if req.on_timeout == OnTimeout::Background {
            return Err(Failure::bad_input(
                "on_timeout: \"background\" is host only (a sandbox enforces its own deadline); \
                 drop on_timeout, or start the command with shell::exec_bg",
            ));
        }
        denylist::check(&ctx.runtime.command_denylist, &argv)?;
        let note = argv::shell_operator_note(&argv);
        let out = sandbox_target::run(&ctx, sandbox_id, &argv, Some(deadline_ms)).await?;
        let c = out.capped(req.keep, limit);
        return Ok(ExecResponse {
            stdout: c.stdout.text,
            stderr: c.stderr.text,
            exit_code: c.exit_code,
            timed_out: c.timed_out,
            duration_ms: c.duration_ms,
            stdout_truncated: c.stdout.truncated,
            stderr_truncated: c.stderr.truncated,
            stdout_dropped_bytes: c.stdout.dropped,
            stderr_dropped_bytes: c.stderr.dropped,
            note,
            job_id: None,
        });
    }
    denylist::check(&ctx.runtime.command_denylist, &argv)?;
    let note = argv::shell_operator_note(&argv);
    let spec = host_spec(&ctx.runtime, argv, fields).await?;
    let jobs = &ctx.services.jobs;
    // A command that may become a background job keeps what any later
    // shell::status may ask for; otherwise just what this answer shows.
    let shape = match req.on_timeout {
        OnTimeout::Background => Shape::job(output_cap(&ctx.runtime)),
        OnTimeout::Kill => Shape::for_answer(req.keep, limit),
    };
    let outputs = Outputs::new(shape);
    let proc = process::spawn(&spec, jobs.live(), outputs.clone())?;
    let abandoned = EndIfAbandoned(Some(proc.clone()));
    let deadline = Duration::from_millis(deadline_ms).saturating_sub(started.at.elapsed());
    let (exit, timed_out, job_id) = match tokio::time::timeout(deadline, proc.wait()).await {
        Ok(exit) => (Some(exit), false, None),
        Err(_) => {
            let handed = match req.on_timeout {
                OnTimeout::Kill => None,
                OnTimeout::Background => {
                    hand_over(&ctx, spec.argv, &proc, outputs.clone(), started)
                }
            };
            match handed {
                Some(job_id) => (None, true, Some(job_id)),
                None => {
                    proc.terminate(KILL_GRACE).await;
                    (Some(proc.wait().await), true, None)
                }
            }
        }
    };
    abandoned.disarm();
    let note = match (timed_out, &job_id) {
        (false, _) => note,
        (true, job) => join_notes(
            note,
            timed_out_note(deadline_ms, req.timeout_ms.is_none(), job.as_deref()),
        ),
    };
    let stdout = outputs.stdout.view(req.keep, limit);
    let stderr = outputs.stderr.view(req.keep, limit);
    Ok(ExecResponse {
        stdout: stdout.text,
        stderr: stderr.text,
        exit_code: exit.and_then(|e| e.code),
        timed_out,
        duration_ms: started.at.elapsed().as_millis() as u64,
        stdout_truncated: stdout.truncated,
        stderr_truncated: stderr.truncated,
        stdout_dropped_bytes: stdout.dropped,
        stderr_dropped_bytes: stderr.dropped,
        note,
        job_id,
    })
}

/// What a timed-out answer says to call next: where the output went on,
/// or how to give the command the time it needs.
fn timed_out_note(deadline_ms: u64, defaulted: bool, job_id: Option<&str>) -> String {
    let why = if defaulted {
        format!(
            "the command was still running at {deadline_ms} ms, the deadline of a call that \
             names no timeout_ms (answered before the SDKs' 30 s call timeout)"
        )
    } else {
        format!("the command was still running at its {deadline_ms} ms deadline")
    };
    match job_id {
        Some(job) => format!(
            "{why}: it goes on as background job {job}; shell::status {{\"job_id\": \"{job}\"}} \
             shows its output so far, shell::job-finished waits for its end"
        ),
        None => format!(
            "{why} and was killed; the output above is what it printed until then. To let it \
             finish, run it again with on_timeout: \"background\" (it then goes on as a job \
             for shell::status) or with shell::exec_bg; or pass timeout_ms (at most \
             max_timeout_ms, see coder::info) with a call timeout above it"
        ),
    }
}

fn join_notes(a: Option<String>, b: String) -> Option<String> {
    Some(match a {
        Some(a) => format!("{a}\n{b}"),
        None => b,
    })
}

/// Ends a foreground command whose call was dropped before it answered (an
/// MCP client's cancellation, a caller that went away): nothing ide starts
/// outlives a call nobody waits for any more. Disarmed once the call has
/// its answer (the command exited, was killed at its deadline, or became a
/// background job).
struct EndIfAbandoned(Option<Arc<process::Process>>);

impl EndIfAbandoned {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for EndIfAbandoned {
    fn drop(&mut self) {
        let Some(proc) = self.0.take() else { return };
        let pid = proc.pid();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                tracing::debug!(pid, "a command's call was dropped: ending it");
                rt.spawn(async move {
                    proc.terminate(KILL_GRACE).await;
                });
            }
            Err(_) => tracing::warn!(
                pid,
                "a command's call was dropped outside the runtime; it is ended at shutdown"
            ),
        }
    }
}

/// Turn a running foreground command into a background job. `None` when no
/// job slot is free (the caller then kills it).
fn hand_over(
    ctx: &Ctx,
    argv: Vec<String>,
    proc: &Arc<process::Process>,
    outputs: Outputs,
    started: Started,
) -> Option<String> {
    let jobs = &ctx.services.jobs;
    let new = NewJob {
        id: None,
        argv,
        runner: Runner::Host(OnceLock::new()),
        outputs,
        started,
    };
    match jobs.reserve(new, &ctx.runtime) {
        Ok(job) => {
            let id = job.id.clone();
            jobs.run_host(job, proc.clone());
            Some(id)
        }
        Err(f) => {
            tracing::warn!(reason = %f, "on_timeout background: no job slot, killing the command instead");
            None
        }
    }
}
