//! `coder::diagnostics`: what the language server of each file reports
//! about it as it is now — the file is read through the policy, handed to
//! its server at those bytes, and the answer waits (up to `wait_ms`) for
//! the diagnostics the server publishes for that version.

use super::semantic::{self, Opened};
use super::{resolve, resolve_scope};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::lsp::text;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

const DEFAULT_WAIT_MS: u64 = 5_000;
const MAX_WAIT_MS: u64 = 60_000;
/// Files one call checks at most.
pub const MAX_FILES: usize = 50;
const MAX_PER_FILE: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "DiagnosticsInput")]
pub struct DiagnosticsInput {
    /// One file.
    #[serde(default)]
    pub path: Option<String>,
    /// Several files (at most 50): each is answered, one that cannot be checked (missing, no server) with its `error`.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// A folder: its files that have a language server (ignore files, default excludes and the policy apply as in coder::search), the first 50 in path order.
    #[serde(default)]
    pub folder: Option<String>,
    /// Milliseconds to wait for the server to publish for the current text (default 5000, at most 60000); past it the last published ones come with `stale: true`.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// Optional per-call session working directory.
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// One diagnostic.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diagnostic {
    /// `error`, `warning`, `information` or `hint`.
    pub severity: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    /// The server's code for it, when it has one.
    pub code: Option<String>,
    /// Who reports it (`Pyright`, `typescript`, `clang`, …).
    pub source: Option<String>,
    pub message: String,
}

/// The diagnostics of one file.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileDiagnostics {
    pub path: String,
    /// The revision of the bytes they are for.
    pub revision: Option<String>,
    /// The server that checked it.
    pub language_server: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// True when the server did not publish for this text within wait_ms (the diagnostics are the last it published, possibly for older text).
    pub stale: bool,
    /// Diagnostics past 200 left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Why this file has no diagnostics from a server (none configured, not installed, crashed, unreadable), with the next step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "DiagnosticsOutput")]
pub struct DiagnosticsOutput {
    pub files: Vec<FileDiagnostics>,
    /// Errors in all files.
    pub errors: u32,
    /// Warnings in all files.
    pub warnings: u32,
    /// `max_files`: the folder holds more than 50 files with a server; the first 50 in path order were checked (pass a narrower folder or paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::diagnostics",
        "A language server's diagnostics for files as they are now. Send {path}, {paths} (at \
         most 50) or {folder} (its first 50 files with a server), wait_ms? (default 5000); get \
         {files: [{path, revision, language_server, diagnostics: [{severity, line, column, \
         end_line, end_column, code, source, message}], stale, error?}], errors, warnings, \
         stop_reason?} — each file is read, handed to its server \
         (code.language_servers: pyright, typescript-language-server, clangd, gopls, \
         rust-analyzer) at those bytes, and the answer waits for that version's diagnostics. \
         A file without a server gets `error` saying which to install. Lines are 1-based; \
         columns are 1-based byte offsets in the line, as in coder::search.",
        Flags::NONE,
        |ctx: Ctx, req: DiagnosticsInput| async move { diagnostics(&ctx, req).await },
    )
}

async fn diagnostics(ctx: &Ctx, req: DiagnosticsInput) -> Result<DiagnosticsOutput, Failure> {
    let mut stop_reason = None;
    // `path` fails whole for a file that cannot be checked; `paths` and
    // `folder` answer each file, its `error` saying why
    let single = req.path.is_some();
    let paths: Vec<String> = match (req.path, req.paths, req.folder) {
        (Some(p), None, None) => vec![p],
        (None, Some(ps), None) if !ps.is_empty() => ps,
        (None, None, Some(folder)) => {
            let (files, more) = folder_files(ctx, folder, req.base_dir.clone()).await?;
            if more {
                stop_reason = Some("max_files".to_string());
            }
            if files.is_empty() {
                return Ok(DiagnosticsOutput {
                    files: Vec::new(),
                    errors: 0,
                    warnings: 0,
                    stop_reason,
                });
            }
            files
        }
        _ => {
            return Err(Failure::bad_input(
                "pass one of {path} (one file), {paths} (several) or {folder}",
            ));
        }
    };
    if paths.len() > MAX_FILES {
        return Err(Failure::bad_input(format!(
            "paths holds {} files; at most {MAX_FILES} are checked per call: split the list",
            paths.len()
        )));
    }
    let wait = Duration::from_millis(req.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    // every file handed over first, then the waits run together
    let mut opened = Vec::new();
    for raw in &paths {
        let at = resolve(ctx, raw, scope.as_ref());
        let got = match at {
            Ok(at) => semantic::open(ctx, raw, &at).await,
            Err(f) => Err(f),
        };
        match got {
            Err(f) if single => return Err(f),
            other => opened.push((raw.clone(), other)),
        }
    }
    let waits = opened.into_iter().map(|(raw, got)| async move {
        match got {
            Err(f) => FileDiagnostics::failed(raw, None, coded(&f)),
            Ok(Err(u)) => FileDiagnostics::failed(raw, None, u.message),
            Ok(Ok(o)) => of_opened(&raw, &o, wait).await,
        }
    });
    let files = futures_util::future::join_all(waits).await;
    if single {
        if let Some(e) = &files[0].error {
            if files[0].language_server.is_none() && files[0].revision.is_none() {
                return Err(Failure::io(e.clone()));
            }
        }
    }
    let count = |sev: &str| {
        files
            .iter()
            .flat_map(|f| &f.diagnostics)
            .filter(|d| d.severity == sev)
            .count() as u32
    };
    Ok(DiagnosticsOutput {
        errors: count("error"),
        warnings: count("warning"),
        files,
        stop_reason,
    })
}

/// The files under `folder` that have a language server, the first
/// [`MAX_FILES`] in path order, and whether there were more.
async fn folder_files(
    ctx: &Ctx,
    folder: String,
    base_dir: Option<String>,
) -> Result<(Vec<String>, bool), Failure> {
    let rt = ctx.runtime.clone();
    super::blocking(move || {
        let search = super::search::SearchInput {
            path: folder,
            base_dir,
            ..super::search::SearchInput::files_only()
        };
        let (files, _) = super::search::candidate_files(
            &rt,
            None,
            &search,
            "",
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        )?;
        let mut with: Vec<String> = files
            .into_iter()
            .filter(|(p, _)| crate::lsp::Servers::server_for(&rt, p).is_ok())
            .map(|(p, _)| super::source::shown(&p))
            .collect();
        with.sort();
        let more = with.len() > MAX_FILES;
        with.truncate(MAX_FILES);
        Ok((with, more))
    })
    .await
}

/// A file's failure as its `error` text, with the code the call itself would fail with (`C211: …`).
fn coded(f: &Failure) -> String {
    let w = f.to_wire(crate::error::Surface::Coder);
    format!("{}: {}", w.code, w.message)
}

impl FileDiagnostics {
    fn failed(path: String, revision: Option<String>, error: String) -> FileDiagnostics {
        FileDiagnostics {
            path,
            revision,
            language_server: None,
            diagnostics: Vec::new(),
            stale: false,
            truncated: false,
            error: Some(error),
        }
    }
}

/// The diagnostics of an opened file, waiting up to `wait`.
pub async fn of_opened(raw: &str, o: &Opened, wait: Duration) -> FileDiagnostics {
    let (published, fresh) = o.conn.diagnostics(&o.path, o.version, o.seq, wait).await;
    let enc = o.encoding();
    let mut list: Vec<Diagnostic> = published
        .map(|p| p.items)
        .unwrap_or_default()
        .iter()
        .map(|d| convert(d, &o.text, enc))
        .collect();
    list.sort_by_key(|d| (d.line, d.column));
    let truncated = list.len() > MAX_PER_FILE;
    list.truncate(MAX_PER_FILE);
    let error = o.conn.dead().map(|why| {
        format!(
            "language server {} stopped before it answered: {why}; the next call starts it again",
            o.conn.name
        )
    });
    FileDiagnostics {
        path: raw.to_string(),
        revision: Some(o.revision.clone()),
        language_server: Some(o.conn.name.clone()),
        diagnostics: list,
        stale: !fresh,
        truncated,
        error,
    }
}

fn convert(d: &serde_json::Value, bytes: &[u8], enc: text::Encoding) -> Diagnostic {
    let at = |p: &serde_json::Value| {
        let line = p["line"].as_u64().unwrap_or(0) as usize;
        let ch = p["character"].as_u64().unwrap_or(0) as u32;
        let col = text::line_text(bytes, line).map_or(ch as usize, |l| text::byte_of(l, ch, enc));
        (line as u32 + 1, col as u32 + 1)
    };
    let (line, column) = at(&d["range"]["start"]);
    let (end_line, end_column) = at(&d["range"]["end"]);
    let severity = match d["severity"].as_u64() {
        Some(2) => "warning",
        Some(3) => "information",
        Some(4) => "hint",
        _ => "error",
    };
    let code = match &d["code"] {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let mut message: String = d["message"].as_str().unwrap_or("").to_string();
    if message.len() > 2000 {
        let mut cut = 2000;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    Diagnostic {
        severity: severity.into(),
        line,
        column,
        end_line,
        end_column,
        code,
        source: d["source"].as_str().map(str::to_string),
        message,
    }
}

/// The diagnostics of files just written (by coder::update-file or
/// coder::create-file with `diagnostics: true`): each is read again and
/// handed to its server, waiting up to the default wait for that version.
pub async fn after_write(
    ctx: &Ctx,
    paths: &[String],
    base_dir: Option<&str>,
) -> Vec<FileDiagnostics> {
    let wait = Duration::from_millis(DEFAULT_WAIT_MS);
    let scope = resolve_scope(ctx, base_dir).ok().flatten();
    let mut opened = Vec::new();
    for raw in paths.iter().take(MAX_FILES) {
        let got = match resolve(ctx, raw, scope.as_ref()) {
            Ok(at) => semantic::open(ctx, raw, &at).await,
            Err(f) => Err(f),
        };
        opened.push((raw.clone(), got));
    }
    let waits = opened.into_iter().map(|(raw, got)| async move {
        match got {
            Err(f) => FileDiagnostics::failed(raw, None, coded(&f)),
            Ok(Err(u)) => FileDiagnostics::failed(raw, None, u.message),
            Ok(Ok(o)) => of_opened(&raw, &o, wait).await,
        }
    });
    futures_util::future::join_all(waits).await
}
