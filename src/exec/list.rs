//! `shell::list`: every retained job as a summary.
//!
//! The table is process-wide with no per-caller scope, so summaries leave
//! out argv, stdout and stderr; `shell::status` with the (unguessable) id
//! returns the full record.

use super::jobs::JobStatus;
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `shell::list` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ListRequest")]
pub struct ListRequest {}

/// `shell::list` returns one `JobSummary` per record. argv, stdout, and stderr are deliberately omitted: the global JOBS map is process-wide and has no per-caller scope, so any caller could otherwise read every other caller's command line and captured output (which may embed credentials). Full records remain reachable via `shell::status <job_id>` — the random UUID acts as an unguessable capability for that record.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobSummary {
    pub id: String,
    pub status: JobStatus,
    pub exit_code: Option<i32>,
    pub started_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

// `shell::list` response.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ListResponse")]
pub struct ListResponse {
    pub count: usize,
    pub jobs: Vec<JobSummary>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::list",
        "List background jobs (running + recently completed). Takes no arguments.",
        Flags::NONE,
        |ctx: Ctx, _req: ListRequest| async move {
            let jobs: Vec<JobSummary> = ctx
                .services
                .jobs
                .all(&ctx.runtime)
                .iter()
                .map(|j| {
                    let v = j.view();
                    JobSummary {
                        id: v.id,
                        status: v.status,
                        exit_code: v.exit_code,
                        started_at_ms: v.started_at_ms,
                        finished_at_ms: v.finished_at_ms,
                        stdout_truncated: v.stdout_truncated,
                        stderr_truncated: v.stderr_truncated,
                    }
                })
                .collect();
            Ok::<_, Failure>(ListResponse {
                count: jobs.len(),
                jobs,
            })
        },
    )
}
