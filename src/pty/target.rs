//! The one shape an output target may have:
//! `iii::<name>-ui::pty-output::console-<browser>` — a console page's
//! per-tab handler, never an arbitrary function on the bus.

use crate::error::{Failure, quote};

/// Where a console tab's handler lives: the console connects in the
/// engine's `default` namespace (as the configuration worker does), so an
/// ide serving another namespace (one host of several) delivers terminal
/// output there, not in its own.
pub const CONSOLE_NAMESPACE: &str = crate::ports::DEFAULT_NAMESPACE;

/// Longest output target accepted.
const MAX_LEN: usize = 256;

/// A checked output target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub function_id: String,
    /// The page family: the `<name>` in `<name>-ui`.
    pub ui: String,
}

fn word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Parse `raw` as an output target.
pub fn parse(raw: &str) -> Result<Target, Failure> {
    let refuse = || {
        Failure::bad_input(format!(
            "output_function_id {} is not a console output handler; it must be \
             `iii::<name>-ui::pty-output::console-<browser>` (e.g. \
             `iii::ide-ui::pty-output::console-1f2e…`), the handler a console page registers per tab",
            quote(raw)
        ))
    };
    if raw.len() > MAX_LEN {
        return Err(refuse());
    }
    let mut parts = raw.split("::");
    let (Some("iii"), Some(page), Some("pty-output"), Some(tab), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(refuse());
    };
    let name = page.strip_suffix("-ui").filter(|n| word(n));
    let browser = tab.strip_prefix("console-").filter(|b| word(b));
    match (name, browser) {
        (Some(name), Some(_)) => Ok(Target {
            function_id: raw.to_string(),
            ui: name.to_string(),
        }),
        _ => Err(refuse()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_handlers_are_accepted_with_their_page() {
        let t = parse("iii::ide-ui::pty-output::console-4b1c2d3e-aaaa").unwrap();
        assert_eq!(t.ui, "ide");
        assert_eq!(
            parse("iii::claude-ui::pty-output::console-x").unwrap().ui,
            "claude"
        );
        assert_eq!(
            parse("iii::my-agent-ui::pty-output::console-1").unwrap().ui,
            "my-agent"
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for raw in [
            "",
            "shell::exec",
            "iii::ide-ui::pty-output",
            "iii::ide::pty-output::console-1",
            "iii::-ui::pty-output::console-1",
            "iii::ide-ui::pty-output::console-",
            "iii::ide-ui::pty-output::browser-1",
            "iii::ide-ui::other::console-1",
            "iii::ide-ui::pty-output::console-1::extra",
            "x::iii::ide-ui::pty-output::console-1",
            "iii::ide ui::pty-output::console-1",
            "iii::ide-ui::pty-output::console-a/b",
            "iii::ide-ui::pty-output::console-1\n",
        ] {
            let err = parse(raw).unwrap_err();
            assert_eq!(err.class, crate::error::Class::BadInput, "{raw:?}");
            assert!(err.message.contains("pty-output::console-<browser>"));
        }
        let long = format!("iii::ide-ui::pty-output::console-{}", "a".repeat(300));
        assert!(parse(&long).is_err());
    }
}
