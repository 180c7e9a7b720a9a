//! `shell::pty::write`: keystrokes (base64 bytes) into a session.

use crate::error::{Class, Failure};
use crate::function::{Ctx, FunctionDef, function};
use crate::pty::shared::{CONSOLE, MAX_WRITE_BYTES};
use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteRequest {
    pub access_key: String,
    pub data: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteResponse {
    pub written: usize,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::write",
        "Takes `session_id`, `access_key` and `data`. Write base64-encoded keyboard input to a PTY session.",
        CONSOLE,
        |ctx: Ctx, req: WriteRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let data = base64::engine::general_purpose::STANDARD
                .decode(req.data.as_bytes())
                .map_err(|e| {
                    Failure::bad_input(format!(
                        "data is not standard base64 ({e}); encode the keystrokes' UTF-8 bytes, \
                         e.g. btoa(\"ls\\r\")"
                    ))
                })?;
            if data.len() > MAX_WRITE_BYTES {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "one write carries {} bytes, more than {MAX_WRITE_BYTES}; split it",
                        data.len()
                    ),
                ));
            }
            let written = s.write(&data).await?;
            Ok(WriteResponse { written })
        },
    )
}
