//! Sandbox targets: where a `shell::exec*` / `shell::fs::*` call runs.
//!
//! A call names `target: {kind: "host"}` (the default) or
//! `{kind: "sandbox", sandbox_id}`. Sandbox calls are forwarded over the
//! engine to the iii-sandbox worker's `sandbox::*` functions. Its error codes
//! pass through verbatim when they are ones callers branch on (S001–S004,
//! S100–S102, S300, S400); anything else collapses to S216.

use crate::error::{Class, Failure, WireError};
use crate::function::Ctx;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// Where to run. (Plain comments: the contract's Target schema carries no
// descriptions.)
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    // On this worker's host.
    #[default]
    Host,
    // Inside an iii-sandbox microVM.
    Sandbox {
        #[schemars(with = "uuid::Uuid")]
        sandbox_id: String,
    },
}

impl Target {
    pub fn is_host(&self) -> bool {
        matches!(self, Target::Host)
    }
}

/// Engine / sandbox codes that pass through verbatim.
pub fn passes_through(code: &str) -> bool {
    matches!(
        code,
        "S001" | "S002" | "S003" | "S004" | "S100" | "S101" | "S102" | "S200" | "S300" | "S400"
    )
}

/// Check that sandbox calls are enabled and the host-only fields are absent.
/// `host_only` lists `(field name, present?)`.
pub fn check_sandbox_call(ctx: &Ctx, host_only: &[(&str, bool)]) -> Result<(), Failure> {
    if !ctx.runtime.config.sandbox.enabled {
        return Err(Failure::bad_input(
            "sandbox targets are disabled (sandbox.enabled: false); omit target to run on the \
             host, or ask the operator to enable sandbox.enabled",
        ));
    }
    let present: Vec<&str> = host_only
        .iter()
        .filter(|(_, p)| *p)
        .map(|(n, _)| *n)
        .collect();
    if !present.is_empty() {
        return Err(Failure::bad_input(format!(
            "{} {} host-only and cannot be sent to a sandbox target; drop {} or target the host",
            present.join(", "),
            if present.len() == 1 { "is" } else { "are" },
            if present.len() == 1 { "it" } else { "them" },
        )));
    }
    Ok(())
}

/// Forward a call to a `sandbox::*` function.
pub async fn forward(
    ctx: &Ctx,
    function_id: &str,
    payload: Value,
    timeout_ms: Option<u64>,
) -> Result<Value, Failure> {
    let Some(out) = &ctx.services.outbound else {
        return Err(Failure::io(format!(
            "{function_id} needs the engine: sandbox targets only work while ide is connected"
        )));
    };
    out.call(function_id, payload, timeout_ms)
        .await
        .map_err(map_remote)
}

/// Map a remote error to a failure: known sandbox codes pass through. The
/// sandbox worker may also carry its typed error as JSON inside `message`
/// (`{code, message, ...}`); a known code found there passes through too.
pub fn map_remote(e: WireError) -> Failure {
    if passes_through(&e.code) {
        return Failure::new(Class::Engine(e.code), e.message);
    }
    if let Ok(inner) = serde_json::from_str::<Value>(&e.message) {
        if let Some(code) = inner.get("code").and_then(Value::as_str) {
            if passes_through(code) {
                let message = inner
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| e.message.clone());
                return Failure::new(Class::Engine(code.to_string()), message);
            }
        }
    }
    Failure::io(format!("sandbox call failed ({}): {}", e.code, e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_wire_shape() {
        let t: Target = serde_json::from_value(serde_json::json!({"kind": "host"})).unwrap();
        assert!(t.is_host());
        let s: Target = serde_json::from_value(
            serde_json::json!({"kind": "sandbox", "sandbox_id": "8c1c5c63-0a5e-4a5b-9e0e-0d7b0c1f2e3d"}),
        )
        .unwrap();
        assert!(!s.is_host());
        assert!(serde_json::from_value::<Target>(serde_json::json!({"kind": "vm"})).is_err());
    }

    #[test]
    fn known_codes_pass_through_and_others_collapse() {
        let f = map_remote(WireError {
            code: "S300".into(),
            message: "no kvm".into(),
        });
        assert_eq!(f.to_wire(crate::error::Surface::Shell).code, "S300");
        let f = map_remote(WireError {
            code: "weird".into(),
            message: "x".into(),
        });
        assert_eq!(f.to_wire(crate::error::Surface::Shell).code, "S216");
        assert!(f.message.contains("weird"));
    }

    #[test]
    fn a_typed_sandbox_error_inside_the_message_passes_through() {
        let f = map_remote(WireError {
            code: "invocation_failed".into(),
            message: r#"{"type":"SandboxNotFound","code":"S002","message":"no sandbox 8c1c","retryable":false}"#.into(),
        });
        let wire = f.to_wire(crate::error::Surface::Shell);
        assert_eq!(wire.code, "S002");
        assert_eq!(wire.message, "no sandbox 8c1c");
        let f = map_remote(WireError {
            code: "invocation_failed".into(),
            message: r#"{"code":"E999"}"#.into(),
        });
        assert_eq!(f.to_wire(crate::error::Surface::Shell).code, "S216");
    }
}
