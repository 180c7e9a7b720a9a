//! `shell::turns::list`: the retained changes, grouped by turn, newest first.

use super::{journal, scan_down};
use crate::error::{Failure, Surface, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::journal::{ChangeKind, ChangeRecord, Journal, key};
use crate::policy::Tail;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

const DEFAULT_TURNS: usize = 20;
const MAX_TURNS: usize = 200;
/// Changes listed per turn at most.
const MAX_CHANGES_PER_TURN: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "TurnsListInput")]
pub struct TurnsListInput {
    /// Only turns of this session (the `session_id` mutating calls carried).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only changes of this file (resolved like a coder::* path).
    #[serde(default)]
    pub path: Option<String>,
    /// Only changes at or below this directory (resolved like a coder::* path): a move counts when either end is below it. What a console's history pane of one workspace shows.
    #[serde(default)]
    pub under: Option<String>,
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

pub fn def() -> FunctionDef {
    function(
        "shell::turns::list",
        "The change history (agents and the console alike), newest turn first. Every mutation of \
         coder::create-file/update-file/delete-file/move and shell::fs::write/sed/rm/mv is \
         journaled; changes with the same `turn_id` form a turn (without one a change is its \
         own turn). Filters: session_id, path, under (a directory), since (epoch ms); pages with limit/cursor. No \
         bodies: open one with coder::change-diff, undo with shell::turns::revert.",
        Flags::NONE,
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
    let under = match &req.under {
        None => None,
        Some(p) => Some(
            ctx.runtime
                .policy
                .resolve(p, Surface::Coder, Tail::Entry, None)?
                .path,
        ),
    };
    let session_key = req.session_id.as_deref().map(key);
    // `under` needs the record's path (the index keeps a hash): read once per change
    let below: std::cell::RefCell<HashMap<u64, bool>> = Default::default();
    let is_below = |seq: u64| -> bool {
        let Some(dir) = &under else { return true };
        *below.borrow_mut().entry(seq).or_insert_with(|| {
            j.get(seq).is_some_and(|r| {
                std::iter::once(&r.path)
                    .chain(r.from_path.iter())
                    .any(|p| std::path::Path::new(p).starts_with(dir))
            })
        })
    };
    let wanted = |seq: u64, e: &crate::journal::IndexEntry| {
        session_key.is_none_or(|k| e.session == k)
            && path_key.is_none_or(|k| e.path == k)
            && req.since.is_none_or(|t| e.time_ms >= t)
            && is_below(seq)
    };
    // Turns already shown on newer pages are not shown again.
    let mut newer: HashSet<u64> = HashSet::new();
    if top < end {
        for (seq, e) in j.entries(top, end) {
            if wanted(seq, &e) {
                newer.insert(e.turn);
            }
        }
    }
    // Pick the page's turns, newest first, then gather all their changes.
    let mut order: Vec<u64> = Vec::new();
    let mut members: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut next_cursor = None;
    scan_down(&j, top, |seq, e| {
        if !wanted(seq, e) || newer.contains(&e.turn) {
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
            if wanted(seq, e) {
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
