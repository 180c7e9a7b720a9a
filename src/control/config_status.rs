//! `shell::config-status`: the last hot-reload outcome.
//!
//! Operator/automation only (flagged internal). A `rejected` outcome or a
//! non-zero `rejected_reloads` means the central store holds a value this
//! worker refused, so it enforces an older policy than the store shows.

use crate::catalog::{Ctx, Flags, FunctionDef, function};
use crate::runtime::ReloadStatus;
use schemars::JsonSchema;
use serde::Deserialize;

/// `shell::config-status` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ConfigStatusRequest")]
pub struct ConfigStatusRequest {}

pub fn def() -> FunctionDef {
    function(
        "shell::config-status",
        "Report the last configuration hot-reload outcome: last_outcome (applied|rejected), \
         last_error, and rejected_reloads since boot. A rejected outcome means the worker is \
         enforcing an older policy than the central store. Takes no arguments.",
        Flags::INTERNAL,
        |ctx: Ctx, _req: ConfigStatusRequest| async move {
            Ok::<ReloadStatus, crate::error::Failure>(ctx.services.live.status())
        },
    )
}
