//! Batch answers that say failure at the top.
//!
//! A batch function (`coder::create-file`, `update-file`, `delete-file`,
//! `move`, `read-file` with `paths[]`, `shell::fs::sed`) answers one
//! entry per file, each with its own `success` and error. An answer whose
//! entries failed must not read as a success to a caller that looks only at
//! the top (an MCP client shows `isError: false`, an agent skims): the
//! answer counts its failed entries (`failed`), and when every entry failed
//! the call fails as a whole — with the entry's own error when there was
//! one entry, else with each entry's error listed in the message.

use crate::error::{Class, Failure, WireError};

/// The most entries a whole-call failure lists one by one.
const LISTED: usize = 20;

/// The class a wire code renders from (`C221`, `S211`), or the code itself
/// for one that is not a class of ours.
fn class_of(code: &str) -> Class {
    let number = code
        .strip_prefix(['C', 'S'])
        .and_then(|n| n.parse::<u16>().ok());
    [
        Class::SandboxExec,
        Class::BadInput,
        Class::NotFound,
        Class::WrongType,
        Class::Exists,
        Class::NotEmpty,
        Class::JailEscape,
        Class::Io,
        Class::BadRegex,
        Class::TooLarge,
        Class::OutsideScope,
        Class::RevisionConflict,
    ]
    .into_iter()
    .find(|c| number.is_some() && c.number() == number)
    .unwrap_or_else(|| Class::Engine(code.to_string()))
}

/// Count the failed entries of a batch (`(path, error)`, the error `None`
/// for an entry that succeeded). When every entry failed, the failure of
/// the whole call instead: `what` says what none of them did ("was
/// written", "was read").
pub fn settle<'a>(
    entries: impl IntoIterator<Item = (&'a str, Option<&'a WireError>)>,
    what: &str,
) -> Result<u64, Failure> {
    let mut total = 0usize;
    let mut failed: Vec<(&str, &WireError)> = Vec::new();
    for (path, error) in entries {
        total += 1;
        if let Some(e) = error {
            failed.push((path, e));
        }
    }
    if total == 0 || failed.len() < total {
        return Ok(failed.len() as u64);
    }
    if let [(_, only)] = failed.as_slice() {
        return Err(Failure::new(class_of(&only.code), only.message.clone()));
    }
    let first = failed[0].1;
    let mut message = format!(
        "every entry of the batch failed ({total} of {total}), nothing {what}; each entry's error: "
    );
    let listed: Vec<String> = failed
        .iter()
        .take(LISTED)
        .map(|(path, e)| format!("{path}: {} {}", e.code, e.message))
        .collect();
    message.push_str(&listed.join(" | "));
    if total > LISTED {
        message.push_str(&format!(" | … and {} more", total - LISTED));
    }
    Err(Failure::new(class_of(&first.code), message))
}

/// [`settle`] for entries whose error is the wire text `"CODE: message"`
/// (`shell::fs::sed`).
pub fn settle_texts<'a>(
    entries: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    what: &str,
) -> Result<u64, Failure> {
    let parsed: Vec<(&str, Option<WireError>)> = entries
        .into_iter()
        .map(|(path, text)| {
            let error = text.map(|t| match t.split_once(": ") {
                Some((code, message)) if !code.contains(' ') => WireError {
                    code: code.to_string(),
                    message: message.to_string(),
                },
                _ => WireError {
                    code: "S216".into(),
                    message: t.to_string(),
                },
            });
            (path, error)
        })
        .collect();
    settle(parsed.iter().map(|(p, e)| (*p, e.as_ref())), what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Surface;

    fn err(code: &str, message: &str) -> WireError {
        WireError {
            code: code.into(),
            message: message.into(),
        }
    }

    #[test]
    fn some_failed_is_a_count_and_all_failed_is_an_error() {
        let stale = err("C221", "a.txt changed since its revision was read");
        assert_eq!(settle([("a", None), ("b", None)], "was written"), Ok(0));
        assert_eq!(
            settle([("a", Some(&stale)), ("b", None)], "was written"),
            Ok(1)
        );
        assert_eq!(settle(std::iter::empty(), "was written"), Ok(0));
        // one entry: its own error, as if the call were not a batch
        let one = settle([("a", Some(&stale))], "was written").unwrap_err();
        assert_eq!(one.to_wire(Surface::Coder), stale);
        // several: the first entry's code, every entry's error in the message
        let gone = err("C211", "b.txt does not exist");
        let all = settle([("a", Some(&stale)), ("b", Some(&gone))], "was written").unwrap_err();
        let wire = all.to_wire(Surface::Coder);
        assert_eq!(wire.code, "C221");
        assert!(
            wire.message.contains("(2 of 2), nothing was written"),
            "{}",
            wire.message
        );
        assert!(
            wire.message.contains("a: C221 a.txt changed"),
            "{}",
            wire.message
        );
        assert!(
            wire.message.contains("b: C211 b.txt does not exist"),
            "{}",
            wire.message
        );
    }

    #[test]
    fn many_failures_are_listed_up_to_a_bound_and_codes_survive() {
        let e = err("S211", "gone");
        let paths: Vec<String> = (0..30).map(|i| format!("f{i}")).collect();
        let all = settle(paths.iter().map(|p| (p.as_str(), Some(&e))), "was changed").unwrap_err();
        let wire = all.to_wire(Surface::Shell);
        assert_eq!(wire.code, "S211");
        assert!(wire.message.contains("… and 10 more"), "{}", wire.message);
        assert!(!wire.message.contains("f20:"), "{}", wire.message);
        let texts = settle_texts([("x", Some("S217: bad regex"))], "was changed").unwrap_err();
        assert_eq!(texts.to_wire(Surface::Shell), err("S217", "bad regex"));
        let foreign = settle([("x", Some(&err("timeout", "slow")))], "was read").unwrap_err();
        assert_eq!(foreign.to_wire(Surface::Coder).code, "timeout");
    }
}
