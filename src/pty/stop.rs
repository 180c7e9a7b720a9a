//! `shell::pty::stop`: end a terminal session an agent started, with the
//! access key `shell::pty::start` gave it — its whole process tree is
//! killed and reaped. The console's `shell::pty::close` does the same and
//! is internal (console plumbing); this is the agent surface's own, so an
//! agent that hides internal functions can still end what it started.

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::session::Status;
use crate::pty::shared::SessionStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StopRequest {
    /// From `shell::pty::start`.
    pub session_id: String,
    /// From `shell::pty::start`.
    pub access_key: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StopResponse {
    /// True when this call ended a running program; false when it had already exited on its own (or an earlier stop ended it).
    pub stopped: bool,
    /// How the program ended: its `exit_code`, or the `signal` that ended it.
    pub status: SessionStatus,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::stop",
        "End a terminal session started with shell::pty::start (session_id and access_key from its answer): the program and every process it started are killed and reaped, and the session is forgotten. Returns { stopped, status }: stopped is false when the program had already exited (status carries its exit_code or signal); stopping again answers the same. Errors return { code, message }: S211 when the session does not exist or the access_key is not its current one.",
        Flags::NONE,
        |ctx: Ctx, req: StopRequest| async move {
            let (stopped, end) = ctx
                .services
                .pty
                .stop(&req.session_id, &req.access_key)
                .await?;
            tracing::info!(session = %req.session_id, stopped, "pty session stopped by its agent");
            Ok(StopResponse {
                stopped,
                status: Status::Exited(end).into(),
            })
        },
    )
}
