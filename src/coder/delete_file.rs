//! `coder::delete-file`: batched removal with per-entry results.
//!
//! A missing path is an idempotent success (`removed: false`). A symlink is
//! removed itself, never its target. Non-empty directories need
//! `recursive: true`; a recursive delete first walks the whole subtree
//! (without following symlinks) and refuses if any entry is protected, so it
//! never half-deletes a tree and then stops at a secret. Allowed roots (and
//! their ancestors) are never deleted.

use super::{blocking, resolve_scope};
use crate::error::{Class, Failure, Surface, WireError, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::{Resolved, Tail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Remove one or more paths.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "DeleteFileInput")]
pub struct DeleteFileInput {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Paths to remove.
    pub paths: Vec<String>,
    /// Required for non-empty directories. Files and empty dirs ignore it.
    #[serde(default)]
    pub recursive: bool,
    /// Optional per-call session working directory: relative paths anchor here and must stay inside it (C220).
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// Outcome of one path.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteFileResult {
    /// Change-history id of this entry's change (`coder::change-diff`, `shell::turns::revert`); null when nothing was changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
    /// Canonical absolute path (resolved through the jail); the caller's input verbatim when resolution failed.
    pub path: String,
    pub success: bool,
    /// True when something was removed; false for a path that was already absent.
    pub removed: bool,
    /// Structured error for this entry (e.g. `"C211"` for not-found-or-denied, `"C210"` for refusing to delete an allowed root, `"C214"` for a non-empty directory without recursive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

/// Per-path results, in request order.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "DeleteFileOutput")]
pub struct DeleteFileOutput {
    /// How many entries failed (each carries its own `error`); 0 when all succeeded. When every entry fails, the call itself fails instead, with the entry's error (one entry) or each entry's error in its message.
    pub failed: u64,
    pub results: Vec<DeleteFileResult>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::delete-file",
        "Remove one or more paths. Directories need recursive: true; missing paths succeed; \
         recursion refuses to descend through non-accessible entries. Paths: relative to the \
         primary root or absolute inside an allowed root (see coder::info).",
        Flags {
            display: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: DeleteFileInput| async move { delete(&ctx, req).await },
    )
}

async fn delete(ctx: &Ctx, req: DeleteFileInput) -> Result<DeleteFileOutput, Failure> {
    if req.paths.is_empty() {
        return Err(Failure::bad_input("paths is empty; pass at least one path"));
    }
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let mut results = Vec::with_capacity(req.paths.len());
    for raw in req.paths {
        let outcome =
            match ctx
                .runtime
                .policy
                .resolve(&raw, Surface::Coder, Tail::Entry, scope.as_deref())
            {
                Err(f) => Err(f),
                Ok(r) if !r.exists => Ok((r.path, false)),
                Ok(r) => {
                    let ctx2 = ctx.clone();
                    let raw2 = raw.clone();
                    let recursive = req.recursive;
                    blocking(move || remove(&ctx2, &raw2, &r, recursive).map(|_| (r.path, true)))
                        .await
                }
            };
        results.push(match outcome {
            Ok((path, removed)) => DeleteFileResult {
                change_id: ctx.scope.take_first(),
                path: path.display().to_string(),
                success: true,
                removed,
                error: None,
            },
            Err(f) => DeleteFileResult {
                change_id: ctx.scope.take_first(),
                path: raw,
                success: false,
                removed: false,
                error: Some(f.to_wire(Surface::Coder)),
            },
        });
    }
    let failed = crate::batch::settle(
        results.iter().map(|r| (r.path.as_str(), r.error.as_ref())),
        "was deleted",
    )?;
    Ok(DeleteFileOutput { results, failed })
}

fn remove(ctx: &Ctx, raw: &str, target: &Resolved, recursive: bool) -> Result<(), Failure> {
    let q = quote(raw);
    if ctx
        .runtime
        .policy
        .holds_a_root(&target.path, Surface::Coder)
    {
        return Err(Failure::bad_input(format!(
            "refusing to delete {q}: it is (or contains) an allowed root; delete the entries \
             inside it instead (coder::list-folder shows them)"
        )));
    }
    let parent = target.parent().map_err(|e| Failure::from_io(raw, &e))?;
    let md = parent
        .lstat()
        .map_err(|e| Failure::from_io(raw, &e))?
        .ok_or_else(|| Failure::not_found(raw))?;
    if !crate::jail::is_dir_mode(md.st_mode) {
        crate::jail::atomic::remove_file(target.loc(), &ctx.scope.recorder())
            .map_err(|e| Failure::from_io(raw, &e))?;
    } else if recursive {
        // The whole subtree is checked before anything goes, so a delete
        // never stops half way at a protected entry.
        crate::fs::refuse_protected_inside(ctx, raw, target, "delete")
            .map_err(|f| Failure::new(f.class, format!("{}; nothing was deleted", f.message)))?;
        // Never follows symlinks: a link inside is removed, not its target.
        crate::jail::atomic::remove_tree(target.loc(), &ctx.scope.recorder())
            .map_err(|e| Failure::from_io(raw, &e))?;
    } else {
        parent.rmdir().map_err(|e| {
            if e.kind() == std::io::ErrorKind::DirectoryNotEmpty {
                Failure::new(
                    Class::NotEmpty,
                    format!(
                        "{q} is a non-empty directory; pass recursive: true to delete it with \
                         everything inside"
                    ),
                )
            } else {
                Failure::from_io(raw, &e)
            }
        })?;
    }
    parent.sync_dir();
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::testkit::{Jail, assert_redacted, entry_error};
    use serde_json::json;

    const ID: &str = "coder::delete-file";

    #[tokio::test]
    async fn deletes_files_and_missing_paths_are_idempotent() {
        let j = Jail::new();
        j.write("a", "x");
        let v = j.call(ID, json!({"paths": ["a", "gone"]})).await.unwrap();
        assert_eq!(v["failed"], 0);
        assert_eq!(v["results"][0]["removed"], true);
        assert_eq!(v["results"][1]["success"], true);
        assert_eq!(v["results"][1]["removed"], false);
        assert!(!j.exists("a"));
    }

    #[tokio::test]
    async fn non_empty_directories_need_recursive() {
        let j = Jail::new();
        j.write("d/e/f", "x");
        let (c, m) = j.call(ID, json!({"paths": ["d"]})).await.unwrap_err();
        assert_eq!(c, "C214", "{m}");
        assert!(m.contains("recursive: true"), "{m}");
        assert!(j.exists("d/e/f"));
        // beside an entry that works, the refusal is that entry's error
        j.write("loose", "x");
        let v = j.call(ID, json!({"paths": ["d", "loose"]})).await.unwrap();
        assert_eq!(v["failed"], 1, "{v}");
        assert_eq!(v["results"][0]["error"]["code"], "C214");
        assert_eq!(v["results"][1]["removed"], true);
        assert!(j.exists("d/e/f") && !j.exists("loose"));
        let v = j
            .call(ID, json!({"paths": ["d"], "recursive": true}))
            .await
            .unwrap();
        assert_eq!(v["results"][0]["removed"], true);
        assert_eq!(v["failed"], 0);
        assert!(!j.exists("d"));
    }

    #[tokio::test]
    async fn recursion_refuses_protected_entries_and_deletes_nothing() {
        let j = Jail::new();
        j.write("proj/a.txt", "x");
        j.write("proj/sub/.env", "S=1");
        let (c, m) = j
            .call(ID, json!({"paths": ["proj"], "recursive": true}))
            .await
            .unwrap_err();
        assert_eq!(c, "C210", "{m}");
        assert!(m.contains("nothing was deleted"), "{m}");
        assert!(j.exists("proj/a.txt") && j.exists("proj/sub/.env"));
    }

    #[tokio::test]
    async fn roots_are_never_deleted() {
        let j = Jail::new();
        j.write("x", "x");
        let root = j.root.display().to_string();
        let (c, m) = j
            .call(ID, json!({"paths": [".", root], "recursive": true}))
            .await
            .unwrap_err();
        assert_eq!(c, "C210", "{m}");
        assert!(
            m.contains("every entry of the batch failed (2 of 2), nothing was deleted"),
            "{m}"
        );
        assert!(m.contains(".: C210 refusing to delete"), "{m}");
        assert!(
            m.contains(&format!("{root}: C210 refusing to delete")),
            "{m}"
        );
        assert!(j.exists("x"));
        // beside an entry that works, each root is still refused
        let v = j
            .call(ID, json!({"paths": [".", "x", root], "recursive": true}))
            .await
            .unwrap();
        assert_eq!(v["failed"], 2, "{v}");
        assert_eq!(v["results"][0]["error"]["code"], "C210");
        assert_eq!(v["results"][1]["removed"], true);
        assert_eq!(v["results"][2]["error"]["code"], "C210");
        assert!(j.root.is_dir());
    }

    #[tokio::test]
    async fn symlinks_are_removed_not_their_targets() {
        let j = Jail::new();
        j.write("target/keep", "x");
        std::os::unix::fs::symlink(j.path("target"), j.path("link")).unwrap();
        let v = j
            .call(ID, json!({"paths": ["link"], "recursive": true}))
            .await
            .unwrap();
        assert_eq!(v["results"][0]["removed"], true);
        assert!(j.exists("target/keep"));
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_a_missing_one() {
        let j = Jail::new();
        j.write("denied/f", "x");
        j.write(".env", "x");
        for (existing, missing) in [("denied/f", "denied/none"), (".env", "x/.env")] {
            // alone in its batch: the call fails with the entry's error
            let d = j.call(ID, json!({"paths": [existing]})).await;
            let m = j.call(ID, json!({"paths": [missing]})).await;
            assert_eq!(d.as_ref().unwrap_err().0, "C211", "{d:?}");
            assert_redacted(d, existing, m, missing);
            // beside an entry that works (a missing path deletes nothing)
            let d = j
                .call(ID, json!({"paths": [existing, "gone"]}))
                .await
                .unwrap();
            let m = j
                .call(ID, json!({"paths": [missing, "gone"]}))
                .await
                .unwrap();
            assert_eq!((&d["failed"], &m["failed"]), (&json!(1), &json!(1)));
            assert_redacted(entry_error(&d, 0), existing, entry_error(&m, 0), missing);
        }
        assert!(j.exists("denied/f") && j.exists(".env"));
    }
}
