//! `shell::pty::detach`: let go of a session's output; the program keeps running.

use crate::function::{Ctx, FunctionDef, function};
use crate::pty::shared::{CONSOLE, SessionStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DetachRequest {
    pub access_key: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DetachResponse {
    pub status: SessionStatus,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::detach",
        "Takes `session_id` and `access_key`. Detach a browser output target while retaining its PTY session.",
        CONSOLE,
        |ctx: Ctx, req: DetachRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            Ok(DetachResponse {
                status: s.detach().await.into(),
            })
        },
    )
}
