//! `coder::tree`: a bounded snapshot of a directory tree.
//!
//! Breadth-first, so a node budget (`code.tree_max_nodes`) spends itself on
//! the shallow levels an agent needs first. Each folder shows at most
//! `per_folder_limit` children (sorted by name); folders beyond `max_depth`,
//! over the limit, matching `default_exclude_globs`, or cut by the budget are
//! flagged `truncated` with the reason, the counts and the call to continue
//! with. Symlinks are reported, never descended; denylisted entries are
//! omitted; protected ones are listed with `non_accessible: true`.

use super::list_folder::{describe, sorted_names};
use super::{EntryKind, blocking, mtime_secs, resolve, resolve_scope};
use crate::error::{Class, Failure};
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::PathBuf;

fn default_path() -> String {
    ".".to_string()
}

fn yes() -> bool {
    true
}

/// Snapshot a directory tree.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "TreeInput")]
pub struct TreeInput {
    /// Base folder for the snapshot (default `.`).
    #[serde(default = "default_path")]
    pub path: String,
    /// Maximum depth to descend; the root node is depth 0.
    #[serde(default)]
    pub max_depth: Option<u32>,
    /// Maximum children listed per folder. When more exist, the folder is flagged `truncated` and callers should switch to `coder::list-folder`.
    #[serde(default)]
    pub per_folder_limit: Option<u32>,
    /// List dot-prefixed entries; false omits them at every level (they then don't count toward per_folder_limit). The requested root is exempt.
    #[serde(default = "yes")]
    pub include_hidden: bool,
    /// Prune directories matching default_exclude_globs (see coder::info) into childless `truncated` stubs; false lists everything.
    #[serde(default = "yes")]
    pub use_default_excludes: bool,
    /// Optional per-call session working directory: relative paths anchor here and must stay inside it (C220).
    #[serde(default)]
    pub base_dir: Option<String>,
    /// Give each regular file its `lines` (the count coder::read-file answers as total_lines) — to rank files by size without reading them. Files over max_read_bytes and protected files carry none.
    #[serde(default)]
    pub line_counts: bool,
}

/// Why a folder's children are incomplete.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TruncationInfo {
    /// Reason this folder was truncated: `per_folder_limit`, `max_depth`, `default_exclude` (matched default_exclude_globs, or omitted matching non-directory children), or `max_nodes` (the snapshot's total node budget ran out).
    pub reason: String,
    /// Number of children actually returned.
    pub shown: u64,
    /// Total number of children eligible for listing in the folder, counted after hidden and default-exclude filtering (only populated when `reason == "per_folder_limit"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// The call that continues from here.
    pub hint: String,
}

/// One node of the tree.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TreeNode {
    /// Entry basename. The ROOT node's path is the response's top-level `path` itself; every other node's path derives by joining from there: child path = parent path + "/" + name.
    pub name: String,
    /// file, dir, symlink (not followed) or other.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Last-modified time, Unix seconds.
    pub mtime: i64,
    /// True if the entry matches `non_accessible_globs`.
    pub non_accessible: bool,
    /// Children of a directory that was descended; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<TreeNode>>,
    /// Set on directories whose `children` is incomplete (see `reason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<TruncationInfo>,
    /// With `line_counts: true`: the file's line count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// A tree snapshot.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "TreeOutput")]
pub struct TreeOutput {
    /// Canonical absolute path of the requested folder (resolved through the jail). Nodes carry only `name`, and the root node's path IS this `path` — do not join the root's `name` onto it; derive children by joining from here: child path = parent path + "/" + name.
    pub path: String,
    /// Root node of the snapshot; its `name` is the folder's basename.
    pub root: TreeNode,
    /// Nodes in this snapshot (root included).
    pub nodes: u64,
}

pub fn def() -> FunctionDef {
    function(
        "coder::tree",
        "Show a directory tree, bounded by max_depth, per_folder_limit and a node budget. Nodes \
         carry only name (child path = parent path + '/' + name); over-limit folders are \
         truncated stubs to paginate with coder::list-folder. With line_counts: true each file \
         carries its `lines`. Paths: relative to the primary root \
         or absolute inside an allowed root (see coder::info).",
        Flags::NONE,
        |ctx: Ctx, req: TreeInput| async move { tree(&ctx, req).await },
    )
}

/// Arena node while building breadth-first.
struct Building {
    name: String,
    kind: EntryKind,
    size: u64,
    mtime: i64,
    non_accessible: bool,
    path: PathBuf,
    children: Option<Vec<usize>>,
    truncated: Option<TruncationInfo>,
    lines: Option<u64>,
}

fn truncation(
    reason: &str,
    shown: u64,
    total: Option<u64>,
    path: &std::path::Path,
) -> TruncationInfo {
    let p = path.display();
    let hint = match reason {
        "per_folder_limit" => format!(
            "list the rest with coder::list-folder {{path: \"{p}\", page: 2, page_size: {shown}}}"
        ),
        "max_depth" => format!("descend with coder::tree {{path: \"{p}\"}}"),
        "default_exclude" => format!(
            "noise folder hidden by default_exclude_globs; look inside with coder::tree {{path: \
             \"{p}\", use_default_excludes: false}}"
        ),
        _ => format!(
            "node budget spent; continue with coder::tree {{path: \"{p}\"}} or coder::list-folder"
        ),
    };
    TruncationInfo {
        reason: reason.to_string(),
        shown,
        total,
        hint,
    }
}

async fn tree(ctx: &Ctx, req: TreeInput) -> Result<TreeOutput, Failure> {
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let resolved = resolve(ctx, &req.path, scope.as_ref())?;
    if !resolved.exists {
        return Err(Failure::not_found(&req.path));
    }
    let md = resolved
        .loc()
        .metadata()
        .map_err(|e| Failure::from_io(&req.path, &e))?;
    if !md.is_dir() {
        return Err(Failure::new(
            Class::WrongType,
            format!(
                "{:?} is a file, not a folder; read it with coder::read-file",
                req.path
            ),
        ));
    }
    let code = &ctx.runtime.config.code;
    let max_depth = req.max_depth.unwrap_or(code.tree_default_depth);
    let per_folder = req
        .per_folder_limit
        .unwrap_or(code.tree_per_folder_limit)
        .max(1) as usize;
    let budget = code.tree_max_nodes.max(1) as usize;
    let read_cap = ctx.runtime.config.fs.max_read_bytes;
    let ctx2 = ctx.clone();
    let raw = req.path.clone();
    blocking(move || {
        let policy = &ctx2.runtime.policy;
        let root_path = resolved.path.clone();
        let mut arena = vec![Building {
            name: root_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/".to_string()),
            kind: EntryKind::Dir,
            size: md.len(),
            mtime: mtime_secs(&md),
            non_accessible: policy.is_non_accessible(&root_path),
            path: root_path.clone(),
            children: None,
            truncated: None,
            lines: None,
        }];
        let mut queue = VecDeque::from([(0usize, 0u32)]);
        while let Some((idx, depth)) = queue.pop_front() {
            let dir = arena[idx].path.clone();
            if depth >= max_depth {
                arena[idx].truncated = Some(truncation("max_depth", 0, None, &dir));
                continue;
            }
            if arena.len() >= budget {
                arena[idx].truncated = Some(truncation("max_nodes", 0, None, &dir));
                continue;
            }
            let at = resolved.below(
                dir.strip_prefix(&root_path)
                    .unwrap_or(std::path::Path::new("")),
            );
            let listing = match sorted_names(&ctx2, &raw, &at) {
                Ok(n) => n,
                Err(_) if idx != 0 => continue,
                Err(e) => return Err(e),
            };
            let mut omitted_noise = false;
            let eligible: Vec<_> = listing
                .names
                .iter()
                .filter(|n| req.include_hidden || !n.to_string_lossy().starts_with('.'))
                .filter_map(|n| {
                    let d = describe(&ctx2, &listing, n)?;
                    if req.use_default_excludes && d.0 != EntryKind::Dir && policy.is_excluded(&d.4)
                    {
                        omitted_noise = true;
                        return None;
                    }
                    Some((n.clone(), d))
                })
                .collect();
            let total = eligible.len();
            let room = budget.saturating_sub(arena.len());
            let shown = total.min(per_folder).min(room);
            let mut kids = Vec::with_capacity(shown);
            for (name, (kind, size, mtime, non_accessible, path)) in
                eligible.into_iter().take(shown)
            {
                let child = arena.len();
                let excluded_dir =
                    kind == EntryKind::Dir && req.use_default_excludes && policy.is_excluded(&path);
                let truncated = excluded_dir.then(|| truncation("default_exclude", 0, None, &path));
                let descend = kind == EntryKind::Dir && !excluded_dir && !non_accessible;
                let lines = (req.line_counts && kind == EntryKind::File && !non_accessible)
                    .then(|| {
                        crate::coder::lines::count_lines_of(
                            std::os::fd::AsFd::as_fd(&listing.dir),
                            &name,
                            read_cap,
                        )
                    })
                    .flatten();
                arena.push(Building {
                    name: name.to_string_lossy().into_owned(),
                    kind,
                    size,
                    mtime,
                    non_accessible,
                    path,
                    children: None,
                    truncated,
                    lines,
                });
                if descend {
                    queue.push_back((child, depth + 1));
                }
                kids.push(child);
            }
            arena[idx].truncated = if shown < total.min(per_folder) {
                Some(truncation(
                    "max_nodes",
                    shown as u64,
                    Some(total as u64),
                    &dir,
                ))
            } else if shown < total {
                Some(truncation(
                    "per_folder_limit",
                    shown as u64,
                    Some(total as u64),
                    &dir,
                ))
            } else if omitted_noise {
                Some(truncation("default_exclude", shown as u64, None, &dir))
            } else {
                None
            };
            arena[idx].children = Some(kids);
        }
        let nodes = arena.len() as u64;
        let root = assemble(&mut arena, 0);
        Ok(TreeOutput {
            path: root_path.display().to_string(),
            root,
            nodes,
        })
    })
    .await
}

/// Turn the arena into the nested wire shape.
fn assemble(arena: &mut [Building], idx: usize) -> TreeNode {
    let kids = arena[idx].children.take();
    let children = kids.map(|ks| ks.into_iter().map(|k| assemble(arena, k)).collect());
    let b = &mut arena[idx];
    TreeNode {
        name: std::mem::take(&mut b.name),
        kind: b.kind,
        size: b.size,
        mtime: b.mtime,
        non_accessible: b.non_accessible,
        children,
        truncated: b.truncated.take(),
        lines: b.lines,
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::Jail;
    use serde_json::{Value, json};

    const ID: &str = "coder::tree";

    fn child<'a>(node: &'a Value, name: &str) -> &'a Value {
        node["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no child {name} in {node}"))
    }

    #[tokio::test]
    async fn line_counts_and_no_empty_fields() {
        let j = Jail::new();
        j.write("t/x/a.py", "def f():\n    pass\n");
        j.write("t/b.md", "one line");
        let v = j
            .call(ID, json!({"path": "t", "line_counts": true}))
            .await
            .unwrap();
        let x = child(&v["root"], "x");
        assert_eq!(child(x, "a.py")["lines"], 2);
        assert_eq!(child(&v["root"], "b.md")["lines"], 1);
        assert!(x.get("lines").is_none(), "{x}");
        // a file carries no children and no truncation, not even as null
        let text = v.to_string();
        assert!(!text.contains("null"), "{text}");
        let plain = j.call(ID, json!({"path": "t"})).await.unwrap();
        assert!(!plain.to_string().contains("\"lines\""), "{plain}");
    }

    #[tokio::test]
    async fn depth_limit_stubs_deeper_folders() {
        let j = Jail::new();
        j.write("a/b/c/d.txt", "x");
        let v = j.call(ID, json!({"max_depth": 2})).await.unwrap();
        let a = child(&v["root"], "a");
        let b = child(a, "b");
        assert_eq!(b["truncated"]["reason"], "max_depth");
        assert_eq!(b["children"], Value::Null);
        assert_eq!(v["path"], j.root.display().to_string());
    }

    #[tokio::test]
    async fn per_folder_limit_reports_counts_and_the_next_call() {
        let j = Jail::new();
        for i in 0..7 {
            j.write(&format!("many/f{i}"), "");
        }
        let v = j
            .call(ID, json!({"path": "many", "per_folder_limit": 3}))
            .await
            .unwrap();
        let t = &v["root"]["truncated"];
        assert_eq!(t["reason"], "per_folder_limit");
        assert_eq!(t["shown"], 3);
        assert_eq!(t["total"], 7);
        assert!(t["hint"].as_str().unwrap().contains("coder::list-folder"));
        assert_eq!(v["root"]["children"].as_array().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn default_excludes_become_stubs_unless_disabled() {
        let j = Jail::new();
        j.write("node_modules/x/index.js", "x");
        j.write("src/main.rs", "x");
        let v = j.call(ID, json!({})).await.unwrap();
        let nm = child(&v["root"], "node_modules");
        assert_eq!(nm["truncated"]["reason"], "default_exclude");
        assert_eq!(nm["children"], Value::Null);
        let v = j
            .call(ID, json!({"use_default_excludes": false}))
            .await
            .unwrap();
        let nm = child(&v["root"], "node_modules");
        assert!(nm["children"].is_array());
    }

    #[tokio::test]
    async fn hidden_entries_can_be_omitted_but_the_root_is_exempt() {
        let j = Jail::new();
        j.write(".hidden/a", "x");
        j.write(".hidden/.b", "x");
        j.write("v", "x");
        let v = j.call(ID, json!({"include_hidden": false})).await.unwrap();
        let names: Vec<&str> = v["root"]["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["v"]);
        let inside = j
            .call(ID, json!({"path": ".hidden", "include_hidden": false}))
            .await
            .unwrap();
        assert_eq!(inside["root"]["children"].as_array().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn node_budget_truncates_with_max_nodes() {
        let j = Jail::with(|c| c.code.tree_max_nodes = 5);
        for d in 0..4 {
            for f in 0..4 {
                j.write(&format!("d{d}/f{f}"), "");
            }
        }
        let v = j.call(ID, json!({"max_depth": 5})).await.unwrap();
        assert!(v["nodes"].as_u64().unwrap() <= 5);
        let text = v.to_string();
        assert!(text.contains("max_nodes"), "{text}");
    }

    #[tokio::test]
    async fn a_folder_of_100k_entries_answers_within_the_budget() {
        let j = Jail::new();
        let dir = j.path("huge");
        std::fs::create_dir(&dir).unwrap();
        for i in 0..100_000 {
            std::fs::File::create(dir.join(format!("f{i:06}"))).unwrap();
        }
        let v = j.call(ID, json!({"path": "huge"})).await.unwrap();
        assert_eq!(v["root"]["truncated"]["total"], 100_000);
        assert_eq!(v["root"]["children"].as_array().unwrap().len(), 50);
    }

    #[tokio::test]
    async fn symlinked_folders_are_not_descended() {
        let j = Jail::new();
        j.write("real/x", "x");
        std::os::unix::fs::symlink(j.path("real"), j.path("link")).unwrap();
        let v = j.call(ID, json!({})).await.unwrap();
        let link = child(&v["root"], "link");
        assert_eq!(link["kind"], "symlink");
        assert_eq!(link["children"], Value::Null);
    }
}
