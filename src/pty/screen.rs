//! `shell::pty::screen`: the rendered screen of a session (rows, cursor, title).

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::shared::SessionStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScreenRequest {
    pub session_id: String,
    pub access_key: String,
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
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::screen",
        "The rendered screen of a terminal session, as a terminal shows it now: rows of text, cursor, alternate-screen flag (a full-screen program such as less or vim is up) and window title. Errors return { code, message }; common: S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: ScreenRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let (r, sequence) = s.render();
            Ok(ScreenResponse {
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
