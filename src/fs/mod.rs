//! `shell::fs::*`: the byte-level filesystem surface.
//!
//! One module a function (`ls`, `stat`, `read`, `write`, `mkdir`, `rm`,
//! `chmod`, `mv`, `grep`, `sed`), plus what they share: [`tree`] (the walk
//! behind grep and sed) and the helpers below. Whole files are replaced only
//! through [`crate::jail::atomic`] (temp file beside the target, fsync, rename,
//! directory fsync).
//!
//! Rules every function here keeps:
//! - every wire path goes through `ctx.runtime.policy.resolve*` and nothing
//!   else; this module never canonicalizes a path itself;
//! - error messages quote the path as the caller wrote it, and "missing",
//!   "denied", "protected" and "denylisted" are one [`Failure::not_found`];
//! - entries met while walking a tree are checked with
//!   `policy.is_protected` and never read, written, chmod-ed or removed when
//!   protected; symlinks met while walking are never followed;
//! - blocking filesystem work runs on blocking threads ([`blocking`]);
//!   memory stays bounded whatever the file size;
//! - `target: {kind: "sandbox"}` forwards to the matching `sandbox::fs::*`
//!   function (see [`forward`]) with the contract's defaults for the
//!   host-only response fields.

pub mod chmod;
pub mod grep;
pub mod ls;
pub mod mkdir;
pub mod mv;
pub mod read;
pub mod rm;
pub mod sed;
pub mod stat;
pub mod tree;
pub mod write;

#[cfg(test)]
pub(crate) mod testkit;

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, FunctionDef};
use crate::sandbox::Target;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Every `shell::fs::*` catalog entry.
pub fn defs() -> Vec<FunctionDef> {
    vec![
        ls::def(),
        stat::def(),
        read::def(),
        write::def(),
        mkdir::def(),
        rm::def(),
        chmod::def(),
        mv::def(),
        grep::def(),
        sed::def(),
    ]
}

pub use crate::runtime::blocking;

/// Permission bits (incl. setuid/setgid/sticky) as the wire shows them: `"0644"`.
pub fn mode_string(mode: u32) -> String {
    format!("{:04o}", mode & 0o7777)
}

/// Modification time in whole seconds since the Unix epoch.
pub fn mtime_secs(md: &std::fs::Metadata) -> i64 {
    md.mtime()
}

/// The sandbox a call targets, after checking sandbox calls are enabled and
/// no host-only field is present; `None` for the host.
pub fn sandbox_of<'t>(
    ctx: &Ctx,
    target: &'t Target,
    host_only: &[(&str, bool)],
) -> Result<Option<&'t str>, Failure> {
    match target {
        Target::Host => Ok(None),
        Target::Sandbox { sandbox_id } => {
            crate::sandbox::check_sandbox_call(ctx, host_only)?;
            Ok(Some(sandbox_id.as_str()))
        }
    }
}

/// Forward to `sandbox::fs::<op>` and decode its answer.
pub async fn forward<T: DeserializeOwned>(
    ctx: &Ctx,
    function_id: &str,
    payload: Value,
) -> Result<T, Failure> {
    let timeout = Some(ctx.runtime.config.max_timeout_ms);
    let value = crate::sandbox::forward(ctx, function_id, payload, timeout).await?;
    serde_json::from_value(value.clone()).map_err(|e| {
        Failure::io(format!(
            "{function_id} answered with an unexpected shape ({e}): {}",
            truncate_for_message(&value.to_string())
        ))
    })
}

fn truncate_for_message(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Parse and police an octal mode string (S210 on a bad one).
pub fn checked_mode(ctx: &Ctx, mode: &str) -> Result<u32, Failure> {
    let bits = crate::policy::parse_octal_mode(mode)?;
    ctx.runtime.policy.check_mode_bits(bits)?;
    Ok(bits)
}

/// Refuse an operation that would remove or move a jail root (or `/`).
pub fn refuse_root(ctx: &Ctx, raw: &str, abs: &Path, verb: &str) -> Result<(), Failure> {
    if ctx.runtime.policy.holds_a_root(abs, Surface::Shell) {
        return Err(Failure::bad_input(format!(
            "refusing to {verb} {raw:?}: it is (or contains) a jail root or the filesystem root; \
             {verb} entries inside it instead"
        )));
    }
    Ok(())
}

/// The path to report for an entry found under a walked directory: the
/// caller's own spelling of the root joined with the entry's relative path,
/// so results can be passed straight back in the next call.
pub fn display_path(raw_root: &str, rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        return raw_root.to_string();
    }
    PathBuf::from(raw_root)
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// A wrong-type failure (212).
pub fn wrong_type(message: impl Into<String>) -> Failure {
    Failure::new(Class::WrongType, message)
}

/// Refuse to remove or move the directory `dir` (resolved from `raw`) when
/// doing so would take protected entries along: when it is or holds a path
/// of `fs.denylist_paths` — decided from the list alone, so the refusal
/// says nothing about whether a hidden entry exists — or when a walk by
/// handle finds an entry matched by `code.non_accessible_globs` (listings
/// show those anyway).
pub fn refuse_protected_inside(
    ctx: &Ctx,
    raw: &str,
    dir: &crate::policy::Resolved,
    verb: &str,
) -> Result<(), Failure> {
    let policy = &ctx.runtime.policy;
    let q = crate::error::quote(raw);
    if policy.holds_denylisted(&dir.path) {
        return Err(Failure::bad_input(format!(
            "refusing to {verb} {q}: it is or contains a path of fs.denylist_paths; \
             {verb} the other entries individually"
        )));
    }
    if let Some(found) = find_glob_protected(ctx, dir) {
        return Err(Failure::bad_input(format!(
            "refusing to {verb} {q}: it contains {}, an entry matched by \
             code.non_accessible_globs; {verb} the other entries individually",
            found.display()
        )));
    }
    Ok(())
}

/// The first entry under `dir` matched by `code.non_accessible_globs`,
/// walking by handle without following symlinks.
pub fn find_glob_protected(ctx: &Ctx, dir: &crate::policy::Resolved) -> Option<PathBuf> {
    let policy = &ctx.runtime.policy;
    let mut found = None;
    crate::jail::walk::walk(dir.loc(), Default::default(), |node| {
        if node.depth > 0 && policy.is_non_accessible(node.path) {
            found = Some(node.path.to_path_buf());
            return crate::jail::walk::Step::Stop;
        }
        crate::jail::walk::Step::Descend
    });
    found
}

#[cfg(test)]
mod contract_tests {
    /// The catalog registers exactly the published contract of every
    /// `shell::fs::*` function: description, metadata and both schemas.
    #[test]
    fn every_shell_fs_function_matches_the_published_contract() {
        crate::testkit::assert_matches_contract(
            include_str!("../../tests/fixtures/contract-shell-fs.json"),
            10,
        );
    }
}

#[cfg(test)]
mod sandbox_tests {
    use super::testkit::*;
    use crate::error::WireError;
    use serde_json::{Value, json};

    /// One valid sandbox-targeted payload per function.
    fn payloads() -> Vec<(&'static str, Value)> {
        let t = sandbox_target();
        let chan = json!({"channel_id": "c", "access_key": "k", "direction": "read"});
        vec![
            ("shell::fs::ls", json!({"path": "/w", "target": t})),
            ("shell::fs::stat", json!({"path": "/w", "target": t})),
            ("shell::fs::read", json!({"path": "/w", "target": t})),
            (
                "shell::fs::write",
                json!({"path": "/w", "content": chan, "target": t}),
            ),
            ("shell::fs::mkdir", json!({"path": "/w", "target": t})),
            ("shell::fs::rm", json!({"path": "/w", "target": t})),
            (
                "shell::fs::chmod",
                json!({"path": "/w", "mode": "0644", "target": t}),
            ),
            (
                "shell::fs::mv",
                json!({"src": "/a", "dst": "/b", "target": t}),
            ),
            (
                "shell::fs::grep",
                json!({"path": "/w", "pattern": "x", "target": t}),
            ),
            (
                "shell::fs::sed",
                json!({"path": "/w", "pattern": "x", "replacement": "y", "target": t}),
            ),
        ]
    }

    #[tokio::test]
    async fn disabled_sandboxes_refuse_every_function_with_210() {
        let k = Kit::build(|c, _| c.sandbox.enabled = false);
        for (id, payload) in payloads() {
            let e = k.err(id, payload).await;
            assert_eq!(e.code, "S210", "{id}");
            assert!(e.message.contains("sandbox.enabled"), "{id}: {}", e.message);
        }
        assert!(k.sandbox_calls().is_empty());
    }

    #[tokio::test]
    async fn sandbox_codes_pass_through_or_collapse_to_216_on_every_function() {
        let k = Kit::jailed();
        for (id, payload) in payloads() {
            let op = id.trim_start_matches("shell::fs::");
            let remote = format!("sandbox::fs::{op}");
            for (code, want) in [
                ("S300", "S300"),
                ("S002", "S002"),
                ("S400", "S400"),
                ("S211", "S216"),
            ] {
                k.sandbox_answers(
                    &remote,
                    Err(WireError {
                        code: code.into(),
                        message: "from the sandbox".into(),
                    }),
                );
                let e = k.err(id, payload.clone()).await;
                assert_eq!(e.code, want, "{id} {code}");
                assert!(e.message.contains("from the sandbox"));
            }
            // no sandbox worker at all: 216 naming the missing function
            k.engine.answers.lock().unwrap().remove(&remote);
            let e = k.err(id, payload.clone()).await;
            assert_eq!(e.code, "S216", "{id}");
            assert!(e.message.contains(&remote), "{id}: {}", e.message);
        }
    }
}
