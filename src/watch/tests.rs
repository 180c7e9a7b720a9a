//! The change feed in-process: real inotify watches on a temp tree, fires
//! collected by a fake engine. The end-to-end tests (`tests/watch_e2e.rs`)
//! run the same paths through an engine.

use super::source::{Injecting, Injector, Raw, Source, Waker, Wd};
use super::*;
use crate::config::Config;
use crate::error::{Surface, WireError};
use crate::function::schema_of;
use crate::ports::Binding;
use crate::runtime::Runtime;
use crate::services::Services;
use serde_json::json;
use std::fs;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One fire: binding id, payload, metadata, namespace.
type Fired = (String, Value, Option<Value>, Option<String>);

/// Collects every fire.
#[derive(Default)]
struct Collect {
    fired: Mutex<Vec<Fired>>,
}

#[async_trait::async_trait]
impl Outbound for Collect {
    async fn call(&self, f: &str, _: Value, _: Option<u64>) -> Result<Value, WireError> {
        Err(WireError {
            code: "S216".into(),
            message: format!("no engine for {f}"),
        })
    }

    fn fire(&self, binding: &Binding, payload: Value) {
        self.fired.lock().unwrap().push((
            binding.id.clone(),
            payload,
            binding.metadata.clone(),
            binding.namespace.clone(),
        ));
    }
}

/// A source whose events can be held back: while held, what the kernel
/// reports is kept, and on release the feed reads all of it in one go.
/// Changes made while held therefore land in one window, however slowly
/// the test makes them (the window is 200 ms of wall clock).
struct Gated {
    inner: Injecting,
    held: Arc<AtomicBool>,
    kept: Vec<Raw>,
}

/// Holds and releases a [`Gated`] source.
#[derive(Clone)]
struct Gate {
    held: Arc<AtomicBool>,
    waker: Waker,
}

impl Gate {
    fn hold(&self) {
        self.held.store(true, Ordering::SeqCst);
    }

    fn release(&self) {
        self.held.store(false, Ordering::SeqCst);
        self.waker.wake();
    }
}

impl Source for Gated {
    fn add_dir(&mut self, dir: BorrowedFd<'_>) -> std::io::Result<Wd> {
        self.inner.add_dir(dir)
    }

    fn remove(&mut self, wd: Wd) {
        self.inner.remove(wd)
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<Raw>) -> std::io::Result<()> {
        let start = out.len();
        if !self.held.load(Ordering::SeqCst) && !self.kept.is_empty() {
            out.append(&mut self.kept);
            // and whatever is queued now, without blocking
            return self.inner.wait(Some(Duration::ZERO), out);
        }
        self.inner.wait(timeout, out)?;
        // What arrived after `hold` is kept: the changes were made after it,
        // so their events cannot have come earlier. A release wakes this.
        if self.held.load(Ordering::SeqCst) {
            self.kept.extend(out.drain(start..));
        } else if !self.kept.is_empty() {
            let fresh: Vec<Raw> = out.drain(start..).collect();
            out.append(&mut self.kept);
            out.extend(fresh);
        }
        Ok(())
    }

    fn waker(&self) -> Waker {
        self.inner.waker()
    }
}

struct Fx {
    _dir: tempfile::TempDir,
    root: PathBuf,
    services: Arc<Services>,
    collect: Arc<Collect>,
    registry: Arc<Registry>,
    injectors: Arc<Mutex<Vec<Injector>>>,
    gates: Arc<Mutex<Vec<Gate>>>,
}

impl Fx {
    fn new(tweak: impl FnOnce(&mut Config, &Path)) -> Fx {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut cfg = Config::zero_config();
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![root.clone()];
        cfg.fs.denylist_paths = vec![root.join("w/denied")];
        // the journal in the test's own directory (no home needed)
        cfg.turns.data_dir = root.join("turns");
        tweak(&mut cfg, &root);
        fs::create_dir(root.join("w")).unwrap();
        let collect = Arc::new(Collect::default());
        let outbound: Arc<dyn Outbound> = collect.clone();
        let mut services = Services::new(Runtime::build(cfg).unwrap(), None, Some(outbound));
        let injectors: Arc<Mutex<Vec<Injector>>> = Arc::default();
        let gates: Arc<Mutex<Vec<Gate>>> = Arc::default();
        let (inj, gs) = (injectors.clone(), gates.clone());
        let marks = services.journals.marks().clone();
        let registry = Arc::new(Registry::with_source(marks, move || {
            let (src, injector) = Injecting::new()?;
            inj.lock().unwrap().push(injector);
            let held = Arc::new(AtomicBool::new(false));
            gs.lock().unwrap().push(Gate {
                held: held.clone(),
                waker: src.waker(),
            });
            Ok(Box::new(Gated {
                inner: src,
                held,
                kept: Vec::new(),
            }) as Box<dyn Source>)
        }));
        services.watch = registry.clone();
        let services = Arc::new(services);
        Fx {
            _dir: dir,
            root,
            services,
            collect,
            registry,
            injectors,
            gates,
        }
    }

    /// Make `changes` land in one window of every watcher: their events
    /// are held back until all of them are made, then read at once.
    fn at_once(&self, changes: impl FnOnce()) {
        let gates = self.gates.lock().unwrap().clone();
        assert!(!gates.is_empty(), "no watcher to hold");
        gates.iter().for_each(Gate::hold);
        changes();
        gates.iter().for_each(Gate::release);
    }

    fn w(&self, rel: &str) -> PathBuf {
        self.root.join("w").join(rel)
    }

    fn bind(&self, id: &str, config: Value) -> Result<(), Failure> {
        self.registry.subscribe(
            &self.services.live,
            self.services.outbound.clone(),
            Binding {
                id: id.to_string(),
                function_id: "t::sub".to_string(),
                config,
                metadata: Some(json!({"__binding": id})),
                namespace: Some("ns-a".to_string()),
            },
        )
    }

    fn watch(&self, id: &str) {
        self.bind(id, json!({"path": self.w("").display().to_string()}))
            .unwrap();
    }

    /// Events of binding `id` so far, sorted by seq.
    fn events(&self, id: &str) -> Vec<Value> {
        let mut v: Vec<Value> = self
            .collect
            .fired
            .lock()
            .unwrap()
            .iter()
            .filter(|(b, ..)| b == id)
            .map(|(_, p, ..)| p.clone())
            .collect();
        v.sort_by_key(|e| e["seq"].as_u64());
        v
    }

    /// Wait until an event for `path` arrives; return every event so far.
    fn wait_for(&self, id: &str, path: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ev = self.events(id);
            if ev.iter().any(|e| e["path"] == path) {
                return ev;
            }
            assert!(Instant::now() < deadline, "no event for {path}: {ev:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Write a marker file and wait for it: everything before is delivered.
    fn settle(&self, id: &str, marker: &str) -> Vec<(String, String, bool)> {
        fs::write(self.w(marker), "m").unwrap();
        self.wait_for(id, marker)
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap().to_string(),
                    e["kind"].as_str().unwrap().to_string(),
                    e["dir"].as_bool().unwrap(),
                )
            })
            .filter(|(p, ..)| !p.starts_with("~marker"))
            .collect()
    }
}

fn ev(path: &str, kind: &str, dir: bool) -> (String, String, bool) {
    (path.to_string(), kind.to_string(), dir)
}

#[test]
fn config_is_path_and_include_ignored_only() {
    assert_eq!(
        parse_config(&json!({"path": "/x", "_caller_worker_id": "w"})).unwrap(),
        ("/x".to_string(), false)
    );
    assert_eq!(
        parse_config(&json!({"path": "/x", "include_ignored": true})).unwrap(),
        ("/x".to_string(), true)
    );
    for bad in [
        json!(null),
        json!("/x"),
        json!({}),
        json!({"path": ""}),
        json!({"path": 7}),
        json!({"path": "/x", "include_ignored": "yes"}),
        json!({"path": "/x", "recursive": true}),
    ] {
        let f = parse_config(&bad).unwrap_err();
        assert_eq!(f.class, Class::BadInput, "{bad}");
        assert!(f.message.contains(ID), "{}", f.message);
    }
}

#[test]
fn schemas_carry_the_additive_fields() {
    let e = schema_of::<ChangedEvent>();
    assert_eq!(e["required"], json!(["dir", "kind", "path", "root", "seq"]));
    let kinds = serde_json::to_string(&e["$defs"]["ChangeKind"]).unwrap();
    for k in ["created", "modified", "deleted", "rescan"] {
        assert!(kinds.contains(k), "{kinds}");
    }
    let c = schema_of::<ChangedConfig>();
    assert_eq!(c["required"], json!(["path"]));
}

#[test]
fn files_and_directories_created_modified_deleted() {
    let fx = Fx::new(|_, _| {});
    fs::write(fx.w("old"), "x").unwrap();
    fs::create_dir(fx.w("olddir")).unwrap();
    fx.watch("b");
    fx.at_once(|| {
        fs::write(fx.w("new"), "x").unwrap();
        fs::write(fx.w("old"), "y").unwrap();
        fs::create_dir(fx.w("d")).unwrap();
        fs::remove_dir(fx.w("olddir")).unwrap();
    });
    let got = fx.settle("b", "~marker");
    assert_eq!(
        got,
        vec![
            ev("d", "created", true),
            ev("new", "created", false),
            ev("old", "modified", false),
            ev("olddir", "deleted", false),
        ]
    );
    fx.at_once(|| {
        fs::remove_file(fx.w("new")).unwrap();
        fs::write(fx.w("d/inside"), "x").unwrap();
    });
    let got = fx.settle("b", "~marker2");
    assert_eq!(
        got[4..],
        [
            ev("d/inside", "created", false),
            ev("new", "deleted", false)
        ]
    );
    // every fire carries root, metadata and namespace
    let fired = fx.collect.fired.lock().unwrap();
    for (_, p, meta, ns) in fired.iter() {
        assert_eq!(p["root"], fx.root.join("w").display().to_string());
        assert_eq!(meta.as_ref().unwrap()["__binding"], "b");
        assert_eq!(ns.as_deref(), Some("ns-a"));
        assert!(p.get("change_id").is_none());
    }
}

#[test]
fn merge_rules_and_renames() {
    let fx = Fx::new(|_, _| {});
    fs::write(fx.w("gone"), "x").unwrap();
    fs::write(fx.w("again"), "x").unwrap();
    fs::write(fx.w("from"), "x").unwrap();
    fs::create_dir(fx.root.join("outside")).unwrap();
    fs::write(fx.root.join("outside/in"), "x").unwrap();
    fx.watch("b");
    fx.at_once(|| {
        // create + writes
        fs::write(fx.w("filled"), "a").unwrap();
        fs::write(fx.w("filled"), "ab").unwrap();
        // write then delete
        fs::write(fx.w("gone"), "y").unwrap();
        fs::remove_file(fx.w("gone")).unwrap();
        // delete then create
        fs::remove_file(fx.w("again")).unwrap();
        fs::write(fx.w("again"), "z").unwrap();
        // create then delete: nothing
        fs::write(fx.w("flash"), "z").unwrap();
        fs::remove_file(fx.w("flash")).unwrap();
        // rename inside, and into the tree
        fs::rename(fx.w("from"), fx.w("to")).unwrap();
        fs::rename(fx.root.join("outside/in"), fx.w("moved-in")).unwrap();
    });
    let got = fx.settle("b", "~marker");
    assert_eq!(
        got,
        vec![
            ev("again", "created", false),
            ev("filled", "created", false),
            ev("from", "deleted", false),
            ev("gone", "deleted", false),
            ev("moved-in", "created", false),
            ev("to", "created", false),
        ]
    );
}

#[test]
fn a_fresh_directory_is_watched_and_scanned() {
    let fx = Fx::new(|_, _| {});
    fx.watch("b");
    // held back: the new directories are watched only once the feed reads
    // their creation, so what is inside them is found by listing them
    fx.at_once(|| {
        fs::create_dir_all(fx.w("a/b/c")).unwrap();
        fs::write(fx.w("a/b/c/f"), "x").unwrap();
        fs::write(fx.w("a/g"), "x").unwrap();
    });
    let got = fx.settle("b", "~marker");
    assert_eq!(
        got,
        vec![
            ev("a", "created", true),
            ev("a/b", "created", true),
            ev("a/b/c", "created", true),
            ev("a/b/c/f", "created", false),
            ev("a/g", "created", false),
        ]
    );
    // and later writes deep inside are seen
    fs::write(fx.w("a/b/c/f"), "y").unwrap();
    let got = fx.settle("b", "~marker2");
    assert_eq!(got.last(), Some(&ev("a/b/c/f", "modified", false)));
    // a directory moved in is created with its content, and watched
    fs::create_dir_all(fx.root.join("out/sub")).unwrap();
    fs::write(fx.root.join("out/sub/x"), "x").unwrap();
    fs::rename(fx.root.join("out"), fx.w("in")).unwrap();
    let got = fx.settle("b", "~marker3");
    assert!(got.contains(&ev("in", "created", true)), "{got:?}");
    assert!(got.contains(&ev("in/sub/x", "created", false)), "{got:?}");
    fs::write(fx.w("in/sub/y"), "x").unwrap();
    let got = fx.settle("b", "~marker4");
    assert!(got.contains(&ev("in/sub/y", "created", false)), "{got:?}");
}

#[test]
fn gitignore_nested_and_include_ignored() {
    let fx = Fx::new(|_, _| {});
    fs::create_dir_all(fx.w(".git/refs/heads")).unwrap();
    fs::create_dir_all(fx.w(".git/objects")).unwrap();
    fs::create_dir_all(fx.w(".git/info")).unwrap();
    fs::write(fx.w(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(fx.w(".git/info/exclude"), "excluded\n").unwrap();
    fs::write(fx.w(".gitignore"), "*.log\nbuild/\n").unwrap();
    fs::create_dir_all(fx.w("sub")).unwrap();
    fs::write(fx.w("sub/.gitignore"), "secret.txt\n").unwrap();
    fs::create_dir_all(fx.w("build")).unwrap();
    fx.watch("plain");
    fx.bind(
        "all",
        json!({"path": fx.w("").display().to_string(), "include_ignored": true}),
    )
    .unwrap();
    assert_eq!(fx.registry.watchers(), 2);
    fx.at_once(|| {
        for f in [
            "a.log",
            "excluded",
            "sub/secret.txt",
            "sub/kept.txt",
            "build/out",
            "node_modules",
        ] {
            fs::write(fx.w(f), "x").unwrap();
        }
        fs::write(fx.w(".git/objects/abc"), "x").unwrap();
    });
    let plain = fx.settle("plain", "~marker");
    // inside a repository node_modules is only ignored when git ignores it
    assert_eq!(
        plain,
        vec![
            ev("node_modules", "created", false),
            ev("sub/kept.txt", "created", false)
        ]
    );
    let all = fx.wait_for("all", "~marker");
    let paths: Vec<&str> = all.iter().map(|e| e["path"].as_str().unwrap()).collect();
    for f in ["a.log", "excluded", "sub/secret.txt", "build/out"] {
        assert!(paths.contains(&f), "{f} missing from {paths:?}");
    }
    assert!(!paths.iter().any(|p| p.starts_with(".git")), "{paths:?}");
}

#[test]
fn outside_a_repository_noise_and_the_root_gitignore_are_ignored() {
    let fx = Fx::new(|_, _| {});
    fs::write(fx.w(".gitignore"), "*.tmp\n").unwrap();
    fs::create_dir_all(fx.w("node_modules/pkg")).unwrap();
    fs::create_dir_all(fx.w("data")).unwrap();
    fx.watch("b");
    fx.at_once(|| {
        fs::write(fx.w("node_modules/pkg/i.js"), "x").unwrap();
        fs::write(fx.w("data/log"), "x").unwrap();
        fs::write(fx.w("x.tmp"), "x").unwrap();
        fs::create_dir_all(fx.w("config/deep")).unwrap();
        fs::create_dir_all(fx.w(".iii")).unwrap();
        fs::write(fx.w("kept"), "x").unwrap();
    });
    assert_eq!(
        fx.settle("b", "~marker"),
        vec![ev("kept", "created", false)]
    );
}

#[test]
fn ignored_directories_are_not_watched() {
    let fx = Fx::new(|_, _| {});
    for d in ["src/a", "node_modules/p/q", "node_modules/r", "data/x"] {
        fs::create_dir_all(fx.w(d)).unwrap();
    }
    let live = fx.services.live.clone();
    let loc = fx
        .services
        .live
        .snapshot()
        .policy
        .resolve_existing(
            &fx.w("").display().to_string(),
            Surface::Coder,
            Tail::Follow,
            None,
        )
        .unwrap()
        .loc()
        .clone();
    let plain = Feed::new(
        Box::new(source::Inotify::new().unwrap()),
        Setup {
            loc: loc.clone(),
            include_ignored: false,
            cap: 10,
            marks: Default::default(),
        },
        live.clone(),
    );
    // w, w/src, w/src/a
    assert_eq!(plain.watched(), 3);
    let all = Feed::new(
        Box::new(source::Inotify::new().unwrap()),
        Setup {
            loc,
            include_ignored: true,
            cap: 10,
            marks: Default::default(),
        },
        live,
    );
    assert_eq!(all.watched(), 9);
}

#[test]
fn git_refresh_signal_coalesces_head_index_and_refs() {
    let fx = Fx::new(|_, _| {});
    fs::create_dir_all(fx.w(".git/refs/heads")).unwrap();
    fs::create_dir_all(fx.w(".git/objects/ab")).unwrap();
    fs::write(fx.w(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fx.watch("b");
    fx.at_once(|| {
        fs::write(fx.w(".git/index.lock"), "i").unwrap();
        fs::rename(fx.w(".git/index.lock"), fx.w(".git/index")).unwrap();
        fs::write(fx.w(".git/refs/heads/main"), "abc\n").unwrap();
        fs::write(fx.w(".git/HEAD"), "ref: refs/heads/other\n").unwrap();
        fs::create_dir_all(fx.w(".git/refs/heads/feature")).unwrap();
    });
    let got = fx.settle("b", "~marker");
    assert_eq!(got, vec![ev(".git", "modified", true)]);
    // a branch in a directory created later, and objects alone
    fx.at_once(|| fs::write(fx.w(".git/refs/heads/feature/x"), "abc\n").unwrap());
    let got = fx.settle("b", "~marker2");
    assert_eq!(got[1..], [ev(".git", "modified", true)]);
    fs::write(fx.w(".git/objects/ab/cd"), "x").unwrap();
    fs::write(fx.w(".git/COMMIT_EDITMSG"), "x").unwrap();
    let got = fx.settle("b", "~marker3");
    assert_eq!(got.len(), 2, "{got:?}");
}

#[test]
fn denylisted_and_staging_paths_are_never_reported() {
    let fx = Fx::new(|_, _| {});
    fx.watch("b");
    fx.at_once(|| {
        fs::write(fx.w("denied"), "x").unwrap();
        fs::write(fx.w(".ide-stage-abc"), "x").unwrap();
        fs::rename(fx.w(".ide-stage-abc"), fx.w("real")).unwrap();
        // protected globs are reported like any path (no content is carried)
        fs::write(fx.w(".env"), "x").unwrap();
    });
    assert_eq!(
        fx.settle("b", "~marker"),
        vec![ev(".env", "created", false), ev("real", "created", false)]
    );
}

#[test]
fn refused_bindings_say_why() {
    let fx = Fx::new(|_, _| {});
    fs::write(fx.w("file"), "x").unwrap();
    fs::create_dir(fx.w("denied")).unwrap();
    let cases = [
        (fx.w("file"), "S212", "is a file, not a directory"),
        (fx.w("denied"), "S211", "not found"),
        (fx.w("missing"), "S211", "not found"),
        (PathBuf::from("/etc"), "S215", "/etc"),
    ];
    for (path, code, needle) in cases {
        let f = fx
            .bind("x", json!({"path": path.display().to_string()}))
            .unwrap_err();
        let wire = f.to_wire(Surface::Shell);
        assert_eq!(wire.code, code, "{path:?}: {wire:?}");
        assert!(wire.message.contains(needle), "{path:?}: {wire:?}");
    }
    assert_eq!(fx.registry.watchers(), 0);
}

#[test]
fn shared_watcher_and_teardown() {
    let fx = Fx::new(|_, _| {});
    fx.watch("one");
    fx.watch("two");
    assert_eq!(fx.registry.watchers(), 1);
    fs::write(fx.w("f"), "x").unwrap();
    fx.wait_for("one", "f");
    fx.wait_for("two", "f");
    fx.registry.unsubscribe("one");
    assert_eq!(fx.registry.watchers(), 1);
    fs::write(fx.w("g"), "x").unwrap();
    fx.wait_for("two", "g");
    assert!(fx.events("one").iter().all(|e| e["path"] != "g"));
    fx.registry.unsubscribe("two");
    assert_eq!(fx.registry.watchers(), 0);
    fx.registry.unsubscribe("two");
}

#[test]
fn seq_is_per_binding_and_gapless() {
    let fx = Fx::new(|_, _| {});
    fx.watch("one");
    fx.at_once(|| {
        for i in 0..30 {
            fs::write(fx.w(&format!("f{i}")), "x").unwrap();
        }
    });
    fx.wait_for("one", "f29");
    fx.watch("two");
    // one window: one event for `late`, the only one "two" gets
    fx.at_once(|| fs::write(fx.w("late"), "x").unwrap());
    fx.wait_for("one", "late");
    fx.wait_for("two", "late");
    for id in ["one", "two"] {
        let seqs: Vec<u64> = fx
            .events(id)
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, want, "{id}");
    }
    assert_eq!(fx.events("two").len(), 1);
}

#[test]
fn an_overflow_is_a_rescan() {
    let fx = Fx::new(|_, _| {});
    fx.watch("b");
    fx.injectors.lock().unwrap()[0].push(Raw::overflow());
    let got = fx.wait_for("b", "");
    assert_eq!(got[0]["kind"], "rescan");
    assert_eq!(got[0]["dir"], true);
    assert_eq!(got[0]["root"], fx.root.join("w").display().to_string());
    // the feed goes on afterwards
    fs::write(fx.w("after"), "x").unwrap();
    fx.wait_for("b", "after");
}

#[test]
fn a_window_past_the_cap_is_one_rescan() {
    let fx = Fx::new(|cfg, _| cfg.watch.max_paths_per_window = 5);
    fx.watch("b");
    fx.at_once(|| {
        for i in 0..50 {
            fs::write(fx.w(&format!("f{i}")), "x").unwrap();
        }
    });
    fx.wait_for("b", "");
    // the window's paths were dropped for the rescan: the next event is
    // the marker's
    let got = fx.settle("b", "~marker");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0], ev("", "rescan", true));
}

#[test]
fn own_writes_carry_their_change_id() {
    let fx = Fx::new(|_, _| {});
    fx.watch("b");
    fx.services.journals.marks().note(&fx.w("mine"), "chg-42");
    fs::write(fx.w("mine"), "x").unwrap();
    fs::write(fx.w("theirs"), "x").unwrap();
    let got = fx.wait_for("b", "theirs");
    let got = fx.wait_for("b", "mine").into_iter().chain(got);
    for e in got {
        match e["path"].as_str().unwrap() {
            "mine" => assert_eq!(e["change_id"], "chg-42"),
            _ => assert!(e.get("change_id").is_none(), "{e}"),
        }
    }
}
