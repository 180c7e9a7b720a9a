//! `shell::pty::start`: a terminal session an agent drives.

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::shared::{Opening, open_session};
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
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::start",
        "Start a terminal session an agent drives: the login shell or `program` (with `args`) on a real PTY, in `cwd` (same policy, env gate and session cap as the console's terminals; default size 120x40). Drive it with shell::pty::send, follow it with shell::pty::read (wait for a prompt with `until`), look at it with shell::pty::screen, end it with shell::pty::stop. Errors return { code, message }; common: S210 bad input, S211 cwd or program not found, S212 cwd not a directory, S215 jail escape, S218 session cap.",
        Flags::NONE,
        |ctx: Ctx, req: StartRequest| async move {
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
            Ok(StartResponse {
                session_id: s.id.clone(),
                access_key: creds.access_key,
                reconnect_token: creds.reconnect_token,
                pid: s.pid,
                cwd: s.cwd.clone(),
            })
        },
    )
}
