//! `shell::pty::start`: a terminal session an agent drives.

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::shared::{Opening, open_session};
use crate::pty::waiting::Waiting;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartRequest {
    /// argv for `program`. Ignored without `program` (a login shell takes no arguments here).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Terminal width in columns (default 120).
    #[serde(default)]
    pub cols: Option<u16>,
    /// Directory to start in, through the same policy as `shell::exec`'s `cwd`; omit it for the configured working_dir.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment on top of what the worker forwards; exec-hijacking keys (`PATH`, `LD_*`, `DYLD_*`, `BASH_ENV`, …) fail the call.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Program to run instead of the user's login shell (a REPL, `npm`, `less`…), resolved on the worker's PATH.
    #[serde(default)]
    pub program: Option<String>,
    /// A retried start with the same `request_id` returns the same session instead of a second one.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Terminal height in rows (default 40).
    #[serde(default)]
    pub rows: Option<u16>,
    /// Wait up to this long (ms, at most 25000) for the program's first output — or, with `until`, for it to match (a prompt) — and answer it as `output`, saving a read call.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// A regex the program's output (or, with `screen: true`, its screen) must match before the call answers: its prompt (`>>> $`, `\\$ $`).
    #[serde(default)]
    pub until: Option<String>,
    /// With `wait_ms`: drop escape sequences from `output.text` (default true).
    #[serde(default)]
    pub strip_ansi: Option<bool>,
    /// Answer with the rendered `screen` (as shell::pty::screen) once the program settled — printed, then stayed quiet for 150 ms — or, with `until`, once the screen matches; waits at most `wait_ms` (default 2000). For full-screen programs.
    #[serde(default)]
    pub screen: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StartResponse {
    pub session_id: String,
    /// Needed by send, read, screen, resize and close.
    pub access_key: String,
    /// Lets a console attach to watch the session (`shell::pty::attach`).
    pub reconnect_token: String,
    pub pid: u32,
    pub cwd: String,
    /// What the program printed first (only with `wait_ms` and no `screen`); read on with `from_sequence: output.next_sequence`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<crate::pty::read::ReadResponse>,
    /// The rendered screen once the program settled (only with `screen: true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen: Option<crate::pty::screen::ScreenResponse>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::start",
        "Start a terminal session an agent drives: the login shell or `program` (with `args`) on a real PTY, in `cwd` (same policy, env gate and session cap as the console's terminals; default size 120x40). Returns { session_id, access_key, reconnect_token, pid, cwd }; with `wait_ms` (and `until`, a regex such as the prompt) it also waits for the program's first output and answers it as `output`, or with `screen: true` its rendered `screen` once settled — one call from start to prompt. Drive it with shell::pty::send, follow it with shell::pty::read, look at it with shell::pty::screen, end it with shell::pty::stop. A session whose program exited stays readable for pty.exited_retention_secs (default 3600 s), then is forgotten. Errors return { code, message }; common: S210 bad input, S211 cwd or program not found, S212 cwd not a directory, S215 jail escape, S218 session cap.",
        Flags::NONE,
        |ctx: Ctx, req: StartRequest| async move {
            // bad waiting fields are refused before anything starts
            let waiting = Waiting::new(
                req.wait_ms,
                req.until.as_deref(),
                req.strip_ansi,
                req.screen,
            )?;
            let (s, creds) = open_session(
                &ctx,
                Opening {
                    cwd: req.cwd,
                    program: req.program,
                    args: req.args,
                    env: req.env,
                    cols: req.cols.unwrap_or(120),
                    rows: req.rows.unwrap_or(40),
                    target: None,
                    request_id: req.request_id,
                },
            )
            .await?;
            // everything from the program's first frame on
            let (output, screen) = waiting.answer(&s, 0).await;
            Ok(StartResponse {
                output,
                screen,
                session_id: s.id.clone(),
                access_key: creds.access_key,
                reconnect_token: creds.reconnect_token,
                pid: s.pid,
                cwd: s.cwd.clone(),
            })
        },
    )
}
