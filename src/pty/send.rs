//! `shell::pty::send`: text and named keys into an agent's session.

use crate::error::{Class, Failure};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::keys;
use crate::pty::shared::MAX_WRITE_BYTES;
use crate::pty::waiting::Waiting;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendRequest {
    pub session_id: String,
    pub access_key: String,
    /// UTF-8 text typed as is (sent before `keys`).
    #[serde(default)]
    pub text: Option<String>,
    /// Named keys, in order: `enter`, `tab`, `esc`, `backspace`, `up`, `down`, `left`, `right`, `home`, `end`, `pageup`, `pagedown`, `delete`, `space`, `ctrl-<letter>` (`ctrl-c`, `ctrl-d`, …).
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// After typing, wait up to this long (ms, at most 25000) for output — or, with `until`, for it to match — and answer it as `output` (what `shell::pty::read` would answer), saving a read call.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// With `wait_ms`: a regex the output after this send must match (a prompt, `\\$ $`).
    #[serde(default)]
    pub until: Option<String>,
    /// With `wait_ms`: drop escape sequences from `output.text` (default true).
    #[serde(default)]
    pub strip_ansi: Option<bool>,
    /// Answer with the rendered `screen` (what shell::pty::screen answers) instead of `output`, once the program settled: printed, then stayed quiet for 150 ms — or, with `until`, once the screen matches it. Waits at most `wait_ms` (default 2000). One call per step in a full-screen program (less, top, an editor).
    #[serde(default)]
    pub screen: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SendResponse {
    /// Bytes the program's terminal took.
    pub written: usize,
    /// What came back after this send (only when `wait_ms` was given without `screen`); read on with `from_sequence: output.next_sequence`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<crate::pty::read::ReadResponse>,
    /// The rendered screen after this send (only with `screen: true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen: Option<crate::pty::screen::ScreenResponse>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::send",
        "Takes `session_id` (from shell::pty::start). Type into a terminal session: `text` (UTF-8, as is) then `keys` (named keys such as `enter`, `tab`, `esc`, `up`, `ctrl-c`, `ctrl-d`, sent as the program asked: cursor keys in application mode send ESC O A). Returns { written }; with `wait_ms` (and optionally `until`, a regex) it also waits for what the program prints back and answers it as `output`, like shell::pty::read; with `screen: true` it answers the rendered `screen` (like shell::pty::screen) once the program settled, so a key in less or an editor is one call. Errors return { code, message }; common: S210 unknown key, S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: SendRequest| async move {
            let s = ctx
                .services
                .pty
                .for_agent(&req.session_id, &req.access_key)?;
            let mut bytes = req.text.unwrap_or_default().into_bytes();
            // named keys in the encoding the program asked for (cursor
            // keys in application mode send ESC O x)
            let keys = req.keys.unwrap_or_default();
            let modes = if keys.is_empty() {
                Default::default()
            } else {
                s.key_modes()
            };
            for k in keys {
                bytes.extend(keys::bytes_in(&k, modes)?);
            }
            if bytes.is_empty() {
                return Err(Failure::bad_input(
                    "nothing to send; pass `text` and/or `keys` (e.g. {\"text\": \"ls\", \"keys\": [\"enter\"]})",
                ));
            }
            if bytes.len() > MAX_WRITE_BYTES {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "one send carries {} bytes, more than {MAX_WRITE_BYTES}; split it",
                        bytes.len()
                    ),
                ));
            }
            // a bad pattern is refused before anything is typed
            let waiting = Waiting::new(
                req.wait_ms,
                req.until.as_deref(),
                req.strip_ansi,
                req.screen,
            )?;
            // what came after this send starts after the last frame now
            let before = s.last_sequence();
            let written = s.write(&bytes).await?;
            let (output, screen) = waiting.answer(&s, before).await;
            Ok(SendResponse {
                written,
                output,
                screen,
            })
        },
    )
}
