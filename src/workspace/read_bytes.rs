//! `shell::workspace::read-bytes`: a chunk of a file's raw bytes (base64), by offset.

use super::READ_BYTES_MAX_CHUNK;
use crate::error::{Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::FileExt;

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceReadBytesRequest")]
pub struct WorkspaceReadBytesRequest {
    /// Absolute path, or relative to the primary root (same rules as coder::read-file).
    pub path: String,
    /// First byte of the range (default 0).
    #[serde(default)]
    pub offset: u64,
    /// Bytes to return; omitted or over the cap = `READ_BYTES_MAX_CHUNK`.
    #[serde(default)]
    pub length: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceReadBytesResponse")]
pub struct WorkspaceReadBytesResponse {
    /// The chunk, base64 (standard alphabet, padded).
    pub content: String,
    /// True when `offset + length` reached the end of the file.
    pub eof: bool,
    /// Raw bytes in this chunk (before base64).
    pub length: u64,
    /// Last-modified time as a Unix epoch in seconds.
    pub mtime: i64,
    /// Offset the returned range starts at.
    pub offset: u64,
    /// Canonical absolute path.
    pub path: String,
    /// Size of the whole file in bytes.
    pub size: u64,
}

pub fn def() -> FunctionDef {
    function(
        "shell::workspace::read-bytes",
        "Takes `path`, `offset` and `length`. Console-only: one bounded byte range of a file, base64 (at most 4 MiB raw per call), so \
         a page can stream a large image without one oversized frame.",
        Flags {
            internal: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: WorkspaceReadBytesRequest| async move {
            crate::runtime::blocking(move || read_bytes(&ctx, req)).await
        },
    )
}

fn read_bytes(
    ctx: &Ctx,
    req: WorkspaceReadBytesRequest,
) -> Result<WorkspaceReadBytesResponse, Failure> {
    let raw = req.path.as_str();
    // Relative paths anchor like coder::read-file's.
    let r = ctx
        .runtime
        .policy
        .resolve_existing(raw, Surface::Coder, Tail::Follow, None)?;
    let (file, md) = r.loc().open_regular(raw)?;
    // Size and bytes come from the same open file: a file that shrinks or
    // grows between calls answers consistently for this call.
    let size = md.len();
    let want = req
        .length
        .unwrap_or(READ_BYTES_MAX_CHUNK)
        .min(READ_BYTES_MAX_CHUNK);
    let mut buf = vec![0u8; want.min(size.saturating_sub(req.offset)) as usize];
    let mut got = 0;
    while got < buf.len() {
        let n = file
            .read_at(&mut buf[got..], req.offset + got as u64)
            .map_err(|e| Failure::from_io(raw, &e))?;
        if n == 0 {
            break;
        }
        got += n;
    }
    buf.truncate(got);
    let length = got as u64;
    Ok(WorkspaceReadBytesResponse {
        content: base64::engine::general_purpose::STANDARD.encode(&buf),
        eof: req.offset + length >= size,
        length,
        mtime: crate::coder::mtime_secs(&md),
        offset: req.offset,
        path: r.path.display().to_string(),
        size,
    })
}
