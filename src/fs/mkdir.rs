//! `shell::fs::mkdir`: create a directory.
//!
//! `mode` (default `0755`) is applied exactly, not through the umask;
//! special bits only with `fs.allow_special_bits`. `parents: true` creates
//! missing parents (with `0755`) and is idempotent: an existing directory
//! answers `created: false, already_existed: true`. Without `parents`, an
//! existing path is S213 and a missing parent the redacted S211.

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MkdirRequest {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// Octal permission string, e.g. "0755".
    #[serde(default = "default_dir_mode")]
    pub mode: String,
    /// Create missing parent directories.
    #[serde(default)]
    pub parents: bool,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

fn default_dir_mode() -> String {
    "0755".to_string()
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MkdirResponse {
    /// True when a new directory was created; false when it already existed (only possible with `parents: true`, which is idempotent).
    pub created: bool,
    /// The directory path that was targeted. Empty for sandbox targets.
    #[serde(default)]
    pub path: String,
    /// True when the path already existed and `parents` was set. Host only; sandbox targets default this to false (not a signal there).
    #[serde(default)]
    pub already_existed: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::mkdir",
        "Create a directory. `mode` is an octal string like \"0755\". `parents: true` creates \
         missing parents and is idempotent. Returns { created, path, already_existed }. Errors \
         return { code, message }; common: S210 bad mode, S213 exists, S215 jail escape.",
        Flags::NONE,
        mkdir,
    )
}

pub async fn mkdir(ctx: Ctx, req: MkdirRequest) -> Result<MkdirResponse, Failure> {
    let mode = super::checked_mode(&ctx, &req.mode)?;
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        #[derive(Deserialize)]
        struct Made {
            created: bool,
        }
        let made: Made = super::forward(
            &ctx,
            "sandbox::fs::mkdir",
            serde_json::json!({"sandbox_id": id, "path": req.path, "mode": req.mode, "parents": req.parents}),
        )
        .await?;
        return Ok(MkdirResponse {
            created: made.created,
            path: String::new(),
            already_existed: false,
        });
    }
    let resolved = ctx
        .runtime
        .policy
        .resolve(&req.path, Surface::Shell, Tail::Follow, None)?;
    let raw = req.path.clone();
    let parents = req.parents;
    super::blocking(move || {
        let q = crate::error::quote(&raw);
        let is_dir = |r: &crate::policy::Resolved| {
            r.loc()
                .lstat()
                .is_ok_and(|st| crate::jail::is_dir_mode(st.st_mode))
        };
        if let Ok(st) = resolved.loc().lstat() {
            if !parents {
                return Err(Failure::new(
                    Class::Exists,
                    format!(
                        "{q} already exists; pass parents: true to accept an existing \
                         directory, or pick another name"
                    ),
                ));
            }
            if !crate::jail::is_dir_mode(st.st_mode) {
                return Err(Failure::new(
                    Class::Exists,
                    format!("{q} already exists and is not a directory"),
                ));
            }
            return Ok(MkdirResponse {
                created: false,
                path: raw,
                already_existed: true,
            });
        }
        let parent = if parents {
            resolved.loc().make_parents(0o755)
        } else {
            resolved.parent()
        }
        .map_err(|e| Failure::from_io(&raw, &e))?;
        match parent.mkdir(0o700) {
            Ok(()) => {}
            // Lost a race with another creator: idempotent with parents.
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists
                    && parents
                    && is_dir(&resolved) =>
            {
                return Ok(MkdirResponse {
                    created: false,
                    path: raw,
                    already_existed: true,
                });
            }
            Err(e) => return Err(Failure::from_io(&raw, &e)),
        }
        let made = resolved
            .loc()
            .open_path()
            .map_err(|e| Failure::from_io(&raw, &e))?;
        crate::jail::chmod_fd(std::os::fd::AsFd::as_fd(&made), mode)
            .map_err(|e| Failure::from_io(&raw, &e))?;
        parent.sync_dir();
        Ok(MkdirResponse {
            created: true,
            path: raw,
            already_existed: false,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn creates_with_exact_mode_and_is_idempotent_with_parents() {
        let k = Kit::jailed();
        let r = k
            .ok("shell::fs::mkdir", json!({"path": "d", "mode": "0750"}))
            .await;
        assert_eq!(
            r,
            json!({"created": true, "path": "d", "already_existed": false})
        );
        let m = std::fs::metadata(k.root.join("d"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(m, 0o750);
        let again = k
            .ok("shell::fs::mkdir", json!({"path": "d", "parents": true}))
            .await;
        assert_eq!(
            again,
            json!({"created": false, "path": "d", "already_existed": true})
        );
        let deep = k
            .ok(
                "shell::fs::mkdir",
                json!({"path": "a/b/c", "parents": true}),
            )
            .await;
        assert_eq!(deep["created"], true);
        assert!(k.root.join("a/b/c").is_dir());
        let m = std::fs::metadata(k.root.join("a/b/c"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(m, 0o755);
    }

    #[tokio::test]
    async fn mkdir_errors() {
        let k = Kit::jailed();
        k.dir("d");
        k.file("f", "");
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "d"})).await.code,
            "S213"
        );
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "f", "parents": true}))
                .await
                .code,
            "S213"
        );
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "x/y"})).await.code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "n", "mode": "abc"}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "n", "mode": "1777"}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "../n"}))
                .await
                .code,
            "S215"
        );
        assert_eq!(
            k.err("shell::fs::mkdir", json!({"path": "f/sub"}))
                .await
                .code,
            "S212"
        );
        assert!(!k.root.join("n").exists());
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::mkdir", |p| json!({"path": p})).await;
    }

    #[tokio::test]
    async fn sandbox_defaults_host_only_fields() {
        let k = Kit::jailed();
        k.sandbox_answers("sandbox::fs::mkdir", Ok(json!({"created": true})));
        let r = k
            .ok(
                "shell::fs::mkdir",
                json!({"path": "/w", "parents": true, "target": sandbox_target()}),
            )
            .await;
        assert_eq!(
            r,
            json!({"created": true, "path": "", "already_existed": false})
        );
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "path": "/w", "mode": "0755", "parents": true})
        );
    }
}
