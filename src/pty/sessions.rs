//! `shell::pty::sessions`: the sessions this worker holds.

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::session::Summary;
use crate::pty::shared::SessionStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionsRequest {}

/// One live session, without credentials: enough to tell a terminal that shows nothing apart from one that was never fed. A page that counts the frames it applied compares its own count against `sequence` — equal means the frames arrived and the browser is at fault, far behind means delivery is.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionSummary {
    pub cwd: String,
    pub frame_bytes: usize,
    /// Frames still replayable from the ring buffer.
    pub frames: usize,
    /// Where output is being delivered; absent while detached.
    pub output_function_id: Option<String>,
    pub pid: Option<u32>,
    pub program: Option<String>,
    /// Sequence number of the last frame the session produced.
    pub sequence: u64,
    pub session_id: String,
    pub status: SessionStatus,
    /// Whether the buffer has dropped frames a full replay would need.
    pub truncated: bool,
    /// The console page family this session belongs to — the `<name>` in `iii::<name>-ui::pty-output::console-<browser>`. Present whether or not anyone is attached, because it is what a page uses to recognise its own orphaned session; it names a page, never a browser.
    pub ui: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionsResponse {
    pub sessions: Vec<SessionSummary>,
}

pub fn summary(s: Summary) -> SessionSummary {
    SessionSummary {
        cwd: s.cwd,
        frame_bytes: s.frame_bytes,
        frames: s.frames,
        output_function_id: s.output_function_id,
        pid: Some(s.pid),
        program: s.program,
        sequence: s.sequence,
        session_id: s.session_id,
        status: s.status.into(),
        truncated: s.truncated,
        ui: s.ui,
    }
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::sessions",
        "List live PTY sessions with program, cwd, sequence, replay buffer size, and output target. Diagnostics only — no credentials.",
        Flags::NONE,
        |ctx: Ctx, _req: SessionsRequest| async move {
            let sessions = ctx
                .services
                .pty
                .all()
                .iter()
                .map(|s| summary(s.summary()))
                .collect();
            Ok(SessionsResponse { sessions })
        },
    )
}
