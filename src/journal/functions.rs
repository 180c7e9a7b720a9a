//! `coder::change-diff`, `shell::turns::list`, `shell::turns::revert`.

use super::{ChangeKind, ChangeRecord, Journal, key};
use crate::error::{Class, Failure, Surface, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::{Resolved, Tail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// Index entries read per chunk while scanning.
const CHUNK: u64 = 4096;
const DEFAULT_TURNS: usize = 20;
const MAX_TURNS: usize = 200;
/// Changes listed per turn at most.
const MAX_CHANGES_PER_TURN: usize = 1000;

fn journal(ctx: &Ctx) -> Result<Arc<Journal>, Failure> {
    ctx.services
        .journals
        .at(&ctx.runtime.turns_dir)
        .map_err(super::io)
}

fn unknown(id: &str) -> Failure {
    Failure::new(
        Class::NotFound,
        format!(
            "change {} is not retained: unknown, no longer held (its bodies were evicted by \
             turns.max_blob_bytes) or no longer accessible under the current policy; list what \
             is retained with shell::turns::list",
            quote(id)
        ),
    )
}

/// The record of `change_id`, with its paths re-checked against the
/// current policy (a path that became protected reads like an unknown id).
fn visible(ctx: &Ctx, j: &Journal, change_id: &str) -> Result<ChangeRecord, Failure> {
    let r = j
        .seq_of(change_id)
        .and_then(|seq| j.get(seq))
        .ok_or_else(|| unknown(change_id))?;
    let policy = &ctx.runtime.policy;
    for p in std::iter::once(&r.path).chain(r.from_path.iter()) {
        policy
            .resolve(p, Surface::Coder, Tail::Entry, None)
            .map_err(|_| unknown(change_id))?;
    }
    Ok(r)
}

// ───────────────────────────── change-diff ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ChangeDiffInput")]
pub struct ChangeDiffInput {
    pub change_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ChangeDiffOutput")]
pub struct ChangeDiffOutput {
    pub path: String,
    /// Exact pre-mutation body. Missing when either side is not UTF-8.
    pub old_contents: Option<String>,
    /// Exact post-mutation body. Missing when either side is not UTF-8.
    pub new_contents: Option<String>,
    pub is_binary: bool,
}

pub fn change_diff_def() -> FunctionDef {
    function(
        "coder::change-diff",
        "Internal console UI: retrieve an exact before/after snapshot by change id.",
        Flags {
            internal: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: ChangeDiffInput| async move {
            crate::runtime::blocking(move || change_diff(&ctx, &req.change_id)).await
        },
    )
}

fn change_diff(ctx: &Ctx, id: &str) -> Result<ChangeDiffOutput, Failure> {
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
    Ok(ChangeDiffOutput {
        path: r.path,
        is_binary: old.is_none(),
        old_contents: old,
        new_contents: new,
    })
}

// ───────────────────────────── turns::list ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "TurnsListInput")]
pub struct TurnsListInput {
    /// Only turns of this session (the `session_id` mutating calls carried).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only changes of this file (resolved like a coder::* path).
    #[serde(default)]
    pub path: Option<String>,
    /// Only changes at or after this time (Unix epoch milliseconds).
    #[serde(default)]
    pub since: Option<u64>,
    /// Turns per page (default 20, at most 200).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One change, without bodies.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChangeSummary {
    pub change_id: String,
    pub time_ms: u64,
    pub function_id: String,
    pub caller: Option<String>,
    pub kind: ChangeKind,
    pub path: String,
    pub from_path: Option<String>,
    /// SHA-256 of the file before (null: it did not exist).
    pub before_revision: Option<String>,
    /// SHA-256 of the file after (null: it was deleted).
    pub after_revision: Option<String>,
    /// Whether `coder::change-diff` can still show it.
    pub diff_available: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Turn {
    pub turn_id: String,
    pub session_id: Option<String>,
    pub started_ms: u64,
    pub ended_ms: u64,
    /// Oldest first.
    pub changes: Vec<ChangeSummary>,
    /// More changes than listed (over 1000).
    pub changes_truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "TurnsListOutput")]
pub struct TurnsListOutput {
    /// Newest first.
    pub turns: Vec<Turn>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    pub next_cursor: Option<String>,
}

pub fn list_def() -> FunctionDef {
    function(
        "shell::turns::list",
        "Console control plane: the change history, newest turn first. Every mutation of \
         coder::create-file/update-file/delete-file/move and shell::fs::write/sed/rm/mv is \
         journaled; changes with the same `turn_id` form a turn (without one a change is its \
         own turn). Filters: session_id, path, since (epoch ms); pages with limit/cursor. No \
         bodies: open one with coder::change-diff, undo with shell::turns::revert.",
        Flags {
            internal: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: TurnsListInput| async move {
            crate::runtime::blocking(move || list(&ctx, req)).await
        },
    )
}

fn summary(j: &Journal, r: &ChangeRecord) -> ChangeSummary {
    ChangeSummary {
        change_id: r.change_id.clone(),
        time_ms: r.time_ms,
        function_id: r.function_id.clone(),
        caller: r.caller.clone(),
        kind: r.kind,
        path: r.path.clone(),
        from_path: r.from_path.clone(),
        before_revision: r.before.as_ref().map(|v| v.revision.clone()),
        after_revision: r.after.as_ref().map(|v| v.revision.clone()),
        diff_available: j.diff_available(r),
    }
}

/// Visit index entries from `top` (exclusive) down to 1.
fn scan_down(j: &Journal, top: u64, mut visit: impl FnMut(u64, &super::IndexEntry) -> bool) {
    let mut hi = top;
    while hi > 1 {
        let lo = hi.saturating_sub(CHUNK).max(1);
        for (seq, e) in j.entries(lo, hi).iter().rev() {
            if !visit(*seq, e) {
                return;
            }
        }
        hi = lo;
    }
}

fn list(ctx: &Ctx, req: TurnsListInput) -> Result<TurnsListOutput, Failure> {
    let j = journal(ctx)?;
    let limit = req.limit.unwrap_or(DEFAULT_TURNS).clamp(1, MAX_TURNS);
    let end = j.len() + 1;
    let top = match &req.cursor {
        None => end,
        Some(c) => c
            .parse::<u64>()
            .ok()
            .filter(|s| *s >= 1 && *s <= end)
            .ok_or_else(|| {
                Failure::bad_input(format!(
                    "cursor {} is not one this journal gave out; pass next_cursor from the \
                     previous shell::turns::list answer, or omit it for the newest turns",
                    quote(c)
                ))
            })?,
    };
    let path_key = match &req.path {
        None => None,
        Some(p) => Some(key(&ctx
            .runtime
            .policy
            .resolve(p, Surface::Coder, Tail::Entry, None)?
            .path
            .display()
            .to_string())),
    };
    let session_key = req.session_id.as_deref().map(key);
    let wanted = |e: &super::IndexEntry| {
        session_key.is_none_or(|k| e.session == k)
            && path_key.is_none_or(|k| e.path == k)
            && req.since.is_none_or(|t| e.time_ms >= t)
    };
    // Turns already shown on newer pages are not shown again.
    let mut newer: HashSet<u64> = HashSet::new();
    if top < end {
        for (_, e) in j.entries(top, end) {
            if wanted(&e) {
                newer.insert(e.turn);
            }
        }
    }
    // Pick the page's turns, newest first, then gather all their changes.
    let mut order: Vec<u64> = Vec::new();
    let mut members: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut next_cursor = None;
    scan_down(&j, top, |seq, e| {
        if !wanted(e) || newer.contains(&e.turn) {
            return true;
        }
        if !members.contains_key(&e.turn) {
            if order.len() == limit {
                next_cursor = Some((seq + 1).to_string());
                return false;
            }
            order.push(e.turn);
        }
        members.entry(e.turn).or_default().push(seq);
        true
    });
    if next_cursor.is_some() {
        // Older changes of the chosen turns below the cut.
        let cut: u64 = next_cursor
            .as_deref()
            .and_then(|c| c.parse().ok())
            .unwrap_or(1);
        scan_down(&j, cut, |seq, e| {
            if wanted(e) {
                if let Some(m) = members.get_mut(&e.turn) {
                    m.push(seq);
                }
            }
            true
        });
    }
    let policy = &ctx.runtime.policy;
    let mut turns = Vec::new();
    for turn_key in order {
        let mut seqs = members.remove(&turn_key).unwrap_or_default();
        seqs.sort_unstable();
        // Same hash, different ids: split by the real turn id.
        let mut by_id: BTreeMap<String, Vec<ChangeRecord>> = BTreeMap::new();
        for seq in seqs {
            if let Some(r) = j.get(seq) {
                let ok = std::iter::once(&r.path)
                    .chain(r.from_path.iter())
                    .all(|p| policy.resolve(p, Surface::Coder, Tail::Entry, None).is_ok());
                if ok {
                    by_id.entry(r.turn_id.clone()).or_default().push(r);
                }
            }
        }
        let mut group: Vec<Turn> = by_id
            .into_iter()
            .map(|(turn_id, rs)| Turn {
                turn_id,
                session_id: rs.first().and_then(|r| r.session_id.clone()),
                started_ms: rs.first().map_or(0, |r| r.time_ms),
                ended_ms: rs.last().map_or(0, |r| r.time_ms),
                changes_truncated: rs.len() > MAX_CHANGES_PER_TURN,
                changes: rs
                    .iter()
                    .take(MAX_CHANGES_PER_TURN)
                    .map(|r| summary(&j, r))
                    .collect(),
            })
            .collect();
        group.sort_by_key(|t| std::cmp::Reverse(t.ended_ms));
        turns.extend(group);
    }
    Ok(TurnsListOutput { turns, next_cursor })
}

// ───────────────────────────── turns::revert ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "TurnsRevertInput")]
pub struct TurnsRevertInput {
    /// Revert every change of this turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Revert this one change (XOR `turn_id`).
    #[serde(default)]
    pub change_id: Option<String>,
    /// Check and report what would be done; write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// A path whose current content is not what the change left.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Conflict {
    pub path: String,
    /// What the journal says the file should be now (null: absent).
    pub expected_revision: Option<String>,
    /// What it is (null: absent or not accessible).
    pub current_revision: Option<String>,
    pub reason: String,
}

/// One step of a revert.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RevertStep {
    pub change_id: String,
    /// `restore` (write the before-bytes), `remove` (a created file), `move_back`.
    pub action: String,
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "TurnsRevertOutput")]
pub struct TurnsRevertOutput {
    /// True when every step was applied.
    pub reverted: bool,
    pub dry_run: bool,
    /// The steps, in the order they are (or would be) applied.
    pub steps: Vec<RevertStep>,
    /// Non-empty: nothing was written.
    pub conflicts: Vec<Conflict>,
    /// The turn the revert itself was journaled under (revert it to redo).
    pub revert_turn_id: Option<String>,
}

pub fn revert_def() -> FunctionDef {
    function(
        "shell::turns::revert",
        "Console control plane: undo a turn (`turn_id`) or one change (`change_id`): every file \
         goes back to its exact bytes and mode before the change (created files are removed, \
         deleted ones restored, moves moved back). All or nothing: if any file no longer has \
         the revision the change left, nothing is written and `conflicts` lists each path with \
         its current revision. `dry_run: true` only reports. The revert is journaled as a new \
         turn (`revert_turn_id`), so it can be reverted too.",
        Flags {
            internal: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: TurnsRevertInput| async move { revert(ctx, req).await },
    )
}

/// The state a path must be in now.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Absent,
    Rev(String),
    Exists,
}

fn current_state(ctx: &Ctx, path: &str) -> Result<(Resolved, Expect), Failure> {
    let r = ctx
        .runtime
        .policy
        .resolve(path, Surface::Coder, Tail::Entry, None)?;
    let Ok(st) = r.loc().lstat() else {
        return Ok((r, Expect::Absent));
    };
    if !crate::jail::is_file_mode(st.st_mode) {
        return Ok((r, Expect::Exists));
    }
    let mut f = r
        .loc()
        .open_read()
        .map_err(|e| Failure::from_io(path, &e))?;
    let rev =
        crate::jail::atomic::revision_of_file(&mut f).map_err(|e| Failure::from_io(path, &e))?;
    Ok((r, Expect::Rev(rev)))
}

fn changes_of(j: &Journal, req: &TurnsRevertInput) -> Result<Vec<ChangeRecord>, Failure> {
    match (&req.turn_id, &req.change_id) {
        (Some(_), Some(_)) | (None, None) => Err(Failure::bad_input(
            "pass turn_id (a whole turn) or change_id (one change), not both or neither; \
             shell::turns::list shows both",
        )),
        (None, Some(id)) => j
            .seq_of(id)
            .and_then(|s| j.get(s))
            .map(|r| vec![r])
            .ok_or_else(|| unknown(id)),
        (Some(turn), None) => {
            let k = key(turn);
            let mut out = Vec::new();
            scan_down(j, j.len() + 1, |seq, e| {
                if e.turn == k {
                    if let Some(r) = j.get(seq).filter(|r| &r.turn_id == turn) {
                        out.push(r);
                    }
                }
                true
            });
            out.reverse();
            if out.is_empty() {
                return Err(unknown(turn));
            }
            Ok(out)
        }
    }
}

async fn revert(mut ctx: Ctx, req: TurnsRevertInput) -> Result<TurnsRevertOutput, Failure> {
    // The revert's own writes form a new turn.
    let revert_turn = format!("revert-{}", uuid::Uuid::new_v4().simple());
    ctx.scope = ctx.scope.in_turn(revert_turn.clone());
    crate::runtime::blocking(move || revert_blocking(&ctx, &req, revert_turn)).await
}

fn revert_blocking(
    ctx: &Ctx,
    req: &TurnsRevertInput,
    revert_turn: String,
) -> Result<TurnsRevertOutput, Failure> {
    let j = journal(ctx)?;
    let changes = changes_of(&j, req)?;
    // What each path must be now: the state the last change left.
    let mut expect: BTreeMap<String, Expect> = BTreeMap::new();
    for r in &changes {
        let after = match &r.after {
            Some(v) => Expect::Rev(v.revision.clone()),
            None if r.kind == ChangeKind::Moved => Expect::Exists,
            None => Expect::Absent,
        };
        if let Some(from) = &r.from_path {
            expect.insert(from.clone(), Expect::Absent);
        }
        expect.insert(r.path.clone(), after);
    }
    let mut conflicts = Vec::new();
    for (path, want) in &expect {
        let show = |e: &Expect| match e {
            Expect::Rev(r) => Some(r.clone()),
            _ => None,
        };
        match current_state(ctx, path) {
            Ok((_, now)) if &now == want => {}
            Ok((_, now)) => conflicts.push(Conflict {
                path: path.clone(),
                expected_revision: show(want),
                current_revision: show(&now),
                reason: match (&now, want) {
                    (Expect::Absent, _) => "the file no longer exists".into(),
                    (_, Expect::Absent) => "a file exists where the change left none".into(),
                    _ => "the file changed after this change (edited by hand or by a later call)"
                        .into(),
                },
            }),
            Err(f) => conflicts.push(Conflict {
                path: path.clone(),
                expected_revision: show(want),
                current_revision: None,
                reason: format!("not accessible under the current policy ({})", f.message),
            }),
        }
    }
    // Bodies the undo needs must still be held.
    for r in &changes {
        let needs_before = matches!(r.kind, ChangeKind::Modified | ChangeKind::Deleted)
            || (r.kind == ChangeKind::Moved && r.before.is_some());
        if needs_before && j.body(r, false).is_none() {
            conflicts.push(Conflict {
                path: r.path.clone(),
                expected_revision: r.before.as_ref().map(|v| v.revision.clone()),
                current_revision: None,
                reason: format!(
                    "the before-bytes of change {} are no longer retained (turns.max_blob_bytes)",
                    r.change_id
                ),
            });
        }
    }
    let steps: Vec<RevertStep> = changes
        .iter()
        .rev()
        .map(|r| RevertStep {
            change_id: r.change_id.clone(),
            action: match r.kind {
                ChangeKind::Created => "remove",
                ChangeKind::Moved => "move_back",
                _ => "restore",
            }
            .into(),
            path: r.path.clone(),
        })
        .collect();
    if !conflicts.is_empty() || req.dry_run {
        return Ok(TurnsRevertOutput {
            reverted: false,
            dry_run: req.dry_run,
            steps,
            conflicts,
            revert_turn_id: None,
        });
    }
    for r in changes.iter().rev() {
        undo(ctx, &j, r).map_err(|f| {
            Failure::new(
                f.class,
                format!(
                    "reverting change {} stopped at {}: {}; the steps before it were applied \
                     and journaled under turn {revert_turn} (revert that turn to go back)",
                    r.change_id,
                    quote(&r.path),
                    f.message
                ),
            )
        })?;
    }
    Ok(TurnsRevertOutput {
        reverted: true,
        dry_run: false,
        steps,
        conflicts,
        revert_turn_id: Some(revert_turn),
    })
}

fn undo(ctx: &Ctx, j: &Journal, r: &ChangeRecord) -> Result<(), Failure> {
    use crate::jail::atomic::{Clobber, write_atomic};
    let policy = &ctx.runtime.policy;
    let at = |p: &str| policy.resolve(p, Surface::Coder, Tail::Entry, None);
    fn io(p: &str) -> impl Fn(std::io::Error) -> Failure + '_ {
        move |e| Failure::from_io(p, &e)
    }
    let rec = ctx.scope.recorder();
    let restore = |path: &str, clobber: Clobber| -> Result<(), Failure> {
        let v = r.before.as_ref().ok_or_else(|| unknown(&r.change_id))?;
        let body = j.body(r, false).ok_or_else(|| unknown(&r.change_id))?;
        let target = at(path)?;
        target.loc().make_parents(0o755).map_err(io(path))?;
        write_atomic(target.loc(), &body, Some(v.mode), clobber, &rec).map_err(io(path))
    };
    match r.kind {
        ChangeKind::Created => {
            crate::jail::atomic::remove_file(at(&r.path)?.loc(), &rec).map_err(io(&r.path))
        }
        ChangeKind::Modified => restore(&r.path, Clobber::Replace),
        ChangeKind::Deleted => restore(&r.path, Clobber::Never),
        ChangeKind::Moved => {
            let from = r
                .from_path
                .as_deref()
                .ok_or_else(|| unknown(&r.change_id))?;
            let (src, dst) = (at(&r.path)?, at(from)?);
            dst.loc().make_parents(0o755).map_err(io(from))?;
            crate::jail::atomic::rename(src.loc(), dst.loc(), Clobber::Never, &rec)
                .map_err(io(from))?;
            if r.before.is_some() {
                restore(&r.path, Clobber::Never)?;
            }
            Ok(())
        }
    }
}
