//! `coder::change-diff`: the exact bytes a journaled change replaced and
//! wrote, and their unified diff.

use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::journal::ChangeKind;
use crate::turns::{journal, unknown, visible};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ChangeDiffInput")]
pub struct ChangeDiffInput {
    pub change_id: String,
    /// `full` (default): both bodies, exactly. `unified`: a unified diff (`--- a/path`, `+++ b/path` with the path relative to its allowed root, so `git apply` there takes it; `@@` hunks) instead of the bodies, at most `max_diff_bytes` — what an agent reads to see what changed.
    #[serde(default)]
    pub format: Option<DiffFormat>,
    /// Unchanged lines around each hunk of a `unified` diff (default 3, at most 100).
    #[serde(default)]
    pub context_lines: Option<u32>,
    /// Longest `unified` diff returned, in bytes (default 65536, at most 1048576); a longer one is cut at a line and says so (`diff_truncated`).
    #[serde(default)]
    pub max_diff_bytes: Option<u64>,
}

/// What `coder::change-diff` answers with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DiffFormat {
    #[default]
    Full,
    Unified,
}

const DEFAULT_CONTEXT: u32 = 3;
const MAX_CONTEXT: u32 = 100;
const DEFAULT_DIFF_BYTES: u64 = 64 * 1024;
const MAX_DIFF_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ChangeDiffOutput")]
pub struct ChangeDiffOutput {
    pub path: String,
    /// Exact pre-mutation body. Missing when either side is not UTF-8.
    pub old_contents: Option<String>,
    /// Exact post-mutation body. Missing when either side is not UTF-8.
    pub new_contents: Option<String>,
    pub is_binary: bool,
    /// The unified diff (`format: "unified"`, text files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The unified diff was longer than `max_diff_bytes` and was cut at a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_truncated: Option<bool>,
    /// What the change did (`created`, `modified`, `deleted`, `moved`), so
    /// a viewer labels an edit as an edit.
    pub kind: ChangeKind,
    /// The source of a move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_path: Option<String>,
    /// The function that made the change (`coder::update-file`, ...).
    pub function_id: String,
    /// The caller's `session_id`, when the call carried one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn the change belongs to (the request's `turn_id`, else the change's own id).
    pub turn_id: String,
    /// When it happened, Unix epoch milliseconds.
    pub time_ms: u64,
    /// Revision of the file before the change (absent: it did not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_revision: Option<String>,
    /// Revision the change left (absent: it deleted the file): while the file is unchanged since, the `expected_revision` its next guarded edit passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_revision: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::change-diff",
        "Retrieve the exact before/after snapshot of one change by change id (from shell::turns::list or a write's change_id), with the revisions it compared (old_revision, new_revision: the next guarded edit's expected_revision while the file is unchanged). With format: \"unified\" it answers a bounded unified diff instead of both bodies.",
        Flags::NONE,
        |ctx: Ctx, req: ChangeDiffInput| async move {
            crate::runtime::blocking(move || change_diff(&ctx, &req)).await
        },
    )
}

fn change_diff(ctx: &Ctx, req: &ChangeDiffInput) -> Result<ChangeDiffOutput, Failure> {
    let id = req.change_id.as_str();
    let context = req.context_lines.unwrap_or(DEFAULT_CONTEXT);
    if context > MAX_CONTEXT {
        return Err(Failure::bad_input(format!(
            "context_lines is {context}; at most {MAX_CONTEXT} (default {DEFAULT_CONTEXT})"
        )));
    }
    let max_bytes = req.max_diff_bytes.unwrap_or(DEFAULT_DIFF_BYTES);
    if max_bytes == 0 || max_bytes > MAX_DIFF_BYTES {
        return Err(Failure::bad_input(format!(
            "max_diff_bytes is {max_bytes}; it must be 1..={MAX_DIFF_BYTES} (default {DEFAULT_DIFF_BYTES})"
        )));
    }
    let j = journal(ctx)?;
    let r = visible(ctx, &j, id)?;
    if !j.diff_available(&r) {
        return Err(unknown(id));
    }
    let side = |after: bool| -> Result<Vec<u8>, Failure> {
        let present = if after { &r.after } else { &r.before };
        match present {
            None => Ok(Vec::new()),
            Some(_) => j.body(&r, after).ok_or_else(|| unknown(id)),
        }
    };
    let (old, new) = match r.kind {
        // A move changes no bytes: both sides are the moved file.
        ChangeKind::Moved => {
            let b = side(true)?;
            (b.clone(), b)
        }
        _ => (side(false)?, side(true)?),
    };
    let (old, new) = match (String::from_utf8(old), String::from_utf8(new)) {
        (Ok(o), Ok(n)) => (Some(o), Some(n)),
        _ => (None, None),
    };
    if req.format.unwrap_or_default() == DiffFormat::Unified {
        let (diff, cut) = match (&old, &new) {
            (Some(o), Some(n)) => {
                let name = diff_name(&r.path, ctx.runtime.policy.coder_roots());
                let (d, cut) = unified(&name, o, n, context as usize, max_bytes as usize);
                (Some(d), Some(cut))
            }
            _ => (None, None),
        };
        return Ok(ChangeDiffOutput {
            is_binary: old.is_none(),
            old_contents: None,
            new_contents: None,
            diff,
            diff_truncated: cut,
            ..about(r)
        });
    }
    Ok(ChangeDiffOutput {
        is_binary: old.is_none(),
        old_contents: old,
        new_contents: new,
        ..about(r)
    })
}

/// The answer's account of the change itself (bodies left empty).
fn about(r: crate::journal::ChangeRecord) -> ChangeDiffOutput {
    ChangeDiffOutput {
        path: r.path,
        old_contents: None,
        new_contents: None,
        is_binary: false,
        diff: None,
        diff_truncated: None,
        kind: r.kind,
        from_path: r.from_path,
        function_id: r.function_id,
        session_id: r.session_id,
        turn_id: r.turn_id,
        time_ms: r.time_ms,
        old_revision: r.before.map(|v| v.revision),
        new_revision: r.after.map(|v| v.revision),
    }
}

/// How a unified diff names the file: relative to the allowed root that
/// holds it (so `git apply` / `patch -p1` in that root take the diff as
/// is), else the absolute path without its leading `/`.
fn diff_name(path: &str, roots: &[std::path::PathBuf]) -> String {
    let p = std::path::Path::new(path);
    roots
        .iter()
        .filter_map(|root| p.strip_prefix(root).ok())
        .min_by_key(|rel| rel.components().count())
        .filter(|rel| !rel.as_os_str().is_empty())
        .map(|rel| rel.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.trim_start_matches('/').to_string())
}

/// A unified diff of `old` -> `new` for the file `rel`, cut at a line
/// boundary to at most `max` bytes; whether it was cut.
fn unified(rel: &str, old: &str, new: &str, context: usize, max: usize) -> (String, bool) {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(context)
        .header(&format!("a/{rel}"), &format!("b/{rel}"))
        .to_string();
    if text.len() <= max {
        return (text, false);
    }
    // at the last line end within the budget (a `\n` is always a char
    // boundary, so the cut never splits a UTF-8 character)
    let cut = text.as_bytes()[..max]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (text[..cut].to_string(), true)
}
