//! Whether `ide` exports its spans, logs and metrics to the engine.
//!
//! Off unless the operator turns it on with `OTEL_ENABLED=true` (or `1`,
//! `yes`, `on`). The 0.23 engine registers a routed invocation only after it
//! has forwarded it to the worker, so an answer that comes back faster than
//! the engine's own bookkeeping is dropped and its caller waits out its whole
//! timeout; span export from a busy worker keeps the engine busy enough to
//! hit that window about once every 12 s under steady traffic
//! (ENGINE-FACTS.md, "answers lost under span load"). A lost answer is a lost
//! keystroke or an agent retrying a write that already happened, so the
//! default is the setting that loses none; the console's traces of ide's
//! calls come back with the switch.

use iii_helpers::observability::OtelConfig;

/// The environment variable the SDK reads for the same switch.
pub const SWITCH: &str = "OTEL_ENABLED";

/// What the operator asked for: `Some(on)` when [`SWITCH`] names a
/// recognised value, `None` when it is unset, blank or unrecognised.
pub fn requested(value: Option<&str>) -> Option<bool> {
    match value?.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The SDK's telemetry settings for this process, and whether export is on.
pub fn config() -> (OtelConfig, bool) {
    let raw = std::env::var(SWITCH).ok();
    let asked = requested(raw.as_deref());
    if let (Some(value), None) = (&raw, asked) {
        tracing::warn!(
            value = %value,
            "{SWITCH} is not one of true/false/1/0/yes/no/on/off; telemetry export stays off"
        );
    }
    let on = asked.unwrap_or(false);
    let config = OtelConfig {
        enabled: Some(on),
        ..OtelConfig::default()
    };
    (config, on)
}

#[cfg(test)]
mod tests {
    use super::requested;

    #[test]
    fn the_switch_reads_the_usual_spellings_and_nothing_else() {
        for on in ["1", "true", "TRUE", " yes ", "on"] {
            assert_eq!(requested(Some(on)), Some(true), "{on:?}");
        }
        for off in ["0", "false", "No", "off"] {
            assert_eq!(requested(Some(off)), Some(false), "{off:?}");
        }
        for unknown in ["", "  ", "enabled", "2"] {
            assert_eq!(requested(Some(unknown)), None, "{unknown:?}");
        }
        assert_eq!(requested(None), None);
    }
}
