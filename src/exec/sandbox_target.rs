//! `target: {kind: "sandbox"}` for commands: forwarding to `sandbox::exec`.
//!
//! The sandbox worker takes `{sandbox_id, cmd, args, timeout_ms}` and
//! answers `{stdout, stderr, exit_code, timed_out, duration_ms, success}`.
//! Its error codes pass through [`crate::sandbox::forward`]; its output is
//! capped by `max_output_bytes` exactly like host output.

use super::capture::{Capture, Keep, Kept, Shape};
use crate::error::Failure;
use crate::function::Ctx;
use serde::Deserialize;
use serde_json::{Value, json};

pub const FUNCTION: &str = "sandbox::exec";
/// The sandbox worker's own deadline when the call names none.
pub const SANDBOX_DEFAULT_TIMEOUT_MS: u64 = 300_000;
/// Extra time the engine call gets beyond the in-VM deadline.
pub const CALL_MARGIN_MS: u64 = 5_000;

/// The request sent to `sandbox::exec`.
pub fn payload(sandbox_id: &str, argv: &[String], timeout_ms: Option<u64>) -> Value {
    let mut p = json!({
        "sandbox_id": sandbox_id,
        "cmd": argv[0],
        "args": &argv[1..],
    });
    if let Some(t) = timeout_ms {
        p["timeout_ms"] = json!(t);
    }
    p
}

/// What `sandbox::exec` answered. Absent fields read as empty.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SandboxOutput {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
}

/// The answer, capped like host output.
#[derive(Debug)]
pub struct Capped {
    pub stdout: Kept,
    pub stderr: Kept,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
}

pub fn decode(value: Value) -> Result<SandboxOutput, Failure> {
    serde_json::from_value(value).map_err(|e| {
        Failure::io(format!(
            "{FUNCTION} returned a response this worker cannot read ({e}); is the sandbox \
             worker's version compatible?"
        ))
    })
}

/// Keep one stream's text like host output: `keep` in `limit` bytes.
pub fn cap_text(text: &str, keep: Keep, limit: usize) -> Kept {
    let c = Capture::new(Shape::for_answer(keep, limit));
    c.set(text.as_bytes());
    c.view(keep, limit)
}

impl SandboxOutput {
    pub fn capped(self, keep: Keep, limit: usize) -> Capped {
        Capped {
            stdout: cap_text(&self.stdout, keep, limit),
            stderr: cap_text(&self.stderr, keep, limit),
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            duration_ms: self.duration_ms,
        }
    }
}

/// Run `argv` in the sandbox and wait for it. `timeout_ms` is the in-VM
/// deadline (`None`: the sandbox's default).
pub async fn run(
    ctx: &Ctx,
    sandbox_id: &str,
    argv: &[String],
    timeout_ms: Option<u64>,
) -> Result<SandboxOutput, Failure> {
    let call_timeout = timeout_ms
        .unwrap_or(SANDBOX_DEFAULT_TIMEOUT_MS)
        .saturating_add(CALL_MARGIN_MS);
    let answer = crate::sandbox::forward(
        ctx,
        FUNCTION,
        payload(sandbox_id, argv, timeout_ms),
        Some(call_timeout),
    )
    .await?;
    decode(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_shape_is_the_sandbox_workers() {
        let argv = vec!["node".to_string(), "/app/main.js".to_string()];
        assert_eq!(
            payload("id-1", &argv, Some(500)),
            json!({"sandbox_id": "id-1", "cmd": "node", "args": ["/app/main.js"], "timeout_ms": 500})
        );
        assert!(
            payload("id-1", &argv[..1], None)
                .get("timeout_ms")
                .is_none()
        );
    }

    #[test]
    fn answers_decode_leniently_and_are_capped() {
        let out = decode(json!({"stdout": "abcdef", "exit_code": null, "success": false})).unwrap();
        let c = out.capped(Keep::Head, 3);
        assert_eq!(
            (c.stdout.text.as_str(), c.stdout.truncated, c.stdout.dropped),
            ("abc", true, 3)
        );
        assert_eq!((c.stderr.text.as_str(), c.stderr.truncated), ("", false));
        assert_eq!(c.exit_code, None);
        let out = decode(json!({"stdout": "abcdef", "exit_code": 0})).unwrap();
        assert_eq!(out.capped(Keep::Tail, 2).stdout.text, "ef");
        assert!(decode(json!("nope")).is_err());
    }
}
