//! `coder::rename`: the language server's workspace edit for a rename,
//! applied by ide as ONE change.
//!
//! Every file the edit names must be inside the roots and readable by the
//! policy, or the whole rename is refused naming them. Each is read (its
//! revision taken), the edits are applied in memory (all of them checked
//! first: ranges inside the file, not overlapping), then the files are
//! written one by one, each re-checked against the revision read just
//! before its atomic write. A failure midway writes back what was already
//! written, so the rename lands whole or not at all; the writes are one
//! turn of the call (`shell::turns::revert` undoes it whole). `dry_run`
//! answers each file's unified diff and writes nothing.

use super::create_file::check_revision;
use super::semantic;
use super::{blocking, resolve, resolve_scope, revision_of};
use crate::error::{Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::{Clobber, Hashed, write_hashed};
use crate::lsp::text;
use crate::policy::{Resolved, Tail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "RenameInput")]
pub struct RenameInput {
    /// The file of the symbol.
    pub path: String,
    /// 1-based line of the symbol (any occurrence of it).
    pub line: u32,
    /// 1-based byte column.
    pub column: u32,
    /// Its new name.
    pub new_name: String,
    /// Answer each file's unified diff and write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Change history: the turn the rename's writes form (default: a new turn `rename-…`, answered as `turn_id`).
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the turn belongs to.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Optional per-call session working directory.
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// One file the rename changes.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenamedFile {
    pub path: String,
    /// Places changed in it.
    pub edits: u32,
    /// Its revision before.
    pub old_revision: String,
    /// Its revision after (what it would be, on dry_run).
    pub revision: String,
    /// The unified diff (dry_run only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "RenameOutput")]
pub struct RenameOutput {
    pub files: Vec<RenamedFile>,
    /// Places changed in all.
    pub edits: u32,
    /// True when nothing was written (dry_run).
    pub dry_run: bool,
    /// The turn of the rename's writes: shell::turns::revert {turn_id} undoes the whole rename (absent on dry_run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    pub language_server: String,
}

pub fn def() -> FunctionDef {
    function(
        "coder::rename",
        "Rename a symbol everywhere its language server finds it, as one change. Send {path, \
         line, column, new_name, dry_run?}; get {files: [{path, edits, old_revision, revision, \
         diff?}], edits, dry_run, turn_id?, language_server} — every file written atomically \
         or none (a failure midway restores what was written), journaled as one turn that \
         shell::turns::revert undoes whole; dry_run answers each file's unified diff and writes \
         nothing. An edit that would touch a protected file or one outside the roots refuses \
         the whole rename and names the files. Lines are 1-based; columns are 1-based byte \
         offsets in the line, as in coder::search.",
        Flags::NONE,
        |ctx: Ctx, req: RenameInput| async move { rename(ctx, req).await },
    )
}

/// One file's planned change.
struct Plan {
    raw: String,
    at: Resolved,
    old: Vec<u8>,
    old_revision: String,
    new: Vec<u8>,
    edits: u32,
}

async fn rename(mut ctx: Ctx, req: RenameInput) -> Result<RenameOutput, Failure> {
    // every write of the rename is one turn
    let turn_id = req
        .turn_id
        .clone()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| format!("rename-{}", uuid::Uuid::new_v4().simple()));
    ctx.scope = ctx.scope.in_turn(turn_id.clone());
    let ctx = &ctx;
    if req.new_name.trim().is_empty() || req.new_name.contains(['\n', '\r']) {
        return Err(Failure::bad_input(format!(
            "new_name {:?} is not a name; pass the identifier to rename to",
            req.new_name
        )));
    }
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let at = resolve(ctx, &req.path, scope.as_ref())?;
    let o = semantic::open(ctx, &req.path, &at)
        .await?
        .map_err(|u| u.failure())?;
    super::source::offset_of(&req.path, &o.text, req.line, req.column)?;
    // the name at the position, for a server that must see the files holding it
    let at_name = {
        let (raw, at2) = (req.path.clone(), at.clone());
        let max_read = ctx.runtime.config.fs.max_read_bytes;
        let (line, column) = (req.line, req.column);
        blocking(move || super::references::name_at(&raw, &at2, line, column, max_read))
            .await
            .ok()
            .map(|(n, _)| n)
    };
    if let Some(n) = &at_name {
        semantic::open_related(ctx, &o, n, o.timeout(&ctx.runtime)).await;
    }
    let mut params = o.position(req.line, req.column);
    params["newName"] = Value::String(req.new_name.clone());
    let edit = ctx
        .services
        .servers
        .request(
            &o.conn,
            "textDocument/rename",
            params,
            o.timeout(&ctx.runtime),
        )
        .await?;
    let enc = o.encoding();
    let server = o.conn.name.clone();
    let rt = ctx.runtime.clone();
    let rec = ctx.scope.recorder();
    let dry_run = req.dry_run;
    let seen = ctx.services.journals.clone();
    let conn = o.conn.clone();
    let (files, written) = blocking(move || {
        let per_file = edits_of(&edit)?;
        if per_file.is_empty() {
            return Err(Failure::bad_input(format!(
                "the language server has nothing to rename at line {}, column {} of {:?}; \
                 pass the position of a symbol's name",
                req.line, req.column, req.path
            )));
        }
        let plans = plan(&rt, &per_file, enc)?;
        let files: Vec<RenamedFile> = plans
            .iter()
            .map(|p| RenamedFile {
                path: p.raw.clone(),
                edits: p.edits,
                old_revision: p.old_revision.clone(),
                revision: revision_of(&p.new),
                diff: dry_run.then(|| diff(&p.raw, &p.old, &p.new)),
            })
            .collect();
        if dry_run {
            return Ok((files, Vec::new()));
        }
        apply(&plans, &rec, &seen.seen)?;
        Ok((
            files,
            plans.into_iter().map(|p| (p.at.path, p.new)).collect(),
        ))
    })
    .await?;
    // the server sees the renamed files as they are now: the open ones
    // read again, the others as changed on disk
    if !written.is_empty() {
        let mut closed = Vec::new();
        for (path, _) in &written {
            if !conn.is_open(path).await {
                closed.push((path.clone(), 2u8));
            }
        }
        conn.files_changed(&closed);
        semantic::refresh(&ctx.runtime, &conn).await;
    }
    Ok(RenameOutput {
        edits: files.iter().map(|f| f.edits).sum(),
        files,
        dry_run,
        turn_id: (!dry_run).then_some(turn_id),
        language_server: server,
    })
}

/// uri → its text edits, from a WorkspaceEdit (`changes` or
/// `documentChanges`); a resource operation (create, rename, delete a
/// file) is refused.
fn edits_of(edit: &Value) -> Result<BTreeMap<String, Vec<Value>>, Failure> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    if let Some(dc) = edit["documentChanges"].as_array() {
        for d in dc {
            if let Some(kind) = d["kind"].as_str() {
                return Err(Failure::bad_input(format!(
                    "the language server's rename would also {kind} a file ({}); ide applies \
                     only text edits: rename the file with coder::move-file, then the symbol",
                    d["uri"].as_str().or(d["oldUri"].as_str()).unwrap_or("?")
                )));
            }
            let Some(uri) = d["textDocument"]["uri"].as_str() else {
                continue;
            };
            out.entry(uri.to_string())
                .or_default()
                .extend(d["edits"].as_array().cloned().unwrap_or_default());
        }
    } else if let Some(ch) = edit["changes"].as_object() {
        for (uri, edits) in ch {
            out.entry(uri.clone())
                .or_default()
                .extend(edits.as_array().cloned().unwrap_or_default());
        }
    }
    out.retain(|_, e| !e.is_empty());
    Ok(out)
}

/// Read every file and apply its edits in memory; refuse the whole rename
/// when a file is outside the roots, protected or unreadable.
fn plan(
    rt: &crate::runtime::Runtime,
    per_file: &BTreeMap<String, Vec<Value>>,
    enc: text::Encoding,
) -> Result<Vec<Plan>, Failure> {
    let mut refused = Vec::new();
    let mut plans = Vec::new();
    for (uri, edits) in per_file {
        let Some(abs) = text::path_of(uri) else {
            refused.push(format!("{uri} (not a file)"));
            continue;
        };
        let raw = abs.display().to_string();
        let inside = rt.policy.coder_roots().iter().any(|r| abs.starts_with(r));
        let at = inside
            .then(|| {
                rt.policy
                    .resolve(&raw, Surface::Coder, Tail::Follow, None)
                    .ok()
            })
            .flatten()
            .filter(|r| r.exists && !rt.policy.is_protected(&r.path));
        let Some(at) = at else {
            refused.push(if inside {
                format!("{raw} (missing or protected)")
            } else {
                format!("{raw} (outside the roots)")
            });
            continue;
        };
        let src = super::source::read(&raw, &at, rt.config.fs.max_write_bytes)?;
        let new = apply_edits(&raw, &src.bytes, edits, enc)?;
        plans.push(Plan {
            edits: edits.len() as u32,
            raw,
            at,
            old_revision: src.revision,
            old: src.bytes,
            new,
        });
    }
    if !refused.is_empty() {
        return Err(Failure::bad_input(format!(
            "the rename would change files ide may not write: {}; nothing was written. Rename \
             by hand in the files you may change (coder::references lists the places)",
            refused.join(", ")
        )));
    }
    Ok(plans)
}

/// `bytes` with LSP text edits applied (checked: inside, not overlapping).
fn apply_edits(
    raw: &str,
    bytes: &[u8],
    edits: &[Value],
    enc: text::Encoding,
) -> Result<Vec<u8>, Failure> {
    let offset = |p: &Value| -> Option<usize> {
        let line = p["line"].as_u64()? as usize;
        let ch = p["character"].as_u64()? as u32;
        let mut start = 0usize;
        for _ in 0..line {
            start += memchr::memchr(b'\n', &bytes[start..])? + 1;
        }
        let l = text::line_text(bytes, line)?;
        Some(start + text::byte_of(l, ch, enc))
    };
    let mut spans: Vec<(usize, usize, &str)> = Vec::new();
    for e in edits {
        let (Some(s), Some(t)) = (offset(&e["range"]["start"]), offset(&e["range"]["end"])) else {
            return Err(Failure::io(format!(
                "the language server's rename names a range outside {raw:?} ({}); nothing was \
                 written. Re-run coder::rename (the server may not have seen the file's latest \
                 text)",
                e["range"]
            )));
        };
        if t < s {
            return Err(Failure::io(format!(
                "the language server's rename has a reversed range in {raw:?}; nothing was written"
            )));
        }
        spans.push((s, t, e["newText"].as_str().unwrap_or("")));
    }
    spans.sort_by_key(|(s, t, _)| (*s, *t));
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(Failure::io(format!(
            "the language server's rename has overlapping edits in {raw:?}; nothing was written"
        )));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (s, t, new) in spans {
        out.extend_from_slice(&bytes[at..s]);
        out.extend_from_slice(new.as_bytes());
        at = t;
    }
    out.extend_from_slice(&bytes[at..]);
    Ok(out)
}

/// Write every plan, each checked against the revision read; on a failure,
/// write back the ones already written and answer the failure.
fn apply(
    plans: &[Plan],
    rec: &crate::jail::record::Recorder,
    seen: &crate::journal::seen::Seen,
) -> Result<(), Failure> {
    let mut done: Vec<&Plan> = Vec::new();
    for p in plans {
        let r = check_revision(&p.raw, &p.at, &p.old_revision).and_then(|()| {
            let hashed = Hashed::new(&p.new);
            write_hashed(p.at.loc(), &hashed, None, Clobber::Replace, rec)
                .map_err(|e| Failure::from_io(&p.raw, &e))?;
            seen.remember(&hashed.revision(), &p.new);
            Ok(())
        });
        if let Err(f) = r {
            let mut undone = Vec::new();
            for d in done.iter().rev() {
                let back = Hashed::new(&d.old);
                if let Err(e) = write_hashed(d.at.loc(), &back, None, Clobber::Replace, rec) {
                    undone.push(format!("{} ({e})", d.raw));
                }
            }
            let restored = if undone.is_empty() {
                format!("the {} file(s) already written were restored", done.len())
            } else {
                format!("restoring failed for {}", undone.join(", "))
            };
            return Err(Failure::new(
                f.class,
                format!(
                    "the rename stopped at {:?}: {}; {restored}. Re-run coder::rename",
                    p.raw, f.message
                ),
            ));
        }
        done.push(p);
    }
    Ok(())
}

/// A unified diff of a file's change.
fn diff(raw: &str, old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{raw}"), &format!("b/{raw}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Jail;

    #[test]
    fn a_write_failing_midway_restores_what_was_written() {
        let j = Jail::new();
        for f in ["r1.txt", "r2.txt", "r3.txt", "r4.txt"] {
            j.write(f, format!("old {f}\n"));
        }
        let rt = j.services.live.snapshot();
        let plans: Vec<Plan> = ["r1.txt", "r2.txt", "r3.txt", "r4.txt"]
            .iter()
            .map(|f| {
                let raw = j.path(f).display().to_string();
                let at = rt
                    .policy
                    .resolve(&raw, Surface::Coder, Tail::Follow, None)
                    .unwrap();
                let old = std::fs::read(j.path(f)).unwrap();
                Plan {
                    raw,
                    at,
                    old_revision: revision_of(&old),
                    new: format!("new {f}\n").into_bytes(),
                    old,
                    edits: 1,
                }
            })
            .collect();
        // another writer changes the third file after it was planned
        j.write("r3.txt", "theirs\n");
        let scope = crate::journal::Scope::none();
        let e = apply(&plans, &scope.recorder(), &j.services.journals.seen).unwrap_err();
        assert!(e.message.contains("r3.txt"), "{}", e.message);
        assert!(
            e.message
                .contains("the 2 file(s) already written were restored"),
            "{}",
            e.message
        );
        assert_eq!(j.read("r1.txt"), b"old r1.txt\n");
        assert_eq!(j.read("r2.txt"), b"old r2.txt\n");
        assert_eq!(j.read("r3.txt"), b"theirs\n");
        assert_eq!(j.read("r4.txt"), b"old r4.txt\n");
    }

    #[test]
    fn edits_apply_in_utf16_and_overlaps_are_refused() {
        let text = "é = 1\nx = é\n".as_bytes();
        let e = |l: u64, a: u64, b: u64, t: &str| {
            serde_json::json!({"range": {"start": {"line": l, "character": a},
                "end": {"line": l, "character": b}}, "newText": t})
        };
        let out = apply_edits(
            "f",
            text,
            &[e(0, 0, 1, "a"), e(1, 4, 5, "a")],
            text::Encoding::Utf16,
        )
        .unwrap();
        assert_eq!(out, b"a = 1\nx = a\n");
        let err = apply_edits(
            "f",
            text,
            &[e(0, 0, 3, "a"), e(0, 1, 2, "b")],
            text::Encoding::Utf16,
        )
        .unwrap_err();
        assert!(err.message.contains("overlapping"), "{}", err.message);
        let err = apply_edits("f", text, &[e(7, 0, 1, "a")], text::Encoding::Utf16).unwrap_err();
        assert!(err.message.contains("outside"), "{}", err.message);
    }
}
