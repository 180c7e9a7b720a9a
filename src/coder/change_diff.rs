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

pub fn def() -> FunctionDef {
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
