//! `shell::pty::adopt`: take a session over from another pane or tab with its reconnect token.

use crate::function::{Ctx, FunctionDef, function};
use crate::pty::attach::attach_response;
use crate::pty::shared::{CONSOLE, check_size};
use crate::pty::target::{self};
use schemars::JsonSchema;
use serde::Deserialize;

/// Take back a session whose reconnect token is gone.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AdoptRequest {
    #[serde(default)]
    pub after_sequence: u64,
    pub cols: u16,
    /// Where output goes next; must belong to the same console page family as the target it replaces.
    pub output_function_id: String,
    pub rows: u16,
    pub session_id: String,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::adopt",
        "Takes `session_id`, `cols`, `rows` and `output_function_id`. Take back an unattached PTY session whose reconnect token is gone, from the console page that owns it. Refuses a session someone is attached to, and a page that is not the session's own.",
        CONSOLE,
        |ctx: Ctx, req: AdoptRequest| async move {
            let target = target::parse(&req.output_function_id)?;
            check_size(req.cols, req.rows)?;
            let s = ctx.services.pty.get(&req.session_id)?;
            let out = s.adopt(target, req.after_sequence, req.cols, req.rows)?;
            Ok(attach_response(out))
        },
    )
}
