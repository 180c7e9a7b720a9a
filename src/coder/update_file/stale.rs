//! A guarded edit against a revision that is no longer the file's: what
//! changed since (when the worker still holds that revision's content),
//! where the line ops' targets went, and — when the caller asked with
//! `rebase_lines` and every targeted line is unchanged — the ops moved onto
//! the current numbering.

use super::line_ops::LineOp;
use similar::{DiffOp, TextDiff};

/// What a stale guarded edit learns from the revision it was written for.
pub struct Stale {
    /// Sentences: what changed since, and where each line op's lines went.
    pub explanation: String,
    /// The line ops on the current numbering, when every one of them
    /// targets lines that are unchanged (only moved, or not even that).
    pub rebased: Option<Vec<(usize, LineOp)>>,
}

/// Compare the caller's revision (`old`) with the file now (`new`), as
/// decoded text, and place the line ops (numbered against `old`).
pub fn explain(old: &str, new: &str, ops: &[(usize, LineOp)]) -> Stale {
    // the lines as the line ops count them
    let (a, b) = (super::split_lines(old), super::split_lines(new));
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a.iter().map(String::as_str).collect(),
        b.iter().map(String::as_str).collect(),
    );
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_slices(&a, &b);
    let changes: Vec<DiffOp> = diff
        .ops()
        .iter()
        .copied()
        .filter(|op| !matches!(op, DiffOp::Equal { .. }))
        .collect();
    let equal: Vec<(usize, usize, usize)> = diff
        .ops()
        .iter()
        .filter_map(|op| match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => Some((old_index, new_index, len)),
            _ => None,
        })
        .collect();
    // a run of old lines (0-based, inclusive) that one unchanged stretch
    // holds whole: where it is now
    let moved = |from: usize, to: usize| -> Option<usize> {
        equal
            .iter()
            .find(|(o, _, len)| *o <= from && to < o + len)
            .map(|(o, n, _)| n + (from - o))
    };
    let mut said: Vec<String> = changes.iter().take(5).map(describe).collect();
    if changes.len() > 5 {
        said.push(format!("{} more changes", changes.len() - 5));
    }
    let mut parts = vec![format!("since your revision: {}", said.join("; "))];
    let mut rebased = Vec::with_capacity(ops.len());
    let mut all = true;
    for (i, op) in ops {
        let place = match op {
            LineOp::Remove { from, to } | LineOp::Update { from, to, .. } => {
                match moved(from - 1, to - 1) {
                    Some(n) => {
                        let (nf, nt) = (n + 1, n + 1 + (to - from));
                        parts.push(if nf == *from {
                            format!("ops[{i}] lines {from}–{to} are unchanged and still there")
                        } else {
                            format!("ops[{i}] lines {from}–{to} are now {nf}–{nt}, unchanged")
                        });
                        Some(match op {
                            LineOp::Remove { .. } => LineOp::Remove { from: nf, to: nt },
                            LineOp::Update { lines, .. } => LineOp::Update {
                                from: nf,
                                to: nt,
                                lines: lines.clone(),
                            },
                            LineOp::Insert { .. } => unreachable!(),
                        })
                    }
                    None => {
                        parts.push(format!(
                            "ops[{i}] lines {from}–{to} were changed by the other writer"
                        ));
                        None
                    }
                }
            }
            LineOp::Insert { at, lines } => {
                // before line `at`: that line's place (or, appending, the
                // place after the last line) must be unchanged
                let now = if *at <= a.len() {
                    moved(at - 1, at - 1).map(|n| n + 1)
                } else if a.is_empty() {
                    Some(b.len() + 1)
                } else {
                    moved(a.len() - 1, a.len() - 1)
                        .filter(|n| n + 1 == b.len())
                        .map(|_| b.len() + 1)
                };
                match now {
                    Some(n) => {
                        parts.push(if n == *at {
                            format!("ops[{i}] inserts before line {at}, unchanged and still there")
                        } else {
                            format!("ops[{i}] inserts before line {at}, now line {n}, unchanged")
                        });
                        Some(LineOp::Insert {
                            at: n,
                            lines: lines.clone(),
                        })
                    }
                    None => {
                        parts.push(format!(
                            "ops[{i}] inserts at line {at}, which the other writer changed"
                        ));
                        None
                    }
                }
            }
        };
        match place {
            Some(p) => rebased.push((*i, p)),
            None => all = false,
        }
    }
    Stale {
        explanation: parts.join("; "),
        rebased: (all && !ops.is_empty()).then_some(rebased),
    }
}

/// One change in the caller's numbering.
fn describe(op: &DiffOp) -> String {
    let span = |from: usize, len: usize| {
        if len == 1 {
            format!("line {}", from + 1)
        } else {
            format!("lines {}–{}", from + 1, from + len)
        }
    };
    let count = |n: usize| {
        if n == 1 {
            "1 line".to_string()
        } else {
            format!("{n} lines")
        }
    };
    match *op {
        DiffOp::Insert {
            old_index, new_len, ..
        } => format!(
            "{} inserted before your line {}",
            count(new_len),
            old_index + 1
        ),
        DiffOp::Delete {
            old_index, old_len, ..
        } => format!("your {} deleted", span(old_index, old_len)),
        DiffOp::Replace {
            old_index,
            old_len,
            new_len,
            ..
        } => format!(
            "your {} replaced by {}",
            span(old_index, old_len),
            count(new_len)
        ),
        DiffOp::Equal { .. } => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn a_line_inserted_above_moves_the_targets_down() {
        let old = numbered(130);
        let new = format!("# header\n{old}");
        let ops = vec![(
            0,
            LineOp::Update {
                from: 111,
                to: 128,
                lines: vec!["x".into()],
            },
        )];
        let s = explain(&old, &new, &ops);
        assert!(
            s.explanation.contains("1 line inserted before your line 1"),
            "{}",
            s.explanation
        );
        assert!(
            s.explanation
                .contains("ops[0] lines 111–128 are now 112–129, unchanged"),
            "{}",
            s.explanation
        );
        assert_eq!(
            s.rebased,
            Some(vec![(
                0,
                LineOp::Update {
                    from: 112,
                    to: 129,
                    lines: vec!["x".into()]
                }
            )])
        );
    }

    #[test]
    fn a_changed_target_is_never_rebased() {
        let old = numbered(20);
        let new = old.replace("line 12\n", "line twelve\n");
        let ops = vec![
            (0, LineOp::Remove { from: 3, to: 4 }),
            (
                1,
                LineOp::Update {
                    from: 10,
                    to: 12,
                    lines: vec![],
                },
            ),
        ];
        let s = explain(&old, &new, &ops);
        assert!(
            s.explanation.contains("your line 12 replaced by 1 line"),
            "{}",
            s.explanation
        );
        assert!(
            s.explanation
                .contains("ops[0] lines 3–4 are unchanged and still there")
        );
        assert!(
            s.explanation
                .contains("ops[1] lines 10–12 were changed by the other writer")
        );
        assert!(s.rebased.is_none());
    }

    #[test]
    fn inserts_follow_their_line_and_the_end() {
        let old = numbered(5);
        let new = format!("{}line 3\nline 4\nline 5\n", "a\nb\nline 1\nline 2\n");
        let ops = vec![
            (
                0,
                LineOp::Insert {
                    at: 2,
                    lines: vec!["n".into()],
                },
            ),
            (
                1,
                LineOp::Insert {
                    at: 6,
                    lines: vec!["end".into()],
                },
            ),
        ];
        let s = explain(&old, &new, &ops);
        let r = s.rebased.expect("both placed");
        assert_eq!(
            r[0].1,
            LineOp::Insert {
                at: 4,
                lines: vec!["n".into()]
            }
        );
        assert_eq!(
            r[1].1,
            LineOp::Insert {
                at: 8,
                lines: vec!["end".into()]
            }
        );
        // appending after a file that grew at its end is not the same place
        let grown = format!("{old}line 6\n");
        let s = explain(
            &old,
            &grown,
            &[(
                0,
                LineOp::Insert {
                    at: 6,
                    lines: vec![],
                },
            )],
        );
        assert!(s.rebased.is_none(), "{}", s.explanation);
    }
}
