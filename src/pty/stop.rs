//! `shell::pty::stop`: end a terminal session an agent started, with the
//! access key `shell::pty::start` gave it — its whole process tree is
//! killed and reaped. The console's `shell::pty::close` does the same and
//! is internal (console plumbing); this is the agent surface's own, so an
//! agent that hides internal functions can still end what it started.

use crate::function::{Ctx, Flags, FunctionDef, function};
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
    /// False when the session had already ended.
    pub stopped: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::stop",
        "End a terminal session started with shell::pty::start (session_id and access_key from its answer): the program and every process it started are killed and reaped. Errors return { code, message }: S211 when the session does not exist or the access_key is not its current one.",
        Flags::NONE,
        |ctx: Ctx, req: StopRequest| async move {
            let how = "stopped by its agent";
            let stopped =
                crate::pty::close::end(&ctx, &req.session_id, &req.access_key, how).await?;
            Ok(StopResponse { stopped })
        },
    )
}
