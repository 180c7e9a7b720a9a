//! `shell::workspace::validate`: whether a directory may be opened as a workspace.

use super::directory;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceValidateRequest")]
pub struct WorkspaceValidateRequest {
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceValidateResponse")]
pub struct WorkspaceValidateResponse {
    pub path: String,
}

pub fn def() -> FunctionDef {
    function(
        "shell::workspace::validate",
        "Console-only workspace picker control plane: validate that `path` is an existing host \
         directory and return its canonical path.",
        Flags::NONE,
        |ctx: Ctx, req: WorkspaceValidateRequest| async move {
            crate::runtime::blocking(move || {
                directory(&ctx, &req.path).map(|r| WorkspaceValidateResponse {
                    path: r.path.display().to_string(),
                })
            })
            .await
        },
    )
}
