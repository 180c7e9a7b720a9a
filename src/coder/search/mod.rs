//! `coder::search`: budgeted content and path search under the one policy.
//!
//! The contract, in the words an agent relies on:
//!
//! - **What is searched.** The folder `path` (default `.`; a single file is
//!   accepted too), resolved through [`crate::policy::Policy`] like every
//!   other coder path: relative to the primary root, or to `base_dir` when
//!   given (anything resolving outside `base_dir` is C220). A missing and a
//!   denied root read alike (the redacted C211).
//! - **Content** (`search_content`, default true): literal text, or a regex
//!   with `regex: true` (Rust `regex` syntax, one line at a time; a pattern
//!   that must match a newline is C210, and so is any invalid pattern).
//!   `ignore_case` folds case. Only the FIRST match on a line is reported,
//!   with its 1-based `line` and 1-based byte `column`. Matching considers at
//!   most `max_line_bytes` of each line (default
//!   `code.search_default_max_line_bytes`); matched and context lines are cut
//!   to it at a character boundary, never span a newline, lose their `\r`,
//!   and invalid UTF-8 becomes U+FFFD. `context_lines_before/after` (0–10,
//!   C210 above) attach the lines around each match; every match carries its
//!   own context, even when it overlaps another match's.
//! - **Skipped files.** Binary files (a NUL byte in what the searcher reads),
//!   files larger than `fs.max_read_bytes`, special files, and anything that
//!   cannot be opened. They are never reported as errors.
//! - **Paths** (`search_paths`, default true): files and directories whose
//!   NAME matches the query (a query containing `/` is matched against the
//!   path relative to the searched folder instead). Directories only ever
//!   match by name; content search never reads them. `fuzzy_paths` ranks
//!   paths quick-open style (nucleo's path scoring against the path relative
//!   to the searched folder; smart case unless `ignore_case`), best first,
//!   ties shallow and short first; an empty query lists every path (in path
//!   order; with `fuzzy_paths`, shallow and short first).
//! - **Filters.** `include_globs`/`exclude_globs` use globset syntax and match
//!   the path relative to the searched folder `path` (for a single file, its
//!   name) — what the caller named, so `{path: "py", include_globs:
//!   ["calcpkg/**/*.py"]}` finds `py/calcpkg/x.py`. (0.12 matched them
//!   against the allowed root or `base_dir`, which scanned nothing without a
//!   word for such a call.) An excluded directory is not descended into;
//!   include globs filter files (and directories in path results), never
//!   descent. When include globs match no entry at all, the answer's `note`
//!   says so and names the folder they were matched against.
//!   `default_exclude_globs` (`.git`, `node_modules`, …) are skipped unless
//!   `use_default_excludes: false`; a searched folder that is itself inside
//!   such a directory is searched as asked. `include_hidden: false` leaves
//!   dot-entries out (the searched folder itself is exempt).
//!   `respect_gitignore: true` honours `.gitignore` (inside a Git repository,
//!   up to its top, the way git does; `.git/info/exclude` too) and `.ignore`
//!   files, never the host's global git excludes.
//! - **Never visible.** Protected entries (`fs.denylist_paths`,
//!   `code.non_accessible_globs`) never appear, by content or by path.
//!   Symlinks are never followed — not for descent, not for content; a
//!   symlink appears in path results under its own path only when the policy
//!   accepts its target (inside the jail and scope, not protected), with the
//!   target's kind.
//! - **Budgets** never error. Each list holds at most `max_matches` (default
//!   `code.search_default_max_matches`); the whole answer holds at most
//!   `code.search_response_budget_bytes` of payload (paths + matched text +
//!   context lines), spent on path matches first, then on content matches in
//!   order; an item that does not fit ends its list. Hitting either cap sets
//!   `truncated` and `stop_reason` (`budget` when the byte budget cut
//!   anything, else `max_matches`). `files_scanned` counts the files whose
//!   content was searched to produce the answer (binary and oversized files
//!   excluded; 0 for a path-only search).
//!
//! **Deterministic answers.** The content scan is parallel, yet the same
//! tree and request always give the same answer: content matches in path
//! order (component-wise, then by line), path matches in path order (or by
//! rank with `fuzzy_paths`, ties in path order). The walk is depth-first
//! with each directory's entries sorted by name (the `ignore` crate's walker,
//! which also applies gitignore and hidden rules), so it yields entries
//! already in path order; worker threads scan the files it hands over while
//! it goes on. The scan stops early only when the completed PREFIX of that
//! order already holds more matches, or more bytes, than the answer can
//! carry — no file that could still contribute is ever skipped, so early
//! stopping never changes the result. `files_scanned` counts that prefix up
//! to the cut, so it is deterministic too. (A parallel walk was tried first:
//! sorting its output before scanning left cores idle and cost about a
//! third of the time against ripgrep; see BENCHMARKS.md.)
//!
//! Everything blocking runs off the async runtime: the walk on a
//! `spawn_blocking` thread, the scan on scoped worker threads. A caller that
//! stops waiting (engine timeout) cancels both. A walk from `/` (unjailed)
//! leaves `/proc`, `/sys` and `/dev` out. This module never canonicalizes
//! or matches policy globs itself: the root goes through
//! `Policy::resolve_existing`, every entry through `Policy::is_protected` /
//! `Policy::is_excluded`, symlink targets through `Policy::resolve`.

/// The index against the scan (test-only, like `tests.rs`).
#[cfg(test)]
#[path = "differential/tests.rs"]
mod differential;
mod paths;
pub(crate) mod revisions;
mod scan;
#[cfg(test)]
mod tests;
mod walk;

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::runtime::Runtime;
use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

/// Most context lines per side; larger requests are refused (C210).
pub const MAX_CONTEXT_LINES: u32 = 10;

// The request. No doc comment on the struct: the contract's schema has no
// top-level description. Field docs are the contract's descriptions verbatim.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(title = "SearchInput", example = "search_example")]
pub struct SearchInput {
    /// Optional per-call session working directory. When set, a relative `path` anchors here instead of the primary allowed root, and the walk root must stay inside it. `base_dir` itself must canonicalize inside an allowed root (`coder::info` lists them). Result paths stay absolute. Omit to resolve against the primary allowed root exactly as before.
    #[serde(default)]
    pub base_dir: Option<String>,
    /// Lines of context after each content match; same rules as `context_lines_before`.
    #[serde(default)]
    pub context_lines_after: Option<u32>,
    /// Lines of context before each content match (max 10, C210 above); truncated to max_line_bytes and counted in the budget. Default 0.
    #[serde(default)]
    pub context_lines_before: Option<u32>,
    /// Glob patterns that exclude paths, matched like `include_globs` (relative to `path`); an excluded directory is not descended into.
    #[serde(default)]
    pub exclude_globs: Vec<String>,
    /// Rank path matches by fuzzy subsequence score (quick-open style) instead of substring/regex matching; `path_matches` then comes back best first. Content matching is unaffected.
    #[serde(default)]
    pub fuzzy_paths: bool,
    #[serde(default)]
    pub ignore_case: bool,
    /// Glob patterns paths must match, relative to the searched folder `path` (e.g. `path: "py"` with `calcpkg/**/*.py` matches `py/calcpkg/a.py`); empty = everything. When they match no file at all, `note` says so.
    #[serde(default)]
    pub include_globs: Vec<String>,
    /// Walk dot-files and dot-folders (`.github`, `.env`, …); default true. `false` leaves them out, the way an editor's quick open does.
    #[serde(default = "yes")]
    pub include_hidden: bool,
    /// Bytes per line to consider when scanning content; longer lines are truncated for the match snippet.
    #[serde(default)]
    pub max_line_bytes: Option<u32>,
    /// Optional explicit cap. Falls back to config when unset.
    #[serde(default)]
    pub max_matches: Option<u32>,
    /// Folder to search (default `.`); include/exclude globs match relative to it, result paths are absolute.
    #[serde(default = "dot")]
    pub path: String,
    /// Pattern to search for. Treated as a regex when `regex: true`, otherwise as a literal substring. May be empty only when `search_content` is false: a path-only search with no query lists every path (with `fuzzy_paths`, shallow and short paths first).
    pub query: String,
    #[serde(default)]
    pub regex: bool,
    /// Honour `.gitignore`/`.ignore` rules (inside a Git repository) while walking, the way an editor's search does; default false keeps every non-excluded file searchable.
    #[serde(default)]
    pub respect_gitignore: bool,
    /// Search file contents (default true).
    #[serde(default = "yes")]
    pub search_content: bool,
    /// Search file paths (default true).
    #[serde(default = "yes")]
    pub search_paths: bool,
    /// Skip paths matching default_exclude_globs (.git, node_modules, …; see coder::info) in content and path results; false searches inside them.
    #[serde(default = "yes")]
    pub use_default_excludes: bool,
    /// Answer content matches grouped by file in `files` — each file's path and revision once, then its matches — instead of the flat `content_matches` (left empty), which repeats both on every match.
    #[serde(default)]
    pub group_by_file: bool,
}

impl SearchInput {
    /// A search of the primary root with every default, for callers that
    /// walk files as a search does ([`candidate_files`]).
    pub(crate) fn files_only() -> SearchInput {
        SearchInput {
            base_dir: None,
            context_lines_after: None,
            context_lines_before: None,
            exclude_globs: Vec::new(),
            fuzzy_paths: false,
            ignore_case: false,
            include_globs: Vec::new(),
            include_hidden: true,
            max_line_bytes: None,
            max_matches: None,
            path: ".".into(),
            query: String::new(),
            regex: false,
            respect_gitignore: false,
            search_content: true,
            search_paths: false,
            use_default_excludes: true,
            group_by_file: false,
        }
    }
}

fn yes() -> bool {
    true
}

fn dot() -> String {
    ".".to_string()
}

fn search_example() -> serde_json::Value {
    serde_json::json!({
        "context_lines_after": 2,
        "context_lines_before": 2,
        "include_globs": ["**/*.rs"],
        "path": "src",
        "query": "fn handle",
        "search_content": true,
        "search_paths": false
    })
}

// One content match (no struct doc: the contract's definition has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ContentMatch {
    /// Absolute path under the canonical parent; symlinks at the entry itself are not resolved. Operations on it re-validate through the jail.
    pub path: String,
    pub line: u32,
    pub column: u32,
    /// Matched line; truncated to `max_line_bytes` and never spans newlines.
    pub text: String,
    /// Context lines immediately before the matched line — same file only, in file order, each truncated to `max_line_bytes`. Omitted when empty (no `context_lines_before` requested, or the match is at the start of the file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<String>>,
    /// Context lines immediately after the matched line — same file only, in file order, each truncated to `max_line_bytes`. Omitted when empty (no `context_lines_after` requested, or the match is at the end of the file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<String>>,
    /// SHA-256 hex of the WHOLE file's exact bytes as they were searched (the same `revision` coder::read-file reports): pass it as `expected_revision` to coder::update-file to edit what the search found without reading the file first. Absent only for a file over 16 MiB that changed while it was searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

// What a path match is (no doc comments: the contract's enum is a bare
// string enum without descriptions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PathMatchKind {
    File,
    Dir,
}

// One path match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PathMatch {
    /// Absolute path under the canonical parent; symlinks at the entry itself are not resolved. Operations on it re-validate through the jail.
    pub path: String,
    /// What matched: `file` or `dir`. Directories match by NAME only — content search never reads them.
    pub kind: PathMatchKind,
}

// Why an answer is partial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    MaxMatches,
    Budget,
}

// The response. `stop_reason` and `files_scanned` go beyond the 0.12.15
// contract (issue 3, "Honest budgets").
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "SearchOutput")]
pub struct SearchOutput {
    pub content_matches: Vec<ContentMatch>,
    pub path_matches: Vec<PathMatch>,
    /// True if results were cut off — either match list hit the `max_matches` cap, or the response hit the `search_response_budget_bytes` byte budget. When true, refine the query or add include_globs rather than paginate.
    pub truncated: bool,
    /// Why the answer is partial: `max_matches` (a list hit the match cap; raise `max_matches` or narrow the query) or `budget` (the `search_response_budget_bytes` byte budget cut results; narrow the query, add include_globs, or ask for fewer context lines). Absent when the answer is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Files whose content was searched to produce this answer, in path order up to where the search stopped (binary files and files over `max_read_bytes` are skipped and not counted; 0 when `search_content` is false).
    pub files_scanned: u64,
    /// Present when `include_globs` matched no entry at all: names the folder the globs were matched against (the searched `path`) and how a file there is spelt for them, so a zero-result answer is never silent about its filter. Also present when the pattern has no literal run of 3+ characters its matches must contain: the search index cannot narrow such a search, and every file is read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// With `group_by_file: true`: the content matches, one entry per file, in the order `content_matches` would list them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileMatches>>,
}

/// One file's content matches.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileMatches {
    /// Canonical absolute path.
    pub path: String,
    /// The file's revision (pass it as expected_revision to edit without a read); absent for a file over max_read_bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub matches: Vec<LineMatch>,
}

/// A match within a [`FileMatches`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LineMatch {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// The matching line.
    pub text: String,
    /// Lines before it (with `context_lines_before`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<String>>,
    /// Lines after it (with `context_lines_after`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<String>>,
}

/// The flat matches as one entry per file, files in the order of their
/// first match.
fn group_by_file(matches: Vec<ContentMatch>) -> Vec<FileMatches> {
    let mut files: Vec<FileMatches> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for m in matches {
        let line = LineMatch {
            line: m.line,
            column: m.column,
            text: m.text,
            before: m.before,
            after: m.after,
        };
        match at.get(&m.path) {
            Some(&i) => files[i].matches.push(line),
            None => {
                at.insert(m.path.clone(), files.len());
                files.push(FileMatches {
                    path: m.path,
                    revision: m.revision,
                    matches: vec![line],
                });
            }
        }
    }
    files
}

pub fn def() -> FunctionDef {
    function(
        "coder::search",
        "Search file contents (literal or regex) and/or paths (files and dirs); first match per \
         line only; `^`/`$` anchor at line ends. Each content match carries its file's \
         `revision` (pass it as expected_revision to edit without a read). default_exclude_globs \
         noise is skipped unless use_default_excludes: false. truncated: true means refine the query, not paginate. group_by_file: true answers \
         `files` (path and revision once per file, then its matches) instead of the flat \
         content_matches. Paths: relative to the primary \
         root or absolute inside an allowed root (see coder::info).",
        Flags::NONE,
        |ctx: Ctx, req: SearchInput| async move {
            let grouped = req.group_by_file;
            let mut out = search(&ctx, req).await?;
            if grouped {
                out.files = Some(group_by_file(std::mem::take(&mut out.content_matches)));
            }
            Ok(out)
        },
    )
}

/// Run one search against the call's snapshot, off the async runtime.
pub async fn search(ctx: &Ctx, req: SearchInput) -> crate::error::Result<SearchOutput> {
    let runtime = ctx.runtime.clone();
    let index = ctx.services.index.clone();
    // A caller that stops waiting (engine timeout, dropped call) cancels the
    // walk and the scan instead of leaving them to run to the end.
    let cancel = Arc::new(AtomicBool::new(false));
    let _guard = CancelOnDrop(cancel.clone());
    tokio::task::spawn_blocking(move || run(&runtime, Some(&index), req, cancel))
        .await
        .map_err(|e| {
            Failure::io(format!(
                "coder::search worker failed: {e}; retry the call, with include_globs or a \
                 narrower path if it keeps failing"
            ))
        })?
}

struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, AtomicOrdering::Relaxed);
    }
}

/// Everything a search needs, validated and compiled once.
pub(crate) struct Plan {
    /// The resolved folder (or file) to walk.
    pub root: PathBuf,
    /// The same, as a handle location.
    pub root_at: crate::policy::Resolved,
    pub scope: Option<PathBuf>,
    /// What prunes or hides entries (shared with the walker's filter).
    pub filters: Arc<Filters>,
    pub include_hidden: bool,
    pub respect_gitignore: bool,
    pub content: Option<scan::ContentQuery>,
    pub paths: Option<paths::PathQuery>,
    pub max_matches: usize,
    pub budget: usize,
    pub max_read_bytes: u64,
    /// Set when the caller went away: the walk and the scan stop.
    pub cancel: Arc<AtomicBool>,
    /// The searched folder relative to the index root (when an index
    /// serves the search).
    pub index_rel: PathBuf,
    /// The content pattern's n-gram query (when an index serves the
    /// search and the pattern has fragments).
    pub ngrams: Option<crate::index::query::Query>,
}

impl Plan {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(AtomicOrdering::Relaxed)
    }
}

/// The glob side of a plan.
pub(crate) struct Filters {
    /// The directory the caller's globs are matched against: the searched
    /// folder.
    pub anchor: PathBuf,
    pub include: GlobSet,
    pub exclude: GlobSet,
    /// Directories whose whole subtree an exclude glob covers (`x/**`).
    pub exclude_subtree: GlobSet,
    pub use_default_excludes: bool,
    /// The walk starts at `/` (unjailed): `/proc`, `/sys` and `/dev` are
    /// left out, since reading their files can block or never end.
    pub from_fs_root: bool,
}

pub(crate) fn run(
    rt: &Arc<Runtime>,
    index: Option<&crate::index::Indexes>,
    req: SearchInput,
    cancel: Arc<AtomicBool>,
) -> crate::error::Result<SearchOutput> {
    let started = std::time::Instant::now();
    // an index build pauses while this search runs
    let _searching = index.map(|ix| ix.searching());
    let mut plan = plan(rt, &req, cancel)?;
    let lease = lease_for(rt, index, &mut plan);
    let lease_ms = started.elapsed().as_secs_f64() * 1e3;
    plan.ngrams = lease
        .as_ref()
        .and_then(|_| crate::index::query::of_pattern(&req.query, req.regex, req.ignore_case))
        .filter(|q| !q.is_all());
    let (scanned, walked) = match &plan.content {
        Some(q) => scan::scan_while(
            q,
            &plan.cancel,
            plan.max_matches,
            // Path matches are budgeted first; content gets what they leave,
            // which is unknown until the walk ends. The whole budget bounds
            // early stopping; the final cut below uses the true remainder.
            plan.budget,
            plan.max_read_bytes,
            &plan.root_at,
            |on_file| walk::walk(rt, &plan, lease.as_ref(), on_file),
        ),
        None => (
            scan::Collected::default(),
            walk::walk(rt, &plan, None, |_| true),
        ),
    };
    let indexed = lease.is_some();
    drop(lease);
    let note = [
        include_note(&req.include_globs, &plan.filters.anchor, &walked),
        unfiltered_note(rt, &plan, &req),
    ]
    .into_iter()
    .flatten()
    .reduce(|a, b| format!("{a} {b}"));
    let (path_matches, path_bytes, paths_cut) = paths::finish(
        walked.hits,
        plan.paths.as_ref(),
        plan.max_matches,
        plan.budget,
    );
    let scanned = scanned.assemble(plan.max_matches, plan.budget.saturating_sub(path_bytes));
    tracing::debug!(
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        files_scanned = scanned.files_scanned,
        indexed,
        lease_ms,
        "coder::search finished"
    );
    let stop_reason =
        if paths_cut == Some(StopReason::Budget) || scanned.cut == Some(StopReason::Budget) {
            Some(StopReason::Budget)
        } else {
            paths_cut.or(scanned.cut)
        };
    Ok(SearchOutput {
        content_matches: scanned.matches,
        path_matches,
        truncated: stop_reason.is_some(),
        stop_reason,
        files_scanned: scanned.files_scanned,
        note,
        files: None,
    })
}

/// The content index's lease for a plan's walk, when it can serve it: a
/// content search of a folder, without ignore files, not from `/` (the
/// index only replays the walk and rules files out, crate::index). Sets
/// the plan's folder relative to the index root. Blocking.
fn lease_for(
    rt: &Arc<Runtime>,
    index: Option<&crate::index::Indexes>,
    plan: &mut Plan,
) -> Option<crate::index::Lease> {
    let ix = index?;
    if plan.content.is_none() || plan.respect_gitignore || plan.filters.from_fs_root {
        return None;
    }
    let is_dir =
        plan.root_at.loc().lstat().is_ok_and(|st| {
            crate::jail::dir::Kind::of_mode(st.st_mode) == crate::jail::dir::Kind::Dir
        });
    if !is_dir {
        return None;
    }
    let (lease, rel) = ix.lease(rt, &plan.root_at)?;
    if !lease.has_dir(&rel) {
        return None;
    }
    plan.index_rel = rel;
    Some(lease)
}

/// The files a content search for the literal `word` would read under
/// `req`'s folder (its globs, excludes, hidden and ignore-file rules, and
/// the policy, exactly as `coder::search` walks), each as its absolute path
/// and handle location, in path order. Files the content index proves hold
/// no `word` are left out, and so are binary files and files over
/// `fs.max_read_bytes` (a search skips them too); an empty `word` keeps
/// every file. `req.query` is ignored. Blocking.
pub(crate) fn candidate_files(
    rt: &Arc<Runtime>,
    index: Option<&crate::index::Indexes>,
    req: &SearchInput,
    word: &str,
    cancel: Arc<AtomicBool>,
) -> crate::error::Result<(Vec<(PathBuf, crate::policy::Resolved)>, bool)> {
    let _searching = index.map(|ix| ix.searching());
    let mut req = req.clone();
    req.query = if word.is_empty() {
        "x".into()
    } else {
        word.into()
    };
    req.regex = false;
    req.ignore_case = false;
    req.search_content = true;
    req.search_paths = false;
    let mut plan = plan(rt, &req, cancel)?;
    let lease = lease_for(rt, index, &mut plan);
    if !word.is_empty() {
        plan.ngrams = lease
            .as_ref()
            .and_then(|_| crate::index::query::of_pattern(word, false, false))
            .filter(|q| !q.is_all());
    }
    let indexed = lease.is_some();
    let mut out = Vec::new();
    walk::walk(rt, &plan, lease.as_ref(), |f| {
        match f {
            walk::FileRef::Root => out.push((plan.root.clone(), plan.root_at.clone())),
            walk::FileRef::Below(rel, crate::index::Verdict::Read) => {
                out.push((plan.root.join(rel), plan.root_at.below(rel)))
            }
            walk::FileRef::Below(..) => {}
        }
        !plan.cancelled()
    });
    Ok((out, indexed))
}

/// The `note` of a content search the index cannot narrow (with the index
/// on, for folder searches it serves): the pattern has no fragment every
/// match must contain, so every file is read. Said from the pattern and
/// the configuration alone, so the answer is the same whether an index was
/// ready or not.
fn unfiltered_note(rt: &Runtime, plan: &Plan, req: &SearchInput) -> Option<String> {
    let served = rt.config.code.search_index_max_bytes > 0
        && plan.content.is_some()
        && !plan.respect_gitignore
        && !plan.filters.from_fs_root;
    let all = crate::index::query::of_pattern(&req.query, req.regex, req.ignore_case)
        .is_some_and(|q| q.is_all());
    (served && all).then(|| {
        format!(
            "The pattern {:?} has no run of 3 or more characters that every match must contain, \
             so the search index cannot rule files out: every file was read, as a scan without \
             an index does. A pattern that names a literal its matches contain (an identifier, a \
             word) is answered from the index, reading only the files that may match.",
            req.query
        )
    })
}

/// The `note` of a search whose include globs matched no entry.
fn include_note(globs: &[String], anchor: &Path, walked: &walk::Walked) -> Option<String> {
    if globs.is_empty() || walked.include_matched {
        return None;
    }
    let example = match &walked.first_file {
        Some(rel) => format!(
            "; a file there, {}, is matched as {:?}",
            anchor.join(rel).display(),
            rel.display().to_string()
        ),
        None => "; no file was found there at all".to_string(),
    };
    Some(format!(
        "include_globs {globs:?} matched no file: they match the path relative to the searched \
         folder {}{example}. Adjust the globs to that folder, or search a different path",
        anchor.display()
    ))
}

/// Validate the request and compile it against the snapshot.
fn plan(rt: &Runtime, req: &SearchInput, cancel: Arc<AtomicBool>) -> crate::error::Result<Plan> {
    let code = &rt.config.code;
    if !req.search_content && !req.search_paths {
        return Err(Failure::bad_input(
            "search_content and search_paths are both false, so there is nothing to search; set \
             at least one of them to true",
        ));
    }
    if req.search_content && req.query.is_empty() {
        return Err(Failure::bad_input(
            "query is empty; content search needs a pattern. Pass a query, or set \
             search_content: false to list paths only (an empty query then lists every path)",
        ));
    }
    for (name, value) in [
        ("context_lines_before", req.context_lines_before),
        ("context_lines_after", req.context_lines_after),
    ] {
        if let Some(n) = value.filter(|n| *n > MAX_CONTEXT_LINES) {
            return Err(Failure::bad_input(format!(
                "{name} is {n}; at most {MAX_CONTEXT_LINES} context lines per side are returned: \
                 pass 0 to {MAX_CONTEXT_LINES}, or read a wider window with coder::read-file \
                 (line_from/line_to) around the match"
            )));
        }
    }
    let max_line_bytes = req
        .max_line_bytes
        .unwrap_or(code.search_default_max_line_bytes);
    if max_line_bytes == 0 {
        return Err(Failure::bad_input(format!(
            "max_line_bytes is 0, so no byte of any line would be searched; pass at least 1, or \
             omit it for the default ({})",
            code.search_default_max_line_bytes
        )));
    }
    let policy = &rt.policy;
    let scope = match &req.base_dir {
        Some(raw) => Some(policy.resolve_scope(raw, Surface::Coder)?),
        None => None,
    };
    let resolved =
        policy.resolve_existing(&req.path, Surface::Coder, Tail::Follow, scope.as_deref())?;
    let md = resolved
        .loc()
        .metadata()
        .map_err(|e| Failure::from_io(&req.path, &e))?;
    if !md.is_dir() && !md.is_file() {
        return Err(Failure::new(
            Class::WrongType,
            format!(
                "path {:?} is neither a folder nor a regular file; pass the folder to search \
                 (coder::list-folder shows what is there)",
                req.path
            ),
        ));
    }
    // Globs match relative to what the caller named: the searched folder
    // (for a single file, the folder holding it).
    let anchor = if md.is_dir() {
        resolved.path.clone()
    } else {
        resolved
            .path
            .parent()
            .map_or_else(|| resolved.path.clone(), Path::to_path_buf)
    };
    let include = compile_globs("include_globs", &req.include_globs)?;
    let exclude = compile_globs("exclude_globs", &req.exclude_globs)?;
    let subtree: Vec<String> = req
        .exclude_globs
        .iter()
        .filter_map(|g| g.strip_suffix("/**").map(str::to_string))
        .filter(|g| !g.is_empty())
        .collect();
    let exclude_subtree = compile_globs("exclude_globs", &subtree)?;
    let content = if req.search_content {
        Some(scan::ContentQuery::new(
            &req.query,
            req.regex,
            req.ignore_case,
            max_line_bytes as usize,
            req.context_lines_before.unwrap_or(0) as usize,
            req.context_lines_after.unwrap_or(0) as usize,
        )?)
    } else {
        None
    };
    let paths = if req.search_paths {
        Some(paths::PathQuery::new(
            &req.query,
            req.regex,
            req.ignore_case,
            req.fuzzy_paths,
        )?)
    } else {
        None
    };
    // A folder the caller explicitly asked for is searched even when it sits
    // inside a noise directory (e.g. `path: "node_modules/react"`).
    let use_default_excludes = req.use_default_excludes && !policy.is_excluded(&resolved.path);
    let from_fs_root = resolved.path == Path::new("/");
    Ok(Plan {
        root: resolved.path.clone(),
        root_at: resolved,
        scope,
        filters: Arc::new(Filters {
            anchor,
            include,
            exclude,
            exclude_subtree,
            use_default_excludes,
            from_fs_root,
        }),
        include_hidden: req.include_hidden,
        respect_gitignore: req.respect_gitignore,
        content,
        paths,
        max_matches: req.max_matches.unwrap_or(code.search_default_max_matches) as usize,
        budget: usize::try_from(code.search_response_budget_bytes).unwrap_or(usize::MAX),
        max_read_bytes: rt.config.fs.max_read_bytes,
        cancel,
        index_rel: PathBuf::new(),
        ngrams: None,
    })
}

fn compile_globs(key: &str, globs: &[String]) -> crate::error::Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g).map_err(|e| {
            Failure::bad_input(format!(
                "{key} entry {g:?} is not a valid glob ({e}); globs use globset syntax such as \
                 \"**/*.rs\" or \"src/**\" and match the path relative to the searched folder `path`"
            ))
        })?;
        b.add(glob);
    }
    b.build()
        .map_err(|e| Failure::bad_input(format!("{key}: cannot compile the globs: {e}")))
}
