//! `shell::pty::send`: text and named keys into an agent's session.

use crate::error::{Class, Failure};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::keys;
use crate::pty::shared::MAX_WRITE_BYTES;
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
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SendResponse {
    /// Bytes the program's terminal took.
    pub written: usize,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::send",
        "Type into a terminal session: `text` (UTF-8, as is) then `keys` (named keys such as `enter`, `tab`, `esc`, `up`, `ctrl-c`, `ctrl-d`, sent as the program asked: cursor keys in application mode send ESC O A). Returns { written }. Errors return { code, message }; common: S210 unknown key, S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: SendRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let mut bytes = req.text.unwrap_or_default().into_bytes();
            // named keys in the encoding the program asked for (cursor
            // keys in application mode send ESC O x)
            let modes = s.key_modes();
            for k in req.keys.unwrap_or_default() {
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
            Ok(SendResponse {
                written: s.write(&bytes).await?,
            })
        },
    )
}
