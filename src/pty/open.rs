//! `shell::pty::open`: a console terminal pane: a persistent host PTY bound to the pane's output handler.

use crate::function::{Ctx, FunctionDef, function};
use crate::pty::shared::{CONSOLE, Opening, open_session};
use crate::pty::target::{self};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenRequest {
    /// argv for `program`. Ignored without `program` (a login shell takes no arguments here).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    pub cols: u16,
    pub cwd: String,
    /// Extra environment on top of what the worker forwards; exec-hijacking keys (PATH, LD_*, DYLD_*, BASH_ENV, …) fail the call.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    pub output_function_id: String,
    /// Program to run instead of the user's login shell (an agent CLI, REPL, TUI), resolved on the worker's PATH.
    #[serde(default)]
    pub program: Option<String>,
    #[serde(default)]
    pub request_id: Option<String>,
    pub rows: u16,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenResponse {
    pub access_key: String,
    pub cwd: String,
    pub pid: Option<u32>,
    /// The program the session runs; absent for a login shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    pub reconnect_token: String,
    pub session_id: String,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::open",
        "Takes `cwd`, `cols`, `rows` and `output_function_id` (the function output frames are sent to). Open a persistent host PTY running the user's login shell, or the program named in `program`.",
        CONSOLE,
        |ctx: Ctx, req: OpenRequest| async move {
            let target = target::parse(&req.output_function_id)?;
            let (s, creds) = open_session(
                &ctx,
                Opening {
                    cwd: Some(req.cwd),
                    program: req.program,
                    args: req.args,
                    env: req.env,
                    cols: req.cols,
                    rows: req.rows,
                    target: Some(target),
                    request_id: req.request_id,
                },
            )
            .await?;
            Ok(OpenResponse {
                access_key: creds.access_key,
                cwd: s.cwd.clone(),
                pid: Some(s.pid),
                program: s.program.clone(),
                reconnect_token: creds.reconnect_token,
                session_id: s.id.clone(),
            })
        },
    )
}
