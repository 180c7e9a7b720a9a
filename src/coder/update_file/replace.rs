//! Regex `replace` ops over the whole body.
//!
//! Replacement references are validated before anything is written, even
//! when the pattern matches nothing: `$1`, `${1}`, `$name`, `${name}`, `$0`;
//! `$$` is a literal dollar. Like the regex crate, `$1a` is the group NAMED
//! `1a` (not group 1 then "a") — we refuse it unless such a group exists and
//! say to write `${1}a`.

use crate::error::Failure;
use regex::{Regex, RegexBuilder};

/// A compiled replace op.
#[derive(Debug)]
pub struct Replace {
    pub regex: Regex,
    pub replacement: String,
    pub expect_matches: Option<u64>,
}

/// One replaced region in the NEW body: byte range.
#[derive(Debug)]
pub struct Site {
    pub start: usize,
    pub end: usize,
}

pub fn compile(
    index: usize,
    pattern: &str,
    replacement: &str,
    ignore_case: bool,
    dot_matches_newline: bool,
    expect_matches: Option<u64>,
) -> Result<Replace, Failure> {
    if pattern.is_empty() {
        return Err(Failure::bad_input(format!(
            "ops[{index}] replace pattern is empty; give a regex that matches the text to change"
        )));
    }
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .dot_matches_new_line(dot_matches_newline)
        .multi_line(true)
        .size_limit(64 << 20)
        .build()
        .map_err(|e| {
            Failure::bad_input(format!(
                "ops[{index}] replace pattern {pattern:?} is not a valid regex: {e}"
            ))
        })?;
    validate_references(index, &regex, replacement)?;
    Ok(Replace {
        regex,
        replacement: replacement.to_string(),
        expect_matches,
    })
}

/// Every `$` reference in `replacement` must name a group of `regex`.
fn validate_references(index: usize, regex: &Regex, replacement: &str) -> Result<(), Failure> {
    let groups = regex.captures_len();
    let names: Vec<&str> = regex.capture_names().flatten().collect();
    let bytes = replacement.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) == Some(&b'$') {
            i += 2;
            continue;
        }
        let (name, braced, next) = if bytes.get(i + 1) == Some(&b'{') {
            match replacement[i + 2..].find('}') {
                Some(close) => (&replacement[i + 2..i + 2 + close], true, i + 3 + close),
                None => {
                    return Err(Failure::bad_input(format!(
                        "ops[{index}] replacement has an unclosed `${{` at byte {i}; close it \
                         (`${{1}}`) or write a literal dollar as `$$`"
                    )));
                }
            }
        } else {
            let len = replacement[i + 1..]
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            (&replacement[i + 1..i + 1 + len], false, i + 1 + len)
        };
        if name.is_empty() {
            // A lone `$` is written literally, as the regex crate does.
            i = next.max(i + 1);
            continue;
        }
        let ok = match name.parse::<usize>() {
            Ok(n) => n < groups,
            Err(_) => names.contains(&name),
        };
        if !ok {
            let hint = if !braced && name.starts_with(|c: char| c.is_ascii_digit()) {
                let digits: String = name.chars().take_while(|c| c.is_ascii_digit()).collect();
                format!(
                    " — `${name}` is read as the group NAMED `{name}`; for group {digits} followed \
                     by text write `${{{digits}}}{}`",
                    &name[digits.len()..]
                )
            } else {
                String::new()
            };
            return Err(Failure::bad_input(format!(
                "ops[{index}] replacement references `${}{name}{}`, but the pattern has groups \
                 0..={} and names [{}]{hint}; write a literal dollar as `$$`",
                if braced { "{" } else { "" },
                if braced { "}" } else { "" },
                groups - 1,
                names.join(", ")
            )));
        }
        i = next;
    }
    Ok(())
}

/// Replace every match; returns the new body, the match count and the
/// replaced regions (in the new body). Stops with 218 as soon as the body
/// outgrows `limit` bytes (a pattern matching the empty string at every
/// position multiplies the body by the replacement's size).
pub fn apply(op: &Replace, body: &str, limit: usize) -> Result<(String, u64, Vec<Site>), Failure> {
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    let mut count = 0u64;
    let mut sites = Vec::new();
    for caps in op.regex.captures_iter(body) {
        let m = caps.get(0).expect("group 0 always participates");
        out.push_str(&body[last..m.start()]);
        let start = out.len();
        caps.expand(&op.replacement, &mut out);
        sites.push(Site {
            start,
            end: out.len(),
        });
        last = m.end();
        count += 1;
        if out.len() > limit {
            return Err(Failure::new(
                crate::error::Class::TooLarge,
                format!(
                    "the replace would grow the file past {limit} bytes (max_write_bytes); nothing \
                     was written — narrow the pattern (does it match the empty string?)"
                ),
            ));
        }
    }
    out.push_str(&body[last..]);
    Ok((out, count, sites))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(p: &str, r: &str) -> Result<Replace, Failure> {
        compile(0, p, r, false, false, None)
    }

    #[test]
    fn references_are_validated_even_without_matches() {
        assert!(c("(a)(?P<word>b)", "$1 ${2} $word ${word} $0 $$1").is_ok());
        assert!(c("(a)", "$2").is_err());
        assert!(c("(a)", "$name").is_err());
        let e = c("(a)", "$1a").unwrap_err();
        assert!(e.message.contains("${1}a"), "{}", e.message);
        assert!(c("(a)", "cost: $ 5").is_ok());
        assert!(c("(a)", "${1").is_err());
        assert!(c("(", "x").is_err());
        assert!(c("", "x").is_err());
    }

    #[test]
    fn apply_expands_and_tracks_sites() {
        let op = c(r"(\w+)@(\w+)", "$2 at $1 costs $$5").unwrap();
        let (out, n, sites) = apply(&op, "x ann@home y bob@work", usize::MAX).unwrap();
        assert_eq!(out, "x home at ann costs $5 y work at bob costs $5");
        assert_eq!(n, 2);
        assert_eq!(&out[sites[1].start..sites[1].end], "work at bob costs $5");
    }

    #[test]
    fn growth_past_the_limit_stops_early() {
        let op = c("x*", "0123456789").unwrap();
        let e = apply(&op, &"a".repeat(10_000), 50_000).unwrap_err();
        assert_eq!(e.class, crate::error::Class::TooLarge);
    }

    #[test]
    fn dot_matches_newline_spans_lines_only_when_asked() {
        let body = "start\nmiddle\nend\n";
        let plain = c("start.*?end", "X").unwrap();
        assert_eq!(apply(&plain, body, usize::MAX).unwrap().1, 0);
        let spanning = compile(0, "start.*?end", "X", false, true, None).unwrap();
        assert_eq!(apply(&spanning, body, usize::MAX).unwrap().0, "X\n");
    }
}
