//! Commands: `shell::exec`, background jobs and their completion trigger.
//!
//! One file a function: [`foreground`] (`shell::exec`), [`background`]
//! (`shell::exec_bg`), [`status`], [`list`], [`kill`], and the trigger type
//! [`job_finished`]. What this module owns, in the order a call meets it:
//!
//! 1. [`argv`]: `command` + `args` → argv (shell-words split when `args` is
//!    omitted; never a shell).
//! 2. [`denylist`]: the advisory tripwire over `argv.join(" ")`, on every
//!    target.
//! 3. Host only: the per-call `env` gate ([`env_gate`]), `cwd` through the
//!    one path policy, stdin. Sandbox targets refuse those fields (S210) and
//!    are forwarded to `sandbox::exec` ([`sandbox_target`]).
//! 4. [`process`]: spawn as the leader of a process group, capped capture,
//!    reaping, group kill; [`tree`]: every other descendant (what left the
//!    group) is tracked and killed with it, and orphans are reaped.
//! 5. [`jobs`]: the job table (atomic id reservation, admission, retention)
//!    and the `shell::job-finished` fan-out ([`job_finished`]).
//!
//! This module never resolves a path itself: a `cwd` goes through
//! [`crate::policy::Policy::resolve_existing`] like every other path.
//! Blocking filesystem work (that resolution) runs on the blocking pool.

pub mod argv;
pub mod background;
pub mod capture;
pub mod denylist;
pub mod env_gate;
pub mod foreground;
pub mod job_finished;
pub mod jobs;
pub mod kill;
pub mod list;
pub mod process;
pub mod sandbox_target;
pub mod signals;
pub mod status;
pub mod timeout;
pub mod tree;

use crate::error::{Failure, Surface};
use crate::policy::Tail;
use crate::runtime::Runtime;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The host-only fields of a call, as received.
pub struct HostFields {
    pub cwd: Option<String>,
    pub env: Option<BTreeMap<String, String>>,
    pub stdin: Option<String>,
}

impl HostFields {
    /// `(name, present)` pairs for [`crate::sandbox::check_sandbox_call`].
    pub fn presence(&self) -> [(&'static str, bool); 3] {
        [
            ("cwd", self.cwd.is_some()),
            ("env", self.env.is_some()),
            ("stdin", self.stdin.is_some()),
        ]
    }
}

/// Check the host-only fields and build the spawn spec for `argv`.
pub async fn host_spec(
    runtime: &Arc<Runtime>,
    argv: Vec<String>,
    fields: HostFields,
) -> Result<process::Spec, Failure> {
    if let Some(env) = &fields.env {
        env_gate::check(env)?;
    }
    let rt = runtime.clone();
    let cwd = tokio::task::spawn_blocking(move || match fields.cwd {
        None => Ok(default_cwd(&rt)),
        Some(raw) => resolve_cwd(&rt, &raw),
    })
    .await
    .map_err(|e| Failure::io(format!("cwd resolution failed: {e}")))??;
    let env = if runtime.config.env.inherit {
        env_gate::child_env(&runtime.config.env, [], fields.env.as_ref())
    } else {
        env_gate::child_env(
            &runtime.config.env,
            env_gate::worker_env(),
            fields.env.as_ref(),
        )
    };
    Ok(process::Spec {
        argv,
        cwd: cwd.path,
        cwd_handle: cwd.handle,
        env,
        stdin: fields.stdin,
        detach: process::Detach::for_this_worker(),
    })
}

pub use crate::runtime::Cwd;

/// The directory a command without `cwd` starts in ([`Runtime::default_cwd`]).
pub fn default_cwd(runtime: &Runtime) -> Cwd {
    runtime.default_cwd()
}

/// What a `cwd` that is not a directory is reported as: `shell::exec`'s
/// contract says 210, `shell::pty::*`'s says 212.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotADirectory {
    BadInput,
    WrongType,
}

/// A per-call `cwd`: an existing directory the policy allows, opened by
/// handle. Escape → 215, missing or denied → the redacted 211, not a
/// directory → 210 (as the contract has it).
pub fn resolve_cwd(runtime: &Runtime, raw: &str) -> Result<Cwd, Failure> {
    resolve_cwd_as(runtime, raw, NotADirectory::BadInput)
}

/// [`resolve_cwd`], choosing the class of the not-a-directory failure.
pub fn resolve_cwd_as(
    runtime: &Runtime,
    raw: &str,
    not_dir: NotADirectory,
) -> Result<Cwd, Failure> {
    let resolved = runtime
        .policy
        .resolve_existing(raw, Surface::Shell, Tail::Follow, None)?;
    let handle = resolved
        .loc()
        .open(nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENOTDIR) => {
                let class = match not_dir {
                    NotADirectory::BadInput => crate::error::Class::BadInput,
                    NotADirectory::WrongType => crate::error::Class::WrongType,
                };
                Failure::new(
                    class,
                    format!(
                        "cwd {} is not a directory; pass the directory to run in (e.g. its parent), \
                         or omit cwd to use the configured working_dir",
                        crate::error::quote(raw)
                    ),
                )
            }
            _ => Failure::from_io(raw, &e),
        })?;
    Ok(Cwd {
        path: resolved.path,
        handle: Some(Arc::new(handle)),
    })
}

/// `max_output_bytes` as a capture cap.
pub fn output_cap(runtime: &Runtime) -> usize {
    usize::try_from(runtime.config.max_output_bytes).unwrap_or(usize::MAX)
}

/// A call's own `max_output_bytes`, clamped to the configured cap (omitted:
/// the cap).
pub fn output_limit(runtime: &Runtime, asked: Option<u64>) -> usize {
    let cap = output_cap(runtime);
    asked.map_or(cap, |a| usize::try_from(a).unwrap_or(usize::MAX).min(cap))
}

#[cfg(test)]
mod tests;
