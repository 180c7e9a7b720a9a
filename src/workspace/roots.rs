//! `shell::workspace::roots`: the directories the picker starts from (the policy's roots).

use super::directory;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceRootsRequest")]
pub struct WorkspaceRootsRequest {}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceRootsResponse")]
pub struct WorkspaceRootsResponse {
    pub roots: Vec<String>,
    /// Which ide answered (its namespace and worker name), so a page that reaches several hosts by namespace can check it reached the one it chose. Absent without an engine (`ide call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::ports::HostIdentity>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::workspace::roots",
        "Console-only workspace picker control plane: return canonical host directory anchors \
         that an operator can browse before choosing a per-session working directory.",
        Flags::NONE,
        |ctx: Ctx, _req: WorkspaceRootsRequest| async move {
            crate::runtime::blocking(move || Ok(roots(&ctx))).await
        },
    )
}

/// Jailed: the jail roots. Unjailed: the working directory, `$HOME` and
/// `/`. Each only when the policy accepts it as a directory.
fn roots(ctx: &Ctx) -> WorkspaceRootsResponse {
    let policy = &ctx.runtime.policy;
    let candidates: Vec<PathBuf> = match policy.mode() {
        Mode::Jailed => policy.jail_roots().to_vec(),
        Mode::Unjailed => [
            Some(ctx.runtime.working_dir.clone()),
            std::env::var_os("HOME").map(PathBuf::from),
            Some(PathBuf::from("/")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let mut roots: Vec<String> = Vec::new();
    for c in candidates {
        if let Ok(r) = directory(ctx, &c.display().to_string()) {
            let p = r.path.display().to_string();
            if !roots.contains(&p) {
                roots.push(p);
            }
        }
    }
    WorkspaceRootsResponse {
        roots,
        host: ctx.services.outbound.as_ref().and_then(|o| o.host()),
    }
}
