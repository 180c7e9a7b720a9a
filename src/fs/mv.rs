//! `shell::fs::mv`: rename one path within one filesystem.
//!
//! Both ends are addressed as entries (a symlink is moved, or replaced, as a
//! link). Without `overwrite` the rename is [`crate::jail::atomic::rename`] with
//! [`Clobber::Never`] (`renameat2(RENAME_NOREPLACE)`), so an existing
//! destination is S213 even against a racing creator: the kernel refuses
//! atomically. With `overwrite` the destination is replaced atomically;
//! `overwrote` reports whether it existed just before.
//!
//! A jail root cannot be moved (S210). A directory holding protected
//! entries cannot be moved either (S210): a new name could take them out
//! of their protected glob. Across filesystems rename(2) fails; the error
//! points to `coder::move`, which copies and deletes.

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::Clobber;
use crate::policy::Tail;
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MvRequest {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Source path; jail-relative when fs.host_roots are set, else absolute.
    pub src: String,
    /// Destination path; jail-relative when fs.host_roots are set, else absolute.
    pub dst: String,
    /// Replace an existing destination instead of returning an error.
    #[serde(default)]
    pub overwrite: bool,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MvResponse {
    /// Change-history id of the change (`coder::change-diff`); null when none was journaled (sandbox targets, nothing changed).
    #[serde(default)]
    pub change_id: Option<String>,
    /// True when the move/rename succeeded.
    pub moved: bool,
    /// Source path. Empty for sandbox targets.
    #[serde(default)]
    pub src: String,
    /// Destination path. Empty for sandbox targets.
    #[serde(default)]
    pub dst: String,
    /// True when an existing destination was overwritten. Host only (sandbox targets default this to false, not a signal there). Best-effort: derived from a pre-rename existence check, so under a concurrent writer racing the destination it may under-report (and an `overwrite:false` move can still replace a file created in that window).
    #[serde(default)]
    pub overwrote: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::mv",
        "Move or rename a file or directory. `overwrite: true` allows replacing an existing dst. \
         Returns { moved, src, dst, overwrote }. Errors return { code, message }; common: S211 \
         src not found or not accessible, S213 dst exists, S215 jail escape. coder::move moves \
         several paths per call.",
        Flags::NONE,
        mv,
    )
}

pub async fn mv(ctx: Ctx, req: MvRequest) -> Result<MvResponse, Failure> {
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        #[derive(Deserialize)]
        struct Moved {
            moved: bool,
        }
        let m: Moved = super::forward(
            &ctx,
            "sandbox::fs::mv",
            serde_json::json!({"sandbox_id": id, "src": req.src, "dst": req.dst, "overwrite": req.overwrite}),
        )
        .await?;
        return Ok(MvResponse {
            change_id: ctx.scope.take_first(),
            moved: m.moved,
            src: String::new(),
            dst: String::new(),
            overwrote: false,
        });
    }
    let policy = &ctx.runtime.policy;
    let src = policy.resolve_existing(&req.src, Surface::Shell, Tail::Entry, None)?;
    let dst = policy.resolve(&req.dst, Surface::Shell, Tail::Entry, None)?;
    super::refuse_root(&ctx, &req.src, &src.path, "move")?;
    super::refuse_root(&ctx, &req.dst, &dst.path, "replace")?;
    let (raw_src, raw_dst, overwrite) = (req.src.clone(), req.dst.clone(), req.overwrite);
    let ctx2 = ctx.clone();
    super::blocking(move || {
        let md = src
            .parent()
            .and_then(|p| p.lstat())
            .map_err(|e| Failure::from_io(&raw_src, &e))?
            .ok_or_else(|| Failure::not_found(&raw_src))?;
        if crate::jail::is_dir_mode(md.st_mode) {
            if dst.path.starts_with(&src.path) {
                return Err(Failure::bad_input(format!(
                    "cannot move {raw_src:?} into itself ({raw_dst:?})"
                )));
            }
            super::refuse_protected_inside(&ctx2, &raw_src, &src, "move")?;
        }
        let existed = dst
            .parent()
            .is_ok_and(|p| p.lstat().is_ok_and(|st| st.is_some()));
        let exists_error = || {
            Failure::new(
                Class::Exists,
                format!(
                    "destination {raw_dst:?} already exists; pass overwrite: true to replace it"
                ),
            )
        };
        if !overwrite && existed {
            return Err(exists_error());
        }
        let clobber = if overwrite {
            Clobber::Replace
        } else {
            Clobber::Never
        };
        crate::jail::atomic::rename(src.loc(), dst.loc(), clobber, &ctx2.scope.recorder()).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => exists_error(),
            std::io::ErrorKind::CrossesDevices => Failure::io(format!(
                "{raw_src:?} and {raw_dst:?} are on different filesystems and shell::fs::mv only \
                 renames; use coder::move, which copies and deletes"
            )),
            std::io::ErrorKind::NotFound => {
                // src was checked above: a missing dst parent is the usual cause.
                Failure::not_found(&raw_dst)
            }
            _ => Failure::from_io(&raw_dst, &e),
        })?;
        Ok(MvResponse {
            change_id: ctx2.scope.take_first(),
            moved: true,
            src: raw_src,
            dst: raw_dst,
            overwrote: overwrite && existed,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;

    #[tokio::test]
    async fn renames_and_overwrites_on_request() {
        let k = Kit::jailed();
        k.file("a", "A");
        let r = k.ok("shell::fs::mv", json!({"src": "a", "dst": "b"})).await;
        assert_eq!(
            r,
            json!({"moved": true, "src": "a", "dst": "b", "overwrote": false})
        );
        assert_eq!(k.read("b"), "A");
        k.file("c", "C");
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "c", "dst": "b"}))
                .await
                .code,
            "S213"
        );
        assert_eq!(k.read("b"), "A");
        let r = k
            .ok(
                "shell::fs::mv",
                json!({"src": "c", "dst": "b", "overwrite": true}),
            )
            .await;
        assert_eq!(r["overwrote"], true);
        assert_eq!(k.read("b"), "C");
        // a link moves as a link
        std::os::unix::fs::symlink(k.outside.path(), k.root.join("l")).unwrap();
        k.ok("shell::fs::mv", json!({"src": "l", "dst": "l2"}))
            .await;
        assert!(
            std::fs::symlink_metadata(k.root.join("l2"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        k.file("d/x", "1");
        k.ok("shell::fs::mv", json!({"src": "d", "dst": "e"})).await;
        assert_eq!(k.read("e/x"), "1");
    }

    #[tokio::test]
    async fn mv_errors() {
        let k = Kit::jailed();
        k.file("a", "A");
        k.file("p/.env", "S");
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "nope", "dst": "b"}))
                .await
                .code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "a", "dst": "no/b"}))
                .await
                .code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "a", "dst": "../b"}))
                .await
                .code,
            "S215"
        );
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "a", "dst": ".env"}))
                .await
                .code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": ".", "dst": "x"}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "p", "dst": "q"}))
                .await
                .code,
            "S210"
        );
        assert!(k.root.join("p/.env").exists());
        k.dir("d");
        assert_eq!(
            k.err("shell::fs::mv", json!({"src": "d", "dst": "d/in"}))
                .await
                .code,
            "S210"
        );
        assert_eq!(k.read("a"), "A");
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::mv", |p| json!({"src": p, "dst": "elsewhere"})).await;
    }

    #[tokio::test]
    async fn denied_destination_reads_like_missing_destination_parent() {
        for k in [Kit::jailed(), Kit::unjailed()] {
            let denied = denied_fixtures(&k);
            k.file("src.txt", "s");
            let src = k.p("src.txt");
            for d in denied {
                let missing = missing_twin(&k, "nope", &d);
                let m = k
                    .err("shell::fs::mv", json!({"src": src, "dst": missing}))
                    .await;
                assert_eq!(m.code, "S211");
                let e = k
                    .err(
                        "shell::fs::mv",
                        json!({"src": src, "dst": d, "overwrite": true}),
                    )
                    .await;
                assert_eq!(
                    e.message.replace(&format!("{d:?}"), "P"),
                    m.message.replace(&format!("{missing:?}"), "P")
                );
            }
        }
    }

    #[tokio::test]
    async fn sandbox_defaults_host_only_fields() {
        let k = Kit::jailed();
        k.sandbox_answers("sandbox::fs::mv", Ok(json!({"moved": true})));
        let r = k
            .ok(
                "shell::fs::mv",
                json!({"src": "/a", "dst": "/b", "target": sandbox_target()}),
            )
            .await;
        assert_eq!(
            r,
            json!({"moved": true, "src": "", "dst": "", "overwrote": false})
        );
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "src": "/a", "dst": "/b", "overwrite": false})
        );
    }
}
