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
            let closed = end(&ctx, &req.session_id, &req.access_key, "closed").await?;
            Ok(CloseResponse { closed })
        },
    )
}

/// End the session `id` its `key` opens (its whole process tree killed and
/// reaped); false when it had already ended. `how` is for the log line.
pub async fn end(ctx: &Ctx, id: &str, key: &str, how: &str) -> crate::error::Result<bool> {
    ctx.services.pty.with_key(id, key)?;
    let ended = ctx.services.pty.close(id).await;
    tracing::info!(session = %id, "pty session {how}");
    Ok(ended)
}
