//! `shell::exec_bg`: start a background job and return `{job_id, argv}`.
//!
//! Everything that can be checked is checked first (argv, denylist, env,
//! cwd); then the id is reserved atomically together with a running slot;
//! only then does anything run. A caller-chosen id that a retained job
//! already holds is refused (S213) without touching that job; a full table
//! (`max_concurrent_jobs`) is refused with S218. If the program cannot be
//! started the reservation is given back and no completion is ever fired.
//!
//! Host jobs run until they exit or `shell::kill` — or for at most
//! `max_bg_timeout_ms` when that is positive (then killed, status
//! `killed`); `timeout_ms` is ignored on the host. Sandbox jobs forward
//! `timeout_ms` and cannot be hard-killed.

use super::capture::Shape;
use super::jobs::{JobStatus, NewJob, Runner, Started};
use super::process::{self, Outputs};
use super::{HostFields, argv, denylist, host_spec, output_cap, sandbox_target, timeout};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::sandbox::{Target, check_sandbox_call};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Wire request for `shell::exec_bg`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ExecBgRequest")]
pub struct ExecBgRequest {
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
    /// Optional non-blank ID for registering shell::job-finished before execution. Must be unique among retained jobs in this worker. Omit or pass null to generate a job-UUID automatically.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub job_id: Option<String>,
    /// Bytes written to the program's stdin, then EOF (host only, S210 on sandbox); omit to leave stdin at /dev/null.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Where to run: the host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
    /// Per-call timeout in milliseconds; ignored by host background jobs, forwarded to sandbox targets (omitted, null, 0, negative or fractional: the default).
    #[serde(default, deserialize_with = "timeout::lenient")]
    #[schemars(schema_with = "timeout::schema")]
    pub timeout_ms: Option<u64>,
}

// The started job. The published fields carry no descriptions, as
// published; `note` is this worker's addition.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ExecBgResponse")]
pub struct ExecBgResponse {
    pub job_id: String,
    pub argv: Vec<String>,
    /// Present when the argv holds a bare shell operator (`|`, `||`, `&&`, `;`, `>`, `>>`, `<`): no shell interprets it, the program receives it as an argument; the note gives the `sh -c` form. The job runs as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::exec_bg",
        "Spawn a background job; returns { job_id, argv } immediately. Accepts the shell::exec \
         payload (no shell interprets the command either; not on_timeout, max_output_bytes or \
         keep: a job keeps both ends of its output, and shell::status shows the part asked for) \
         plus optional job_id. Register shell::job-finished with a fresh job_id before \
         calling exec_bg with that same ID, or omit job_id to generate one. Duplicate retained \
         IDs reject before execution. Host jobs ignore timeout_ms and use the configured \
         background hard cap; read output with shell::status, list jobs with shell::list. \
         Spawn-time failures are plain-string messages; later failures emit \
         shell::job-finished and appear in shell::status.",
        Flags::NONE,
        exec_bg,
    )
}

pub async fn exec_bg(ctx: Ctx, req: ExecBgRequest) -> Result<ExecBgResponse, Failure> {
    if req.job_id.as_deref().is_some_and(|id| id.trim().is_empty()) {
        return Err(Failure::bad_input(
            "job_id is blank; pass a non-blank id (e.g. job-<uuid>) or omit it to have one \
             generated",
        ));
    }
    let argv = argv::build(&req.command, req.args.as_deref())?;
    let fields = HostFields {
        cwd: req.cwd,
        env: req.env,
        stdin: req.stdin,
    };
    let jobs = ctx.services.jobs.clone();
    if let Target::Sandbox { sandbox_id } = req.target {
        check_sandbox_call(&ctx, &fields.presence())?;
        denylist::check(&ctx.runtime.command_denylist, &argv)?;
        let job = jobs.reserve(
            NewJob {
                id: req.job_id.as_deref(),
                argv: argv.clone(),
                runner: Runner::Sandbox,
                outputs: Outputs::new(Shape::job(output_cap(&ctx.runtime))),
                started: Started::now(),
            },
            &ctx.runtime,
        )?;
        let timeout_ms = req.timeout_ms;
        let task_job = job.clone();
        tokio::spawn(async move {
            let job = task_job;
            match sandbox_target::run(&ctx, &sandbox_id, &job.argv, timeout_ms).await {
                Ok(out) => {
                    job.outputs.stdout.set(out.stdout.as_bytes());
                    job.outputs.stderr.set(out.stderr.as_bytes());
                    jobs.finish(&job, JobStatus::Finished, out.exit_code, None);
                }
                Err(f) => {
                    let wire = f.to_wire(crate::error::Surface::Shell);
                    let message = format!("{FN} failed ({}): {}", wire.code, wire.message);
                    job.outputs.stderr.set(message.as_bytes());
                    jobs.finish(&job, JobStatus::Failed, None, Some(message));
                }
            }
        });
        return Ok(ExecBgResponse {
            job_id: job.id.clone(),
            note: argv::shell_operator_note(&argv),
            argv,
        });
    }
    denylist::check(&ctx.runtime.command_denylist, &argv)?;
    let spec = host_spec(&ctx.runtime, argv.clone(), fields).await?;
    let job = jobs.reserve(
        NewJob {
            id: req.job_id.as_deref(),
            argv: argv.clone(),
            runner: Runner::Host(OnceLock::new()),
            outputs: Outputs::new(Shape::job(output_cap(&ctx.runtime))),
            started: Started::now(),
        },
        &ctx.runtime,
    )?;
    match process::spawn(&spec, jobs.live(), job.outputs.clone()) {
        Ok(proc) => jobs.run_host(job.clone(), proc),
        Err(f) => {
            jobs.release(&job);
            return Err(f);
        }
    }
    Ok(ExecBgResponse {
        job_id: job.id.clone(),
        note: argv::shell_operator_note(&argv),
        argv,
    })
}

const FN: &str = sandbox_target::FUNCTION;
