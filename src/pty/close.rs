//! `shell::pty::close`: end a session: its whole process tree is killed and reaped.

use crate::function::{Ctx, FunctionDef, function};
use crate::pty::shared::CONSOLE;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CloseRequest {
    pub access_key: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CloseResponse {
    pub closed: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::close",
        "Takes `session_id` and `access_key`. Terminate and close a PTY session.",
        CONSOLE,
        |ctx: Ctx, req: CloseRequest| async move {
            ctx.services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let closed = ctx.services.pty.close(&req.session_id).await;
            tracing::info!(session = %req.session_id, "pty session closed");
            Ok(CloseResponse { closed })
        },
    )
}
