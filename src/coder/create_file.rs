//! `coder::create-file`: batched whole-file writes with per-entry results.
//!
//! Each entry is independent: one failure never stops the others. A write is
//! atomic and durable ([`crate::jail::atomic`]); `overwrite: false` is enforced by
//! the kernel at rename time (no check-then-write race); `expected_revision`
//! refuses to replace bytes that changed since the caller read them (C221,
//! nothing written).

use super::{blocking, resolve, resolve_scope};
use crate::error::{Class, Failure, Surface, WireError};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::{Clobber, Hashed, write_hashed};
use crate::jail::record::Recorder;
use crate::policy::{Resolved, parse_octal_mode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

fn default_mode() -> String {
    "0644".to_string()
}

fn yes() -> bool {
    true
}

/// One file to create.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateFileSpec {
    /// File to create.
    pub path: String,
    /// The file's full text.
    pub content: String,
    /// When false (the default), refuse to write if `path` already exists.
    #[serde(default)]
    pub overwrite: bool,
    /// Create missing parent directories. Defaults to true so a single `coder::create-file` call can scaffold a fresh subtree.
    #[serde(default = "yes")]
    pub parents: bool,
    /// Octal permission bits as a string, e.g. "0644". Defaults to "0644".
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Optimistic-concurrency guard for an overwrite: the `revision` from any coder::read-file of this file (full, window, stat or batch entry); if the content changed the entry fails C221 unwritten.
    #[serde(default)]
    pub expected_revision: Option<String>,
}

/// Create one or more files.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "CreateFileInput")]
pub struct CreateFileInput {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Files to create, each processed independently.
    pub files: Vec<CreateFileSpec>,
    /// Optional per-call session working directory: relative paths anchor here and must stay inside it (C220).
    #[serde(default)]
    pub base_dir: Option<String>,
    /// Also answer each written file's diagnostics from its language server, after it re-checked the new text (waits up to 5 s; see coder::diagnostics).
    #[serde(default)]
    pub diagnostics: bool,
}

/// Outcome of one entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CreateFileResult {
    /// Change-history id of this entry's change (`coder::change-diff`, `shell::turns::revert`); null when nothing was changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
    /// Canonical absolute path (resolved through the jail); the caller's input verbatim when resolution failed.
    pub path: String,
    pub success: bool,
    pub bytes_written: u64,
    /// Revision (SHA-256 hex) of the exact bytes written. Supply this as `expected_revision` on a later overwrite to avoid lost updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Structured error for this entry. `code` is stable for programmatic branching (e.g. `"C213"` means already-exists; pass `overwrite=true` to replace). `message` carries the corrective action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

/// Per-entry results, in request order.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "CreateFileOutput")]
pub struct CreateFileOutput {
    /// How many entries failed (each carries its own `error`); 0 when all succeeded. When every entry fails, the call itself fails instead, with the entry's error (one entry) or each entry's error in its message.
    pub failed: u64,
    pub results: Vec<CreateFileResult>,
    /// With `diagnostics: true`: each written file's diagnostics after the server re-checked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<crate::coder::diagnostics::FileDiagnostics>>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::create-file",
        "Create one or more files atomically; per-file overwrite and parents flags. For a \
         conflict-safe overwrite pass the revision from coder::read-file as expected_revision \
         (stale revision: C221, nothing written). `content` is written byte for byte: no \
         newline is added and none converted (send \\r\\n for a CRLF file). Paths: relative to the primary root or absolute \
         inside an allowed root (see coder::info).",
        Flags {
            display: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: CreateFileInput| async move { create(&ctx, req).await },
    )
}

async fn create(ctx: &Ctx, req: CreateFileInput) -> Result<CreateFileOutput, Failure> {
    let want_diagnostics = req.diagnostics;
    let base_dir = req.base_dir.clone();
    if req.files.is_empty() {
        return Err(Failure::bad_input(
            "files is empty; pass at least one {path, content}",
        ));
    }
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let mut results = Vec::with_capacity(req.files.len());
    for spec in req.files {
        let raw = spec.path.clone();
        let outcome = match prepare(ctx, &spec, scope.as_ref()) {
            Ok((path, mode)) => {
                let max_write = ctx.runtime.config.fs.max_write_bytes;
                let rec = ctx.scope.recorder();
                let services = ctx.services.clone();
                blocking(move || {
                    let r = write_one(&spec, &path, mode, max_write, &rec)?;
                    // a later stale edit of this revision can be explained
                    services
                        .journals
                        .seen
                        .remember(&r.1, spec.content.as_bytes());
                    Ok((path, r))
                })
                .await
            }
            Err(f) => Err(f),
        };
        results.push(match outcome {
            Ok((path, (bytes, revision))) => CreateFileResult {
                change_id: ctx.scope.take_first(),
                path: path.path.display().to_string(),
                success: true,
                bytes_written: bytes,
                revision: Some(revision),
                error: None,
            },
            Err(f) => CreateFileResult {
                change_id: ctx.scope.take_first(),
                path: raw,
                success: false,
                bytes_written: 0,
                revision: None,
                error: Some(f.to_wire(Surface::Coder)),
            },
        });
    }
    let failed = crate::batch::settle(
        results.iter().map(|r| (r.path.as_str(), r.error.as_ref())),
        "was written",
    )?;
    let diagnostics = if want_diagnostics {
        let written: Vec<String> = results
            .iter()
            .filter(|r| r.error.is_none())
            .map(|r| r.path.clone())
            .collect();
        Some(crate::coder::diagnostics::after_write(ctx, &written, base_dir.as_deref()).await)
    } else {
        None
    };
    Ok(CreateFileOutput {
        results,
        failed,
        diagnostics,
    })
}

fn prepare(
    ctx: &Ctx,
    spec: &CreateFileSpec,
    scope: Option<&PathBuf>,
) -> Result<(Resolved, u32), Failure> {
    let mode = parse_octal_mode(&spec.mode)?;
    ctx.runtime.policy.check_mode_bits(mode)?;
    let r = resolve(ctx, &spec.path, scope)?;
    Ok((r, mode))
}

/// The size cap shared by every coder write.
pub fn check_write_size(raw: &str, len: u64, max_write: u64) -> Result<(), Failure> {
    if max_write > 0 && len > max_write {
        return Err(Failure::new(
            Class::TooLarge,
            format!(
                "{}: {len} bytes is over max_write_bytes ({max_write}); write it in smaller \
                 files or stream it with shell::fs::write",
                crate::error::quote(raw)
            ),
        ));
    }
    Ok(())
}

/// Refuse when the file's current bytes are not the revision the caller saw.
pub fn check_revision(raw: &str, target: &Resolved, expected: &str) -> Result<(), Failure> {
    let current = match target.loc().open_regular(raw) {
        Ok((mut file, _)) => crate::jail::atomic::revision_of_file(&mut file)
            .map_err(|e| Failure::from_io(raw, &e))?,
        Err(f)
            if f.class == Class::NotFound
                && target
                    .parent()
                    .is_ok_and(|p| p.lstat().is_ok_and(|st| st.is_none())) =>
        {
            return Err(Failure::new(
                Class::RevisionConflict,
                format!(
                    "{raw:?} no longer exists, but expected_revision {expected} was given; nothing \
                     was written. Re-check with coder::read-file, or drop expected_revision to \
                     create it"
                ),
            ));
        }
        Err(f) => return Err(f),
    };
    if current != expected {
        return Err(Failure::new(
            Class::RevisionConflict,
            format!(
                "{raw:?} changed since it was read (current revision {current}, expected \
                 {expected}); nothing was written. Re-read it with coder::read-file (a \
                 window or stat: true is enough, every read returns the current revision) and \
                 retry with that revision as expected_revision"
            ),
        ));
    }
    Ok(())
}

/// Create the parent directory when asked; explain when not.
pub fn ensure_parent(raw: &str, target: &Resolved, parents: bool) -> Result<(), Failure> {
    if target.loc().is_anchor() || target.parent().is_ok() {
        return Ok(());
    }
    if parents {
        target
            .loc()
            .make_parents(0o755)
            .map(drop)
            .map_err(|e| Failure::from_io(raw, &e))
    } else {
        Err(Failure::new(
            Class::NotFound,
            format!(
                "the parent directory of {raw:?} does not exist; pass parents: true to create it"
            ),
        ))
    }
}

fn write_one(
    spec: &CreateFileSpec,
    target: &Resolved,
    mode: u32,
    max_write: u64,
    rec: &Recorder,
) -> Result<(u64, String), Failure> {
    let raw = spec.path.as_str();
    let bytes = spec.content.as_bytes();
    check_write_size(raw, bytes.len() as u64, max_write)?;
    if target
        .loc()
        .lstat()
        .is_ok_and(|st| crate::jail::is_dir_mode(st.st_mode))
    {
        return Err(Failure::new(
            Class::WrongType,
            format!("{raw:?} is a directory; pick a file path inside it"),
        ));
    }
    if let Some(expected) = &spec.expected_revision {
        check_revision(raw, target, expected)?;
    }
    ensure_parent(raw, target, spec.parents)?;
    let clobber = if spec.overwrite || spec.expected_revision.is_some() {
        Clobber::Replace
    } else {
        Clobber::Never
    };
    let hashed = Hashed::new(bytes);
    write_hashed(target.loc(), &hashed, Some(mode), clobber, rec).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::new(
                Class::Exists,
                format!(
                    "{raw:?} already exists; pass overwrite: true to replace it (with \
                     expected_revision from coder::read-file to guard against lost updates), or \
                     edit it with coder::update-file"
                ),
            )
        } else {
            Failure::from_io(raw, &e)
        }
    })?;
    Ok((bytes.len() as u64, hashed.revision()))
}

#[cfg(test)]
mod tests {
    use crate::testkit::{Jail, assert_redacted, entry_error};
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    const ID: &str = "coder::create-file";

    #[tokio::test]
    async fn creates_with_parents_mode_and_revision() {
        let j = Jail::new();
        let v = j
            .call(
                ID,
                json!({"files": [{"path": "a/b/c.txt", "content": "hi\n", "mode": "0600"}]}),
            )
            .await
            .unwrap();
        assert_eq!(v["failed"], 0);
        let r = &v["results"][0];
        assert_eq!(r["success"], true);
        assert_eq!(r["bytes_written"], 3);
        assert_eq!(r["revision"], crate::coder::revision_of(b"hi\n"));
        assert_eq!(r["path"], j.path("a/b/c.txt").display().to_string());
        assert_eq!(j.read("a/b/c.txt"), b"hi\n");
        let mode = std::fs::metadata(j.path("a/b/c.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn existing_files_need_overwrite_and_each_entry_is_independent() {
        let j = Jail::new();
        j.write("x", "old");
        let v = j
            .call(
                ID,
                json!({"files": [
                    {"path": "x", "content": "new"},
                    {"path": "y", "content": "y"},
                    {"path": "nodir/z", "content": "z", "parents": false}
                ]}),
            )
            .await
            .unwrap();
        assert_eq!(v["failed"], 2, "{v}");
        let r = v["results"].as_array().unwrap();
        assert_eq!(r[0]["error"]["code"], "C213");
        assert!(
            r[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("overwrite: true")
        );
        assert_eq!(j.read("x"), b"old");
        assert_eq!(r[1]["success"], true);
        assert_eq!(r[2]["error"]["code"], "C211");
        assert!(
            r[2]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("parents: true")
        );
        let v = j
            .call(
                ID,
                json!({"files": [{"path": "x", "content": "new", "overwrite": true}]}),
            )
            .await
            .unwrap();
        assert_eq!(v["results"][0]["success"], true);
        assert_eq!(j.read("x"), b"new");
    }

    #[tokio::test]
    async fn stale_expected_revision_writes_nothing() {
        let j = Jail::new();
        j.write("f", "v1");
        let rev1 = crate::coder::revision_of(b"v1");
        j.write("f", "v2 by someone else");
        // the batch's only entry failed: the call fails with its error
        let (c, m) = j
            .call(
                ID,
                json!({"files": [{"path": "f", "content": "mine", "expected_revision": rev1}]}),
            )
            .await
            .unwrap_err();
        assert_eq!(c, "C221", "{m}");
        assert!(m.contains("nothing was written"), "{m}");
        assert_eq!(j.read("f"), b"v2 by someone else");
        let rev2 = crate::coder::revision_of(b"v2 by someone else");
        let v = j
            .call(
                ID,
                json!({"files": [{"path": "f", "content": "mine", "expected_revision": rev2}]}),
            )
            .await
            .unwrap();
        assert_eq!(v["results"][0]["success"], true);
        assert_eq!(v["failed"], 0);
        assert_eq!(j.read("f"), b"mine");
    }

    #[tokio::test]
    async fn caps_modes_and_types_are_enforced() {
        let j = Jail::with(|c| c.fs.max_write_bytes = 4);
        std::fs::create_dir(j.path("d")).unwrap();
        let bad = [
            json!({"path": "big", "content": "12345"}),
            json!({"path": "s", "content": "x", "mode": "4755"}),
            json!({"path": "m", "content": "x", "mode": "rw"}),
            json!({"path": "d", "content": "x", "overwrite": true}),
        ];
        let codes = ["C218", "C210", "C210", "C212"];
        // every entry failed: the call fails, with the first entry's code
        // and each entry's path and error in the message
        let (c, m) = j.call(ID, json!({"files": bad})).await.unwrap_err();
        assert_eq!(c, "C218", "{m}");
        assert!(
            m.contains("every entry of the batch failed (4 of 4), nothing was written"),
            "{m}"
        );
        for (path, code) in ["big", "s", "m", "d"].into_iter().zip(codes) {
            assert!(m.contains(&format!("{path}: {code} ")), "{path}: {m}");
        }
        assert!(m.contains("max_write_bytes (4)"), "{m}");
        assert!(!j.exists("big") && !j.exists("s") && !j.exists("m"));
        // with one entry that works, the call answers each entry's error
        let mut files = bad.to_vec();
        files.push(json!({"path": "ok", "content": "1234"}));
        let v = j.call(ID, json!({"files": files})).await.unwrap();
        assert_eq!(v["failed"], 4, "{v}");
        let r = v["results"].as_array().unwrap();
        for (entry, code) in r.iter().zip(codes) {
            assert_eq!(entry["success"], false, "{entry}");
            assert_eq!(entry["error"]["code"], code, "{entry}");
        }
        assert_eq!(r[4]["success"], true);
        assert_eq!(r[4]["error"], serde_json::Value::Null);
        assert_eq!(j.read("ok"), b"1234");
        assert!(!j.exists("big") && !j.exists("s") && !j.exists("m"));
        assert!(j.path("d").is_dir());
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_a_missing_one() {
        // Writes are refused by path, so an existing denied file and a
        // missing one answer identically: nothing can be probed.
        let j = Jail::new();
        j.write("denied/f", "x");
        j.write("a/.env", "x");
        let entry = |p: &str| json!({"path": p, "content": "x", "overwrite": true});
        let ok = json!({"path": "ok", "content": "ok", "overwrite": true});
        for (existing, missing) in [("denied/f", "denied/none"), ("a/.env", "b/.env")] {
            // alone in its batch: the call fails with the entry's error
            let d = j.call(ID, json!({"files": [entry(existing)]})).await;
            assert_eq!(d.as_ref().unwrap_err().0, "C211", "{d:?}");
            let m = j.call(ID, json!({"files": [entry(missing)]})).await;
            assert_redacted(d, existing, m, missing);
            // beside an entry that works: the entry's error, just the same
            let d = j
                .call(ID, json!({"files": [entry(existing), ok]}))
                .await
                .unwrap();
            let m = j
                .call(ID, json!({"files": [entry(missing), ok]}))
                .await
                .unwrap();
            assert_eq!((&d["failed"], &m["failed"]), (&json!(1), &json!(1)));
            assert_redacted(entry_error(&d, 0), existing, entry_error(&m, 0), missing);
        }
        assert_eq!(j.read("denied/f"), b"x");
        assert!(!j.exists("b/.env"));
    }
}
