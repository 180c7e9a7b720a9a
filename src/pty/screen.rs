//! `shell::pty::screen`: the rendered screen of a session (rows, cursor, title).

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::emulator::Rendered;
use crate::pty::session::{Session, Status};
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
    /// With `until`: whether the screen matched it (false: `wait_ms` ran out, or the program exited, first). After shell::pty::start or shell::pty::send with `screen: true` and no `until`: whether the program settled (printed, then went quiet for 150 ms, or exited) before `wait_ms` ran out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<bool>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::screen",
        "Takes `session_id` (from shell::pty::start). The rendered screen of a terminal session, as a terminal shows it now: rows of text, cursor, alternate-screen flag (a full-screen program such as less or vim is up) and window title. With `until` (a regex) and `wait_ms` it first waits until the screen shows it. To type and see the result in one call, use shell::pty::send with `screen: true`. Errors return { code, message }; common: S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: ScreenRequest| async move {
            let s = ctx
                .services
                .pty
                .for_agent(&req.session_id, &req.access_key)?;
            let until = crate::pty::read::compile_until(req.until.as_deref())?;
            Ok(look(&s, until.as_ref(), req.wait_ms).await)
        },
    )
}

/// How long a program must stay quiet to count as settled: long enough
/// for a redraw that comes in several writes, short enough for a keystroke.
pub const QUIET: Duration = Duration::from_millis(150);

/// The screen now, or — with `until` — once it matches (at most `wait_ms`).
pub async fn look(s: &Session, until: Option<&regex::Regex>, wait_ms: u64) -> ScreenResponse {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms.min(MAX_WAIT_MS));
    let shows = |r: &Rendered, re: &regex::Regex| re.is_match(&r.rows.join("\n"));
    let (mut r, mut sequence) = s.render();
    let mut matched = until.map(|re| shows(&r, re));
    while matched == Some(false) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() || matches!(s.status(), Status::Exited(_)) {
            break;
        }
        // wait for the next frame, then look at the screen again
        let (_, arrived, _) = s.read(sequence, left, |raw| !raw.is_empty()).await;
        (r, sequence) = s.render();
        matched = until.map(|re| shows(&r, re));
        if !arrived {
            break;
        }
    }
    answer(s, r, sequence, matched)
}

/// The screen once the program settled after frame `before`: some output
/// came and then none for [`QUIET`] (or the program exited), waiting at
/// most `wait_ms` in all. `matched` says whether it settled in time.
pub async fn settled(s: &Session, before: u64, wait_ms: u64) -> ScreenResponse {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms.min(MAX_WAIT_MS));
    let mut seen = before;
    let mut some = false;
    let settled = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            break false;
        }
        // before any output: wait for it; after: wait for a quiet spell
        let wait = if some { left.min(QUIET) } else { left };
        let (out, arrived, _) = s.read(seen, wait, |raw| !raw.is_empty()).await;
        if arrived {
            some = true;
            seen = out.next_sequence - 1;
            continue;
        }
        if matches!(out.status, Status::Exited(_)) {
            break true;
        }
        // nothing more within `wait`: settled when that was a whole quiet
        // spell after output; otherwise `wait_ms` ran out
        break some && wait == QUIET;
    };
    let (r, sequence) = s.render();
    answer(s, r, sequence, Some(settled))
}

fn answer(s: &Session, r: Rendered, sequence: u64, matched: Option<bool>) -> ScreenResponse {
    ScreenResponse {
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
    }
}
