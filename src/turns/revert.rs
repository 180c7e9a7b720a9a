//! `shell::turns::revert`: undo a turn or one change, refusing (or
//! reporting, with `dry_run`) every path that changed since.

use super::{journal, scan_down, unknown};
use crate::error::{Failure, Surface, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::journal::{ChangeKind, ChangeRecord, Journal, key};
use crate::policy::{Resolved, Tail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// The revision `path` has once this step is applied — what the next guarded edit of it passes as `expected_revision`; absent when the step leaves no file there. A file several steps touch ends with its last step's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// `move_back` only: where the file goes back to, and its revision there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_revision: Option<String>,
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

pub fn def() -> FunctionDef {
    function(
        "shell::turns::revert",
        "Undo a turn (`turn_id`) or one change (`change_id`): every file \
         goes back to its exact bytes and mode before the change (created files are removed, \
         deleted ones restored, moves moved back). All or nothing: if any file no longer has \
         the revision the change left, nothing is written and `conflicts` lists each path with \
         its current revision. `dry_run: true` only reports. The revert is journaled as a new \
         turn (`revert_turn_id`), so it can be reverted too.",
        Flags::NONE,
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
            revision: match r.kind {
                ChangeKind::Created => None,
                _ => r.before.as_ref().map(|v| v.revision.clone()),
            },
            to_path: (r.kind == ChangeKind::Moved)
                .then(|| r.from_path.clone())
                .flatten(),
            to_revision: match r.kind {
                ChangeKind::Moved => r.after.as_ref().map(|v| v.revision.clone()),
                _ => None,
            },
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
