//! `timeout_ms` on the wire and the deadline it becomes.
//!
//! The field is published as an optional non-negative integer, but callers
//! (and JavaScript) send whatever number they have; a negative or
//! fractional one is not an error, it means "the default". So it is decoded
//! leniently from any JSON number, and only a non-number is refused.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A decoded `timeout_ms`: `None` when omitted, null, negative, fractional
/// or zero — all of which mean "use `default_timeout_ms`".
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(usable(&n)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "timeout_ms must be a number of milliseconds, got {other}"
        ))),
    }
}

fn usable(n: &serde_json::Number) -> Option<u64> {
    if let Some(u) = n.as_u64() {
        return (u > 0).then_some(u);
    }
    if n.as_i64().is_some() {
        return None; // negative
    }
    let f = n.as_f64()?;
    if !f.is_finite() || f <= 0.0 || f.fract() != 0.0 {
        return None;
    }
    // An integral float (`5000.0`) is the integer it spells, saturating.
    Some(if f >= u64::MAX as f64 {
        u64::MAX
    } else {
        f as u64
    })
}

/// The schema of `timeout_ms` as [`lenient`] decodes it: any number (one
/// that is not a positive whole number means the default) or null.
pub fn schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    serde_json::from_value(serde_json::json!({"type": ["number", "null"]}))
        .expect("a literal schema")
}

/// The longest a foreground call that names no `timeout_ms` waits before
/// ide answers: under the SDKs' 30 s default invocation timeout, with room
/// for the answer to travel. A caller that waits its default must get ide's
/// own answer (the output so far, and what to call next), never the
/// engine's generic timeout that carries nothing.
pub const ANSWER_WITHIN_MS: u64 = 25_000;

/// The effective foreground deadline in milliseconds: the requested value
/// clamped to `max_ms`; when none is usable, `default_ms` — but never past
/// [`ANSWER_WITHIN_MS`], since a caller that sent no timeout waits its
/// SDK's default.
pub fn effective(requested: Option<u64>, default_ms: u64, max_ms: u64) -> u64 {
    requested
        .unwrap_or(default_ms.min(ANSWER_WITHIN_MS))
        .min(max_ms)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize)]
    struct T {
        #[serde(default, deserialize_with = "lenient")]
        timeout_ms: Option<u64>,
    }

    fn decode(v: Value) -> Result<Option<u64>, String> {
        serde_json::from_value::<T>(v)
            .map(|t| t.timeout_ms)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_call_without_timeout_is_answered_before_the_sdk_gives_up() {
        // the shipped default (30 s) equals the SDKs' call timeout: the
        // answer comes at 25 s instead
        assert_eq!(effective(None, 30_000, 120_000), ANSWER_WITHIN_MS);
        assert_eq!(effective(None, 10_000, 120_000), 10_000);
        assert_eq!(effective(None, 30_000, 5_000), 5_000);
        // a caller that names a deadline asked for it (and for the wait)
        assert_eq!(effective(Some(40_000), 30_000, 120_000), 40_000);
        assert_eq!(effective(Some(400_000), 30_000, 120_000), 120_000);
    }

    #[test]
    fn integers_pass_and_unusable_numbers_mean_default() {
        assert_eq!(decode(json!({})).unwrap(), None);
        assert_eq!(decode(json!({"timeout_ms": null})).unwrap(), None);
        assert_eq!(decode(json!({"timeout_ms": 5000})).unwrap(), Some(5000));
        assert_eq!(decode(json!({"timeout_ms": -1})).unwrap(), None);
        assert_eq!(decode(json!({"timeout_ms": -0.5})).unwrap(), None);
        assert_eq!(decode(json!({"timeout_ms": 1.5})).unwrap(), None);
        assert_eq!(decode(json!({"timeout_ms": 0})).unwrap(), None);
        assert_eq!(decode(json!({"timeout_ms": 2500.0})).unwrap(), Some(2500));
        assert_eq!(decode(json!({"timeout_ms": 1e30})).unwrap(), Some(u64::MAX));
        assert_eq!(
            decode(json!({"timeout_ms": u64::MAX})).unwrap(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn non_numbers_are_refused() {
        assert!(decode(json!({"timeout_ms": "5000"})).is_err());
        assert!(decode(json!({"timeout_ms": true})).is_err());
    }

    #[test]
    fn clamping() {
        assert_eq!(effective(None, 20_000, 120_000), 20_000);
        assert_eq!(effective(Some(500), 30_000, 120_000), 500);
        assert_eq!(effective(Some(10_000_000), 30_000, 120_000), 120_000);
        assert_eq!(effective(Some(u64::MAX), 30_000, 120_000), 120_000);
        // a default above the cap is clamped too
        assert_eq!(effective(None, 300_000, 60_000), ANSWER_WITHIN_MS);
        assert_eq!(effective(None, 300_000, 20_000), 20_000);
        assert_eq!(effective(None, 0, 120_000), 1);
    }
}
