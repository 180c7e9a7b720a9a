//! Language servers, run by ide under its policy: one per (root, server),
//! shared by every caller of this worker, started on the first semantic
//! request and stopped when idle, on reload (when its configuration or its
//! root went away), and with the worker.
//!
//! - **A process like any command**: started through the exec layer
//!   ([`crate::exec::process::spawn_piped`]): the command denylist, the
//!   environment gate, its own process group, its whole tree tracked and
//!   killed with it. Its working directory is its root.
//! - **Fed every change**: the files a call asks about are synced
//!   (didOpen/didChange with the bytes ide read) before the request; the
//!   files of its root that change on disk (any writer, ide included) are
//!   sent as `workspace/didChangeWatchedFiles` from a change feed of the
//!   root ([`crate::watch::Registry::internal`]).
//! - **Each stands alone**: a missing, crashing or hung server affects only
//!   the semantic answers of its own files. A request past its deadline is
//!   cancelled; a server that does not acknowledge is killed and restarted
//!   on the next call. A crash restarts with backoff; [`MAX_CRASHES`] in
//!   [`CRASH_WINDOW`] leave it `crashed` with the reason until the window
//!   has passed (or the configuration changes).
//! - **Bounded**: its resident memory (the whole tree) is read every
//!   [`TICK`]; over `memory_limit_bytes` it is restarted and its state says
//!   why. Idle past `idle_timeout_ms`, it is shut down.

pub mod server;
pub mod text;
pub mod wire;

use crate::config::LanguageServerConfig;
use crate::error::{Class, Failure};
use crate::exec::process::{self, LiveGroups, Outputs};
use crate::runtime::Runtime;
use server::{Conn, RpcError};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Crashes within [`CRASH_WINDOW`] that leave a server `crashed`.
pub const MAX_CRASHES: usize = 3;
pub const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// How often memory and idleness are checked.
pub const TICK: Duration = Duration::from_secs(2);
/// How long `initialize` may take (servers load their world first).
const INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// stderr kept per server (its last words explain a crash).
const STDERR_TAIL: usize = 8 << 10;

/// A server's state, as `coder::info` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Idle,
    Starting,
    Ready,
    Crashed,
}

impl State {
    pub fn as_str(&self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Starting => "starting",
            State::Ready => "ready",
            State::Crashed => "crashed",
        }
    }
}

struct Running {
    conn: Arc<Conn>,
    _watch: Option<crate::watch::InternalWatch>,
}

struct Slot {
    name: String,
    root: PathBuf,
    cfg: LanguageServerConfig,
    /// Held while starting, so one caller starts it and the others wait.
    start: tokio::sync::Mutex<()>,
    inner: Mutex<SlotInner>,
}

struct SlotInner {
    running: Option<Running>,
    state: State,
    last_error: Option<String>,
    crashes: VecDeque<Instant>,
    restarts: u64,
    last_used: Instant,
    rss_bytes: Option<u64>,
}

/// What `coder::info` lists for one server instance.
#[derive(Debug, Clone)]
pub struct Described {
    pub name: String,
    pub root: PathBuf,
    pub state: State,
    pub pid: Option<u32>,
    pub rss_bytes: Option<u64>,
    pub last_error: Option<String>,
    pub restarts: u64,
    pub progress: Vec<server::Progress>,
}

/// Where a server's change feed comes from: the worker's watchers and its
/// live configuration.
pub struct Feeds {
    pub watch: Arc<crate::watch::Registry>,
    pub live: Arc<crate::runtime::LiveRuntime>,
}

/// Why a file has no semantic answer.
#[derive(Debug, Clone)]
pub struct Unavailable {
    /// `no_server` (none for the language), `not_installed`, `crashed`,
    /// `failed` (did not start or initialize), `timed_out`.
    pub reason: &'static str,
    pub message: String,
}

impl Unavailable {
    pub fn failure(&self) -> Failure {
        Failure::new(Class::Io, self.message.clone())
    }
}

/// The language servers of one worker.
pub struct Servers {
    slots: Mutex<HashMap<(PathBuf, String), Arc<Slot>>>,
    /// Every server's process group, for shutdown.
    live: Arc<LiveGroups>,
    monitor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Default for Servers {
    fn default() -> Self {
        Servers::new()
    }
}

impl Servers {
    pub fn new() -> Servers {
        Servers {
            slots: Mutex::new(HashMap::new()),
            live: Arc::new(LiveGroups::default()),
            monitor: Mutex::new(None),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(PathBuf, String), Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Which server answers for `path`: its name and configuration, or
    /// why none does.
    pub fn server_for(
        rt: &Runtime,
        path: &Path,
    ) -> Result<(String, LanguageServerConfig), Unavailable> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let (on, missing) = rt.config.code.servers();
        if let Some((name, cfg)) = on.into_iter().find(|(_, c)| c.extensions.contains(&ext)) {
            return Ok((name, cfg));
        }
        for (name, cfg, install) in crate::config::builtin_servers() {
            if cfg.extensions.contains(&ext) && missing.iter().any(|(m, _)| m == name) {
                return Err(Unavailable {
                    reason: "not_installed",
                    message: format!(
                        "no language server for .{ext} files: {} ({name}) is not on the worker's PATH; \
                         install it ({install}) or set code.language_servers.{name}.command to its path",
                        cfg.command
                    ),
                });
            }
        }
        Err(Unavailable {
            reason: "no_server",
            message: format!(
                "no language server is configured for .{ext} files; add one under \
                 code.language_servers (command, args, extensions)"
            ),
        })
    }

    /// The running server for `path` (under `root`), started when needed.
    pub async fn for_file(
        self: &Arc<Self>,
        feeds: &Feeds,
        rt: &Arc<Runtime>,
        root: &Path,
        path: &Path,
    ) -> Result<Arc<Conn>, Unavailable> {
        let (name, cfg) = Servers::server_for(rt, path)?;
        let slot = {
            let mut slots = self.slots();
            let key = (root.to_path_buf(), name.clone());
            let slot = slots
                .entry(key.clone())
                .or_insert_with(|| Slot::new(&name, root, &cfg));
            if slot.cfg != cfg {
                // reconfigured since: the old instance goes
                let old = slot.clone();
                *slot = Slot::new(&name, root, &cfg);
                tokio::spawn(async move { old.stop("its configuration changed").await });
            }
            slot.clone()
        };
        self.ensure_monitor();
        slot.get(self, feeds, rt).await
    }

    /// The running connection of `conn`'s slot hung on a request: kill it
    /// (the next call starts a new one).
    pub async fn hung(&self, conn: &Arc<Conn>, what: &str) {
        let slot = self
            .slots()
            .get(&(conn.root.clone(), conn.name.clone()))
            .cloned();
        let why = format!("killed as hung: no answer to {what}, nor to its cancellation");
        conn.die(why.clone());
        conn.process.terminate(process::KILL_GRACE).await;
        if let Some(slot) = slot {
            slot.crashed(&why);
        }
    }

    /// [`Servers::request`] for an answer that may be empty only because
    /// the server was still loading the project: when it answers empty
    /// (`empty`) and reported work in progress meanwhile, the request is
    /// made again once that work ended (within the same deadline).
    pub async fn request_settled(
        &self,
        conn: &Arc<Conn>,
        method: &str,
        params: serde_json::Value,
        timeout: Duration,
        empty: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<(serde_json::Value, Option<String>), Failure> {
        let started = tokio::time::Instant::now();
        let epoch = conn.progress_epoch();
        let v = self.request(conn, method, params.clone(), timeout).await?;
        if !empty(&v) || (conn.progress_epoch() == epoch && conn.progress().is_empty()) {
            return Ok((v, None));
        }
        let left = timeout.saturating_sub(started.elapsed());
        let what: Vec<String> = conn
            .progress()
            .into_iter()
            .map(|p| match p.percentage {
                Some(pc) => format!("{} ({pc}%)", p.title),
                None => p.title,
            })
            .collect();
        tracing::info!(server = %conn.name, method, waiting_for = ?what, "an empty answer while the server was busy: asking again when it is done");
        let waited = tokio::time::Instant::now();
        let idle = conn.wait_idle(left).await;
        let note = format!(
            "language server {} was busy ({}) when asked; ide waited {} ms for it{}",
            conn.name,
            if what.is_empty() {
                "loading".to_string()
            } else {
                what.join("; ")
            },
            waited.elapsed().as_millis(),
            if idle {
                " and asked again"
            } else {
                ", and it was still busy at the deadline: the answer may be incomplete"
            }
        );
        if !idle {
            return Ok((v, Some(note)));
        }
        let left = timeout
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(500));
        let v = self.request(conn, method, params, left).await?;
        Ok((v, Some(note)))
    }

    /// Make a request, killing the server when it hangs.
    pub async fn request(
        &self,
        conn: &Arc<Conn>,
        method: &str,
        params: serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, Failure> {
        match conn.request(method, params, timeout).await {
            Ok(v) => Ok(v),
            Err(e) => {
                if matches!(e, RpcError::Timeout { cancelled: false }) {
                    self.hung(conn, method).await;
                }
                Err(Failure::new(
                    Class::Io,
                    format!(
                        "language server {} ({}) for {}: {method} failed: {e}; the next call \
                         {}",
                        conn.name,
                        conn.process.pid(),
                        conn.root.display(),
                        if matches!(e, RpcError::Remote { .. }) {
                            "may succeed once it has loaded the project"
                        } else {
                            "starts it again (coder::info shows its state)"
                        }
                    ),
                ))
            }
        }
    }

    /// Every configured server, with the instances that ran.
    pub fn describe(&self) -> Vec<Described> {
        let slots: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        let mut out: Vec<Described> = slots
            .iter()
            .map(|s| {
                let i = s.lock();
                let conn = i.running.as_ref().map(|r| r.conn.clone());
                Described {
                    name: s.name.clone(),
                    root: s.root.clone(),
                    state: i.state.clone(),
                    pid: conn.as_ref().map(|c| c.process.pid()),
                    rss_bytes: i.rss_bytes,
                    last_error: i.last_error.clone(),
                    restarts: i.restarts,
                    progress: conn.map(|c| c.progress()).unwrap_or_default(),
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.root).cmp(&(&b.name, &b.root)));
        out
    }

    /// Stop the servers whose root is no longer served or whose
    /// configuration changed (after a reload).
    pub async fn reconfigure(&self, rt: &Runtime) {
        let (on, _) = rt.config.code.servers();
        let roots = rt.policy.coder_roots().to_vec();
        let gone: Vec<Arc<Slot>> = {
            let mut slots = self.slots();
            let keys: Vec<_> = slots
                .iter()
                .filter(|((root, name), slot)| {
                    !roots.iter().any(|r| root.starts_with(r)) || on.get(name) != Some(&slot.cfg)
                })
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| slots.remove(k)).collect()
        };
        for s in gone {
            s.stop("the configuration changed (reload)").await;
        }
    }

    /// Stop every server (worker shutdown, the end of `ide call` or of an
    /// `ide mcp` session).
    pub async fn stop_all(&self) {
        let all: Vec<Arc<Slot>> = self.slots().drain().map(|(_, s)| s).collect();
        futures_util::future::join_all(all.iter().map(|s| s.stop("the worker is stopping"))).await;
        self.live.terminate_all(process::KILL_GRACE).await;
        if let Some(m) = self
            .monitor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            m.abort();
        }
    }

    /// Live server process groups (tests: nothing leaks).
    pub fn processes(&self) -> usize {
        self.live.len()
    }

    fn ensure_monitor(self: &Arc<Self>) {
        let mut m = self.monitor.lock().unwrap_or_else(|e| e.into_inner());
        if m.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let me: Weak<Servers> = Arc::downgrade(self);
        *m = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(TICK).await;
                let Some(me) = me.upgrade() else { return };
                let slots: Vec<Arc<Slot>> = me.slots().values().cloned().collect();
                for s in slots {
                    s.tick().await;
                }
            }
        }));
    }
}

impl Slot {
    fn new(name: &str, root: &Path, cfg: &LanguageServerConfig) -> Arc<Slot> {
        Arc::new(Slot {
            name: name.to_string(),
            root: root.to_path_buf(),
            cfg: cfg.clone(),
            start: tokio::sync::Mutex::new(()),
            inner: Mutex::new(SlotInner {
                running: None,
                state: State::Idle,
                last_error: None,
                crashes: VecDeque::new(),
                restarts: 0,
                last_used: Instant::now(),
                rss_bytes: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SlotInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live connection, started when there is none.
    async fn get(
        self: &Arc<Self>,
        servers: &Arc<Servers>,
        feeds: &Feeds,
        rt: &Arc<Runtime>,
    ) -> Result<Arc<Conn>, Unavailable> {
        let _starting = self.start.lock().await;
        {
            let mut i = self.lock();
            i.last_used = Instant::now();
            if let Some(r) = &i.running {
                match r.conn.dead() {
                    None => return Ok(r.conn.clone()),
                    Some(why) => {
                        let why = format!("{why}{}", stderr_tail(&r.conn));
                        drop(i);
                        self.crashed(&why);
                        i = self.lock();
                    }
                }
            }
            while i
                .crashes
                .front()
                .is_some_and(|t| t.elapsed() > CRASH_WINDOW)
            {
                i.crashes.pop_front();
            }
            if i.crashes.len() >= MAX_CRASHES {
                i.state = State::Crashed;
                return Err(Unavailable {
                    reason: "crashed",
                    message: format!(
                        "language server {} for {} crashed {} times within {} s and is left \
                         stopped; last error: {}; it is tried again once that window has \
                         passed, or after a configuration change",
                        self.name,
                        self.root.display(),
                        i.crashes.len(),
                        CRASH_WINDOW.as_secs(),
                        i.last_error.as_deref().unwrap_or("unknown")
                    ),
                });
            }
            i.state = State::Starting;
        }
        // backoff after a recent crash: 250 ms, 500 ms, ...
        let recent = self.lock().crashes.len();
        if recent > 0 {
            tokio::time::sleep(Duration::from_millis(250 << (recent - 1).min(4))).await;
        }
        match self.launch(servers, feeds, rt).await {
            Ok(running) => {
                let conn = running.conn.clone();
                let mut i = self.lock();
                if i.last_error.is_some() {
                    i.restarts += 1;
                }
                i.running = Some(running);
                i.state = State::Ready;
                Ok(conn)
            }
            Err(message) => {
                self.crashed(&message);
                Err(Unavailable {
                    reason: "failed",
                    message: format!(
                        "language server {} for {} did not start: {message}",
                        self.name,
                        self.root.display()
                    ),
                })
            }
        }
    }

    async fn launch(
        &self,
        servers: &Arc<Servers>,
        feeds: &Feeds,
        rt: &Arc<Runtime>,
    ) -> Result<Running, String> {
        let mut argv = vec![self.cfg.command.clone()];
        argv.extend(self.cfg.args.iter().cloned());
        crate::exec::denylist::check(&rt.command_denylist, &argv).map_err(|f| f.message)?;
        let root = self.root.display().to_string();
        let rt2 = rt.clone();
        let cwd = tokio::task::spawn_blocking(move || crate::exec::resolve_cwd(&rt2, &root))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|f| f.message)?;
        let mut env = if rt.config.env.inherit {
            crate::exec::env_gate::child_env(&rt.config.env, [], None)
        } else {
            crate::exec::env_gate::child_env(
                &rt.config.env,
                crate::exec::env_gate::worker_env(),
                None,
            )
        };
        // caches of its own: a directory per (root, server) in the state
        // directory, never shared with another instance (tsserver's type
        // acquisition and others write under XDG_CACHE_HOME)
        let cache = cache_dir(rt, &self.root, &self.name);
        if std::fs::create_dir_all(&cache).is_ok() {
            env.vars
                .insert("XDG_CACHE_HOME".into(), cache.display().to_string());
        }
        let spec = process::Spec {
            argv,
            cwd: cwd.path,
            cwd_handle: cwd.handle,
            env,
            stdin: None,
            detach: process::Detach::for_this_worker(),
        };
        let outputs = Outputs::new(crate::exec::capture::Shape {
            head: 0,
            tail: STDERR_TAIL,
        });
        let (proc_, pipes) =
            process::spawn_piped(&spec, &servers.live, outputs).map_err(|f| f.message)?;
        let conn = Conn::start(
            self.name.clone(),
            self.root.clone(),
            proc_.clone(),
            pipes,
            self.cfg.settings.clone(),
        );
        tracing::info!(server = %self.name, root = %self.root.display(), pid = proc_.pid(), "language server started");
        if let Err(e) = conn
            .initialize(&self.cfg.initialization_options, INIT_TIMEOUT)
            .await
        {
            let why = format!("initialize failed: {e}{}", stderr_tail(&conn));
            conn.die(why.clone());
            proc_.terminate(process::KILL_GRACE).await;
            return Err(why);
        }
        // the root's change feed, as didChangeWatchedFiles
        let watch = match rt.policy.locate(&self.root) {
            Some(r) => {
                let sink = Arc::new(Forward {
                    conn: Arc::downgrade(&conn),
                    root: self.root.clone(),
                    extensions: self.cfg.extensions.clone(),
                });
                let registry = feeds.watch.clone();
                let live = feeds.live.clone();
                let loc = r.loc().clone();
                tokio::task::spawn_blocking(move || registry.internal(&live, loc, sink))
                    .await
                    .ok()
                    .and_then(|r| {
                        r.map_err(|e| tracing::warn!(error = %e.message, "no change feed for a language server"))
                            .ok()
                    })
            }
            None => None,
        };
        Ok(Running {
            conn,
            _watch: watch,
        })
    }

    /// Record a crash (or a kill as hung / over memory).
    fn crashed(&self, why: &str) {
        let mut i = self.lock();
        i.running = None;
        i.crashes.push_back(Instant::now());
        i.last_error = Some(why.to_string());
        i.state = if i.crashes.len() >= MAX_CRASHES {
            State::Crashed
        } else {
            State::Idle
        };
        tracing::warn!(server = %self.name, root = %self.root.display(), why, "language server stopped");
    }

    async fn stop(&self, why: &str) {
        let running = {
            let mut i = self.lock();
            i.state = State::Idle;
            i.running.take()
        };
        if let Some(r) = running {
            let conn = r.conn.clone();
            drop(r);
            conn.shutdown().await;
            conn.die(why.to_string());
            conn.process.terminate(process::KILL_GRACE).await;
            tracing::info!(server = %self.name, root = %self.root.display(), why, "language server stopped");
        }
    }

    /// Idle shutdown, memory bound, crash detection.
    async fn tick(&self) {
        let (conn, idle) = {
            let i = self.lock();
            let Some(r) = &i.running else { return };
            (r.conn.clone(), i.last_used.elapsed())
        };
        if let Some(why) = conn.dead() {
            let why = format!("{why}{}", stderr_tail(&conn));
            self.crashed(&why);
            return;
        }
        if idle > Duration::from_millis(self.cfg.idle_timeout_ms) && self.start.try_lock().is_ok() {
            self.stop("idle").await;
            return;
        }
        let pid = conn.process.pid();
        let rss = tokio::task::spawn_blocking(move || tree_rss(pid))
            .await
            .unwrap_or(0);
        self.lock().rss_bytes = Some(rss);
        if rss > self.cfg.memory_limit_bytes {
            let why = format!(
                "restarted: its resident memory {rss} bytes passed memory_limit_bytes {}",
                self.cfg.memory_limit_bytes
            );
            conn.die(why.clone());
            conn.process.terminate(process::KILL_GRACE).await;
            let mut i = self.lock();
            i.running = None;
            i.last_error = Some(why);
            i.state = State::Idle;
        }
    }
}

/// The cache directory of the server `name` for `root`: under the state
/// directory, one per (root, server).
pub fn cache_dir(rt: &Runtime, root: &Path, name: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    rt.turns_dir
        .join("language-servers")
        .join(format!("{safe}-{:016x}", h.finish()))
}

/// The last lines a dead server wrote to stderr, as a suffix.
fn stderr_tail(conn: &Conn) -> String {
    let (text, _) = conn.process.outputs.stderr.snapshot();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = lines[lines.len().saturating_sub(3)..].join(" | ");
    if last.is_empty() {
        String::new()
    } else {
        let cut: String = last.chars().take(400).collect();
        format!("; its stderr ends: {cut}")
    }
}

/// Resident bytes of `pid` and every descendant (from `/proc`).
pub fn tree_rss(pid: u32) -> u64 {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut parent: HashMap<u32, u32> = HashMap::new();
    let mut rss: HashMap<u32, u64> = HashMap::new();
    let page = 4096u64;
    for e in rd.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // fields after the name: state(0) ppid(1) ... rss(21)
        if let (Some(pp), Some(r)) = (
            f.get(1).and_then(|x| x.parse().ok()),
            f.get(21).and_then(|x| x.parse::<u64>().ok()),
        ) {
            parent.insert(p, pp);
            rss.insert(p, r * page);
        }
    }
    rss.iter()
        .filter(|(p, _)| {
            let mut at = **p;
            for _ in 0..64 {
                if at == pid {
                    return true;
                }
                match parent.get(&at) {
                    Some(&pp) if pp != 0 => at = pp,
                    _ => return false,
                }
            }
            false
        })
        .map(|(_, r)| r)
        .sum()
}

/// Changes of a server's root, forwarded as didChangeWatchedFiles: the
/// files of its languages only (a server has no use for the rest, and a
/// filesystem's own temporary names — overlayfs's `#<n>` — are not news).
struct Forward {
    conn: Weak<Conn>,
    root: PathBuf,
    extensions: Vec<String>,
}

impl crate::watch::feed::Sink for Forward {
    fn deliver(&self, events: Vec<crate::watch::feed::Out>) {
        let Some(conn) = self.conn.upgrade() else {
            return;
        };
        let ours = |p: &str| {
            Path::new(p)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| self.extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
        };
        let changes: Vec<(PathBuf, u8)> = events
            .iter()
            .filter(|e| !e.dir && e.kind != "rescan" && ours(&e.path))
            .map(|e| {
                let kind = match e.kind {
                    "created" => 1,
                    "deleted" => 3,
                    _ => 2,
                };
                (self.root.join(&e.path), kind)
            })
            .collect();
        conn.files_changed(&changes);
    }
}

#[cfg(test)]
mod tests;
