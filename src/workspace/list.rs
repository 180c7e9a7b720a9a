//! `shell::workspace::list`: the sub-directories of a directory, paged.

use super::directory;
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const LIST_DEFAULT_PAGE: usize = 500;
const LIST_MAX_PAGE: usize = 5000;

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceListRequest")]
pub struct WorkspaceListRequest {
    pub path: String,
    #[serde(default)]
    pub page_size: Option<usize>,
    /// `next_cursor` of the previous page (the last name it listed).
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceEntryKind {
    Dir,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceEntry {
    pub kind: WorkspaceEntryKind,
    pub name: String,
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceListResponse")]
pub struct WorkspaceListResponse {
    pub entries: Vec<WorkspaceEntry>,
    pub path: String,
    /// More directories follow: pass `next_cursor` as `cursor`.
    pub truncated: bool,
    pub next_cursor: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::workspace::list",
        "Takes `path` (an existing host directory). Console-only workspace picker control plane: list child directories under an existing \
         host directory. Returns canonical paths and never returns files.",
        Flags::NONE,
        |ctx: Ctx, req: WorkspaceListRequest| async move {
            crate::runtime::blocking(move || list(&ctx, req)).await
        },
    )
}

fn list(ctx: &Ctx, req: WorkspaceListRequest) -> Result<WorkspaceListResponse, Failure> {
    let dir = directory(ctx, &req.path)?;
    let page = req
        .page_size
        .unwrap_or(LIST_DEFAULT_PAGE)
        .clamp(1, LIST_MAX_PAGE);
    let fd = dir
        .loc()
        .open_dir()
        .map_err(|e| Failure::from_io(&req.path, &e))?;
    let policy = &ctx.runtime.policy;
    let mut names: Vec<String> = crate::jail::dir::read_sorted(std::os::fd::AsFd::as_fd(&fd))
        .map_err(|e| Failure::from_io(&req.path, &e))?
        .into_iter()
        .filter(|e| e.kind == crate::jail::dir::Kind::Dir)
        .map(|e| e.name.to_string_lossy().into_owned())
        .filter(|n| !policy.is_denylisted(&dir.path.join(n)))
        .collect();
    if let Some(after) = &req.cursor {
        names.retain(|n| n.as_str() > after.as_str());
    }
    let truncated = names.len() > page;
    names.truncate(page);
    let next_cursor = truncated.then(|| names.last().cloned()).flatten();
    Ok(WorkspaceListResponse {
        entries: names
            .into_iter()
            .map(|name| WorkspaceEntry {
                kind: WorkspaceEntryKind::Dir,
                path: dir.path.join(&name).display().to_string(),
                name,
            })
            .collect(),
        path: dir.path.display().to_string(),
        truncated,
        next_cursor,
    })
}
