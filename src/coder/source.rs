//! What the code-intelligence functions share: a source file read through
//! the policy and parsed off the async runtime, symbols on the wire, and
//! answers that fit a byte budget.

use crate::code::lang::{self, Compiled};
use crate::code::outline::{self, Outline};
use crate::error::{Class, Failure, quote};
use crate::policy::Resolved;
use schemars::JsonSchema;
use serde::Serialize;
use std::path::Path;

/// A source file as read: its bytes, revision and language.
pub struct Source {
    pub bytes: Vec<u8>,
    pub revision: String,
    pub lang: Option<&'static Compiled>,
}

/// Read the file at `at` (named `raw` on the wire) for parsing: a regular
/// file up to `fs.max_read_bytes` (0: no limit). Blocking.
pub fn read(raw: &str, at: &Resolved, max_read: u64) -> Result<Source, Failure> {
    let (file, md) = at.loc().open_regular(raw)?;
    read_open(raw, &at.path, file, &md, max_read)
}

/// [`read`] of a file already opened (`md`: its metadata), at `path`.
pub fn read_open(
    raw: &str,
    path: &Path,
    file: std::fs::File,
    md: &std::fs::Metadata,
    max_read: u64,
) -> Result<Source, Failure> {
    if max_read > 0 && md.len() > max_read {
        return Err(Failure::new(
            Class::TooLarge,
            format!(
                "{} is {} bytes, over fs.max_read_bytes ({max_read}); its symbols are not read. \
                 Use coder::search to find text in it",
                quote(raw),
                md.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    let cap = if max_read > 0 { max_read + 1 } else { u64::MAX };
    std::io::Read::read_to_end(&mut std::io::Read::take(file, cap), &mut bytes)
        .map_err(|e| Failure::from_io(raw, &e))?;
    let revision = super::revision_of(&bytes);
    let lang = lang::detect(path, Some(&bytes));
    Ok(Source {
        bytes,
        revision,
        lang,
    })
}

/// The outline of a source, or the note that says why it has none.
pub fn outline_of(src: &Source) -> Result<Outline, String> {
    match src.lang {
        None => Err(
            "not a language ide parses (coder::info lists them and their extensions): no symbols"
                .into(),
        ),
        Some(l) => outline::outline(l, &src.bytes).map_err(|e| e.note()),
    }
}

/// A symbol on the wire.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolOut {
    pub name: String,
    /// Its ancestors' names and its own, joined by `/` (`Parser/parse_expr`).
    pub name_path: String,
    /// class, struct, union, enum, interface, trait, impl, type, function, method, constructor, prototype (a declaration without body), field, enum_member, constant, variable, module, namespace or macro.
    pub kind: String,
    /// 1-based line of its name.
    pub line: u32,
    /// 1-based byte column of its name.
    pub column: u32,
    /// 1-based last line of the definition.
    pub end_line: u32,
    /// The declaration's first line, trimmed (left out of name-only answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Its text with the decorators, attributes and doc comments that belong to it (whole lines): what `replace_symbol` replaces. Only when asked (`include_body`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Nested definitions (methods of a class, fields of a struct), to the depth asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<SymbolOut>,
}

/// The line range (byte offsets) a symbol's whole lines cover: from the
/// start of the line its leading comments start on to the end of its last
/// line (its newline included), when nothing else shares those lines;
/// else its exact bytes.
pub fn line_span(text: &[u8], lead: usize, end: usize) -> (usize, usize) {
    let start = text[..lead]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let end_nl = memchr::memchr(b'\n', &text[end..]).map_or(text.len(), |i| end + i + 1);
    let before_clean = text[start..lead].iter().all(|b| *b == b' ' || *b == b'\t');
    let after = &text[end..end_nl];
    let after_clean = after.iter().all(|b| b.is_ascii_whitespace());
    // a BOM before the first line is the file's, not the symbol's
    let start = if start == 0 && text.starts_with(b"\xEF\xBB\xBF") && lead >= 3 {
        3
    } else {
        start
    };
    match (before_clean, after_clean) {
        (true, true) => (start, end_nl),
        (true, false) => (start, end),
        (false, true) => (lead, end_nl),
        (false, false) => (lead, end),
    }
}

/// How much of each symbol to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything asked for, to `depth` levels below the top.
    Full { depth: usize, body: bool },
    /// Name, kind and lines only, to `depth`.
    Names { depth: usize },
}

/// The symbols of an outline as a tree, top level first, to `detail`,
/// keeping only `kinds` (empty: every kind; a kept symbol's ancestors are
/// kept for its path, not listed).
pub fn tree(o: &Outline, text: &[u8], detail: Detail, kinds: &[String]) -> Vec<SymbolOut> {
    let n = o.syms.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut tops = Vec::new();
    for (i, s) in o.syms.iter().enumerate() {
        match s.parent {
            Some(p) => children[p as usize].push(i),
            None => tops.push(i),
        }
    }
    fn build(
        o: &Outline,
        text: &[u8],
        i: usize,
        level: usize,
        children: &[Vec<usize>],
        detail: Detail,
        kinds: &[String],
    ) -> Vec<SymbolOut> {
        let depth = match detail {
            Detail::Full { depth, .. } | Detail::Names { depth } => depth,
        };
        let kids: Vec<SymbolOut> = if level < depth {
            children[i]
                .iter()
                .flat_map(|c| build(o, text, *c, level + 1, children, detail, kinds))
                .collect()
        } else {
            Vec::new()
        };
        let s = &o.syms[i];
        if !kinds.is_empty() && !kinds.iter().any(|k| k == s.kind) {
            // not listed itself: its kept descendants stand in its place
            return kids;
        }
        vec![wire(o, text, i, detail, kids)]
    }
    tops.iter()
        .flat_map(|i| build(o, text, *i, 0, &children, detail, kinds))
        .collect()
}

/// One symbol on the wire, with the children given.
pub fn wire(
    o: &Outline,
    text: &[u8],
    i: usize,
    detail: Detail,
    children: Vec<SymbolOut>,
) -> SymbolOut {
    let s = &o.syms[i];
    let (signature, body) = match detail {
        Detail::Full { body, .. } => (
            Some(s.signature.clone()),
            body.then(|| {
                let (a, b) = line_span(text, s.lead, s.end);
                String::from_utf8_lossy(&text[a..b]).into_owned()
            }),
        ),
        Detail::Names { .. } => (None, None),
    };
    SymbolOut {
        name: s.name.clone(),
        name_path: o.name_path(i),
        kind: s.kind.to_string(),
        line: s.line,
        column: s.column,
        end_line: s.end_line,
        signature,
        body,
        children,
    }
}

/// Check the kinds a caller filters by.
pub fn check_kinds(kinds: &[String]) -> Result<(), Failure> {
    for k in kinds {
        if !lang::KINDS.contains(&k.as_str()) {
            return Err(Failure::bad_input(format!(
                "kinds has {k:?}, which no symbol has; the kinds are {}",
                lang::KINDS.join(", ")
            )));
        }
    }
    Ok(())
}

/// Bytes of a value as JSON.
pub fn json_len<T: Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |b| b.len())
}

/// The position (1-based line, 1-based byte column) as a byte offset in
/// `text`; an error names the file's size in lines or the line's length.
pub fn offset_of(raw: &str, text: &[u8], line: u32, column: u32) -> Result<usize, Failure> {
    if line == 0 || column == 0 {
        return Err(Failure::bad_input(format!(
            "line {line}, column {column}: both are 1-based (the first byte of a file is line 1, \
             column 1)"
        )));
    }
    let mut start = 0usize;
    for _ in 1..line {
        match memchr::memchr(b'\n', &text[start..]) {
            Some(i) => start += i + 1,
            None => {
                let lines = text.iter().filter(|b| **b == b'\n').count()
                    + usize::from(!text.ends_with(b"\n") && !text.is_empty());
                return Err(Failure::bad_input(format!(
                    "line {line} is past the end of {} ({lines} lines); pass a line from 1 to \
                     {lines}",
                    quote(raw)
                )));
            }
        }
    }
    let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
    let len = end - start;
    let len = if text[start..end].ends_with(b"\r") {
        len - 1
    } else {
        len
    };
    if column as usize > len + 1 {
        return Err(Failure::bad_input(format!(
            "column {column} is past the end of line {line} of {} ({len} bytes); pass a column \
             from 1 to {}",
            quote(raw),
            len + 1
        )));
    }
    Ok(start + column as usize - 1)
}

/// The byte range of the line holding byte `at`, without its newline.
pub fn line_bounds(text: &[u8], at: usize) -> (usize, usize) {
    let start = text[..at]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
    (start, end)
}

/// What is at a byte offset, for an error: what the byte is, and its line.
pub fn what_is_at(text: &[u8], at: usize) -> String {
    let (start, end) = line_bounds(text, at);
    let line = String::from_utf8_lossy(&text[start..end]);
    let ch = text
        .get(at)
        .map_or("the end of the line".to_string(), |b| match b {
            b' ' | b'\t' => "whitespace".into(),
            b'\r' | b'\n' => "the end of the line".into(),
            _ => format!(
                "{:?}",
                String::from_utf8_lossy(&text[at..(at + 1).min(end)])
            ),
        });
    format!("{ch} in {:?}", line.trim_end())
}

pub use crate::code::parallel;

/// The path as the wire shows it.
pub fn shown(p: &Path) -> String {
    p.display().to_string()
}
