//! The immutable runtime snapshot and its atomic swap.
//!
//! A [`Runtime`] is a validated [`Config`] plus everything compiled from it
//! (the path [`Policy`], the command denylist). It never changes once built:
//! a hot reload builds a new one and swaps it in ([`LiveRuntime::apply`]); a
//! call loads one snapshot at its start ([`LiveRuntime::snapshot`]) and uses it
//! to the end, so no call ever sees half of two policies.

use crate::config::{Config, PtyConfig};
use crate::policy::{Mode, Policy};
use arc_swap::ArcSwap;
use regex::Regex;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;

/// One validated, compiled configuration.
#[derive(Debug)]
pub struct Runtime {
    pub config: Config,
    pub policy: Policy,
    /// `denylist_patterns`, compiled.
    pub command_denylist: Vec<Regex>,
    /// Default working directory for commands: `working_dir` (a relative one
    /// resolved against the worker's cwd when the runtime is built) or the
    /// worker's cwd.
    pub working_dir: PathBuf,
    /// Where a command without `cwd` starts, opened once per snapshot
    /// (see [`Runtime::default_cwd`]).
    command_cwd: std::sync::OnceLock<Cwd>,
    /// `turns.data_dir`, resolved against [`state_home`] when relative.
    pub turns_dir: PathBuf,
}

impl Runtime {
    /// Validate and compile `config`. Errors name the key and the fix.
    pub fn build(config: Config) -> Result<Runtime, String> {
        let worker_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let working_dir = match &config.working_dir {
            None => worker_cwd.clone(),
            Some(dir) => {
                // A relative directory (stored configs carry `./data`) means
                // relative to the worker's own cwd, resolved once, here.
                let resolved = if dir.is_absolute() {
                    dir.clone()
                } else {
                    worker_cwd.join(dir)
                };
                if !resolved.is_dir() {
                    return Err(format!(
                        "working_dir {dir:?} (resolved to {resolved:?}) does not exist or is not a \
                         directory; create it, or set an existing directory or null"
                    ));
                }
                if dir.is_absolute() {
                    resolved
                } else {
                    std::fs::canonicalize(&resolved).unwrap_or(resolved)
                }
            }
        };
        if config.max_timeout_ms == 0 {
            return Err("max_timeout_ms must be greater than 0".to_string());
        }
        if config.max_concurrent_jobs == 0 {
            return Err("max_concurrent_jobs must be at least 1".to_string());
        }
        if config.code.list_max_page_size == 0 || config.code.list_default_page_size == 0 {
            return Err(
                "code.list_default_page_size and code.list_max_page_size must be at least 1"
                    .to_string(),
            );
        }
        if config.pty.max_sessions == 0 {
            return Err("pty.max_sessions must be at least 1".to_string());
        }
        if !(PtyConfig::MIN_RING_BYTES..=PtyConfig::MAX_RING_BYTES).contains(&config.pty.ring_bytes)
        {
            return Err(format!(
                "pty.ring_bytes is {}; it must be between {} and {} (2097152 is the default)",
                config.pty.ring_bytes,
                PtyConfig::MIN_RING_BYTES,
                PtyConfig::MAX_RING_BYTES
            ));
        }
        let mut policy = Policy::build(&config, &working_dir)?;
        let mut command_denylist = Vec::new();
        for pattern in &config.denylist_patterns {
            let re = Regex::new(pattern)
                .map_err(|e| format!("denylist_patterns: invalid regex {pattern:?}: {e}"))?;
            command_denylist.push(re);
        }
        // Relative against the state home, never the cwd of whoever runs
        // `ide` (the journal would land in the tree being worked on); an
        // absolute one replaces it.
        let turns_dir = if config.turns.data_dir.is_absolute() {
            config.turns.data_dir.clone()
        } else {
            state_home()
                .map_err(|why| {
                    format!(
                        "turns.data_dir {:?} is relative, and {why}; set an absolute turns.data_dir",
                        config.turns.data_dir
                    )
                })?
                .join(&config.turns.data_dir)
        };
        // The journal holds every body ever replaced: no surface may see,
        // search, rewrite or delete it, wherever an operator puts it.
        policy.deny_own(&turns_dir);
        Ok(Runtime {
            config,
            policy,
            command_denylist,
            working_dir,
            command_cwd: std::sync::OnceLock::new(),
            turns_dir,
        })
    }

    /// Build from a stored configuration value.
    pub fn from_value(value: &serde_json::Value) -> Result<Runtime, String> {
        Runtime::build(Config::from_value(value)?)
    }
}

/// Where a relative `turns.data_dir` is anchored: `$XDG_STATE_HOME/ide`
/// when that is an absolute path, else `$HOME/.local/state/ide` (the XDG
/// base directory rule for state). Every `ide` of one user on one
/// configuration - the served worker, `ide call`, a compose container -
/// finds the same journal this way, wherever it was started from. Without
/// an absolute `HOME` (a service manager may start the worker without one)
/// the home is the user's entry in the password database, as a login would
/// have set it; with neither, it is an error that says what to set.
pub fn state_home() -> Result<PathBuf, String> {
    state_home_from(
        std::env::var_os("XDG_STATE_HOME"),
        std::env::var_os("HOME"),
        passwd_home,
    )
}

/// [`state_home`] from the values it reads: the two variables, and the
/// password database's home (asked only when `HOME` does not answer).
fn state_home_from(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
    passwd_home: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf, String> {
    let absolute = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(xdg) = absolute(xdg_state_home) {
        return Ok(xdg.join("ide"));
    }
    match absolute(home).or_else(|| passwd_home().filter(|p| p.is_absolute())) {
        Some(home) => Ok(home.join(".local/state/ide")),
        None => Err(
            "neither XDG_STATE_HOME nor HOME is an absolute path to anchor it at, and the user \
             has no home directory in the password database"
                .into(),
        ),
    }
}

/// The home directory of the user this process runs as, from the password
/// database, when it names an existing directory.
fn passwd_home() -> Option<PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::getuid()).ok()??;
    user.dir.is_dir().then_some(user.dir)
}

/// Run blocking file work on the blocking pool: the async runtime only
/// coordinates. A panic in `f` becomes a 216 instead of taking the call down.
pub async fn blocking<T, F>(f: F) -> Result<T, crate::error::Failure>
where
    F: FnOnce() -> Result<T, crate::error::Failure> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| crate::error::Failure::io(format!("blocking task failed: {e}")))?
}

/// Where a command starts: the directory the policy resolved, held open,
/// so the child enters that very directory (by handle) whatever happens to
/// its path in between.
#[derive(Debug, Clone)]
pub struct Cwd {
    pub path: PathBuf,
    pub handle: Option<Arc<std::os::fd::OwnedFd>>,
}

impl Runtime {
    /// The directory a command without `cwd` starts in: the configured
    /// `working_dir`; with a jail and no `working_dir`, the primary jail root
    /// (not the worker's own cwd, which may lie outside the jail). Opened by
    /// handle when the policy accepts it — once per runtime snapshot.
    pub fn default_cwd(&self) -> Cwd {
        self.command_cwd
            .get_or_init(|| {
                let path = match (&self.config.working_dir, self.policy.jail_roots().first()) {
                    (None, Some(primary)) => primary.clone(),
                    _ => self.working_dir.clone(),
                };
                let handle = self
                    .policy
                    .locate(&path)
                    .and_then(|r| r.loc().open_path().ok())
                    .map(Arc::new);
                Cwd { path, handle }
            })
            .clone()
    }
}

/// Outcome of the most recent hot reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReloadOutcome {
    /// The live runtime reflects the most recent configuration the worker loaded.
    Applied,
    /// The most recent configuration:updated delivered a value the worker could NOT build; the previous valid policy is still active and the central store has DIVERGED from what the worker is enforcing.
    Rejected,
}

/// Hot-reload health, as `shell::config-status` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReloadStatus {
    pub last_outcome: ReloadOutcome,
    pub last_error: Option<String>,
    pub rejected_reloads: u64,
}

/// The live runtime: the current snapshot plus reload bookkeeping.
pub struct LiveRuntime {
    current: ArcSwap<Runtime>,
    status: Mutex<ReloadStatus>,
}

impl LiveRuntime {
    pub fn new(runtime: Runtime) -> Self {
        LiveRuntime {
            current: ArcSwap::from_pointee(runtime),
            status: Mutex::new(ReloadStatus {
                last_outcome: ReloadOutcome::Applied,
                last_error: None,
                rejected_reloads: 0,
            }),
        }
    }

    /// The snapshot a call runs against, start to end.
    pub fn snapshot(&self) -> Arc<Runtime> {
        self.current.load_full()
    }

    /// Try to apply a stored value. On failure the last good runtime stays
    /// and the rejection is recorded. Returns the outcome for logging.
    pub fn apply(&self, value: &serde_json::Value) -> Result<ApplyReport, String> {
        match Runtime::from_value(value) {
            Ok(next) => {
                let next = Arc::new(next);
                let prev = self.current.swap(next.clone());
                let widened = widens_jail(&prev, &next);
                let changed = prev.config != next.config;
                let mut st = self.status.lock().unwrap_or_else(|p| p.into_inner());
                st.last_outcome = ReloadOutcome::Applied;
                st.last_error = None;
                Ok(ApplyReport { widened, changed })
            }
            Err(err) => {
                let mut st = self.status.lock().unwrap_or_else(|p| p.into_inner());
                st.last_outcome = ReloadOutcome::Rejected;
                st.last_error = Some(err.clone());
                st.rejected_reloads += 1;
                Err(err)
            }
        }
    }

    pub fn status(&self) -> ReloadStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// What an applied reload changed that an operator must hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyReport {
    /// Some description when the new policy reaches paths the old one did not.
    pub widened: Option<String>,
    /// Whether the configuration differs from the one it replaced.
    pub changed: bool,
}

/// Whether `next` reaches paths `prev` could not: unjailing, or a root not
/// covered by any previous root, or a denylist entry dropped.
fn widens_jail(prev: &Runtime, next: &Runtime) -> Option<String> {
    let (p, n) = (&prev.policy, &next.policy);
    let mut reasons = Vec::new();
    if p.mode() == Mode::Jailed && n.mode() == Mode::Unjailed {
        reasons.push("jail removed (fs.host_roots cleared, fs.allow_unjailed)".to_string());
    } else if n.mode() == Mode::Jailed {
        for root in n.jail_roots() {
            if !p.jail_roots().iter().any(|old| root.starts_with(old)) && p.mode() == Mode::Jailed {
                reasons.push(format!("new root {}", root.display()));
            }
        }
    }
    for old in &prev.config.fs.denylist_paths {
        if !next.config.fs.denylist_paths.contains(old) {
            reasons.push(format!("denylist entry {} removed", old.display()));
        }
    }
    for old in &prev.config.code.non_accessible_globs {
        if !next.config.code.non_accessible_globs.contains(old) {
            reasons.push(format!("protected glob {old} removed"));
        }
    }
    if !prev.config.fs.allow_special_bits && next.config.fs.allow_special_bits {
        reasons.push("special mode bits allowed".to_string());
    }
    if reasons.is_empty() {
        None
    } else {
        Some(reasons.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    /// Jailed to `root`, the journal in `root` too: nothing outside it (no
    /// `HOME`) is needed to build the runtime.
    fn jailed_value(root: &Path) -> serde_json::Value {
        json!({"fs": {"host_roots": [root]}, "turns": {"data_dir": root.join("turns")}})
    }

    /// Unjailed, the journal in `dir`.
    fn unjailed_value(dir: &Path) -> serde_json::Value {
        json!({"fs": {"allow_unjailed": true}, "turns": {"data_dir": dir.join("turns")}})
    }

    #[test]
    fn a_rejected_reload_keeps_the_last_good_runtime() {
        let dir = tempfile::TempDir::new().unwrap();
        let live = LiveRuntime::new(Runtime::from_value(&jailed_value(dir.path())).unwrap());
        let before = live.snapshot();
        let err = live.apply(&json!({"allowlist": []})).unwrap_err();
        assert!(err.contains("0.8.0"));
        assert!(Arc::ptr_eq(&before, &live.snapshot()));
        let st = live.status();
        assert_eq!(st.last_outcome, ReloadOutcome::Rejected);
        assert_eq!(st.rejected_reloads, 1);
        assert!(st.last_error.unwrap().contains("allowlist"));
        // a nulled value is rejected too, never replaced by a default
        live.apply(&serde_json::Value::Null).unwrap_err();
        assert_eq!(live.status().rejected_reloads, 2);
    }

    #[test]
    fn an_applied_reload_swaps_and_reports_widening() {
        let dir = tempfile::TempDir::new().unwrap();
        let live = LiveRuntime::new(Runtime::from_value(&jailed_value(dir.path())).unwrap());
        let held = live.snapshot();
        let report = live.apply(&unjailed_value(dir.path())).unwrap();
        assert!(report.widened.unwrap().contains("jail removed"));
        assert_eq!(live.status().last_outcome, ReloadOutcome::Applied);
        // a call holding the old snapshot keeps it
        assert_eq!(held.policy.mode(), Mode::Jailed);
        assert_eq!(live.snapshot().policy.mode(), Mode::Unjailed);
    }

    #[test]
    fn bad_denylist_regex_is_refused() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut value = unjailed_value(dir.path());
        value["denylist_patterns"] = json!(["("]);
        let err = Runtime::from_value(&value).unwrap_err();
        assert!(err.contains("denylist_patterns"), "{err}");
    }

    #[test]
    fn a_relative_working_dir_resolves_against_the_worker_cwd() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut value = unjailed_value(dir.path());
        value["working_dir"] = json!(".");
        let rt = Runtime::from_value(&value).unwrap();
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(rt.working_dir, cwd);
        value["working_dir"] = json!("./no-such-dir-here");
        let err = Runtime::from_value(&value).unwrap_err();
        assert!(err.contains("resolved to"), "{err}");
    }

    #[test]
    fn the_state_home_is_xdg_then_home_then_the_password_database() {
        let some = |s: &str| Some(std::ffi::OsString::from(s));
        let asked = std::cell::Cell::new(false);
        let passwd = || {
            asked.set(true);
            Some(PathBuf::from("/home/from-passwd"))
        };
        assert_eq!(
            state_home_from(some("/xdg"), some("/home/u"), passwd),
            Ok(PathBuf::from("/xdg/ide"))
        );
        assert_eq!(
            state_home_from(None, some("/home/u"), passwd),
            Ok(PathBuf::from("/home/u/.local/state/ide"))
        );
        assert!(
            !asked.get(),
            "the password database is asked only without HOME"
        );
        // relative values are no anchor
        assert_eq!(
            state_home_from(some("rel"), some("also-rel"), passwd),
            Ok(PathBuf::from("/home/from-passwd/.local/state/ide"))
        );
        assert_eq!(
            state_home_from(None, None, passwd),
            Ok(PathBuf::from("/home/from-passwd/.local/state/ide"))
        );
        let err = state_home_from(None, None, || None).unwrap_err();
        assert!(err.contains("HOME"), "{err}");
        let err = state_home_from(None, None, || Some(PathBuf::from("rel"))).unwrap_err();
        assert!(err.contains("password database"), "{err}");
    }

    #[test]
    fn a_relative_journal_without_any_home_is_a_clear_error() {
        // what `Runtime::build` says when `state_home` has no answer
        let dir = tempfile::TempDir::new().unwrap();
        let mut value = unjailed_value(dir.path());
        value["turns"]["data_dir"] = json!("rel/turns");
        match state_home() {
            // this machine has a home: the relative journal lands below it
            Ok(home) => assert_eq!(
                Runtime::from_value(&value).unwrap().turns_dir,
                home.join("rel/turns")
            ),
            Err(why) => {
                let err = Runtime::from_value(&value).unwrap_err();
                assert!(
                    err.contains(&why) && err.contains("absolute turns.data_dir"),
                    "{err}"
                );
            }
        }
    }
}
