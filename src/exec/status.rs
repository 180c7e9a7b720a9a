//! `shell::status`: one job's full record, captured output included.
//!
//! An id this worker never started, or one pruned `job_retention_secs`
//! after it ended, is S211 "no such job".

use super::capture::Keep;
use super::jobs::{JobStatus, JobView};
use super::output_limit;
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// `shell::status` request (`job_id` without a description, as published;
// `max_output_bytes` and `keep` are this worker's additions).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "StatusRequest")]
pub struct StatusRequest {
    pub job_id: String,
    /// Bytes of each stream (stdout, stderr) this answer shows, clamped to the configured `max_output_bytes` (default: that cap). A job keeps the first and the last `max_output_bytes` of each stream, so any `keep` can be asked for at any time, while it runs too.
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// Which part of a longer stream to show: "head" (default: the first bytes), "tail" (the last ones — a test run's summary) or "both" (the first and last halves, joined by a line `[… N bytes cut …]`). `*_dropped_bytes` says how much is not shown.
    #[serde(default)]
    pub keep: Keep,
}

// The full record of one job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobRecord {
    pub id: String,
    pub argv: Vec<String>,
    pub status: JobStatus,
    pub exit_code: Option<i32>,
    pub started_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    /// Why the job was killed or failed (`max_bg_timeout_ms`, `shell::kill`, worker shutdown, …); null while running or when it exited on its own.
    pub reason: Option<String>,
    /// The signal that ended the process (`SIGKILL`, `SIGTERM`, ...); absent when it exited by itself or still runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// True when the job was killed for outliving `max_bg_timeout_ms`.
    // optional in the schema: the published record does not require it
    #[serde(default)]
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// Bytes of stdout the job wrote so far that are not in `stdout` (0 when nothing was left out).
    #[serde(default)]
    pub stdout_dropped_bytes: u64,
    /// Bytes of stderr the job wrote so far that are not in `stderr`.
    #[serde(default)]
    pub stderr_dropped_bytes: u64,
}

impl From<JobView> for JobRecord {
    fn from(v: JobView) -> Self {
        JobRecord {
            id: v.id,
            argv: v.argv,
            status: v.status,
            exit_code: v.exit_code,
            started_at_ms: v.started_at_ms,
            finished_at_ms: v.finished_at_ms,
            reason: v.reason,
            signal: v.signal,
            timed_out: v.timed_out,
            stdout: v.stdout,
            stderr: v.stderr,
            stdout_truncated: v.stdout_truncated,
            stderr_truncated: v.stderr_truncated,
            stdout_dropped_bytes: v.stdout_dropped_bytes,
            stderr_dropped_bytes: v.stderr_dropped_bytes,
        }
    }
}

// `shell::status` response.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "StatusResponse")]
pub struct StatusResponse {
    pub job: JobRecord,
}

pub fn def() -> FunctionDef {
    function(
        "shell::status",
        "Fetch the full record (status, exit_code, timing, output so far) of a background job \
         by job_id. Output: max_output_bytes per stream (clamped to the configured cap) with \
         keep: head (default), tail or both; `*_dropped_bytes` says what is not shown. Errors \
         return { code, message }; common: S211 no such job.",
        Flags::NONE,
        |ctx: Ctx, req: StatusRequest| async move {
            let job = ctx.services.jobs.get(&req.job_id, &ctx.runtime)?;
            let limit = output_limit(&job.runtime, req.max_output_bytes)
                .min(output_limit(&ctx.runtime, None));
            Ok::<_, Failure>(StatusResponse {
                job: job.view_as(req.keep, limit).into(),
            })
        },
    )
}
