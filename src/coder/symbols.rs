//! `coder::symbols`: the outline of a file, or of every source file in a
//! folder (walked as `coder::search` walks it), within a byte budget.

use super::source::{self, Detail, SymbolOut};
use super::{blocking, resolve, resolve_scope};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Default byte budget of one answer.
pub const DEFAULT_ANSWER_BYTES: u32 = 32 * 1024;
/// Default symbols of a folder answer.
const DEFAULT_MAX_SYMBOLS: u32 = 2_000;

fn yes() -> bool {
    true
}

/// The outline of a file or folder.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "SymbolsInput")]
pub struct SymbolsInput {
    /// A source file, or a folder (each source file below it, walked like coder::search: globs, default excludes, hidden files, ignore files, the policy).
    pub path: String,
    /// Levels below the top level to list: a file lists all levels by default, a folder 1 (classes and their members).
    #[serde(default)]
    pub depth: Option<u32>,
    /// Include each symbol's text (`body`, whole lines with its decorators and doc comments).
    #[serde(default)]
    pub include_body: bool,
    /// Only these kinds (class, struct, union, enum, interface, trait, impl, type, function, method, constructor, prototype, field, enum_member, constant, variable, module, namespace, macro); empty: all.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Folder: stop after the files holding this many symbols (default 2000; `stop_reason: "max_symbols"`).
    #[serde(default)]
    pub max_symbols: Option<u32>,
    /// Largest answer in bytes (default 32768). A larger outline degrades, and `degraded` says how: fewer levels, then names only, then counts per file.
    #[serde(default)]
    pub max_answer_bytes: Option<u32>,
    /// Folder: globs files must match, relative to `path` (as coder::search).
    #[serde(default)]
    pub include_globs: Vec<String>,
    /// Folder: globs that exclude files and folders, relative to `path`.
    #[serde(default)]
    pub exclude_globs: Vec<String>,
    /// Folder: walk dot-files and dot-folders (default true).
    #[serde(default = "yes")]
    pub include_hidden: bool,
    /// Folder: honour .gitignore/.ignore files (default false).
    #[serde(default)]
    pub respect_gitignore: bool,
    /// Folder: skip default_exclude_globs (node_modules, .git, …; default true).
    #[serde(default = "yes")]
    pub use_default_excludes: bool,
    /// Optional per-call session working directory (as coder::read-file).
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// One file's outline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSymbols {
    /// Canonical absolute path.
    pub path: String,
    /// python, rust, typescript, tsx, javascript, go, java, c or cpp; null for a file in no language ide parses.
    pub language: Option<String>,
    /// SHA-256 hex of the bytes parsed: pass it as `expected_revision` to a symbol edit.
    pub revision: String,
    /// The parser recovered from syntax errors: the symbols are those it recovered.
    pub has_errors: bool,
    /// Symbols in the file (every level, every kind asked), listed or not.
    pub count: u32,
    pub symbols: Vec<SymbolOut>,
    /// Why a file has no symbols (no language, too large).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A file's answer: how it was shortened to fit `max_answer_bytes` (a folder's answer says it once, beside `files`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// A folder's answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderAnswer {
    /// Source files with their symbols, in path order (files in no language are left out).
    pub files: Vec<FileSymbols>,
    /// Source files parsed.
    pub files_scanned: u32,
    /// Why the list ends early: `max_symbols` or `budget` (max_answer_bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// How the answer was shortened to fit `max_answer_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// A file's outline, or a folder's.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "SymbolsOutput")]
pub enum SymbolsOutput {
    File(FileSymbols),
    Folder(FolderAnswer),
}

pub fn def() -> FunctionDef {
    function(
        "coder::symbols",
        "The outline of a source file or folder. Send {path} of a source file to get {path, language, revision, \
         has_errors, count, symbols} — every definition (class, function, method, field, …) \
         with name, name_path (Parent/child), kind, line, column, end_line, signature and \
         children, its body with include_body; or {path} of a folder to get {files: [...], \
         files_scanned, stop_reason?} with each source file's symbols to `depth` (default 1), \
         walked like coder::search (include_globs, exclude_globs, default excludes, the \
         policy). Filter with kinds; answers fit max_answer_bytes (default 32768) by listing \
         fewer levels, then names only, then counts per file (`degraded` says which). Nine \
         languages, by extension or #! line (coder::info lists them); other files answer \
         language: null and a note. Lines are 1-based; columns are 1-based byte offsets in \
         the line, as in coder::search.",
        Flags::NONE,
        |ctx: Ctx, req: SymbolsInput| async move { symbols(&ctx, req).await },
    )
}

async fn symbols(ctx: &Ctx, req: SymbolsInput) -> Result<SymbolsOutput, Failure> {
    source::check_kinds(&req.kinds)?;
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let at = resolve(ctx, &req.path, scope.as_ref())?;
    if !at.exists {
        return Err(Failure::not_found(&req.path));
    }
    let rt = ctx.runtime.clone();
    let index = ctx.services.index.clone();
    blocking(move || {
        let md = at
            .loc()
            .metadata()
            .map_err(|e| Failure::from_io(&req.path, &e))?;
        if md.is_dir() {
            folder(&rt, &index, req).map(SymbolsOutput::Folder)
        } else {
            file(&rt, &at, req).map(SymbolsOutput::File)
        }
    })
    .await
}

fn budget(req: &SymbolsInput) -> usize {
    req.max_answer_bytes.unwrap_or(DEFAULT_ANSWER_BYTES) as usize
}

/// The details to try, most first: every level asked, then one level
/// fewer each time, then names only.
fn ladder(depth: usize, body: bool) -> Vec<(Detail, Option<String>)> {
    let mut out = vec![(Detail::Full { depth, body }, None)];
    if body {
        out.push((
            Detail::Full { depth, body: false },
            Some("bodies left out".to_string()),
        ));
    }
    let deepest = depth.min(8);
    for d in (0..deepest).rev() {
        out.push((
            Detail::Full {
                depth: d,
                body: false,
            },
            Some(format!("levels below {} left out (depth {d})", d + 1)),
        ));
    }
    out.push((
        Detail::Names { depth: 0 },
        Some("top level only, names only (no signatures)".into()),
    ));
    out
}

fn file(
    rt: &crate::runtime::Runtime,
    at: &crate::policy::Resolved,
    req: SymbolsInput,
) -> Result<FileSymbols, Failure> {
    let src = source::read(&req.path, at, rt.config.fs.max_read_bytes)?;
    let path = source::shown(&at.path);
    let budget = budget(&req);
    let (outline, note) = match super::outlines::of_source(&src) {
        Ok(o) => (Some(o), None),
        Err(n) => (None, Some(n)),
    };
    let Some(o) = outline else {
        return Ok(FileSymbols {
            path,
            language: src.lang.map(|l| l.lang.name.to_string()),
            revision: src.revision,
            has_errors: false,
            count: 0,
            symbols: Vec::new(),
            note,
            degraded: None,
        });
    };
    let depth = req.depth.map_or(usize::MAX, |d| d as usize);
    let count = counted(&o, &req.kinds);
    let mut last = None;
    for (detail, degraded) in ladder(depth, req.include_body) {
        let answer = FileSymbols {
            path: path.clone(),
            language: Some(o.lang.lang.name.to_string()),
            revision: src.revision.clone(),
            has_errors: o.has_errors,
            count,
            symbols: source::tree(&o, &src.bytes, detail, &req.kinds),
            note: None,
            degraded,
        };
        if source::json_len(&answer) <= budget {
            return Ok(answer);
        }
        last = Some(answer);
    }
    // not even the top level's names fit: the count alone
    let mut answer = last.expect("the ladder has steps");
    answer.symbols.clear();
    answer.degraded = Some(format!(
        "even the top level's names are over max_answer_bytes ({budget}): count only; ask for \
         kinds, or raise max_answer_bytes"
    ));
    Ok(answer)
}

fn counted(o: &crate::code::outline::Outline, kinds: &[String]) -> u32 {
    o.syms
        .iter()
        .filter(|s| kinds.is_empty() || kinds.iter().any(|k| k == s.kind))
        .count() as u32
}

fn folder(
    rt: &Arc<crate::runtime::Runtime>,
    index: &Arc<crate::index::Indexes>,
    req: SymbolsInput,
) -> Result<FolderAnswer, Failure> {
    let search = super::search::SearchInput {
        path: req.path.clone(),
        base_dir: req.base_dir.clone(),
        include_globs: req.include_globs.clone(),
        exclude_globs: req.exclude_globs.clone(),
        include_hidden: req.include_hidden,
        respect_gitignore: req.respect_gitignore,
        use_default_excludes: req.use_default_excludes,
        ..super::search::SearchInput::files_only()
    };
    let (files, _) = super::search::candidate_files(
        rt,
        Some(index),
        &search,
        "",
        Arc::new(AtomicBool::new(false)),
    )?;
    let files: Vec<_> = files
        .into_iter()
        .filter(|(p, _)| crate::code::lang::detect(p, None).is_some() || p.extension().is_none())
        .collect();
    let max_symbols = req.max_symbols.unwrap_or(DEFAULT_MAX_SYMBOLS) as usize;
    let max_read = rt.config.fs.max_read_bytes;
    let mut parsed: Vec<(String, source::Source, crate::code::outline::Outline)> = Vec::new();
    let mut total = 0usize;
    let mut stop_reason = None;
    let mut scanned = 0u32;
    // in chunks, so a folder with more than max_symbols stops parsing early
    for chunk in files.chunks(64) {
        let done = source::parallel(chunk, |(p, at)| {
            let raw = source::shown(p);
            let src = source::read(&raw, at, max_read).ok()?;
            src.lang?;
            let o = source::outline_of(&src).ok()?;
            Some((raw, src, o))
        });
        for (raw, src, o) in done.into_iter().flatten() {
            scanned += 1;
            if total >= max_symbols {
                stop_reason = Some("max_symbols".to_string());
                break;
            }
            total += counted(&o, &req.kinds) as usize;
            parsed.push((raw, src, o));
        }
        if stop_reason.is_some() {
            break;
        }
    }
    let depth = req.depth.map_or(1, |d| d as usize);
    let budget = budget(&req);
    let render = |detail: Option<Detail>| -> Vec<FileSymbols> {
        parsed
            .iter()
            .map(|(raw, src, o)| FileSymbols {
                path: raw.clone(),
                language: Some(o.lang.lang.name.to_string()),
                revision: src.revision.clone(),
                has_errors: o.has_errors,
                count: counted(o, &req.kinds),
                symbols: detail
                    .map_or_else(Vec::new, |d| source::tree(o, &src.bytes, d, &req.kinds)),
                note: None,
                degraded: None,
            })
            .collect()
    };
    for (detail, degraded) in ladder(depth, req.include_body) {
        let answer = FolderAnswer {
            files: render(Some(detail)),
            files_scanned: scanned,
            stop_reason: stop_reason.clone(),
            degraded,
        };
        if source::json_len(&answer) <= budget {
            return Ok(answer);
        }
    }
    // counts per file only, as many files as fit
    let mut answer = FolderAnswer {
        files: render(None),
        files_scanned: scanned,
        stop_reason,
        degraded: Some("counts per file only".into()),
    };
    if source::json_len(&answer) > budget {
        while answer.files.len() > 1 && source::json_len(&answer) > budget {
            answer.files.pop();
        }
        answer.stop_reason = Some("budget".into());
    }
    Ok(answer)
}
