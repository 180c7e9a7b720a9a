//! Symbol ops: `replace_symbol`, `insert_before_symbol`,
//! `insert_after_symbol`, `remove_symbol`. A symbol is found by its name
//! path in the body as it stands when the op runs (after the ops before
//! it), and spans whole lines: its leading doc comments, attributes and
//! decorators, the definition, and its last line's newline. Inserted and
//! replacing text is re-indented to the symbol's own indentation.

use crate::code::lang::Compiled;
use crate::code::names::Pattern;
use crate::code::outline::{self, Outline};
use crate::coder::source::line_span;
use crate::error::Failure;

/// What to do at the symbol.
pub enum Act<'a> {
    Replace(&'a str),
    Before(&'a str),
    After(&'a str),
    Remove,
}

/// The symbol `name_path` names in `body`: its outline index and its
/// whole-line span.
pub fn locate(
    raw: &str,
    i: usize,
    lang: &'static Compiled,
    body: &str,
    name_path: &str,
) -> Result<(Outline, usize, (usize, usize)), Failure> {
    let bad = |m: String| Failure::bad_input(format!("{raw:?}: ops[{i}] {m}"));
    let pattern = Pattern::parse(name_path).map_err(bad)?;
    let o = outline::outline(lang, body.as_bytes()).map_err(|e| bad(e.note()))?;
    let hits = o.matching(&pattern, false, &[]);
    match hits.len() {
        1 => {
            let k = hits[0].0;
            let s = &o.syms[k];
            let span = line_span(body.as_bytes(), s.lead, s.end);
            Ok((o, k, span))
        }
        0 => {
            let want = pattern.name().to_lowercase();
            let mut close: Vec<(usize, String, u32)> = (0..o.syms.len())
                .map(|k| {
                    let n = o.syms[k].name.to_lowercase();
                    let d = if n.contains(&want) || want.contains(&n) {
                        0
                    } else {
                        similar::TextDiff::from_chars(&n, &want)
                            .ops()
                            .iter()
                            .filter(|op| op.tag() != similar::DiffTag::Equal)
                            .count()
                    };
                    (d, o.name_path(k), o.syms[k].line)
                })
                .collect();
            close.sort();
            let list: Vec<String> = close
                .iter()
                .take(5)
                .map(|(_, p, l)| format!("{p} (line {l})"))
                .collect();
            Err(bad(format!(
                "no symbol {name_path:?} in this file; the closest are: {}. Retry with one of \
                 them, or list the file's symbols with coder::symbols",
                if list.is_empty() {
                    "none (the file defines nothing)".to_string()
                } else {
                    list.join(", ")
                }
            )))
        }
        _ => {
            let list: Vec<String> = hits
                .iter()
                .map(|(k, p, nth)| format!("{p}[{nth}] at line {}", o.syms[*k].line))
                .collect();
            Err(bad(format!(
                "{name_path:?} names {} symbols: {}. Pick one with its full path from the top \
                 level (/Parent/name) or its overload index (name[0], name[1], …)",
                hits.len(),
                list.join(", ")
            )))
        }
    }
}

/// Apply `act` to the symbol spanning `span` in `body`.
pub fn apply(body: &str, span: (usize, usize), act: &Act<'_>) -> String {
    let (a, b) = span;
    let indent: String = body[a..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let mut out = String::with_capacity(body.len() + 64);
    out.push_str(&body[..a]);
    match act {
        Act::Replace(text) => {
            out.push_str(&reindent(text, &indent, body[a..b].ends_with('\n')));
            out.push_str(&body[b..]);
        }
        Act::Before(text) => {
            out.push_str(&reindent(text, &indent, true));
            out.push_str(&body[a..]);
        }
        Act::After(text) => {
            out.push_str(&body[a..b]);
            if !body[a..b].ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&reindent(
                text,
                &indent,
                b < body.len() || body.ends_with('\n'),
            ));
            out.push_str(&body[b..]);
        }
        Act::Remove => {
            let rest = &body[b..];
            // the blank line after it goes with it when one is before it too
            let blank_before = out.ends_with("\n\n") || out.is_empty();
            let rest = if blank_before {
                rest.strip_prefix('\n').unwrap_or(rest)
            } else {
                rest
            };
            out.push_str(rest);
        }
    }
    out
}

/// `text` with its common indentation replaced by `indent`, ending with a
/// newline when `newline`.
fn reindent(text: &str, indent: &str, newline: bool) -> String {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let common = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len() + lines.len() * indent.len());
    for (n, l) in lines.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        if !l.trim().is_empty() {
            out.push_str(indent);
            out.push_str(&l[common.min(l.len())..]);
        }
    }
    if newline {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::lang;
    use proptest::prelude::*;

    const SRC: &str = "import os\n\nclass A:\n    # doc\n    @property\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n\n\ndef f():\n    pass\n";

    fn run(np: &str, act: Act<'_>) -> String {
        let py = lang::by_name("python").unwrap();
        let (_, _, span) = locate("x.py", 0, py, SRC, np).unwrap();
        apply(SRC, span, &act)
    }

    #[test]
    fn replace_takes_decorators_and_comments_and_reindents() {
        let out = run("A/m", Act::Replace("def m(self):\n    return 3\n"));
        assert_eq!(
            out,
            "import os\n\nclass A:\n    def m(self):\n        return 3\n\n    def n(self):\n        return 2\n\n\ndef f():\n    pass\n"
        );
    }

    #[test]
    fn insert_before_and_after_and_remove() {
        let out = run("/f", Act::Before("def e():\n    pass\n\n"));
        assert!(out.contains("\n\ndef e():\n    pass\n\ndef f():"), "{out}");
        let out = run("A/n", Act::After("\ndef o(self):\n    return 4"));
        assert!(
            out.contains("        return 2\n\n    def o(self):\n        return 4\n\n\ndef f"),
            "{out}"
        );
        let out = run("A/n", Act::Remove);
        assert!(
            out.contains("        return 1\n\n\n\ndef f")
                || out.contains("        return 1\n\n\ndef f"),
            "{out}"
        );
        assert!(!out.contains("def n"));
    }

    #[test]
    fn unknown_and_ambiguous_names_say_what_to_send() {
        let py = lang::by_name("python").unwrap();
        let e = locate("x.py", 2, py, SRC, "A/mm").unwrap_err();
        assert!(e.message.contains("A/m (line 6)"), "{}", e.message);
        let two = "def g():\n    pass\n\ndef g():\n    pass\n";
        let e = locate("x.py", 0, py, two, "g").unwrap_err();
        assert!(e.message.contains("g[1] at line 4"), "{}", e.message);
        assert!(locate("x.py", 0, py, two, "g[1]").is_ok());
    }

    proptest! {
        /// A symbol edit leaves every byte outside the symbol's span as it was.
        #[test]
        fn bytes_outside_the_symbol_are_unchanged(
            pre in "[a-z =0-9\n]{0,40}",
            post in "[a-z =0-9\n]{0,40}",
            new in "[a-z ]{1,20}",
        ) {
            let pre = format!("{pre}\n");
            let sym = "def target():\n    return 1\n";
            let body = format!("{pre}\n{sym}\n{post}");
            let py = lang::by_name("python").unwrap();
            if let Ok((_, _, span)) = locate("x.py", 0, py, &body, "target") {
                let replaced = format!("def target():\n    return '{new}'\n");
                let out = apply(&body, span, &Act::Replace(&replaced));
                prop_assert!(out.starts_with(&body[..span.0]));
                prop_assert!(out.ends_with(&body[span.1..]));
            }
        }
    }
}
