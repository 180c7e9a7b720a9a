//! `coder::read-file`: full, windowed, stat and batch reads.
//!
//! - Full read: the whole file, budgeted by `code.max_output_bytes` (a
//!   per-call `max_output_bytes` is clamped to `fs.max_read_bytes`); over
//!   budget → C218 carrying size, total_lines and the recovery calls.
//! - Window (`line_from`/`line_to`): streamed from disk, so a file of any size
//!   is readable slice by slice; returned bytes capped by `fs.max_read_bytes`.
//! - `stat: true`: size/mode/mtime/total_lines/is_utf8, no content.
//! - Batch (`paths[]`): entries in order against `batch_read_budget_bytes`.
//!
//! Every successful read of a file up to `fs.max_read_bytes` carries
//! `revision` (SHA-256 of the whole file's exact bytes): a window or a stat
//! reads the rest of the same open file through [`lines::Tap`], so an agent
//! can guard an edit of lines it read in a window. A larger file has none
//! (a window of it reads only what it returns).

use super::lines::{self, WindowText};
use super::{blocking, mode_bits, mtime_secs, resolve, resolve_scope, revision_of};
use crate::error::{Class, Failure, Surface, WireError};
use crate::function::{Ctx, Flags, FunctionDef, function};
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Wire encoding for returned `content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReadEncoding {
    /// UTF-8 text; invalid bytes replaced by U+FFFD.
    #[default]
    Text,
    /// Exact file bytes, base64-encoded (standard alphabet, padded).
    Base64,
}

/// Object form of a batch entry: path plus optional window and flags.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadTargetSpec {
    /// File to read.
    pub path: String,
    /// First line of the window, 1-based inclusive (>= 1); defaults to 1 when only `line_to` is set.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line_from: Option<u64>,
    /// Last line of the window, 1-based inclusive, >= `line_from`; omit to read to EOF.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line_to: Option<u64>,
    /// Prefix this entry's lines with their absolute 1-based line numbers (`N→`); prefix bytes count toward the batch budget.
    #[serde(default)]
    pub numbered: bool,
    /// Metadata probe for this entry: size/mode/mtime plus total_lines, content null, no budget consumed; C210 with a window or `numbered`.
    #[serde(default)]
    pub stat: bool,
}

/// One batch entry: a bare path string (whole-file read) or an object with a per-entry window, stat or numbered flag.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReadTarget {
    /// Bare path string: read the whole file.
    Path(String),
    /// Object form: path plus optional window and flags.
    Spec(ReadTargetSpec),
}

/// Read one file (`path`) or a batch (`paths`).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ReadFileInput")]
pub struct ReadFileInput {
    /// Single file to read; XOR with `paths` (C210 if both or neither is set).
    #[serde(default)]
    pub path: Option<String>,
    /// Batch of files to read in one call (bare path strings or window objects), processed in order against batch_read_budget_bytes; XOR with `path`.
    #[serde(default)]
    pub paths: Option<Vec<ReadTarget>>,
    /// First line (1-based, >= 1; 0 is refused C210) of a windowed read; defaults to 1 when only `line_to` is set. Windows keep files over max_read_bytes readable slice by slice. `path` mode only.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line_from: Option<u64>,
    /// Last line of the window, 1-based inclusive, >= `line_from` (C210 otherwise); omit to read from `line_from` to EOF. `path` mode only.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line_to: Option<u64>,
    /// Prefix each line with its absolute 1-based file line number (`N→`), matching coder::update-file line ops; C210 with `stat`. `path` mode only.
    #[serde(default)]
    pub numbered: bool,
    /// Metadata probe: size/mode/mtime plus total_lines/is_utf8, no content; C210 with line_from/line_to/numbered/max_output_bytes.
    #[serde(default)]
    pub stat: bool,
    /// Full-read byte budget (returned bytes, clamped to max_read_bytes); over budget fails C218 naming size/total_lines. C210 with a window.
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// Content encoding for full reads; `base64` returns the exact file bytes (encoded length is budgeted). C210 with stat/window/numbered.
    #[serde(default)]
    pub encoding: ReadEncoding,
    /// Optional per-call session working directory: relative paths anchor here instead of the primary root, and every resolved path must stay inside it (C220). It must itself resolve inside an allowed root.
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// Result of a read.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[schemars(title = "ReadFileOutput")]
pub struct ReadFileOutput {
    /// Canonical absolute path of the file read (resolved through the jail). **Single-path mode only; absent when the request used `paths[]`.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// File content as a UTF-8 string — the whole file, or just the requested window when `line_from`/`line_to` was given (window lines keep their newline terminators). Invalid bytes are replaced by U+FFFD; request `encoding: "base64"` when exact bytes matter. **Single-path mode only; absent when the request used `paths[]`.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Size of the FILE in bytes (from metadata) — not the size of `content`. **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Unix permission bits (lower 9 bits of `st_mode`), e.g. 0o644. **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Last-modified time as a Unix epoch in seconds. **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<i64>,
    /// Total number of lines in the file. Present whenever the read traversed the whole file: always for full reads and stat; for windowed reads when the file fits `max_read_bytes` (it is hashed to the end for `revision`) or the window reached EOF within the byte cap. **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// Number of lines in `content`. **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_returned: Option<u64>,
    /// True when the file has content beyond what `content` includes: the window ended before EOF, or the byte budget cut the window short. Always false for full reads. **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_lines: Option<bool>,
    /// Whether `content` survived UTF-8 conversion without losing bytes (for stat: whether the whole file is valid UTF-8). **Single-path mode only.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_utf8: Option<bool>,
    /// SHA-256 hex of the WHOLE file's exact bytes — on full reads, windowed reads and `stat: true` alike (a window or a stat still hashes the rest of the file), for files up to `max_read_bytes`; null for a larger file. Pass it as `expected_revision` to `coder::create-file` / `coder::update-file` for a conflict-safe write: an agent that read lines 2500–2510 can guard its edit without re-reading the file. **Single-path mode only; batch entries carry their own.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Per-entry results for a batch `paths[]` request. **Present only when the request used `paths[]`.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<ReadEntryResult>>,
    /// How many `paths[]` entries failed (each carries its own `error`); 0 when all were read. When every entry fails, the call itself fails instead. **Present only when the request used `paths[]`.**
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
}

/// Per-entry result in a batch `paths[]` response.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct ReadEntryResult {
    /// Canonical absolute path of the file (resolved through the jail). If resolution failed, this echoes the caller's input verbatim.
    pub path: String,
    /// `true` when the read succeeded; `false` when an error occurred (only `error` is set).
    pub success: bool,
    /// Structured error — present only when `success: false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
    /// File content — the whole file or the requested window. `null` on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Size of the FILE in bytes. `null` on failure or when the budget was exhausted before the file was opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Unix permission bits. `null` on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Last-modified time as a Unix epoch in seconds. `null` on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<i64>,
    /// Total lines in the file; present when this entry's read traversed the whole file (always for a file up to `max_read_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// Number of lines returned in `content`. `null` on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_returned: Option<u64>,
    /// `true` when the file has content beyond what `content` includes. `null` on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_lines: Option<bool>,
    /// Whether `content` survived UTF-8 conversion without losing bytes. `null` on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_utf8: Option<bool>,
    /// SHA-256 hex of the WHOLE file's exact bytes, for every successful entry (full, window or stat) of a file up to `max_read_bytes`; pass it as `expected_revision` when writing. `null` on failure or for a larger file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::read-file",
        "Read a file. stat: true probes size/mtime/total_lines without content; \
         line_from/line_to (1-based, inclusive) read a window of a file of any size; numbered: \
         true prefixes absolute line numbers; paths[] (XOR path) batch-reads. Every read — \
         full, window, stat and each batch entry — carries the whole file's revision (files up \
         to max_read_bytes): pass it as expected_revision when writing, no full re-read needed. \
         Paths: relative to the primary root or absolute inside an allowed root (see \
         coder::info).",
        Flags::NONE,
        |ctx: Ctx, req: ReadFileInput| async move { read_file(&ctx, req).await },
    )
}

/// What one read asks for, after validation.
#[derive(Debug, Clone, Copy)]
enum Plan {
    Stat,
    Window {
        from: u64,
        to: Option<u64>,
        numbered: bool,
    },
    Full {
        numbered: bool,
        base64: bool,
    },
}

fn window_bounds(
    from: Option<u64>,
    to: Option<u64>,
) -> Result<Option<(u64, Option<u64>)>, Failure> {
    match (from, to) {
        (None, None) => Ok(None),
        (from, to) => {
            let from = from.unwrap_or(1);
            if from == 0 {
                return Err(Failure::bad_input(
                    "line_from is 1-based: pass line_from >= 1",
                ));
            }
            if let Some(to) = to {
                if to < from {
                    return Err(Failure::bad_input(format!(
                        "line_to ({to}) is before line_from ({from}); pass line_to >= line_from, \
                         or omit line_to to read to the end of the file"
                    )));
                }
            }
            Ok(Some((from, to)))
        }
    }
}

/// The facts of one file needed to answer.
struct Opened {
    canonical: PathBuf,
    size: u64,
    mode: u32,
    mtime: i64,
}

fn open_file(
    raw: &str,
    target: &crate::policy::Resolved,
) -> Result<(std::fs::File, Opened), Failure> {
    let (file, md) = target.loc().open_regular(raw)?;
    Ok((
        file,
        Opened {
            canonical: target.path.clone(),
            size: md.len(),
            mode: mode_bits(&md),
            mtime: mtime_secs(&md),
        },
    ))
}

/// One file read: the answer fields shared by single and batch modes.
#[derive(Debug, Default)]
struct Answer {
    path: String,
    content: Option<String>,
    size: u64,
    mode: u32,
    mtime: i64,
    total_lines: Option<u64>,
    lines_returned: Option<u64>,
    more_lines: Option<bool>,
    is_utf8: Option<bool>,
    revision: Option<String>,
    /// Budget bytes this answer consumed.
    cost: u64,
}

/// Read one resolved file per `plan`. `budget` caps the returned bytes:
/// for a full read exceeding it, `over_budget` builds the C218.
fn read_one(
    raw: &str,
    target: crate::policy::Resolved,
    plan: Plan,
    budget: Option<u64>,
    max_read: Option<u64>,
    over_budget: &dyn Fn(&Opened, u64) -> Failure,
    seen: &crate::journal::seen::Seen,
) -> Result<Answer, Failure> {
    use crate::journal::seen::MAX_ENTRY;
    let (file, o) = open_file(raw, &target)?;
    let mut a = Answer {
        path: o.canonical.display().to_string(),
        size: o.size,
        mode: o.mode,
        mtime: o.mtime,
        ..Answer::default()
    };
    // The whole file's revision comes with every read of a file that fits
    // max_read_bytes: a window or a stat reads the rest through a hash.
    let hashed = max_read.is_none_or(|m| o.size <= m);
    let hash_limit = max_read.unwrap_or(u64::MAX);
    let prefixed = |f: Failure| Failure::new(f.class, format!("{raw:?}: {}", f.message));
    match plan {
        Plan::Stat if hashed => {
            let mut tap = lines::Tap::new(file).keeping(MAX_ENTRY);
            let (total, valid) = lines::scan(&mut tap).map_err(prefixed)?;
            // None: it grew past max_read_bytes while it was read
            let (whole, kept) = tap.finish_keeping(hash_limit).map_err(prefixed)?;
            a.revision = whole.map(|(revision, _)| revision);
            if let (Some(r), Some(k)) = (&a.revision, kept) {
                seen.remember(r, &k);
            }
            a.total_lines = Some(total);
            a.is_utf8 = Some(valid);
        }
        Plan::Stat => {
            let (total, valid) = lines::scan(file)?;
            a.total_lines = Some(total);
            a.is_utf8 = Some(valid);
        }
        Plan::Window { from, to, numbered } => {
            let cap = match (budget, max_read) {
                (Some(b), Some(m)) => Some(b.min(m)),
                (b, m) => b.or(m),
            };
            // A file over max_read_bytes is not hashed: its window reads
            // only up to what it returns.
            let (window, whole) = if hashed {
                let mut tap = lines::Tap::new(file).keeping(MAX_ENTRY);
                let window = lines::read_window(&mut tap, from, to, cap, numbered);
                let window = window.map_err(prefixed)?;
                let (whole, kept) = tap.finish_keeping(hash_limit).map_err(prefixed)?;
                if let (Some((r, _)), Some(k)) = (&whole, kept) {
                    seen.remember(r, &k);
                }
                (window, whole)
            } else {
                let window = lines::read_window(file, from, to, cap, numbered);
                (window.map_err(prefixed)?, None)
            };
            let WindowText {
                content,
                lines_returned,
                more_lines,
                mut total_lines,
                is_utf8,
            } = window;
            if let Some((revision, total)) = whole {
                a.revision = Some(revision);
                total_lines = Some(total);
            }
            a.cost = content.len() as u64;
            a.content = Some(content);
            a.lines_returned = Some(lines_returned);
            a.more_lines = Some(more_lines);
            a.total_lines = total_lines;
            a.is_utf8 = Some(is_utf8);
        }
        Plan::Full { numbered, base64 } => {
            if let Some(m) = max_read {
                if o.size > m {
                    return Err(Failure::new(
                        Class::TooLarge,
                        format!(
                            "{raw:?} is {} bytes, over max_read_bytes ({m}); read it window by \
                             window with line_from/line_to, or probe it with stat: true",
                            o.size
                        ),
                    ));
                }
            }
            let mut bytes =
                Vec::with_capacity(o.size.min(budget.unwrap_or(0).max(1 << 16)) as usize);
            let limit = max_read.map(|m| m + 1).unwrap_or(u64::MAX);
            std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes)
                .map_err(|e| Failure::from_io(raw, &e))?;
            let total = lines::count_lines(&bytes);
            let (content, valid) = if base64 {
                (
                    base64::engine::general_purpose::STANDARD.encode(&bytes),
                    true,
                )
            } else {
                lines::to_text(&bytes, numbered)
            };
            if let Some(b) = budget {
                if content.len() as u64 > b {
                    let o = Opened {
                        size: bytes.len() as u64,
                        ..o
                    };
                    return Err(over_budget(&o, total));
                }
            }
            let revision = revision_of(&bytes);
            seen.remember(&revision, &bytes);
            a.revision = Some(revision);
            a.size = bytes.len() as u64;
            a.cost = content.len() as u64;
            a.content = Some(content);
            a.total_lines = Some(total);
            a.lines_returned = Some(total);
            a.more_lines = Some(false);
            a.is_utf8 = Some(valid);
        }
    }
    Ok(a)
}

fn nonzero(v: u64) -> Option<u64> {
    (v > 0).then_some(v)
}

async fn read_file(ctx: &Ctx, req: ReadFileInput) -> Result<ReadFileOutput, Failure> {
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    match (&req.path, &req.paths) {
        (Some(_), Some(_)) => Err(Failure::bad_input(
            "pass either path (one file) or paths (a batch), not both",
        )),
        (None, None) => Err(Failure::bad_input(
            "pass path (one file) or paths (a batch of files); coder::list-folder shows what exists",
        )),
        (Some(path), None) => single(ctx, &req, path.clone(), scope).await,
        (None, Some(entries)) => {
            if req.line_from.is_some()
                || req.line_to.is_some()
                || req.numbered
                || req.stat
                || req.max_output_bytes.is_some()
                || req.encoding != ReadEncoding::Text
            {
                return Err(Failure::bad_input(
                    "line_from/line_to/numbered/stat/max_output_bytes/encoding apply to `path` \
                     mode only; in a batch give each entry its own {path, line_from, line_to, \
                     numbered, stat}",
                ));
            }
            batch(ctx, entries.clone(), scope).await
        }
    }
}

async fn single(
    ctx: &Ctx,
    req: &ReadFileInput,
    raw: String,
    scope: Option<PathBuf>,
) -> Result<ReadFileOutput, Failure> {
    let window = window_bounds(req.line_from, req.line_to)?;
    let base64 = req.encoding == ReadEncoding::Base64;
    if req.stat && (window.is_some() || req.numbered || req.max_output_bytes.is_some() || base64) {
        return Err(Failure::bad_input(
            "stat: true is a metadata probe and cannot be combined with \
             line_from/line_to/numbered/max_output_bytes/encoding; drop stat to read content",
        ));
    }
    if base64 && (window.is_some() || req.numbered) {
        return Err(Failure::bad_input(
            "encoding: \"base64\" returns a whole file's exact bytes and cannot be combined with \
             line_from/line_to/numbered",
        ));
    }
    if window.is_some() && req.max_output_bytes.is_some() {
        return Err(Failure::bad_input(
            "max_output_bytes budgets full reads only; a window is capped by max_read_bytes — \
             drop max_output_bytes or the window",
        ));
    }
    let plan = if req.stat {
        Plan::Stat
    } else if let Some((from, to)) = window {
        Plan::Window {
            from,
            to,
            numbered: req.numbered,
        }
    } else {
        Plan::Full {
            numbered: req.numbered,
            base64,
        }
    };
    let resolved = resolve(ctx, &raw, scope.as_ref())?;
    if !resolved.exists {
        return Err(Failure::not_found(&raw));
    }
    let max_read = nonzero(ctx.runtime.config.fs.max_read_bytes);
    let configured = ctx.runtime.config.code.max_output_bytes;
    let budget = match plan {
        Plan::Full { .. } => {
            let asked = req.max_output_bytes.unwrap_or(configured);
            Some(max_read.map_or(asked, |m| asked.min(m)))
        }
        _ => None,
    };
    let raw_for_err = raw.clone();
    let services = ctx.services.clone();
    let a = blocking(move || {
        let over = |o: &Opened, total: u64| {
            let b = budget.unwrap_or(0);
            Failure::new(
                Class::TooLarge,
                format!(
                    "{raw_for_err:?} is {} bytes / {total} lines, over the full-read budget of {b} \
                     bytes (max_output_bytes). Next: read a window with line_from/line_to (e.g. \
                     line_from: 1, line_to: 200), probe it with stat: true, or raise \
                     max_output_bytes on this call (up to max_read_bytes = {})",
                    o.size,
                    max_read.map_or("unlimited".to_string(), |m| m.to_string())
                ),
            )
        };
        let seen = &services.journals.seen;
        read_one(&raw_for_err, resolved, plan, budget, max_read, &over, seen)
    })
    .await?;
    Ok(ReadFileOutput {
        path: Some(a.path),
        content: a.content,
        size: Some(a.size),
        mode: Some(a.mode),
        mtime: Some(a.mtime),
        total_lines: a.total_lines,
        lines_returned: a.lines_returned,
        more_lines: a.more_lines,
        is_utf8: a.is_utf8,
        revision: a.revision,
        results: None,
        failed: None,
    })
}

fn entry_plan(t: &ReadTarget) -> Result<(String, Plan), Failure> {
    match t {
        ReadTarget::Path(p) => Ok((
            p.clone(),
            Plan::Full {
                numbered: false,
                base64: false,
            },
        )),
        ReadTarget::Spec(s) => {
            let window = window_bounds(s.line_from, s.line_to)?;
            if s.stat && (window.is_some() || s.numbered) {
                return Err(Failure::bad_input(
                    "stat: true cannot be combined with a window or numbered on the same entry",
                ));
            }
            let plan = if s.stat {
                Plan::Stat
            } else if let Some((from, to)) = window {
                Plan::Window {
                    from,
                    to,
                    numbered: s.numbered,
                }
            } else {
                Plan::Full {
                    numbered: s.numbered,
                    base64: false,
                }
            };
            Ok((s.path.clone(), plan))
        }
    }
}

fn failed(path: String, f: Failure) -> ReadEntryResult {
    ReadEntryResult {
        path,
        success: false,
        error: Some(f.to_wire(Surface::Coder)),
        ..ReadEntryResult::default()
    }
}

async fn batch(
    ctx: &Ctx,
    entries: Vec<ReadTarget>,
    scope: Option<PathBuf>,
) -> Result<ReadFileOutput, Failure> {
    let total_budget = ctx.runtime.config.code.batch_read_budget_bytes;
    let max_read = nonzero(ctx.runtime.config.fs.max_read_bytes);
    let mut consumed = 0u64;
    let mut results = Vec::with_capacity(entries.len());
    for entry in &entries {
        let raw = match entry {
            ReadTarget::Path(p) => p.clone(),
            ReadTarget::Spec(s) => s.path.clone(),
        };
        let (raw, plan) = match entry_plan(entry) {
            Ok(x) => x,
            Err(f) => {
                results.push(failed(raw, f));
                continue;
            }
        };
        let resolved = match resolve(ctx, &raw, scope.as_ref()) {
            Ok(r) if r.exists => r,
            Ok(_) => {
                results.push(failed(raw.clone(), Failure::not_found(&raw)));
                continue;
            }
            Err(f) => {
                results.push(failed(raw, f));
                continue;
            }
        };
        let remaining = total_budget.saturating_sub(consumed);
        if remaining == 0 && !matches!(plan, Plan::Stat) {
            results.push(failed(
                resolved.path.display().to_string(),
                Failure::new(
                    Class::TooLarge,
                    format!(
                        "batch budget exhausted: batch_read_budget_bytes = {total_budget}, \
                         {consumed} bytes already returned by earlier entries; read {raw:?} in \
                         a separate call (or a smaller window)"
                    ),
                ),
            ));
            continue;
        }
        let budget = (!matches!(plan, Plan::Stat)).then_some(remaining);
        let raw_c = raw.clone();
        let services = ctx.services.clone();
        let answer = blocking(move || {
            let over = |o: &Opened, total: u64| {
                Failure::new(
                    Class::TooLarge,
                    format!(
                        "{raw_c:?} is {} bytes / {total} lines, more than the {remaining} bytes \
                         left of batch_read_budget_bytes ({total_budget}, {consumed} used); read it \
                         alone, or give this entry a line_from/line_to window",
                        o.size
                    ),
                )
            };
            let seen = &services.journals.seen;
            read_one(&raw_c, resolved, plan, budget, max_read, &over, seen)
        })
        .await;
        match answer {
            Ok(a) => {
                consumed += a.cost;
                results.push(ReadEntryResult {
                    path: a.path,
                    success: true,
                    error: None,
                    content: a.content,
                    size: Some(a.size),
                    mode: Some(a.mode),
                    mtime: Some(a.mtime),
                    total_lines: a.total_lines,
                    lines_returned: a.lines_returned,
                    more_lines: a.more_lines,
                    is_utf8: a.is_utf8,
                    revision: a.revision,
                });
            }
            Err(f) => results.push(failed(raw, f)),
        }
    }
    let failed = crate::batch::settle(
        results.iter().map(|r| (r.path.as_str(), r.error.as_ref())),
        "was read",
    )?;
    Ok(ReadFileOutput {
        results: Some(results),
        failed: Some(failed),
        ..ReadFileOutput::default()
    })
}

#[cfg(test)]
mod tests;
