//! `shell::kill`: end a running background job.
//!
//! A host job's whole process group gets TERM, then KILL after a short
//! grace; the call returns once the group is gone and the record says
//! `killed`. A sandbox job cannot be hard-killed: its record flips to
//! `killed` (and its completion fires) while the in-VM process runs on
//! until its own `timeout_ms`. A job that already ended reports
//! `killed: false` with its status.

use super::jobs::JobStatus;
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// `shell::kill` request (no descriptions, as published).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "KillRequest")]
pub struct KillRequest {
    pub job_id: String,
}

// What the kill did.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "KillResponse")]
pub struct KillResponse {
    pub job_id: String,
    pub killed: bool,
    pub status: JobStatus,
    pub reason: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::kill",
        "Terminate a running background job by job_id (returned by shell::exec_bg). Errors \
         return { code, message }; common: S211 no such job, S216 kill/signal delivery failure.",
        Flags::NONE,
        |ctx: Ctx, req: KillRequest| async move {
            let outcome = ctx.services.jobs.kill(&req.job_id, &ctx.runtime).await?;
            Ok::<_, Failure>(KillResponse {
                job_id: req.job_id,
                killed: outcome.killed,
                status: outcome.status,
                reason: outcome.reason,
            })
        },
    )
}
