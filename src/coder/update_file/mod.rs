//! `coder::update-file`: line ops, regex replaces and exact-text edits.
//!
//! Per file: line ops (`insert`/`remove`/`update_lines`, 1-based inclusive,
//! all against the original numbering, applied bottom-up) run first; then the
//! body ops (`replace`, `edit`) in request order. All ops of a file apply or
//! none do; the file commits atomically and durably with its mode kept, and a
//! failing file never stops the others.
//!
//! Files keep their shape: a CRLF file stays CRLF (ops see `\n`), a UTF-8 BOM
//! and a missing final newline are kept. A file that is not valid UTF-8 is
//! refused (C210) instead of having U+FFFD written back into it.

mod edit;
mod line_ops;
mod replace;
mod stale;
mod symbol_ops;

use super::create_file::{check_revision, check_write_size};
use super::lines::count_lines;
use super::{blocking, resolve, resolve_scope, revision_of};
use crate::error::{Class, Failure, Surface, WireError};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::{Clobber, Hashed, write_hashed};
use crate::jail::record::Recorder;
use crate::policy::Resolved;
use line_ops::LineOp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One edit operation.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum UpdateOp {
    /// Insert `content` before line `at_line` (1-based). `at_line = lines+1` appends to end of file.
    Insert { at_line: u32, content: String },
    /// Delete lines `from_line..=to_line` (1-based, inclusive).
    Remove { from_line: u32, to_line: u32 },
    /// Overwrite lines `from_line..=to_line` with `content`.
    UpdateLines {
        from_line: u32,
        to_line: u32,
        content: String,
    },
    /// Replace all regex matches in the file body (after line ops).
    Replace {
        pattern: String,
        /// Substitution text; $1/${1}/$name/${name} expand captures ($0 = whole match), a literal $ is written $$ (`$${name}`). Unknown references fail C210 (`$1a` is the group named `1a`: write `${1}a`).
        replacement: String,
        #[serde(default)]
        ignore_case: bool,
        /// When true `.` also matches newline, so a short pattern like `start.*?end` spans lines; by default a multi-line pattern matches nothing.
        #[serde(default)]
        dot_matches_newline: bool,
        /// Expected match count; a mismatch fails this file with C210 and writes nothing (0 asserts absence). Omit to replace all matches.
        #[serde(default)]
        expect_matches: Option<u64>,
    },
    /// Replace the exact text `old_text` with `new_text`. `old_text` must occur exactly once unless `replace_all`; otherwise C210 names the closest near-match (and whether it differs only in whitespace or line endings) or lists every occurrence's line.
    Edit {
        old_text: String,
        new_text: String,
        #[serde(default)]
        replace_all: bool,
    },
    /// Replace the symbol `name_path` (as coder::symbols and find-symbol name it: `Cls/method`, `/Top/name`, `name[1]`) with `body`: whole lines, with the doc comments, attributes and decorators that belong to it (what coder::symbols answers as its `body`). `body` is re-indented to the symbol's indentation.
    ReplaceSymbol { name_path: String, body: String },
    /// Insert `content` (whole lines, re-indented to the symbol's) before the symbol `name_path` and its doc comments and decorators.
    InsertBeforeSymbol { name_path: String, content: String },
    /// Insert `content` (whole lines, re-indented to the symbol's) after the symbol `name_path`'s last line.
    InsertAfterSymbol { name_path: String, content: String },
    /// Remove the symbol `name_path` with its doc comments and decorators. Refused (C210, listing where) while the name is still referenced in other files of its language under the roots, or elsewhere in this file, unless `force: true`.
    RemoveSymbol {
        name_path: String,
        #[serde(default)]
        force: bool,
    },
}

/// The ops for one file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateFileSpec {
    /// File to edit.
    pub path: String,
    /// Ops, applied line ops first (bottom-up, original numbering), then replace/edit ops in order.
    pub ops: Vec<UpdateOp>,
    /// Optimistic-concurrency guard: the `revision` from any coder::read-file of this file (full, window, stat or batch entry); if the file changed since, the entry fails C221 (naming the current revision) and nothing is written.
    #[serde(default)]
    pub expected_revision: Option<String>,
    /// With `expected_revision`, when the file changed since that revision but every line the line ops target is unchanged (only moved by an edit elsewhere): apply the ops at the lines' new numbers instead of failing C221. Line ops only (a file with replace/edit ops is never rebased); needs the worker to still hold that revision's content (it keeps what it recently served or wrote), otherwise C221 as without it.
    #[serde(default)]
    pub rebase_lines: bool,
}

/// Edit one or more files.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "UpdateFileInput")]
pub struct UpdateFileInput {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    pub files: Vec<UpdateFileSpec>,
    /// Optional per-call session working directory: relative paths anchor here and must stay inside it (C220).
    #[serde(default)]
    pub base_dir: Option<String>,
    /// Also answer each written file's diagnostics from its language server, after it re-checked the new text (waits up to 5 s; see coder::diagnostics).
    #[serde(default)]
    pub diagnostics: bool,
}

/// Post-apply snapshot of the region affected by one op. Line ops and edits echo the affected region with ±2 context lines (a region over 12 lines keeps its first and last 6); regex `replace` ops emit one echo per match site (up to 5, no context): the FIRST and LAST line of the post-replace region. When lines were left out, `elided` says how many and `elided_after` where: `lines[..elided_after]` are lines `from_line`, `from_line + 1`, …; then `elided` lines are skipped; `lines[elided_after..]` start at line `from_line + elided_after + elided`. Without `elided` the lines are consecutive from `from_line`. Line numbers are those right after the op's phase applied (line ops together, then each replace/edit in turn).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpEcho {
    /// Index of the op in the request's ops array (0-based).
    pub op_index: usize,
    /// 1-based line number of the first echoed line.
    pub from_line: usize,
    /// The echoed lines (without terminators; long lines cut at 300 bytes with "…").
    pub lines: Vec<String>,
    /// Number of middle lines left out of a large region; null when the echo is consecutive.
    pub elided: Option<usize>,
    /// Where the gap is: the count of `lines` entries before it (the gap sits between `lines[elided_after - 1]` and `lines[elided_after]`, and `lines[elided_after]` is line `from_line + elided_after + elided`). Set exactly when `elided` is.
    pub elided_after: Option<usize>,
    /// Total number of replacements the regex op made across the whole file (set only on replace-op site echoes).
    pub total_replacements: Option<u64>,
}

/// Outcome of one file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UpdateFileResult {
    /// Change-history id of this entry's change (`coder::change-diff`, `shell::turns::revert`); null when nothing was changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
    /// Canonical absolute path (resolved through the jail); the caller's input verbatim when resolution failed.
    pub path: String,
    pub success: bool,
    /// Number of operations applied (only meaningful when `success`).
    pub applied: usize,
    /// Final line count after applying (only meaningful when `success`).
    pub new_line_count: u64,
    /// False when the ops produced exactly the bytes already on disk: nothing was written (same inode, same mtime), e.g. a `replace` that matched nothing.
    pub changed: bool,
    /// Revision (SHA-256 hex) of the bytes written; pass it as `expected_revision` on the next edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Per-op bounded post-apply echoes for edit verification. Empty on failure.
    pub echoes: Vec<OpEcho>,
    /// True when the total echo budget (~4 KiB) was exhausted before all op echoes could be emitted.
    pub echoes_truncated: bool,
    /// Structured error for this entry (e.g. `"C211"` not-found-or-denied, `"C210"` bad input such as overlapping ops, `"C221"` stale expected_revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
    /// Present (true) when `rebase_lines` moved the line ops onto the file's current numbering; `rebased_from` is the revision they were written against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebased: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebased_from: Option<String>,
}

/// Per-file results, in request order.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "UpdateFileOutput")]
pub struct UpdateFileOutput {
    /// How many entries failed (each carries its own `error`); 0 when all succeeded. When every entry fails, the call itself fails instead, with the entry's error (one entry) or each entry's error in its message.
    pub failed: u64,
    pub results: Vec<UpdateFileResult>,
    /// With `diagnostics: true`: each written file's diagnostics after the server re-checked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<crate::coder::diagnostics::FileDiagnostics>>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::update-file",
        "Edit one or more files: batched line ops (1-based, inclusive, applied bottom-up against \
         the original numbering), then regex replace and exact-text edit ops in order; each file \
         commits atomically (all its ops or none). To replace a large region use two short \
         anchors joined by .*? with dot_matches_newline: true, or an edit op quoting the exact \
         text. Pass expected_revision from any coder::read-file (a window or stat: true is \
         enough) to refuse stale writes (C221). Echoes of large regions mark their gap \
         (elided, elided_after). A file keeps its shape: a CRLF file is edited as \\n and \
         written back CRLF, a UTF-8 BOM and a missing final newline are kept, a line op's content \
         \"a\\nb\" and \"a\\nb\\n\" are both two lines; a file that is not UTF-8 is refused \
         (C210). Paths: relative to the primary root or absolute inside an allowed root (see coder::info).",
        Flags {
            display: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: UpdateFileInput| async move { update(&ctx, req).await },
    )
}

async fn update(ctx: &Ctx, req: UpdateFileInput) -> Result<UpdateFileOutput, Failure> {
    let want_diagnostics = req.diagnostics;
    let base_dir = req.base_dir.clone();
    if req.files.is_empty() {
        return Err(Failure::bad_input(
            "files is empty; pass at least one {path, ops}",
        ));
    }
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let max_write = ctx.runtime.config.fs.max_write_bytes;
    let mut results = Vec::with_capacity(req.files.len());
    for spec in req.files {
        let raw = spec.path.clone();
        let outcome = match resolve(ctx, &spec.path, scope.as_ref()) {
            Err(f) => Err(f),
            Ok(r) if !r.exists => Err(Failure::not_found(&spec.path)),
            Ok(r) => {
                let rec = ctx.scope.recorder();
                let services = ctx.services.clone();
                let syms = Syms {
                    rt: ctx.runtime.clone(),
                    index: ctx.services.index.clone(),
                    base_dir: req.base_dir.clone(),
                };
                blocking(move || {
                    let seen = &services.journals.seen;
                    edit_file(&spec, &r, max_write, &rec, seen, &syms).map(|out| (r.path, out))
                })
                .await
            }
        };
        results.push(match outcome {
            Ok((path, done)) => UpdateFileResult {
                change_id: ctx.scope.take_first(),
                path: path.display().to_string(),
                success: true,
                applied: done.applied,
                new_line_count: done.new_line_count,
                changed: done.changed,
                revision: Some(done.revision),
                echoes: done.echoes.echoes,
                echoes_truncated: done.echoes.truncated,
                error: None,
                rebased: done.rebased_from.is_some().then_some(true),
                rebased_from: done.rebased_from,
            },
            Err(f) => UpdateFileResult {
                change_id: ctx.scope.take_first(),
                path: raw,
                success: false,
                applied: 0,
                new_line_count: 0,
                changed: false,
                revision: None,
                echoes: Vec::new(),
                echoes_truncated: false,
                error: Some(f.to_wire(Surface::Coder)),
                rebased: None,
                rebased_from: None,
            },
        });
    }
    let failed = crate::batch::settle(
        results.iter().map(|r| (r.path.as_str(), r.error.as_ref())),
        "was changed",
    )?;
    let diagnostics = if want_diagnostics {
        let written: Vec<String> = results
            .iter()
            .filter(|r| r.error.is_none())
            .map(|r| r.path.clone())
            .collect();
        Some(crate::coder::diagnostics::after_write(ctx, &written, base_dir.as_deref()).await)
    } else {
        None
    };
    Ok(UpdateFileOutput {
        results,
        failed,
        diagnostics,
    })
}

struct Done {
    applied: usize,
    changed: bool,
    new_line_count: u64,
    revision: String,
    echoes: Echoes,
    /// The revision the line ops were written against, when rebased.
    rebased_from: Option<String>,
}

/// The shape a file had, restored when it is written back.
struct Shape {
    bom: bool,
    crlf: bool,
    final_newline: bool,
}

const BOM: &str = "\u{FEFF}";

fn decode(raw: &str, bytes: &[u8]) -> Result<(String, Shape), Failure> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Failure::bad_input(format!(
            "{raw:?} is not valid UTF-8 (first invalid byte at offset {}); line, replace and edit \
             ops would corrupt it. Write exact bytes with shell::fs::write instead",
            e.valid_up_to()
        ))
    })?;
    let (bom, text) = match text.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let crlf_lines = text.matches("\r\n").count();
    let all_lines = text.matches('\n').count();
    // A consistently-CRLF file is edited as LF and written back as CRLF; a
    // mixed file is edited as is.
    let crlf = crlf_lines > 0 && crlf_lines == all_lines;
    let body = if crlf {
        text.replace("\r\n", "\n")
    } else {
        text.to_string()
    };
    let final_newline = body.is_empty() || body.ends_with('\n');
    Ok((
        body,
        Shape {
            bom,
            crlf,
            final_newline,
        },
    ))
}

fn encode(body: &str, shape: &Shape) -> Vec<u8> {
    let mut out = String::with_capacity(body.len() + 8);
    if shape.bom {
        out.push_str(BOM);
    }
    if shape.crlf {
        out.push_str(&body.replace('\n', "\r\n"));
    } else {
        out.push_str(body);
    }
    out.into_bytes()
}

pub(super) fn split_lines(body: &str) -> Vec<String> {
    let trimmed = body.strip_suffix('\n').unwrap_or(body);
    if body.is_empty() {
        return Vec::new();
    }
    trimmed.split('\n').map(str::to_string).collect()
}

fn join_lines(lines: &[String], final_newline: bool) -> String {
    let mut out = lines.join("\n");
    if final_newline && !lines.is_empty() {
        out.push('\n');
    }
    out
}

/// What the symbol ops need beyond the file: the runtime and the content
/// index (`remove_symbol` looks for the name's other uses).
struct Syms {
    rt: std::sync::Arc<crate::runtime::Runtime>,
    index: std::sync::Arc<crate::index::Indexes>,
    base_dir: Option<String>,
}

/// The language of the file a symbol op edits.
fn symbol_lang(
    raw: &str,
    i: usize,
    path: &Resolved,
    body: &str,
) -> Result<&'static crate::code::lang::Compiled, Failure> {
    crate::code::lang::detect(&path.path, Some(body.as_bytes())).ok_or_else(|| {
        Failure::bad_input(format!(
            "{raw:?}: ops[{i}] is a symbol op, but the file is in no language ide parses \
             (coder::info lists them); use edit or line ops"
        ))
    })
}

fn check_limit(raw: &str, len: usize, limit: usize) -> Result<(), Failure> {
    if len > limit {
        return Err(Failure::new(
            Class::TooLarge,
            format!(
                "{raw:?}: the ops would make the file {len} bytes, over the {limit} that may be written"
            ),
        ));
    }
    Ok(())
}

/// Where the symbol `k` of `o` (spanning `span` of `body`) is still used:
/// other files of its language under the roots, and this file outside the
/// symbol. `None` when nowhere.
fn still_used(
    syms: &Syms,
    path: &Resolved,
    lang: &'static crate::code::lang::Compiled,
    body: &str,
    o: &crate::code::outline::Outline,
    k: usize,
    span: (usize, usize),
) -> Option<String> {
    use crate::code::occurrences::{self, Role};
    let name = &o.syms[k].name;
    let mut users: Vec<String> = Vec::new();
    if let Ok(tree) = crate::code::outline::parse(lang, body.as_bytes()) {
        for occ in occurrences::find(lang, &tree, body.as_bytes(), o, name) {
            if occ.role != Role::Definition && (occ.at < span.0 || occ.at >= span.1) {
                users.push(format!("this file line {}", occ.line));
            }
        }
    }
    let here = path.path.display().to_string();
    if let Ok((refs, _)) = super::references::scan(
        &syms.rt,
        &syms.index,
        syms.base_dir.as_deref(),
        None,
        name,
        Some(lang),
    ) {
        for r in refs {
            if r.path != here && r.role != Role::Definition {
                users.push(format!("{}:{}", r.path, r.line));
            }
        }
    }
    if users.is_empty() {
        return None;
    }
    let n = users.len();
    users.truncate(10);
    Some(format!(
        "{n} use(s): {}{}",
        users.join(", "),
        if n > 10 { ", …" } else { "" }
    ))
}

fn edit_file(
    spec: &UpdateFileSpec,
    path: &Resolved,
    max_write: u64,
    rec: &Recorder,
    seen: &crate::journal::seen::Seen,
    syms: &Syms,
) -> Result<Done, Failure> {
    let raw = spec.path.as_str();
    if spec.ops.is_empty() {
        return Err(Failure::bad_input(format!(
            "{raw:?}: ops is empty; pass at least one insert/remove/update_lines/replace/edit op"
        )));
    }
    let (file, md) = path.loc().open_regular(raw)?;
    check_write_size(raw, md.len(), max_write)?;
    let mut original = Vec::with_capacity(md.len() as usize);
    let cap = if max_write > 0 {
        max_write + 1
    } else {
        u64::MAX
    };
    std::io::Read::read_to_end(&mut std::io::Read::take(file, cap), &mut original)
        .map_err(|e| Failure::from_io(raw, &e))?;
    check_write_size(raw, original.len() as u64, max_write)?;
    let original_revision = revision_of(&original);
    let (body, shape) = decode(raw, &original)?;
    let mut echoes = Echoes::default();
    // Ops may not grow the body past what may be written (1 GiB when
    // max_write_bytes is 0 = unlimited, so memory stays bounded).
    let limit = if max_write > 0 {
        max_write as usize
    } else {
        1 << 30
    };

    // Phase 1: line ops against the original numbering.
    let mut line_ops = Vec::new();
    for (i, op) in spec.ops.iter().enumerate() {
        let lo = match op {
            UpdateOp::Insert { at_line, content } => LineOp::Insert {
                at: *at_line as usize,
                lines: line_ops::content_lines(content),
            },
            UpdateOp::Remove { from_line, to_line } => LineOp::Remove {
                from: *from_line as usize,
                to: *to_line as usize,
            },
            UpdateOp::UpdateLines {
                from_line,
                to_line,
                content,
            } => LineOp::Update {
                from: *from_line as usize,
                to: *to_line as usize,
                lines: line_ops::content_lines(content),
            },
            _ => continue,
        };
        line_ops.push((i, lo));
    }
    let mut rebased_from = None;
    if let Some(expected) = &spec.expected_revision
        && *expected != original_revision
    {
        let only_line_ops = line_ops.len() == spec.ops.len();
        let stale = seen.get(expected).and_then(|old| {
            let (old_body, _) = decode(raw, &old).ok()?;
            Some(stale::explain(&old_body, &body, &line_ops))
        });
        match stale {
            Some(stale::Stale {
                rebased: Some(moved),
                ..
            }) if spec.rebase_lines && only_line_ops => {
                line_ops = moved;
                rebased_from = Some(expected.clone());
            }
            Some(st) => {
                let next = if st.rebased.is_some() && only_line_ops && !spec.rebase_lines {
                    format!(
                        "Retry with expected_revision {original_revision} and the moved line \
                         numbers, or the same call with rebase_lines: true"
                    )
                } else {
                    "Re-read the lines you are changing — a windowed coder::read-file \
                     (line_from/line_to) is enough, it returns the whole file's current \
                     revision — and retry with that revision as expected_revision"
                        .to_string()
                };
                return Err(Failure::new(
                    Class::RevisionConflict,
                    format!(
                        "{raw:?} changed since revision {expected} (current revision \
                         {original_revision}); nothing was written. {}. {next}",
                        st.explanation
                    ),
                ));
            }
            None => {
                return Err(Failure::new(
                    Class::RevisionConflict,
                    format!(
                        "{raw:?} changed since it was read (current revision {original_revision}, \
                         expected {expected}); nothing was written. Re-read the lines you are \
                         changing — a windowed coder::read-file (line_from/line_to) is enough, it \
                         returns the whole file's current revision — and retry with that revision \
                         as expected_revision"
                    ),
                ));
            }
        }
    }
    let mut body = body;
    if !line_ops.is_empty() {
        let mut lines = split_lines(&body);
        line_ops::validate(&line_ops, lines.len())
            .map_err(|f| Failure::new(f.class, format!("{raw:?}: {}", f.message)))?;
        line_ops::apply(&mut lines, &line_ops);
        for (i, start, added) in line_ops::landed(&line_ops) {
            echoes.region(i, &lines, start, added);
        }
        body = join_lines(&lines, shape.final_newline);
    }

    // Phase 2: body ops, in request order.
    for (i, op) in spec.ops.iter().enumerate() {
        match op {
            UpdateOp::Replace {
                pattern,
                replacement,
                ignore_case,
                dot_matches_newline,
                expect_matches,
            } => {
                let r = replace::compile(
                    i,
                    pattern,
                    replacement,
                    *ignore_case,
                    *dot_matches_newline,
                    *expect_matches,
                )?;
                let (next, count, sites) = replace::apply(&r, &body, limit).map_err(|f| {
                    Failure::new(f.class, format!("{raw:?}: ops[{i}] {}", f.message))
                })?;
                if let Some(expected) = r.expect_matches {
                    if expected != count {
                        return Err(Failure::bad_input(format!(
                            "{raw:?}: ops[{i}] replace matched {count} time(s), expect_matches is \
                             {expected}; nothing was written. Tighten the pattern (or fix \
                             expect_matches) and retry"
                        )));
                    }
                }
                body = next;
                let lines: Vec<&str> = body.split('\n').collect();
                for site in sites.iter().take(5) {
                    echoes.site(i, &body, &lines, site.start, site.end, count);
                }
            }
            UpdateOp::Edit {
                old_text,
                new_text,
                replace_all,
            } => {
                let norm = |s: &str| {
                    if shape.crlf {
                        s.replace("\r\n", "\n")
                    } else {
                        s.to_string()
                    }
                };
                let (next, sites) = edit::apply(
                    i,
                    &body,
                    &norm(old_text),
                    &norm(new_text),
                    *replace_all,
                    limit,
                )
                .map_err(|f| Failure::new(f.class, format!("{raw:?}: {}", f.message)))?;
                body = next;
                let lines: Vec<String> = split_lines(&body);
                for (s, e) in sites.iter().take(5) {
                    let first = edit::line_of(&body, *s);
                    let added = if e > s {
                        edit::line_of(&body, e - 1) - first + 1
                    } else {
                        0
                    };
                    echoes.region(i, &lines, first, added);
                }
            }
            UpdateOp::ReplaceSymbol {
                name_path,
                body: text,
            }
            | UpdateOp::InsertBeforeSymbol {
                name_path,
                content: text,
            }
            | UpdateOp::InsertAfterSymbol {
                name_path,
                content: text,
            } => {
                let lang = symbol_lang(raw, i, path, &body)?;
                let (_, _, span) = symbol_ops::locate(raw, i, lang, &body, name_path)?;
                let act = match op {
                    UpdateOp::ReplaceSymbol { .. } => symbol_ops::Act::Replace(text),
                    UpdateOp::InsertBeforeSymbol { .. } => symbol_ops::Act::Before(text),
                    _ => symbol_ops::Act::After(text),
                };
                let norm = text.replace("\r\n", "\n");
                let act = match act {
                    symbol_ops::Act::Replace(_) => symbol_ops::Act::Replace(&norm),
                    symbol_ops::Act::Before(_) => symbol_ops::Act::Before(&norm),
                    _ => symbol_ops::Act::After(&norm),
                };
                body = symbol_ops::apply(&body, span, &act);
                check_limit(raw, body.len(), limit)?;
                let lines: Vec<String> = split_lines(&body);
                let first = edit::line_of(&body, span.0);
                echoes.region(i, &lines, first, norm.lines().count());
            }
            UpdateOp::RemoveSymbol { name_path, force } => {
                let lang = symbol_lang(raw, i, path, &body)?;
                let (o, k, span) = symbol_ops::locate(raw, i, lang, &body, name_path)?;
                if !force {
                    if let Some(users) = still_used(syms, path, lang, &body, &o, k, span) {
                        return Err(Failure::bad_input(format!(
                            "{raw:?}: ops[{i}] {name_path:?} is still referenced: {users}; nothing \
                             was written. Change those first, or pass force: true to remove it \
                             anyway"
                        )));
                    }
                }
                body = symbol_ops::apply(&body, span, &symbol_ops::Act::Remove);
                let lines: Vec<String> = split_lines(&body);
                let first = edit::line_of(&body, span.0.min(body.len()));
                echoes.region(i, &lines, first, 0);
            }
            _ => {}
        }
    }

    let bytes = encode(&body, &shape);
    check_write_size(raw, bytes.len() as u64, max_write)?;
    let changed = bytes != original;
    let hashed = Hashed::new(&bytes);
    if changed {
        // Narrow the read-modify-write window: refuse if the file changed
        // while the ops ran.
        check_revision(raw, path, &original_revision)?;
        write_hashed(path.loc(), &hashed, None, Clobber::Replace, rec)
            .map_err(|e| Failure::from_io(raw, &e))?;
        // the revision the caller chains from is one a later stale edit
        // can be explained against
        seen.remember(&hashed.revision(), &bytes);
    }
    Ok(Done {
        changed,
        applied: spec.ops.len(),
        new_line_count: count_lines(body.as_bytes()),
        revision: hashed.revision(),
        echoes,
        rebased_from,
    })
}

const ECHO_BUDGET: usize = 4096;
const ECHO_MAX_LINES: usize = 12;
const ECHO_LINE_BYTES: usize = 300;

/// Echoes with a shared byte budget.
#[derive(Default)]
struct Echoes {
    echoes: Vec<OpEcho>,
    used: usize,
    truncated: bool,
}

fn cut(line: &str) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.len() <= ECHO_LINE_BYTES {
        return line.to_string();
    }
    let mut end = ECHO_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

impl Echoes {
    fn push(&mut self, echo: OpEcho) {
        let cost: usize = echo.lines.iter().map(|l| l.len() + 4).sum::<usize>() + 32;
        if self.truncated || self.used + cost > ECHO_BUDGET {
            self.truncated = true;
            return;
        }
        self.used += cost;
        self.echoes.push(echo);
    }

    /// A region of `added` lines starting at `start` (1-based), ±2 lines.
    fn region<S: AsRef<str>>(&mut self, op: usize, lines: &[S], start: usize, added: usize) {
        let n = lines.len();
        let from = start.saturating_sub(2).max(1);
        let to = if added == 0 {
            (start + 1).min(n)
        } else {
            (start + added - 1 + 2).min(n)
        };
        if n == 0 || from > to {
            self.push(OpEcho {
                op_index: op,
                from_line: start.max(1),
                lines: Vec::new(),
                elided: None,
                elided_after: None,
                total_replacements: None,
            });
            return;
        }
        let window: Vec<String> = lines[from - 1..to]
            .iter()
            .map(|l| cut(l.as_ref()))
            .collect();
        let (lines, elided, elided_after) = if window.len() > ECHO_MAX_LINES {
            let half = ECHO_MAX_LINES / 2;
            let elided = window.len() - ECHO_MAX_LINES;
            let mut kept = window[..half].to_vec();
            kept.extend_from_slice(&window[window.len() - half..]);
            (kept, Some(elided), Some(half))
        } else {
            (window, None, None)
        };
        self.push(OpEcho {
            op_index: op,
            from_line: from,
            lines,
            elided,
            elided_after,
            total_replacements: None,
        });
    }

    /// One replace site: first and last line of the replaced region.
    fn site(
        &mut self,
        op: usize,
        body: &str,
        lines: &[&str],
        start: usize,
        end: usize,
        total: u64,
    ) {
        let first = edit::line_of(body, start);
        let last_off = if end > start { end - 1 } else { start };
        let last = edit::line_of(body, last_off.min(body.len()));
        let get = |l: usize| lines.get(l - 1).map(|s| cut(s)).unwrap_or_default();
        let (echo_lines, elided) = if first == last {
            (vec![get(first)], None)
        } else {
            let inner = last - first - 1;
            (vec![get(first), get(last)], (inner > 0).then_some(inner))
        };
        self.push(OpEcho {
            op_index: op,
            from_line: first,
            lines: echo_lines,
            elided,
            elided_after: elided.map(|_| 1),
            total_replacements: Some(total),
        });
    }
}

#[cfg(test)]
mod tests;
