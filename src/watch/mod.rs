//! The `shell::changed` trigger type: a live change feed of a directory.
//!
//! A binding names a directory (`config.path`, decided by the one policy
//! exactly like a `coder::*` path) and gets `{path, kind, root, dir, seq}`
//! for every visible change under it, coalesced per path in a 200 ms window
//! ([`coalesce`]), filtered (`.git` internals, ignored paths, the operator
//! denylist, the worker's own staging names), and never silently lossy: a
//! dropped kernel queue, a watch that cannot be added or a window past the
//! cap becomes one `{kind: "rescan"}` (re-list, do not trust the feed).
//!
//! Bindings on the same directory with the same filter share one watcher
//! ([`Registry`], reference-counted); the last one going tears it down
//! (its thread joined, its inotify instance closed, every watch with it).
//! Each binding numbers its own events (`seq`, from 1, by one), because the
//! engine runs each fire as its own task and fires can overtake each other.

pub mod coalesce;
pub mod feed;
pub mod source;

pub mod changed;

use crate::error::{Class, Failure, quote};
use crate::journal::marks::OwnWrites;
use crate::policy::Tail;
use crate::ports::{Binding, Outbound};
use crate::runtime::LiveRuntime;
use feed::{Feed, Out, Setup, Sink};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use source::Source;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub const ID: &str = "shell::changed";

/// Bind with the directory to watch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "ChangedConfig")]
pub struct ChangedConfig {
    /// The directory to watch (jail-checked like every coder::* path).
    pub path: String,
    /// Also deliver ignored paths (git-ignored; outside a repository data/, config/, .iii/, node_modules/).
    #[serde(default)]
    pub include_ignored: Option<bool>,
}

/// The kind of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
    /// Events were lost (or a window changed more paths than the cap): re-list the root, do not trust the feed.
    Rescan,
}

/// One change under the watched root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "ChangedEvent",
    description = "One visible change under the watched root. Lean: a subscriber that wants \
                   content asks coder::read-file, one that wants the diff asks git."
)]
pub struct ChangedEvent {
    /// Relative to the watched root, `/`-separated; empty for `rescan`, `.git` for the git refresh signal.
    pub path: String,
    pub kind: ChangeKind,
    /// The canonical watched directory.
    pub root: String,
    /// A directory (false for deleted paths, which cannot be probed).
    pub dir: bool,
    /// Per binding, from 1, increasing by one: a gap is a lost delivery; fires can arrive out of order.
    pub seq: u64,
    /// The change-history id when this worker's own write made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
}

/// Decode a binding config: `{path, include_ignored?}`, unknown keys
/// refused (engine sidecar `_…` keys ignored).
pub fn parse_config(config: &Value) -> Result<(String, bool), Failure> {
    let example = format!("{{\"type\": \"{ID}\", \"config\": {{\"path\": \"/some/dir\"}}}}");
    let Value::Object(obj) = config else {
        return Err(Failure::bad_input(format!(
            "{ID} config must be an object naming the directory to watch, like {example}; got {}",
            quote(&config.to_string())
        )));
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "path" | "include_ignored") && !k.starts_with('_'))
    {
        return Err(Failure::bad_input(format!(
            "{ID} config: unknown field `{key}`; the fields are path and include_ignored, like \
             {example}"
        )));
    }
    let path = match obj.get("path") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        None | Some(Value::Null) => {
            return Err(Failure::bad_input(format!(
                "{ID} config: path is missing; name the directory to watch, like {example}"
            )));
        }
        Some(other) => {
            return Err(Failure::bad_input(format!(
                "{ID} config: path must be a non-empty string naming a directory, got {other}"
            )));
        }
    };
    let include_ignored = match obj.get("include_ignored") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(Failure::bad_input(format!(
                "{ID} config: include_ignored must be true or false, got {other}"
            )));
        }
    };
    Ok((path, include_ignored))
}

// ---------------------------------------------------------------------------
// Shared watchers.

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    root: PathBuf,
    include_ignored: bool,
}

struct Sub {
    binding: Binding,
    seq: u64,
}

/// The bindings of one watcher, and where their fires go.
struct Subscribers {
    root: String,
    subs: Mutex<Vec<Sub>>,
    outbound: Option<Arc<dyn Outbound>>,
}

impl Sink for Subscribers {
    fn deliver(&self, events: Vec<Out>) {
        let mut subs = self.subs.lock().unwrap_or_else(|e| e.into_inner());
        for sub in subs.iter_mut() {
            for e in &events {
                sub.seq += 1;
                let kind = match e.kind {
                    "created" => ChangeKind::Created,
                    "modified" => ChangeKind::Modified,
                    "deleted" => ChangeKind::Deleted,
                    _ => ChangeKind::Rescan,
                };
                let event = ChangedEvent {
                    path: e.path.clone(),
                    kind,
                    root: self.root.clone(),
                    dir: e.dir,
                    seq: sub.seq,
                    change_id: e.change_id.clone(),
                };
                if let Some(out) = &self.outbound {
                    let payload = serde_json::to_value(&event).unwrap_or(Value::Null);
                    out.fire(&sub.binding, payload);
                }
            }
        }
    }
}

struct Watcher {
    subs: Arc<Subscribers>,
    stop: Arc<AtomicBool>,
    waker: source::Waker,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    /// Stop the thread and wait for it: its inotify instance (and every
    /// watch) is closed when it returns.
    fn shut(mut self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A watcher started by [`Registry::internal`]; dropping it stops the
/// watcher and joins its thread.
pub struct InternalWatch {
    stop: Arc<AtomicBool>,
    waker: source::Waker,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for InternalWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

type SourceFactory = dyn Fn() -> std::io::Result<Box<dyn Source>> + Send + Sync;

/// Every watcher of this worker, keyed by (root, filter).
pub struct Registry {
    inner: Mutex<Inner>,
    source: Box<SourceFactory>,
    /// Who changed it: the marks of this worker's own writes.
    marks: Arc<OwnWrites>,
}

#[derive(Default)]
struct Inner {
    watchers: HashMap<Key, Watcher>,
    bindings: HashMap<String, Key>,
}

impl Registry {
    /// Watchers on the kernel's inotify; events of paths `marks` names
    /// carry the change id of the worker's own write.
    pub fn new(marks: Arc<OwnWrites>) -> Registry {
        Registry::with_source(marks, || {
            Ok(Box::new(source::Inotify::new()?) as Box<dyn Source>)
        })
    }

    /// Watchers on another source (tests inject events through it).
    pub fn with_source(
        marks: Arc<OwnWrites>,
        f: impl Fn() -> std::io::Result<Box<dyn Source>> + Send + Sync + 'static,
    ) -> Registry {
        Registry {
            inner: Mutex::new(Inner::default()),
            source: Box::new(f),
            marks,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of live watchers.
    pub fn watchers(&self) -> usize {
        self.lock().watchers.len()
    }

    /// Decide the binding's directory and attach the binding to its
    /// watcher, starting one if none watches it yet. Blocking (the first
    /// binding of a directory walks it).
    pub fn subscribe(
        &self,
        live: &Arc<LiveRuntime>,
        outbound: Option<Arc<dyn Outbound>>,
        binding: Binding,
    ) -> Result<(), Failure> {
        let (raw, include_ignored) = parse_config(&binding.config)?;
        let runtime = live.snapshot();
        let resolved = runtime.policy.resolve_existing(
            &raw,
            crate::error::Surface::Coder,
            Tail::Follow,
            None,
        )?;
        let is_dir = resolved
            .loc()
            .lstat()
            .map(|st| crate::jail::is_dir_mode(st.st_mode))
            .map_err(|e| Failure::from_io(&raw, &e))?;
        if !is_dir {
            let parent = resolved
                .path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            return Err(Failure::new(
                Class::WrongType,
                format!(
                    "{ID} config.path {} is a file, not a directory; bind the directory that \
                     holds it ({}) instead",
                    quote(&raw),
                    quote(&parent)
                ),
            ));
        }
        let key = Key {
            root: resolved.path.clone(),
            include_ignored,
        };
        let mut inner = self.lock();
        if let Some(old) = inner.bindings.remove(&binding.id) {
            // the same binding again (an engine replay): re-attach it
            if let Some(w) = detach(&mut inner, &old, &binding.id) {
                w.shut();
            }
        }
        if let Some(w) = inner.watchers.get(&key) {
            w.subs
                .subs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Sub {
                    binding: binding.clone(),
                    seq: 0,
                });
            inner.bindings.insert(binding.id, key);
            return Ok(());
        }
        let source = (self.source)().map_err(|e| {
            Failure::io(format!(
                "{ID}: cannot start a watcher for {}: {e}",
                resolved.path.display()
            ))
        })?;
        let cap = runtime.config.watch.max_paths_per_window.clamp(1, 1 << 24) as usize;
        let waker = source.waker();
        let feed = Feed::new(
            source,
            Setup {
                loc: resolved.loc().clone(),
                include_ignored,
                cap,
                marks: self.marks.clone(),
            },
            live.clone(),
        );
        tracing::info!(
            root = %resolved.path.display(),
            include_ignored,
            watched_dirs = feed.watched(),
            "change feed started"
        );
        let subs = Arc::new(Subscribers {
            root: resolved.path.display().to_string(),
            subs: Mutex::new(vec![Sub {
                binding: binding.clone(),
                seq: 0,
            }]),
            outbound,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let sink: Arc<dyn Sink> = subs.clone();
        let thread = std::thread::Builder::new()
            .name("ide-watch".to_string())
            .spawn({
                let stop = stop.clone();
                move || feed.run(sink, stop)
            })
            .map_err(|e| Failure::io(format!("{ID}: cannot start the watcher thread: {e}")))?;
        inner.watchers.insert(
            key.clone(),
            Watcher {
                subs,
                stop,
                waker,
                thread: Some(thread),
            },
        );
        inner.bindings.insert(binding.id, key);
        Ok(())
    }

    /// A watcher of the directory at `loc` whose windows go to `sink`
    /// instead of a binding (the worker's own consumers: language servers
    /// told of files others change). It stops when the returned handle is
    /// dropped. Blocking (it walks the directory).
    pub fn internal(
        &self,
        live: &Arc<LiveRuntime>,
        loc: crate::jail::Loc,
        sink: Arc<dyn Sink>,
    ) -> Result<InternalWatch, Failure> {
        let root = loc.abs();
        let source = (self.source)().map_err(|e| {
            Failure::io(format!(
                "cannot start a watcher for {}: {e}",
                root.display()
            ))
        })?;
        let cap = live
            .snapshot()
            .config
            .watch
            .max_paths_per_window
            .clamp(1, 1 << 24) as usize;
        let waker = source.waker();
        let feed = Feed::new(
            source,
            Setup {
                loc,
                include_ignored: false,
                cap,
                marks: self.marks.clone(),
            },
            live.clone(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("ide-watch".to_string())
            .spawn({
                let stop = stop.clone();
                move || feed.run(sink, stop)
            })
            .map_err(|e| Failure::io(format!("cannot start a watcher thread: {e}")))?;
        Ok(InternalWatch {
            stop,
            waker,
            thread: Some(thread),
        })
    }

    /// Detach a binding; the last one of a watcher tears it down.
    pub fn unsubscribe(&self, binding_id: &str) {
        let done = {
            let mut inner = self.lock();
            match inner.bindings.remove(binding_id) {
                Some(key) => detach(&mut inner, &key, binding_id),
                None => None,
            }
        };
        if let Some(w) = done {
            w.shut();
            tracing::info!("change feed stopped (its last binding {binding_id} went away)");
        }
    }

    /// Tear every watcher down (worker shutdown).
    pub fn shutdown(&self) {
        let all: Vec<Watcher> = {
            let mut inner = self.lock();
            inner.bindings.clear();
            inner.watchers.drain().map(|(_, w)| w).collect()
        };
        for w in all {
            w.shut();
        }
    }
}

/// Remove `binding_id` from the watcher of `key`; hand the watcher back
/// when that was its last binding.
fn detach(inner: &mut Inner, key: &Key, binding_id: &str) -> Option<Watcher> {
    let w = inner.watchers.get(key)?;
    let empty = {
        let mut subs = w.subs.subs.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|s| s.binding.id != binding_id);
        subs.is_empty()
    };
    if empty {
        inner.watchers.remove(key)
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
