//! `shell::pty::attach`: bind a session's output to a handler again (a reloaded pane), replaying what it missed.

use crate::function::{Ctx, FunctionDef, function};
use crate::pty::shared::{CONSOLE, SessionStatus, check_size};
use crate::pty::target::{self};
use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AttachRequest {
    pub after_sequence: u64,
    pub cols: u16,
    pub output_function_id: String,
    pub reconnect_token: String,
    #[serde(default)]
    pub request_id: Option<String>,
    pub rows: u16,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OutputFrame {
    pub data: String,
    pub sequence: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AttachResponse {
    pub access_key: String,
    pub cwd: String,
    pub frames: Vec<OutputFrame>,
    pub next_sequence: u64,
    pub reconnect_token: String,
    pub status: SessionStatus,
    pub truncated: bool,
}

pub fn attach_response(out: super::session::AttachOut) -> AttachResponse {
    let b64 = base64::engine::general_purpose::STANDARD;
    AttachResponse {
        access_key: out.creds.access_key,
        cwd: out.cwd,
        frames: out
            .frames
            .into_iter()
            .map(|(sequence, data)| OutputFrame {
                data: b64.encode(data),
                sequence,
            })
            .collect(),
        next_sequence: out.next_sequence,
        reconnect_token: out.creds.reconnect_token,
        status: out.status.into(),
        truncated: out.truncated,
    }
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::attach",
        "Takes `session_id`, `reconnect_token`, `after_sequence`, `cols`, `rows` and `output_function_id`. Attach to a retained PTY session and replay buffered output.",
        CONSOLE,
        |ctx: Ctx, req: AttachRequest| async move {
            let target = target::parse(&req.output_function_id)?;
            check_size(req.cols, req.rows)?;
            let s = ctx.services.pty.get(&req.session_id)?;
            let out = s.attach(
                &req.reconnect_token,
                req.request_id.as_deref(),
                target,
                req.after_sequence,
                req.cols,
                req.rows,
            )?;
            Ok(attach_response(out))
        },
    )
}
