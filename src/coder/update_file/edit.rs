//! The exact-text `edit` op: replace `old_text` that occurs exactly once.
//!
//! When it does not occur, the error names the closest near-match (its line
//! numbers) and whether it differs only in whitespace/indentation or in line
//! endings, so the agent's next call can succeed. When it occurs several
//! times, the error lists the line of each so the agent can add context.

use crate::error::Failure;

/// Line number (1-based) of a byte offset.
pub fn line_of(body: &str, offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &body.as_bytes()[..offset]).count() + 1
}

/// Apply one edit. Returns the new body and the byte ranges of the
/// replacements in it.
pub fn apply(
    index: usize,
    body: &str,
    old_text: &str,
    new_text: &str,
    replace_all: bool,
    limit: usize,
) -> Result<(String, Vec<(usize, usize)>), Failure> {
    if old_text.is_empty() {
        return Err(Failure::bad_input(format!(
            "ops[{index}] edit old_text is empty; quote the exact text to replace (use insert \
             to add new lines)"
        )));
    }
    let found: Vec<usize> = body.match_indices(old_text).map(|(i, _)| i).collect();
    if found.is_empty() {
        return Err(Failure::bad_input(format!(
            "ops[{index}] edit old_text was not found{}",
            near_match(body, old_text)
        )));
    }
    if found.len() > 1 && !replace_all {
        let lines: Vec<String> = found
            .iter()
            .take(20)
            .map(|o| line_of(body, *o).to_string())
            .collect();
        return Err(Failure::bad_input(format!(
            "ops[{index}] edit old_text occurs {} times (at lines {}{}); include more surrounding \
             text so it is unique, or pass replace_all: true",
            found.len(),
            lines.join(", "),
            if found.len() > 20 { ", …" } else { "" }
        )));
    }
    let grown = body.len() - found.len() * old_text.len() + found.len() * new_text.len();
    if grown > limit {
        return Err(Failure::new(
            crate::error::Class::TooLarge,
            format!(
                "ops[{index}] edit would make the file {grown} bytes, over max_write_bytes \
                 ({limit}); nothing was written"
            ),
        ));
    }
    let mut out = String::with_capacity(grown);
    let mut sites = Vec::with_capacity(found.len());
    let mut last = 0;
    for start in found {
        out.push_str(&body[last..start]);
        let s = out.len();
        out.push_str(new_text);
        sites.push((s, out.len()));
        last = start + old_text.len();
    }
    out.push_str(&body[last..]);
    Ok((out, sites))
}

fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Describe where the closest match is and how it differs.
fn near_match(body: &str, old: &str) -> String {
    let file: Vec<&str> = body.split('\n').collect();
    let want: Vec<&str> = old.trim_end_matches('\n').split('\n').collect();
    let k = want.len();
    if k == 0 || file.len() < k {
        return "; re-read the file with coder::read-file (numbered: true) and quote it exactly"
            .to_string();
    }
    let strip_cr = |s: &str| s.trim_end_matches('\r').to_string();
    let want_cr: Vec<String> = want.iter().map(|l| strip_cr(l)).collect();
    let want_ws: Vec<String> = want.iter().map(|l| squash(l)).collect();
    let mut best: Option<(f32, usize)> = None;
    let budget_cells = 400_000usize;
    let fuzzy = file.len().saturating_mul(k) <= budget_cells;
    for start in 0..=file.len() - k {
        let window = &file[start..start + k];
        if window
            .iter()
            .map(|l| strip_cr(l))
            .eq(want_cr.iter().cloned())
        {
            return format!(
                "; lines {}-{} match except for line endings (the file uses different line \
                 endings than old_text) — quote old_text with the file's line endings, or use \
                 line ops on those lines",
                start + 1,
                start + k
            );
        }
        if window.iter().map(|l| squash(l)).eq(want_ws.iter().cloned()) {
            return format!(
                "; lines {}-{} match except for whitespace/indentation — re-read them with \
                 coder::read-file {{line_from: {}, line_to: {}}} and copy the exact indentation",
                start + 1,
                start + k,
                start + 1,
                start + k
            );
        }
        if fuzzy {
            let score: f32 = window
                .iter()
                .zip(&want_ws)
                .map(|(l, w)| {
                    let l = squash(l);
                    if &l == w {
                        1.0
                    } else {
                        similar::TextDiff::from_chars(l.as_str(), w.as_str()).ratio()
                    }
                })
                .sum::<f32>()
                / k as f32;
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, start));
            }
        }
    }
    match best {
        Some((score, start)) if score >= 0.5 => format!(
            "; the closest text is at lines {}-{} ({}% similar) — re-read them with \
             coder::read-file {{line_from: {}, line_to: {}}} and quote them exactly",
            start + 1,
            start + k,
            (score * 100.0).round() as u32,
            start + 1,
            start + k
        ),
        _ => "; nothing similar exists in the file — re-read it with coder::read-file \
              (numbered: true) before editing"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_text_is_replaced() {
        let (out, sites) = apply(
            0,
            "a\nfn x() {}\nb\n",
            "fn x() {}",
            "fn y() {}",
            false,
            usize::MAX,
        )
        .unwrap();
        assert_eq!(out, "a\nfn y() {}\nb\n");
        assert_eq!(sites, [(2, 11)]);
    }

    #[test]
    fn several_occurrences_list_their_lines() {
        let e = apply(3, "x\ny\nx\n", "x", "z", false, usize::MAX).unwrap_err();
        assert!(
            e.message.contains("2 times") && e.message.contains("lines 1, 3"),
            "{}",
            e.message
        );
        assert!(e.message.starts_with("ops[3]"));
        let (out, _) = apply(0, "x\ny\nx\n", "x", "z", true, usize::MAX).unwrap();
        assert_eq!(out, "z\ny\nz\n");
    }

    #[test]
    fn missing_text_names_a_whitespace_only_difference() {
        let body = "fn main() {\n    let a = 1;\n}\n";
        let e = apply(
            0,
            body,
            "fn main() {\n  let a = 1;\n}",
            "x",
            false,
            usize::MAX,
        )
        .unwrap_err();
        assert!(
            e.message.contains("lines 1-3") && e.message.contains("whitespace"),
            "{}",
            e.message
        );
    }

    #[test]
    fn missing_text_names_a_line_ending_difference() {
        let body = "one\r\ntwo\r\n";
        let e = apply(0, body, "one\ntwo", "x", false, usize::MAX).unwrap_err();
        assert!(e.message.contains("line endings"), "{}", e.message);
    }

    #[test]
    fn missing_text_names_the_closest_lines() {
        let body = "alpha\nlet total = compute(a, b);\nomega\n";
        let e = apply(
            0,
            body,
            "let total = compute(a, c);",
            "x",
            false,
            usize::MAX,
        )
        .unwrap_err();
        assert!(e.message.contains("lines 2-2"), "{}", e.message);
        let e = apply(0, body, "zzzzzzzzzzzzzz", "x", false, usize::MAX).unwrap_err();
        assert!(e.message.contains("nothing similar"), "{}", e.message);
    }
}
