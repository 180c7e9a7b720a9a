//! `shell::pty::screen`: the rendered screen of a session (rows, cursor, title).

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::shared::{MAX_WAIT_MS, SessionStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScreenRequest {
    pub session_id: String,
    pub access_key: String,
    /// Wait until the rendered screen (its rows joined by newlines) matches this regex — a full-screen program's prompt or status line — for at most `wait_ms`.
    #[serde(default)]
    pub until: Option<String>,
    /// With `until`: how long to wait (ms, at most 25000: under the engine's 30 s default call timeout). Default 0: answer at once.
    #[serde(default)]
    pub wait_ms: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Cursor {
    /// 0-based.
    pub row: u16,
    /// 0-based.
    pub col: u16,
    pub visible: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenResponse {
    /// The visible screen, one string per row (trailing blanks trimmed).
    pub rows: Vec<String>,
    pub cursor: Cursor,
    pub cols: u16,
    pub height: u16,
    /// A full-screen program (less, vim, top) is showing.
    pub alternate_screen: bool,
    /// The window title the program set, or "".
    pub title: String,
    /// Sequence number of the last frame the screen includes.
    pub sequence: u64,
    pub status: SessionStatus,
    /// With `until`: whether the screen matched it (false: `wait_ms` ran out, or the program exited, first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<bool>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::screen",
        "Takes `session_id` (from shell::pty::start). The rendered screen of a terminal session, as a terminal shows it now: rows of text, cursor, alternate-screen flag (a full-screen program such as less or vim is up) and window title. With `until` (a regex) and `wait_ms` it first waits until the screen shows it. Errors return { code, message }; common: S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: ScreenRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let until = crate::pty::read::compile_until(req.until.as_deref())?;
            let wait = Duration::from_millis(req.wait_ms.min(MAX_WAIT_MS));
            let deadline = tokio::time::Instant::now() + wait;
            let shows = |r: &crate::pty::emulator::Rendered, re: &regex::Regex| {
                re.is_match(&r.rows.join("\n"))
            };
            let (mut r, mut sequence) = s.render();
            let mut matched = until.as_ref().map(|re| shows(&r, re));
            while matched == Some(false) {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() || matches!(s.status(), crate::pty::session::Status::Exited(_)) {
                    break;
                }
                // wait for the next frame, then look at the screen again
                let (_, arrived, _) = s.read(sequence, left, |raw| !raw.is_empty()).await;
                (r, sequence) = s.render();
                matched = until.as_ref().map(|re| shows(&r, re));
                if !arrived {
                    break;
                }
            }
            Ok(ScreenResponse {
                matched,
                rows: r
                    .rows
                    .into_iter()
                    .map(|row| row.trim_end().to_string())
                    .collect(),
                cursor: Cursor {
                    row: r.cursor_row,
                    col: r.cursor_col,
                    visible: r.cursor_visible,
                },
                cols: r.cols,
                height: r.height,
                alternate_screen: r.alternate_screen,
                title: r.title,
                sequence,
                status: s.status().into(),
            })
        },
    )
}
