//! The change history as a surface: `shell::turns::list` ([`list`]) and
//! `shell::turns::revert` ([`revert`]), one file a function, over the
//! change journal ([`crate::journal`]). `coder::change-diff` shares the
//! helpers here.

pub mod list;
pub mod revert;

use crate::error::{Class, Failure, Surface, quote};
use crate::function::Ctx;
use crate::journal::{ChangeRecord, Journal};
use crate::policy::Tail;
use std::sync::Arc;

/// Index entries read per chunk while scanning.
const CHUNK: u64 = 4096;

pub fn journal(ctx: &Ctx) -> Result<Arc<Journal>, Failure> {
    ctx.services
        .journals
        .at(&ctx.runtime.turns_dir)
        .map_err(crate::journal::io)
}

pub fn unknown(id: &str) -> Failure {
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
pub fn visible(ctx: &Ctx, j: &Journal, change_id: &str) -> Result<ChangeRecord, Failure> {
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

/// Visit index entries from `top` (exclusive) down to 1.
pub fn scan_down(
    j: &Journal,
    top: u64,
    mut visit: impl FnMut(u64, &crate::journal::IndexEntry) -> bool,
) {
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
