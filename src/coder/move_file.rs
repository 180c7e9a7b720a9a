//! `coder::move`: batched move/rename with per-entry results.
//!
//! Same-filesystem moves are one atomic `rename` (with `overwrite: false`
//! enforced by the kernel via `RENAME_NOREPLACE`). Moves across filesystems
//! (`EXDEV`, e.g. between roots on different mounts) copy the file atomically
//! into place and then delete the source; if that delete fails the copy is
//! removed again, so the file exists exactly once. Directories move across
//! filesystems only by moving their contents individually. A symlink is
//! moved itself, never its target.

use super::create_file::ensure_parent;
use super::{blocking, resolve_scope};
use crate::error::{Class, Failure, Surface, WireError, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::{Clobber, Staged, rename};
use crate::jail::record::Recorder;
use crate::policy::{Resolved, Tail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn yes() -> bool {
    true
}

/// One move.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveFileSpec {
    /// Source path.
    pub from: String,
    /// Destination path.
    pub to: String,
    /// When false (the default), refuse to overwrite an existing destination. Pass `overwrite: true` to replace an existing file at `to`.
    #[serde(default)]
    pub overwrite: bool,
    /// Create missing parent directories of the destination. Defaults to true.
    #[serde(default = "yes")]
    pub parents: bool,
}

/// Move or rename one or more paths.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "MoveFileInput")]
pub struct MoveFileInput {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Entries to move. Each entry is processed independently so a single failure never aborts the rest.
    pub files: Vec<MoveFileSpec>,
    /// Optional per-call session working directory: relative paths anchor here and both endpoints must stay inside it (C220).
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// Outcome of one move.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MoveFileResult {
    /// Change-history id of this entry's change (`coder::change-diff`, `shell::turns::revert`); null when nothing was changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
    /// Canonical absolute path of the source (resolved through the jail); the caller's input verbatim when resolution failed.
    pub from: String,
    /// Canonical absolute path of the destination (resolved through the jail); the caller's input verbatim when resolution failed.
    pub to: String,
    pub success: bool,
    /// True only when the move fully completed; false for a no-op self-move (`from` and `to` resolve to the same file).
    pub moved: bool,
    /// Structured error for this entry (`"C213"`: destination exists, pass overwrite=true; `"C210"`: disallowed operation such as a cross-filesystem directory move, moving a root, or a destination that is a directory — the message then names the corrected target path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

/// Per-entry results, in request order.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "MoveFileOutput")]
pub struct MoveFileOutput {
    /// How many entries failed (each carries its own `error`); 0 when all succeeded. When every entry fails, the call itself fails instead, with the entry's error (one entry) or each entry's error in its message.
    pub failed: u64,
    pub results: Vec<MoveFileResult>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::move",
        "Move or rename one or more paths; per-entry overwrite and parents flags. Same-root moves \
         rename atomically; cross-root moves copy+delete files only (move directory contents \
         individually) and remove the copy if the delete fails. Paths: relative to the primary \
         root or absolute inside an allowed root (see coder::info).",
        Flags::NONE,
        |ctx: Ctx, req: MoveFileInput| async move { move_files(&ctx, req).await },
    )
}

async fn move_files(ctx: &Ctx, req: MoveFileInput) -> Result<MoveFileOutput, Failure> {
    if req.files.is_empty() {
        return Err(Failure::bad_input(
            "files is empty; pass at least one {from, to}",
        ));
    }
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let mut results = Vec::with_capacity(req.files.len());
    for spec in req.files {
        let policy = &ctx.runtime.policy;
        let ends = policy
            .resolve(&spec.from, Surface::Coder, Tail::Entry, scope.as_deref())
            .and_then(|f| {
                if f.exists {
                    Ok(f)
                } else {
                    Err(Failure::not_found(&spec.from))
                }
            })
            .and_then(|f| {
                policy
                    .resolve(&spec.to, Surface::Coder, Tail::Entry, scope.as_deref())
                    .map(|t| (f, t))
            });
        let outcome = match ends {
            Err(f) => Err((None, f)),
            Ok((from, to)) => {
                let ctx2 = ctx.clone();
                let s = spec.clone();
                let (fp, tp) = (from.clone(), to.clone());
                blocking(move || Ok(move_one(&ctx2, &s, &fp, &tp)))
                    .await
                    .unwrap_or_else(Err)
                    .map(|moved| (from.path.clone(), to.path.clone(), moved))
                    .map_err(|f| (Some((from.path, to.path)), f))
            }
        };
        results.push(match outcome {
            Ok((from, to, moved)) => MoveFileResult {
                change_id: ctx.scope.take_first(),
                from: from.display().to_string(),
                to: to.display().to_string(),
                success: true,
                moved,
                error: None,
            },
            Err((paths, f)) => {
                let (from, to) = match paths {
                    Some((a, b)) => (a.display().to_string(), b.display().to_string()),
                    None => (spec.from.clone(), spec.to.clone()),
                };
                MoveFileResult {
                    change_id: ctx.scope.take_first(),
                    from,
                    to,
                    success: false,
                    moved: false,
                    error: Some(f.to_wire(Surface::Coder)),
                }
            }
        });
    }
    let failed = crate::batch::settle(
        results.iter().map(|r| (r.from.as_str(), r.error.as_ref())),
        "was moved",
    )?;
    Ok(MoveFileOutput { results, failed })
}

fn move_one(
    ctx: &Ctx,
    spec: &MoveFileSpec,
    from: &Resolved,
    to: &Resolved,
) -> Result<bool, Failure> {
    let raw = spec.from.as_str();
    let q = quote(raw);
    if from.path == to.path {
        return Ok(false);
    }
    if ctx.runtime.policy.holds_a_root(&from.path, Surface::Coder) {
        return Err(Failure::bad_input(format!(
            "refusing to move {q}: it is (or contains) an allowed root"
        )));
    }
    let src = from.parent().map_err(|e| Failure::from_io(raw, &e))?;
    let src_md = src
        .lstat()
        .map_err(|e| Failure::from_io(raw, &e))?
        .ok_or_else(|| Failure::not_found(raw))?;
    let src_is_dir = crate::jail::is_dir_mode(src_md.st_mode);
    if src_is_dir && to.path.starts_with(&from.path) {
        return Err(Failure::bad_input(format!(
            "cannot move the directory {q} into itself ({})",
            quote(&spec.to)
        )));
    }
    // Moving a directory re-roots everything inside it: a protected entry
    // would come out under a name the protection no longer matches.
    if src_is_dir {
        crate::fs::refuse_protected_inside(ctx, raw, from, "move")?;
    }
    if let Ok(Some(dst_md)) = to.parent().and_then(|p| p.lstat()) {
        if crate::jail::is_dir_mode(dst_md.st_mode) {
            let name = from
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let corrected = to.path.join(&name);
            return Err(Failure::bad_input(format!(
                "destination {} is an existing directory; to move {q} into it, pass to: \
                 \"{}\"",
                quote(&spec.to),
                corrected.display()
            )));
        }
        if !spec.overwrite {
            return Err(exists(&spec.to));
        }
    }
    ensure_parent(&spec.to, to, spec.parents)?;
    let clobber = if spec.overwrite {
        Clobber::Replace
    } else {
        Clobber::Never
    };
    let rec = ctx.scope.recorder();
    match rename(from.loc(), to.loc(), clobber, &rec) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(nix::libc::EXDEV) => {
            cross_device(spec, from, to, &src_md, clobber, &rec)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(exists(&spec.to));
        }
        Err(e) => return Err(Failure::from_io(raw, &e)),
    }
    Ok(true)
}

fn exists(raw_to: &str) -> Failure {
    Failure::new(
        Class::Exists,
        format!(
            "destination {} already exists; pass overwrite: true to replace it",
            quote(raw_to)
        ),
    )
}

/// Copy-then-delete for a regular file on another filesystem.
///
/// The copy is staged beside the destination and fsynced; an existing
/// destination is kept under a staging hard link until the source is gone,
/// so a failure at any step leaves either the old state or the new one —
/// never a lost file.
fn cross_device(
    spec: &MoveFileSpec,
    from: &Resolved,
    to: &Resolved,
    src_md: &nix::sys::stat::FileStat,
    clobber: Clobber,
    rec: &Recorder,
) -> Result<(), Failure> {
    let raw = spec.from.as_str();
    if !crate::jail::is_file_mode(src_md.st_mode) {
        return Err(Failure::bad_input(format!(
            "{} is a directory (or special file) on another filesystem than {}; \
             cross-filesystem moves handle files only — create the directory at the destination \
             and move its files individually",
            quote(raw),
            quote(&spec.to)
        )));
    }
    let io_to = |e: std::io::Error| Failure::from_io(&spec.to, &e);
    let (mut file, _) = from.loc().open_regular(raw)?;
    let mut stage = Staged::new(to.loc(), rec).map_err(io_to)?;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).map_err(|e| Failure::from_io(raw, &e))?;
        if n == 0 {
            break;
        }
        stage.write_all(&buf[..n]).map_err(io_to)?;
    }
    let dst = stage.parent().clone();
    let sealed = stage.seal(src_md.st_mode & 0o7777, None).map_err(io_to)?;
    // Keep the old destination reachable until the move is complete.
    let backup = if clobber == Clobber::Replace && dst.lstat().is_ok_and(|st| st.is_some()) {
        Some(dst.backup().map_err(io_to)?)
    } else {
        None
    };
    if let Err(e) = sealed.commit_with(clobber) {
        if let Some(b) = backup {
            b.discard();
        }
        return Err(if e.kind() == std::io::ErrorKind::AlreadyExists {
            exists(&spec.to)
        } else {
            io_to(e)
        });
    }
    let src = from.parent().map_err(|e| Failure::from_io(raw, &e))?;
    if let Err(e) = crate::jail::atomic::remove_file(from.loc(), rec) {
        // Undo: the old destination back (or no destination), source intact.
        let undo = match backup {
            Some(b) => b.restore(),
            None => dst.unlink(),
        };
        return Err(Failure::io(format!(
            "copied {} to {} but could not delete the source ({e}); {}",
            quote(raw),
            quote(&spec.to),
            match undo {
                Ok(()) => "the destination was restored, nothing changed".to_string(),
                Err(u) => format!("restoring the destination failed too ({u}); check both paths"),
            }
        )));
    }
    src.sync_dir();
    if let Some(b) = backup {
        b.discard();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::testkit::{Jail, assert_redacted, entry_error};
    use serde_json::json;

    const ID: &str = "coder::move";

    #[tokio::test]
    async fn renames_with_parents_and_reports_canonical_paths() {
        let j = Jail::new();
        j.write("a.txt", "x");
        let v = j
            .call(
                ID,
                json!({"files": [{"from": "a.txt", "to": "new/dir/b.txt"}]}),
            )
            .await
            .unwrap();
        assert_eq!(v["failed"], 0);
        let r = &v["results"][0];
        assert_eq!(r["moved"], true);
        assert_eq!(r["to"], j.path("new/dir/b.txt").display().to_string());
        assert_eq!(j.read("new/dir/b.txt"), b"x");
        assert!(!j.exists("a.txt"));
    }

    #[tokio::test]
    async fn existing_destination_needs_overwrite() {
        let j = Jail::new();
        j.write("a", "a");
        j.write("b", "b");
        let (c, m) = j
            .call(ID, json!({"files": [{"from": "a", "to": "b"}]}))
            .await
            .unwrap_err();
        assert_eq!(c, "C213", "{m}");
        assert!(m.contains("overwrite: true"), "{m}");
        assert_eq!(j.read("b"), b"b");
        let v = j
            .call(
                ID,
                json!({"files": [{"from": "a", "to": "b", "overwrite": true}]}),
            )
            .await
            .unwrap();
        assert_eq!(v["results"][0]["moved"], true);
        assert_eq!(j.read("b"), b"a");
    }

    #[tokio::test]
    async fn directory_destination_names_the_corrected_target() {
        let j = Jail::new();
        j.write("f.rs", "x");
        std::fs::create_dir(j.path("src")).unwrap();
        let (c, m) = j
            .call(ID, json!({"files": [{"from": "f.rs", "to": "src"}]}))
            .await
            .unwrap_err();
        assert_eq!(c, "C210", "{m}");
        let want = j.path("src/f.rs").display().to_string();
        assert!(m.contains(&format!("to: {want:?}")), "{m}");
        assert!(j.exists("f.rs"));
    }

    #[tokio::test]
    async fn self_move_is_a_no_op_and_entries_are_independent() {
        let j = Jail::new();
        j.write("s", "x");
        let v = j
            .call(
                ID,
                json!({"files": [{"from": "s", "to": "./s"}, {"from": "missing", "to": "t"}]}),
            )
            .await
            .unwrap();
        assert_eq!(v["failed"], 1, "{v}");
        assert_eq!(v["results"][0]["success"], true);
        assert_eq!(v["results"][0]["moved"], false);
        assert_eq!(v["results"][1]["error"]["code"], "C211");
        assert_eq!(v["results"][1]["from"], "missing");
    }

    #[tokio::test]
    async fn directories_move_and_not_into_themselves() {
        let j = Jail::new();
        j.write("d/x", "x");
        let (c, m) = j
            .call(ID, json!({"files": [{"from": "d", "to": "d/sub/d"}]}))
            .await
            .unwrap_err();
        assert_eq!(c, "C210", "{m}");
        assert!(m.contains("into itself"), "{m}");
        assert!(j.exists("d/x") && !j.exists("d/sub"));
        let v = j
            .call(ID, json!({"files": [{"from": "d", "to": "e"}]}))
            .await
            .unwrap();
        assert_eq!(v["results"][0]["moved"], true);
        assert_eq!(j.read("e/x"), b"x");
    }

    /// Roots on two filesystems (the temp dir and a tmpfs), when the machine
    /// has both: files move by copy-then-delete, directories are refused.
    #[tokio::test]
    async fn cross_filesystem_moves_copy_files_and_refuse_directories() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let Ok(other) = tempfile::TempDir::new_in("/dev/shm") else {
            return;
        };
        let other_root = other.path().canonicalize().unwrap();
        let j = Jail::with(|c| c.fs.host_roots.push(other_root.clone()));
        let dev = |p: &std::path::Path| std::fs::metadata(p).unwrap().dev();
        if dev(&j.root) == dev(&other_root) {
            return;
        }
        let src = j.write("f.txt", "payload");
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o640)).unwrap();
        let to = other_root.join("moved/f.txt");
        let v = j
            .call(ID, json!({"files": [{"from": "f.txt", "to": to}]}))
            .await
            .unwrap();
        assert_eq!(v["results"][0]["moved"], true, "{v}");
        assert!(!j.exists("f.txt"));
        assert_eq!(std::fs::read(&to).unwrap(), b"payload");
        assert_eq!(
            std::fs::metadata(&to).unwrap().permissions().mode() & 0o777,
            0o640
        );
        j.write("d/x", "x");
        let (c, m) = j
            .call(
                ID,
                json!({"files": [{"from": "d", "to": other_root.join("d")}]}),
            )
            .await
            .unwrap_err();
        assert_eq!(c, "C210", "{m}");
        assert!(m.contains("another filesystem"), "{m}");
        assert!(j.exists("d/x") && !other_root.join("d").exists());
    }

    #[tokio::test]
    async fn directories_holding_protected_entries_do_not_move() {
        let j = Jail::new();
        j.write("cfg/secrets/api.txt", "k");
        j.write("cfg/plain.txt", "x");
        let (c, m) = j
            .call(ID, json!({"files": [{"from": "cfg", "to": "pub"}]}))
            .await
            .unwrap_err();
        assert_eq!(c, "C210", "{m}");
        assert!(m.contains("non_accessible_globs"), "{m}");
        assert!(j.exists("cfg/secrets/api.txt") && !j.exists("pub"));
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_a_missing_one() {
        let j = Jail::new();
        j.write("denied/f", "x");
        j.write("s", "x");
        let entry = |from: &str| json!({"from": from, "to": "x"});
        // alone in its batch: the call fails with the entry's error
        let d = j.call(ID, json!({"files": [entry("denied/f")]})).await;
        let m = j.call(ID, json!({"files": [entry("nope/f")]})).await;
        assert_eq!(d.as_ref().unwrap_err().0, "C211", "{d:?}");
        assert_redacted(d, "denied/f", m, "nope/f");
        // beside an entry that works (a self-move moves nothing)
        let same = json!({"from": "s", "to": "s"});
        let d = j
            .call(ID, json!({"files": [entry("denied/f"), same]}))
            .await
            .unwrap();
        let m = j
            .call(ID, json!({"files": [entry("nope/f"), same]}))
            .await
            .unwrap();
        assert_eq!((&d["failed"], &m["failed"]), (&json!(1), &json!(1)));
        assert_redacted(entry_error(&d, 0), "denied/f", entry_error(&m, 0), "nope/f");
        assert!(j.exists("denied/f") && !j.exists("x"));
        j.write("ok", "x");
        let (c, m) = j
            .call(ID, json!({"files": [{"from": "ok", "to": ".env"}]}))
            .await
            .unwrap_err();
        assert_eq!(c, "C211", "{m}");
        assert!(j.exists("ok") && !j.exists(".env"));
    }
}
