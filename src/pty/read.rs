//! `shell::pty::read`: what a session printed since a frame, optionally waiting for a pattern.

use crate::error::{Class, Failure, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::pty::session::Session;
use crate::pty::shared::{MAX_WAIT_MS, SessionStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadRequest {
    pub session_id: String,
    pub access_key: String,
    /// Return output after this sequence number (0: everything retained). To read on from a previous answer, pass its `next_sequence` as `from_sequence` instead.
    #[serde(default)]
    pub after_sequence: u64,
    /// Return output from this sequence number on: the previous answer's `next_sequence`, as it is (the same as `after_sequence: next_sequence - 1`; pass one of the two).
    #[serde(default)]
    pub from_sequence: Option<u64>,
    /// Wait up to this long (ms, at most 25000: under the engine's default 30 s call timeout, so the answer is not lost) for output — or, with `until`, for it to match. Larger values are clamped to 25000. Default 0: answer at once.
    #[serde(default)]
    pub wait_ms: u64,
    /// A regex the output after `after_sequence` must match before the call returns (or `wait_ms` runs out).
    #[serde(default)]
    pub until: Option<String>,
    /// Drop escape sequences and control characters (default true); `until` is matched against the same text.
    #[serde(default)]
    pub strip_ansi: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadResponse {
    /// The output after `after_sequence`, as text.
    pub text: String,
    /// The sequence number the next frame will carry; read on with `from_sequence: next_sequence`.
    pub next_sequence: u64,
    /// `until` matched (or, without `until`, some output arrived).
    pub matched: bool,
    /// `wait_ms` ran out first.
    pub timed_out: bool,
    /// Output after `after_sequence` was already evicted from the ring.
    pub truncated: bool,
    pub status: SessionStatus,
}

pub fn def() -> FunctionDef {
    function(
        "shell::pty::read",
        "Takes `session_id` (from shell::pty::start). Read a terminal session's output after `after_sequence` as text, waiting up to `wait_ms` for output or until the regex `until` matches. Returns { text, next_sequence, matched, timed_out, truncated, status }; read on by passing the answer's `next_sequence` as `from_sequence`; `wait_ms` is at most 25000. Errors return { code, message }; common: S211 unknown session or stale access_key, S217 bad `until` regex.",
        Flags::NONE,
        |ctx: Ctx, req: ReadRequest| async move {
            let s = ctx
                .services
                .pty
                .for_agent(&req.session_id, &req.access_key)?;
            let after = match (req.from_sequence, req.after_sequence) {
                (Some(_), a) if a > 0 => {
                    return Err(Failure::bad_input(
                        "pass from_sequence (the previous answer's next_sequence) or \
                         after_sequence, not both",
                    ));
                }
                (Some(from), _) => from.saturating_sub(1),
                (None, a) => a,
            };
            let until = compile_until(req.until.as_deref())?;
            Ok(wait_for(
                &s,
                after,
                req.wait_ms,
                until.as_ref(),
                req.strip_ansi.unwrap_or(true),
            )
            .await)
        },
    )
}

/// Output after `after`, waiting up to `wait_ms` (at most [`MAX_WAIT_MS`])
/// for some, or until `until` matches it; what `shell::pty::read` answers
/// and `shell::pty::send` answers after typing when asked to wait.
pub async fn wait_for(
    s: &Session,
    after: u64,
    wait_ms: u64,
    until: Option<&regex::Regex>,
    strip: bool,
) -> ReadResponse {
    let text_of = move |raw: &[u8]| {
        if strip {
            crate::pty::emulator::strip_ansi(raw)
        } else {
            String::from_utf8_lossy(raw).into_owned()
        }
    };
    let wait = Duration::from_millis(wait_ms.min(MAX_WAIT_MS));
    let (out, matched, timed_out) = s
        .read(after, wait, |raw| match until {
            Some(re) => re.is_match(&text_of(raw)),
            None => !raw.is_empty(),
        })
        .await;
    ReadResponse {
        text: text_of(&out.raw),
        next_sequence: out.next_sequence,
        matched,
        timed_out,
        truncated: out.truncated,
        status: out.status.into(),
    }
}

/// An `until` pattern, compiled (S217 when it is not a regex).
pub fn compile_until(pat: Option<&str>) -> Result<Option<regex::Regex>, Failure> {
    pat.map(|pat| {
        regex::RegexBuilder::new(pat)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| {
                Failure::new(
                    Class::BadRegex,
                    format!("until {} is not a valid regex: {e}", quote(pat)),
                )
            })
    })
    .transpose()
}
