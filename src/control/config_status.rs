//! `shell::config-status`: the last hot-reload outcome.
//!
//! Operator/automation only (flagged internal). A `rejected` outcome or a
//! non-zero `rejected_reloads` means the central store holds a value this
//! worker refused, so it enforces an older policy than the store shows.

use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::runtime::ReloadStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `shell::config-status` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ConfigStatusRequest")]
pub struct ConfigStatusRequest {}

/// The reload outcome plus what the enforced runtime resolved.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ConfigStatusOutput")]
pub struct ConfigStatusOutput {
    #[serde(flatten)]
    pub status: ReloadStatus,
    /// The default command directory in force: `working_dir` resolved
    /// against the worker's cwd (or the worker's cwd when it is null).
    pub working_dir: String,
    /// Where the change journal lives: `turns.data_dir`, a relative one
    /// anchored at `$XDG_STATE_HOME/ide` (else `$HOME/.local/state/ide`).
    pub turns_dir: String,
}

pub fn def() -> FunctionDef {
    function(
        "shell::config-status",
        "Report the last configuration hot-reload outcome: last_outcome (applied|rejected), \
         last_error, rejected_reloads since boot, the resolved working_dir and turns_dir (the change journal). A rejected outcome means the worker is \
         enforcing an older policy than the central store. Takes no arguments.",
        Flags::INTERNAL,
        |ctx: Ctx, _req: ConfigStatusRequest| async move {
            Ok::<ConfigStatusOutput, crate::error::Failure>(ConfigStatusOutput {
                status: ctx.services.live.status(),
                working_dir: ctx.runtime.working_dir.display().to_string(),
                turns_dir: ctx.runtime.turns_dir.display().to_string(),
            })
        },
    )
}
