//! `shell::status`: one job's full record, captured output included.
//!
//! An id this worker never started, or one pruned `job_retention_secs`
//! after it ended, is S211 "no such job".

use super::jobs::{JobStatus, JobView};
use crate::catalog::{Ctx, Flags, FunctionDef, function};
use crate::error::Failure;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// `shell::status` request (no descriptions, as published).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "StatusRequest")]
pub struct StatusRequest {
    pub job_id: String,
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
    /// True when the job was killed for outliving `max_bg_timeout_ms`.
    // optional in the schema: the published record does not require it
    #[serde(default)]
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
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
            timed_out: v.timed_out,
            stdout: v.stdout,
            stderr: v.stderr,
            stdout_truncated: v.stdout_truncated,
            stderr_truncated: v.stderr_truncated,
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
        "Fetch the full record (status, exit_code, timing) of a background job by job_id. Errors \
         return { code, message }; common: S211 no such job.",
        Flags::NONE,
        |ctx: Ctx, req: StatusRequest| async move {
            let job = ctx.services.jobs.get(&req.job_id, &ctx.runtime)?;
            Ok::<_, Failure>(StatusResponse {
                job: job.view().into(),
            })
        },
    )
}
