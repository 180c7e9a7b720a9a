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
    /// How the matches were found: `symbol_index` (the symbol index, checked against every change before the answer), `content_index` (the files the content index says hold the name were parsed) or `scan` (every source file was parsed: a substring query, or no index ready).
    pub served_by: String,
    /// Why the symbol index did not answer (building, with its progress; off, with why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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
         signature, body?}], total, files_scanned, served_by, note?, stop_reason?}, best \
         first. Served by the symbol index once it is built (checked against every change \
         first); before that, by parsing the files the content index says hold the name. \
         Default excludes and the policy apply as in coder::search. Lines are 1-based; columns are 1-based byte \
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
    let services = ctx.services.clone();
    blocking(move || run(&rt, &services, &req, &pattern)).await
}

/// What [`matches`] looks for.
#[derive(Clone, Copy)]
pub(crate) struct Query<'a> {
    /// The folder (or file) to look in (default: the primary root).
    pub path: Option<&'a str>,
    pub base_dir: Option<&'a str>,
    pub pattern: &'a Pattern,
    pub substring: bool,
    pub kinds: &'a [String],
    /// The best matches kept (all are counted).
    pub keep: usize,
}

/// Every match of `pattern` (blocking), ranked, the best `keep` kept; the
/// files consulted; and how they were found: from the symbol index
/// (`Served::Index`), or by reading the files the content index admits for
/// the name, or every source file (with why the symbol index did not
/// answer).
pub(crate) fn matches(
    rt: &Arc<crate::runtime::Runtime>,
    services: &crate::services::Services,
    q: &Query<'_>,
) -> Result<(Vec<Found>, usize, u32, Served), Failure> {
    let Query {
        path,
        base_dir,
        pattern,
        substring,
        kinds,
        keep,
    } = *q;
    let raw = path.unwrap_or(".");
    let scope = base_dir
        .map(|b| rt.policy.resolve_scope(b, crate::error::Surface::Coder))
        .transpose()?;
    let at = rt.policy.resolve_existing(
        raw,
        crate::error::Surface::Coder,
        crate::policy::Tail::Follow,
        scope.as_deref(),
    )?;
    let is_dir = at.loc().metadata().is_ok_and(|m| m.is_dir());
    let why = if is_dir {
        let from_index = services
            .symbols
            .with(&services.index, rt, &at, |t, lease, round| {
                let root = lease.root_at();
                let files = t.files_met(round).count() as u32;
                // rank on what the table holds, then make answers of the best
                let mut hits = t.find(round, pattern, substring, kinds);
                let total = hits.len();
                let key = |h: &crate::index::symbols::Hit| {
                    let f = t.file(h.file).expect("a hit's file");
                    let sym = &f.syms[h.sym as usize];
                    (
                        names::grade(pattern, t.name(sym.name)),
                        h.depth,
                        f.rel.as_path(),
                        sym.line,
                    )
                };
                hits.sort_by(|a, b| key(a).cmp(&key(b)));
                hits.truncate(keep);
                let found: Vec<Found> = hits
                    .into_iter()
                    .filter_map(|h| {
                        let f = t.file(h.file)?;
                        let sym = &f.syms[h.sym as usize];
                        let name = t.name(sym.name);
                        Some(Found {
                            rank: (names::grade(pattern, name), h.depth),
                            path: source::shown(&root.path.join(&f.rel)),
                            at: root.below(&f.rel),
                            language: crate::code::lang::LANGS[f.lang as usize].name,
                            name: name.to_string(),
                            kind: crate::code::lang::KINDS[sym.kind as usize],
                            line: sym.line,
                            column: sym.column,
                            end_line: sym.end_line,
                            start: sym.start as usize,
                            signature: None,
                            name_path: t.name_path(f, h.sym as usize),
                        })
                    })
                    .collect();
                (found, files, total)
            });
        match from_index {
            Ok((found, files, total)) => {
                return Ok((found, total, files, Served::Index));
            }
            Err(crate::index::symbols::NotReady(why)) => Some(why),
        }
    } else {
        None
    };
    let search = super::search::SearchInput {
        path: raw.to_string(),
        base_dir: base_dir.map(str::to_string),
        ..super::search::SearchInput::files_only()
    };
    let word = if substring { "" } else { pattern.name() };
    let (files, narrowed) = super::search::candidate_files(
        rt,
        Some(&services.index),
        &search,
        word,
        Arc::new(AtomicBool::new(false)),
    )?;
    let max_read = rt.config.fs.max_read_bytes;
    let found = source::parallel(&files, |(p, at)| {
        let raw = source::shown(p);
        // a file that does not hold the name cannot define it
        let needle = (!substring).then(|| pattern.name());
        let (o, _) = outlines::of_holding(&raw, at, max_read, needle)?;
        let hits: Vec<Found> = o
            .matching(pattern, substring, kinds)
            .into_iter()
            .map(|(i, np, _)| {
                let s = &o.syms[i];
                Found {
                    rank: names::rank(pattern, &np.split('/').collect::<Vec<_>>()),
                    path: raw.clone(),
                    at: at.clone(),
                    language: o.lang.lang.name,
                    name: s.name.clone(),
                    kind: s.kind,
                    line: s.line,
                    column: s.column,
                    end_line: s.end_line,
                    start: s.signature_at,
                    signature: Some(s.signature.clone()),
                    name_path: np,
                }
            })
            .collect();
        Some(hits)
    });
    let scanned = found.iter().filter(|f| f.is_some()).count() as u32;
    let mut all: Vec<Found> = found.into_iter().flatten().flatten().collect();
    sort(&mut all);
    let total = all.len();
    all.truncate(keep);
    let served = if narrowed && !substring {
        Served::Narrowed(why)
    } else {
        Served::Scan(why)
    };
    Ok((all, total, scanned, served))
}

fn sort(found: &mut [Found]) {
    found.sort_by(|a, b| (a.rank, &a.path, a.line).cmp(&(b.rank, &b.path, b.line)));
}

/// How matches were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Served {
    /// From the symbol index, checked against the disk's changes.
    Index,
    /// By reading the files the content index admits for the name (why
    /// the symbol index did not answer, when it was asked).
    Narrowed(Option<String>),
    /// By reading every source file.
    Scan(Option<String>),
}

/// A match, with what answers need of it.
pub(crate) struct Found {
    rank: (u8, usize),
    pub path: String,
    pub at: crate::policy::Resolved,
    pub language: &'static str,
    pub name: String,
    pub name_path: String,
    pub kind: &'static str,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    /// Byte where its signature line starts.
    pub start: usize,
    /// Known when the file was parsed for this answer; read from the file
    /// otherwise ([`Found::signature`]).
    signature: Option<String>,
}

impl Found {
    /// The declaration's first line: from the parse, or read from the file
    /// (its stamp was checked by this answer's replay).
    pub fn signature(&self) -> String {
        if let Some(s) = &self.signature {
            return s.clone();
        }
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; 512];
        let n = self
            .at
            .loc()
            .open_read()
            .and_then(|f| f.read_at(&mut buf, self.start as u64))
            .unwrap_or(0);
        crate::code::outline::signature(&buf[..n], 0)
    }

    /// Its text (whole lines with its leading comments and decorators),
    /// from the file as it is now: `None` when the file no longer has it
    /// at that line.
    pub fn body(&self, max_read: u64) -> Option<String> {
        let src = source::read(&self.path, &self.at, max_read).ok()?;
        let o = source::outline_of(&src).ok()?;
        let s = o
            .syms
            .iter()
            .find(|s| s.line == self.line && s.column == self.column && s.name == self.name)?;
        let (a, b) = source::line_span(&src.bytes, s.lead, s.end);
        Some(String::from_utf8_lossy(&src.bytes[a..b]).into_owned())
    }
}

fn run(
    rt: &Arc<crate::runtime::Runtime>,
    services: &crate::services::Services,
    req: &FindSymbolInput,
    pattern: &Pattern,
) -> Result<FindSymbolOutput, Failure> {
    let max = req.max_results.unwrap_or(DEFAULT_MAX_RESULTS) as usize;
    let (all, total, files_scanned, served) = matches(
        rt,
        services,
        &Query {
            path: req.path.as_deref(),
            base_dir: req.base_dir.as_deref(),
            pattern,
            substring: req.substring,
            kinds: &req.kinds,
            // one past the cap: whether it cut anything
            keep: max.saturating_add(1),
        },
    )?;
    let total = total as u32;
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
        let m = SymbolMatch {
            path: f.path.clone(),
            language: f.language.to_string(),
            name: f.name.clone(),
            name_path: f.name_path.clone(),
            kind: f.kind.to_string(),
            line: f.line,
            column: f.column,
            end_line: f.end_line,
            signature: f.signature(),
            body: if req.include_body {
                f.body(max_read)
            } else {
                None
            },
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
        served_by: match &served {
            Served::Index => "symbol_index",
            Served::Narrowed(_) => "content_index",
            Served::Scan(_) => "scan",
        }
        .into(),
        note: match served {
            Served::Index => None,
            Served::Narrowed(why) | Served::Scan(why) => why,
        },
        stop_reason,
    })
}
