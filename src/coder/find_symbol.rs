//! `coder::find-symbol`: every definition matching a name path under the
//! roots (or a folder), best first.
//!
//! Served by two indexes: the content index rules out every file that
//! cannot hold the name (a symbol named `parse` is in a file holding the
//! word `parse`), and the outline cache ([`super::outlines`]) answers for
//! every file unchanged since it was last parsed. A substring query has no
//! word to narrow by: it reads every source file's outline.

use super::outlines;
use super::source;
use super::{blocking, resolve_scope};
use crate::code::names::{self, Pattern};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

const DEFAULT_MAX_RESULTS: u32 = 50;

/// Find definitions by name path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "FindSymbolInput")]
pub struct FindSymbolInput {
    /// `foo` any symbol named foo; `Cls/foo` a foo whose parent is Cls; `/Cls/foo` a top-level Cls's foo; `foo[1]` the second of foo's overloads in a file (0-based, document order).
    pub name_path: String,
    /// Folder or file to look in (default: the primary root).
    #[serde(default)]
    pub path: Option<String>,
    /// The last part of the name path only has to occur in the name, ignoring case (`pars` finds `Parser` and `parse_expr`).
    #[serde(default)]
    pub substring: bool,
    /// Only these kinds (as coder::symbols names them).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Include each match's text (`body`).
    #[serde(default)]
    pub include_body: bool,
    /// Most matches answered (default 50).
    #[serde(default)]
    pub max_results: Option<u32>,
    /// Largest answer in bytes (default 32768): matches past it are left out (`stop_reason: "budget"`).
    #[serde(default)]
    pub max_answer_bytes: Option<u32>,
    /// Optional per-call session working directory (as coder::search).
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// One definition found.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolMatch {
    /// Canonical absolute path of the file.
    pub path: String,
    pub language: String,
    pub name: String,
    pub name_path: String,
    pub kind: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub signature: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "FindSymbolOutput")]
pub struct FindSymbolOutput {
    /// Best first: the exact name before other case, before a prefix, before a substring; then shorter name paths; then path order.
    pub matches: Vec<SymbolMatch>,
    /// Matches found in all (≥ the matches answered).
    pub total: u32,
    /// Source files whose outline was consulted.
    pub files_scanned: u32,
    /// True when the content index narrowed the files to those holding the name; false while it is building (every source file is read) or for a substring query.
    pub indexed: bool,
    /// Why matches were left out: `max_results` or `budget`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::find-symbol",
        "Find definitions by name path. Send {name_path} (`foo`, `Cls/foo`, `/Cls/foo` from \
         the top level, `foo[1]` the second overload; substring: true matches part of the \
         name), optionally path (a folder or file), kinds, include_body, max_results (default \
         50); get {matches: [{path, language, name, name_path, kind, line, column, end_line, \
         signature, body?}], total, files_scanned, indexed, stop_reason?}, best first. Walks \
         like coder::search (default excludes, the policy) and reads only the files the \
         content index says hold the name. Lines are 1-based; columns are 1-based byte \
         offsets in the line, as in coder::search.",
        Flags::NONE,
        |ctx: Ctx, req: FindSymbolInput| async move { find(&ctx, req).await },
    )
}

async fn find(ctx: &Ctx, req: FindSymbolInput) -> Result<FindSymbolOutput, Failure> {
    let pattern = Pattern::parse(&req.name_path).map_err(Failure::bad_input)?;
    source::check_kinds(&req.kinds)?;
    resolve_scope(ctx, req.base_dir.as_deref())?;
    let rt = ctx.runtime.clone();
    let index = ctx.services.index.clone();
    blocking(move || run(&rt, &index, &req, &pattern)).await
}

/// Every match of `pattern` (blocking), ranked, before the caps.
pub(crate) fn matches(
    rt: &Arc<crate::runtime::Runtime>,
    index: &Arc<crate::index::Indexes>,
    path: Option<&str>,
    base_dir: Option<&str>,
    pattern: &Pattern,
    substring: bool,
    kinds: &[String],
) -> Result<(Vec<Found>, u32, bool), Failure> {
    let search = super::search::SearchInput {
        path: path.unwrap_or(".").to_string(),
        base_dir: base_dir.map(str::to_string),
        ..super::search::SearchInput::files_only()
    };
    let word = if substring { "" } else { pattern.name() };
    let (files, indexed) = super::search::candidate_files(
        rt,
        Some(index),
        &search,
        word,
        Arc::new(AtomicBool::new(false)),
    )?;
    let max_read = rt.config.fs.max_read_bytes;
    let found = source::parallel(&files, |(p, at)| {
        let raw = source::shown(p);
        let (o, _) = outlines::of(&raw, at, max_read)?;
        let hits: Vec<Found> = o
            .matching(pattern, substring, kinds)
            .into_iter()
            .map(|(i, np, _)| Found {
                rank: names::rank(pattern, &np.split('/').collect::<Vec<_>>()),
                path: raw.clone(),
                at: at.clone(),
                outline: o.clone(),
                index: i,
                name_path: np,
            })
            .collect();
        Some(hits)
    });
    let scanned = found.iter().filter(|f| f.is_some()).count() as u32;
    let mut all: Vec<Found> = found.into_iter().flatten().flatten().collect();
    all.sort_by(|a, b| {
        (a.rank, &a.path, a.outline.syms[a.index].start).cmp(&(
            b.rank,
            &b.path,
            b.outline.syms[b.index].start,
        ))
    });
    Ok((all, scanned, indexed && !substring))
}

/// A match, with what answers need of it.
pub(crate) struct Found {
    rank: (u8, usize),
    pub path: String,
    pub at: crate::policy::Resolved,
    pub outline: Arc<crate::code::outline::Outline>,
    pub index: usize,
    pub name_path: String,
}

fn run(
    rt: &Arc<crate::runtime::Runtime>,
    index: &Arc<crate::index::Indexes>,
    req: &FindSymbolInput,
    pattern: &Pattern,
) -> Result<FindSymbolOutput, Failure> {
    let (all, files_scanned, indexed) = matches(
        rt,
        index,
        req.path.as_deref(),
        req.base_dir.as_deref(),
        pattern,
        req.substring,
        &req.kinds,
    )?;
    let total = all.len() as u32;
    let max = req.max_results.unwrap_or(DEFAULT_MAX_RESULTS) as usize;
    let budget = req
        .max_answer_bytes
        .unwrap_or(super::symbols::DEFAULT_ANSWER_BYTES) as usize;
    let mut out = Vec::new();
    let mut used = 200usize;
    let mut stop_reason = None;
    let max_read = rt.config.fs.max_read_bytes;
    for f in all.iter() {
        if out.len() >= max {
            stop_reason = Some("max_results".to_string());
            break;
        }
        let s = &f.outline.syms[f.index];
        let body = if req.include_body {
            source::read(&f.path, &f.at, max_read).ok().and_then(|src| {
                // the outline is of these bytes only if they parse the same
                let o = source::outline_of(&src).ok()?;
                let same = o.syms.get(f.index)?;
                (same.name == s.name && same.start == s.start).then(|| {
                    let (a, b) = source::line_span(&src.bytes, same.lead, same.end);
                    String::from_utf8_lossy(&src.bytes[a..b]).into_owned()
                })
            })
        } else {
            None
        };
        let m = SymbolMatch {
            path: f.path.clone(),
            language: f.outline.lang.lang.name.to_string(),
            name: s.name.clone(),
            name_path: f.name_path.clone(),
            kind: s.kind.to_string(),
            line: s.line,
            column: s.column,
            end_line: s.end_line,
            signature: s.signature.clone(),
            body,
        };
        let n = source::json_len(&m) + 1;
        if used + n > budget {
            stop_reason = Some("budget".to_string());
            break;
        }
        used += n;
        out.push(m);
    }
    Ok(FindSymbolOutput {
        matches: out,
        total,
        files_scanned,
        indexed,
        stop_reason,
    })
}
