//! `shell::pty::resize`: the session's size in character cells.

use crate::function::{Ctx, FunctionDef, function};
use crate::pty::shared::{CONSOLE, check_size};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResizeRequest {
    pub access_key: String,
    pub cols: u16,
    pub rows: u16,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ResizeResponse {
    pub cols: u16,
    pub rows: u16,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::resize",
        "Takes `session_id`, `access_key`, `cols` and `rows`. Resize a PTY session in terminal columns and rows.",
        CONSOLE,
        |ctx: Ctx, req: ResizeRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            check_size(req.cols, req.rows)?;
            s.resize(req.cols, req.rows)?;
            Ok(ResizeResponse {
                cols: req.cols,
                rows: req.rows,
            })
        },
    )
}
