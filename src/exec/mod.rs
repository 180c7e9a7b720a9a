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
pub mod status;
pub mod timeout;
pub mod tree;

use crate::error::{Failure, Surface};
use crate::policy::Tail;
use crate::runtime::Runtime;
use std::collections::BTreeMap;
use std::path::PathBuf;
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
    let cwd = match fields.cwd {
        None => runtime.working_dir.clone(),
        Some(raw) => {
            let rt = runtime.clone();
            tokio::task::spawn_blocking(move || resolve_cwd(&rt, &raw))
                .await
                .map_err(|e| Failure::io(format!("cwd resolution failed: {e}")))??
        }
    };
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
        cwd,
        env,
        stdin: fields.stdin,
        max_output_bytes: output_cap(runtime),
        detach: process::Detach::for_this_worker(),
    })
}

/// A per-call `cwd`: an existing directory the policy allows. Escape →
/// 215, missing or denied → the redacted 211, not a directory → 210.
pub fn resolve_cwd(runtime: &Runtime, raw: &str) -> Result<PathBuf, Failure> {
    let resolved = runtime
        .policy
        .resolve_existing(raw, Surface::Shell, Tail::Follow, None)?;
    if !resolved.path.is_dir() {
        return Err(Failure::bad_input(format!(
            "cwd {raw:?} is not a directory; pass the directory to run in (e.g. its parent), or \
             omit cwd to use the configured working_dir"
        )));
    }
    Ok(resolved.path)
}

/// `max_output_bytes` as a capture cap.
pub fn output_cap(runtime: &Runtime) -> usize {
    usize::try_from(runtime.config.max_output_bytes).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests;
