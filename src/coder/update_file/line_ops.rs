//! Line ops (`insert`, `remove`, `update_lines`) against the ORIGINAL
//! numbering.
//!
//! Every op names lines of the file as it was read. Ops are validated
//! (bounds, no overlap) and applied bottom-up, so applying one never shifts
//! the lines another refers to. Their echoes are then located in the result
//! by walking the ops top-down and accumulating each one's line delta.

use crate::error::Failure;

/// One line op, with its content already split into lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineOp {
    /// Insert before original line `at` (1-based; `n + 1` appends).
    Insert { at: usize, lines: Vec<String> },
    /// Remove original lines `from..=to`.
    Remove { from: usize, to: usize },
    /// Replace original lines `from..=to` with `lines`.
    Update {
        from: usize,
        to: usize,
        lines: Vec<String>,
    },
}

impl LineOp {
    fn start(&self) -> usize {
        match self {
            LineOp::Insert { at, .. } => *at,
            LineOp::Remove { from, .. } | LineOp::Update { from, .. } => *from,
        }
    }

    fn range(&self) -> Option<(usize, usize)> {
        match self {
            LineOp::Insert { .. } => None,
            LineOp::Remove { from, to } | LineOp::Update { from, to, .. } => Some((*from, *to)),
        }
    }

    /// Lines this op puts into the result.
    pub fn added(&self) -> usize {
        match self {
            LineOp::Insert { lines, .. } | LineOp::Update { lines, .. } => lines.len(),
            LineOp::Remove { .. } => 0,
        }
    }

    fn removed(&self) -> usize {
        self.range().map_or(0, |(f, t)| t - f + 1)
    }
}

/// Split op content into lines: `"a\nb\n"` and `"a\nb"` are both two lines.
pub fn content_lines(content: &str) -> Vec<String> {
    content
        .split_inclusive('\n')
        .map(|l| {
            l.strip_suffix('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .unwrap_or(l)
                .to_string()
        })
        .collect()
}

/// Check bounds and overlaps. `indices` are the ops' positions in the
/// request (for messages).
pub fn validate(ops: &[(usize, LineOp)], n: usize) -> Result<(), Failure> {
    for (i, op) in ops {
        match op {
            LineOp::Insert { at, .. } => {
                if *at < 1 || *at > n + 1 {
                    return Err(Failure::bad_input(format!(
                        "ops[{i}] insert at_line {at} is out of range: the file has {n} lines, so \
                         at_line must be 1..={} ({} appends)",
                        n + 1,
                        n + 1
                    )));
                }
            }
            LineOp::Remove { from, to } | LineOp::Update { from, to, .. } => {
                if *from < 1 || to < from || *to > n {
                    return Err(Failure::bad_input(format!(
                        "ops[{i}] lines {from}..={to} are out of range: the file has {n} lines; \
                         line numbers are 1-based and inclusive (from_line <= to_line <= {n})"
                    )));
                }
            }
        }
    }
    for (ai, a) in ops {
        for (bi, b) in ops {
            if ai >= bi {
                continue;
            }
            let clash = match (a.range(), b.range()) {
                (Some((af, at)), Some((bf, bt))) => af <= bt && bf <= at,
                (Some((f, t)), None) => b.start() > f && b.start() <= t,
                (None, Some((f, t))) => a.start() > f && a.start() <= t,
                (None, None) => false,
            };
            if clash {
                return Err(Failure::bad_input(format!(
                    "ops[{ai}] and ops[{bi}] overlap ({} vs {}); every op refers to the original \
                     line numbers, so merge them into one op or give them disjoint ranges",
                    describe(a),
                    describe(b)
                )));
            }
        }
    }
    Ok(())
}

fn describe(op: &LineOp) -> String {
    match op {
        LineOp::Insert { at, .. } => format!("insert at_line {at}"),
        LineOp::Remove { from, to } => format!("remove {from}..={to}"),
        LineOp::Update { from, to, .. } => format!("update_lines {from}..={to}"),
    }
}

/// Sort order top-down: by start; at one start, inserts (request order)
/// come before the range op.
fn top_down(ops: &[(usize, LineOp)]) -> Vec<&(usize, LineOp)> {
    let mut v: Vec<&(usize, LineOp)> = ops.iter().collect();
    v.sort_by_key(|(i, op)| (op.start(), op.range().is_some(), *i));
    v
}

/// Apply validated ops to `lines`, bottom-up.
pub fn apply(lines: &mut Vec<String>, ops: &[(usize, LineOp)]) {
    for (_, op) in top_down(ops).into_iter().rev() {
        match op {
            LineOp::Insert { at, lines: new } => {
                let idx = at - 1;
                lines.splice(idx..idx, new.iter().cloned());
            }
            LineOp::Remove { from, to } => {
                lines.drain(from - 1..*to);
            }
            LineOp::Update {
                from,
                to,
                lines: new,
            } => {
                lines.splice(from - 1..*to, new.iter().cloned());
            }
        }
    }
}

/// Where each op's result landed: `(request index, first new line, lines added)`.
pub fn landed(ops: &[(usize, LineOp)]) -> Vec<(usize, usize, usize)> {
    let mut offset: isize = 0;
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in top_down(ops) {
        let start = (op.start() as isize + offset).max(1) as usize;
        out.push((*i, start, op.added()));
        offset += op.added() as isize - op.removed() as isize;
    }
    out.sort_by_key(|(i, _, _)| *i);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lines(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("L{i}")).collect()
    }

    fn ins(at: usize, s: &[&str]) -> LineOp {
        LineOp::Insert {
            at,
            lines: s.iter().map(|x| x.to_string()).collect(),
        }
    }

    #[test]
    fn line_ops_apply_bottom_up_against_original_numbers() {
        let mut l = lines(5);
        let ops = vec![
            (0, ins(1, &["top"])),
            (
                1,
                LineOp::Update {
                    from: 2,
                    to: 3,
                    lines: vec!["two-three".into()],
                },
            ),
            (2, LineOp::Remove { from: 5, to: 5 }),
            (3, ins(6, &["end"])),
        ];
        validate(&ops, 5).unwrap();
        apply(&mut l, &ops);
        assert_eq!(l, ["top", "L1", "two-three", "L4", "end"]);
        let at = landed(&ops);
        assert_eq!(at[0], (0, 1, 1));
        assert_eq!(at[1], (1, 3, 1));
        assert_eq!(at[3], (3, 5, 1));
    }

    #[test]
    fn overlapping_ops_are_refused() {
        let r = |a, b| LineOp::Remove { from: a, to: b };
        assert!(validate(&[(0, r(1, 3)), (1, r(3, 4))], 5).is_err());
        assert!(validate(&[(0, r(1, 3)), (1, ins(2, &["x"]))], 5).is_err());
        // inserting right before or after a range is fine
        assert!(validate(&[(0, r(2, 3)), (1, ins(2, &["x"])), (2, ins(4, &["y"]))], 5).is_ok());
        assert!(validate(&[(0, ins(7, &["x"]))], 5).is_err());
        assert!(validate(&[(0, r(0, 1))], 5).is_err());
    }

    #[test]
    fn content_splits_into_lines() {
        assert_eq!(content_lines("a\nb\n"), ["a", "b"]);
        assert_eq!(content_lines("a\r\nb"), ["a", "b"]);
        assert_eq!(content_lines("a\n\n"), ["a", ""]);
        assert!(content_lines("").is_empty());
    }

    /// The simple model: walk the original lines once.
    fn model(orig: &[String], ops: &[(usize, LineOp)]) -> Vec<String> {
        let n = orig.len();
        let mut out = Vec::new();
        for line in 1..=n + 1 {
            for (_, op) in ops {
                if let LineOp::Insert { at, lines } = op {
                    if *at == line {
                        out.extend(lines.iter().cloned());
                    }
                }
            }
            if line > n {
                break;
            }
            let mut covered = false;
            for (_, op) in ops {
                match op {
                    LineOp::Remove { from, to } if (*from..=*to).contains(&line) => covered = true,
                    LineOp::Update { from, to, lines } if (*from..=*to).contains(&line) => {
                        covered = true;
                        if line == *from {
                            out.extend(lines.iter().cloned());
                        }
                    }
                    _ => {}
                }
            }
            if !covered {
                out.push(orig[line - 1].clone());
            }
        }
        out
    }

    fn arb_ops(n: usize) -> impl Strategy<Value = Vec<LineOp>> {
        let op =
            (0usize..3, 1usize..=n + 1, 0usize..3, 0usize..3).prop_map(move |(k, a, len, add)| {
                let content: Vec<String> = (0..add).map(|i| format!("new{a}-{i}")).collect();
                match k {
                    0 => LineOp::Insert {
                        at: a,
                        lines: content,
                    },
                    1 => LineOp::Remove {
                        from: a.min(n),
                        to: (a + len).min(n),
                    },
                    _ => LineOp::Update {
                        from: a.min(n),
                        to: (a + len).min(n),
                        lines: content,
                    },
                }
            });
        proptest::collection::vec(op, 0..6)
    }

    proptest! {
        #[test]
        fn line_ops_match_the_reference_model(
            (n, raw) in (1usize..30).prop_flat_map(|n| (Just(n), arb_ops(n)))
        ) {
            let orig = lines(n);
            let ops: Vec<(usize, LineOp)> = raw.into_iter().enumerate().collect();
            if validate(&ops, n).is_ok() {
                let mut got = orig.clone();
                apply(&mut got, &ops);
                prop_assert_eq!(&got, &model(&orig, &ops));
                // every op's echo start points at its own content
                for (i, start, added) in landed(&ops) {
                    if added > 0 {
                        let first = match &ops[i].1 {
                            LineOp::Insert { lines, .. } | LineOp::Update { lines, .. } => lines[0].clone(),
                            LineOp::Remove { .. } => unreachable!(),
                        };
                        prop_assert_eq!(&got[start - 1], &first);
                    }
                }
            }
        }
    }
}
