//! End to end: `shell::changed` on the real `ide` binary, bound through the
//! engine (the loopback stand-in, or a real iii engine with
//! `IDE_TEST_ENGINE`), delivered to a subscriber worker's function.
//! Deliveries are fire-and-forget and may overtake each other: every
//! assertion orders by `seq`, never by arrival.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ide::config::Config;
use iii_sdk::IIIClient;
use iii_sdk::protocol::RegisterTriggerInput;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(15);
const CHANGED: &str = "shell::changed";

type Rx = support::harness::Deliveries;

struct World {
    engine: Engine,
    ide: IdeProcess,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

/// `ide` jailed to a temp dir; the watched tree is its `w/`.
async fn start(configure: impl FnOnce(&mut Config)) -> World {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir(root.join("w")).expect("mkdir w");
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.fs.denylist_paths = vec![root.join("w/denied")];
    cfg.working_dir = Some(root.clone());
    configure(&mut cfg);
    let config_path = root.join("config.yaml");
    let engine = Engine::start().await;
    let ide = IdeProcess::serve(&engine.url(), &cfg, &config_path);
    assert!(
        engine.wait_for_trigger_type(CHANGED, WAIT).await,
        "ide did not register {CHANGED}:\n{}",
        ide.logs()
    );
    World {
        engine,
        ide,
        root,
        _dir: dir,
    }
}

impl World {
    fn w(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.join("w")
        } else {
            self.root.join("w").join(rel)
        }
    }

    async fn subscriber(&self, function_id: &str) -> (IIIClient, Rx) {
        self.engine.subscriber(function_id, WAIT).await
    }

    /// Bind through `engine::register_trigger`; wait until ide holds it.
    async fn bind(&self, function_id: &str, config: Value, metadata: Option<Value>) -> String {
        let from = self.ide.log_len();
        let id = self
            .engine
            .register_trigger(CHANGED, function_id, config, metadata)
            .await;
        assert!(
            self.ide
                .wait_for_log_from(from, &format!("trigger binding held: {id}"), WAIT)
                .await,
            "ide did not take binding {id}:\n{}",
            self.ide.logs()
        );
        id
    }

    async fn unbind(&self, id: &str) {
        let v = self
            .engine
            .call("engine::unregister_trigger", json!({"id": id}))
            .await
            .expect("unregister");
        assert_eq!(v["removed"], true);
    }

    /// inotify watches held by the ide process (`/proc/PID/fdinfo`).
    fn inotify_watches(&self) -> usize {
        let pid = self.ide.pid().expect("ide pid");
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
            return 0;
        };
        dir.flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .map(|s| s.lines().filter(|l| l.starts_with("inotify wd:")).count())
            .sum()
    }

    fn watch_threads(&self) -> usize {
        let pid = self.ide.pid().expect("ide pid");
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|c| c.trim() == "ide-watch")
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    async fn wait_watches(&self, want: usize) {
        let deadline = Instant::now() + WAIT;
        while self.inotify_watches() != want {
            assert!(
                Instant::now() < deadline,
                "{} inotify watches, want {want}",
                self.inotify_watches()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Make `changes` reach ide's watcher at once: ide is stopped (every
    /// thread of it) while they are made, so the kernel queues their events
    /// and the watcher reads all of them in one go when it continues. They
    /// land in one window (200 ms of wall clock) however slowly this
    /// machine makes them.
    fn at_once(&self, changes: impl FnOnce()) {
        self.ide.signal(Signal::SIGSTOP);
        let pid = self.ide.pid().expect("ide pid");
        let deadline = std::time::Instant::now() + WAIT;
        while !all_threads_stopped(pid) {
            assert!(std::time::Instant::now() < deadline, "ide did not stop");
            std::thread::yield_now();
        }
        changes();
        self.ide.signal(Signal::SIGCONT);
    }

    /// The watcher thread ends just after it closed its inotify fd.
    async fn wait_no_threads(&self) {
        self.wait_threads(0).await;
    }

    /// Wait until `want` watcher threads run. The watches are added before
    /// the watcher's thread starts (and a thread takes its name once it
    /// runs), so the count is awaited, never sampled once.
    async fn wait_threads(&self, want: usize) {
        let deadline = Instant::now() + WAIT;
        while self.watch_threads() != want {
            assert!(
                Instant::now() < deadline,
                "{} ide-watch threads, want {want}",
                self.watch_threads()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn stop(mut self) {
        self.ide.signal_term();
        assert!(self.ide.wait_exit(WAIT).await.is_some(), "ide did not stop");
        self.engine.stop().await;
    }
}

/// Whether every thread of `pid` is stopped (by a signal).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|t| {
        std::fs::read_to_string(t.path().join("stat")).is_ok_and(|stat| {
            // the state follows the command name, which ends at the last ')'
            matches!(
                stat.rsplit(')')
                    .next()
                    .and_then(|rest| rest.split_whitespace().next()),
                Some("T" | "t")
            )
        })
    })
}

/// Collects deliveries and answers in `seq` order.
struct Feed {
    rx: Rx,
    got: Vec<(Value, Option<Value>)>,
}

impl Feed {
    fn new(rx: Rx) -> Feed {
        Feed {
            rx,
            got: Vec::new(),
        }
    }

    /// Whether an event for `path` arrived and, per binding (told apart by
    /// metadata), every seq up to the highest one did too.
    fn complete(&self, path: &str) -> bool {
        if !self.got.iter().any(|(e, _)| e["path"] == path) {
            return false;
        }
        let mut per: std::collections::HashMap<String, Vec<u64>> = Default::default();
        for (e, m) in &self.got {
            per.entry(format!("{m:?}"))
                .or_default()
                .push(e["seq"].as_u64().unwrap());
        }
        per.values_mut().all(|seqs| {
            seqs.sort();
            seqs.iter().copied().eq(1..=seqs.len() as u64)
        })
    }

    /// Receive until an event for `path` and everything fired before it
    /// arrived; everything so far, by seq.
    async fn until(&mut self, path: &str) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        while !self.complete(path) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.rx.recv()).await {
                Ok(Some(d)) => self.got.push(d),
                _ => panic!("no event for {path:?}; got {:?}", self.sorted()),
            }
        }
        self.sorted()
    }

    fn sorted(&self) -> Vec<Value> {
        let mut v: Vec<Value> = self.got.iter().map(|(e, _)| e.clone()).collect();
        v.sort_by_key(|e| e["seq"].as_u64());
        v
    }
}

fn brief(events: &[Value]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter(|e| !e["path"].as_str().unwrap().starts_with("~marker"))
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["kind"].as_str().unwrap().to_string(),
                e["dir"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn ev(p: &str, k: &str, d: bool) -> (String, String, bool) {
    (p.to_string(), k.to_string(), d)
}

fn write(p: &Path, s: &str) {
    std::fs::write(p, s).expect("write");
}

#[tokio::test]
async fn changes_arrive_merged_filtered_with_metadata_and_gapless_seq() {
    let w = start(|_| {}).await;
    write(&w.w("old"), "x");
    write(&w.w("gone"), "x");
    write(&w.w("again"), "x");
    write(&w.w("from"), "x");
    std::fs::create_dir_all(w.w(".git/refs/heads")).unwrap();
    write(&w.w(".git/HEAD"), "ref: refs/heads/main\n");
    write(&w.w(".gitignore"), "*.log\n");
    std::fs::create_dir(w.w("sub")).unwrap();
    write(&w.w("sub/.gitignore"), "secret\n");
    let (_client, rx) = w.subscriber("e2e::changed").await;
    let mut feed = Feed::new(rx);
    let meta = json!({"__binding": "explorer-1"});
    let root = w.w("").display().to_string();
    w.bind("e2e::changed", json!({"path": root}), Some(meta.clone()))
        .await;

    // one window, so the merges below are the window's
    w.at_once(|| {
        write(&w.w("new"), "a");
        write(&w.w("new"), "ab");
        write(&w.w("old"), "y");
        write(&w.w("gone"), "y");
        std::fs::remove_file(w.w("gone")).unwrap();
        std::fs::remove_file(w.w("again")).unwrap();
        write(&w.w("again"), "z");
        write(&w.w("flash"), "z");
        std::fs::remove_file(w.w("flash")).unwrap();
        std::fs::rename(w.w("from"), w.w("to")).unwrap();
        std::fs::create_dir_all(w.w("fresh/deep")).unwrap();
        write(&w.w("fresh/deep/f"), "x");
        write(&w.w("x.log"), "x");
        write(&w.w("sub/secret"), "x");
        write(&w.w("denied"), "x");
        write(&w.w(".git/objects"), "x");
        write(&w.w(".git/index"), "x");
        write(&w.w("~marker"), "m");
    });
    let got = feed.until("~marker").await;
    let mut kinds = brief(&got);
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            ev(".git", "modified", true),
            ev("again", "created", false),
            ev("fresh", "created", true),
            ev("fresh/deep", "created", true),
            ev("fresh/deep/f", "created", false),
            ev("from", "deleted", false),
            ev("gone", "deleted", false),
            ev("new", "created", false),
            ev("old", "modified", false),
            ev("to", "created", false),
        ]
    );
    // seq from 1, by one; root, metadata on every fire; no change_id
    let seqs: Vec<u64> = got.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>());
    for (e, m) in &feed.got {
        assert_eq!(e["root"], root);
        assert!(e.get("change_id").is_none(), "{e}");
        assert_eq!(m.as_ref(), Some(&meta), "{e}");
    }
    w.stop().await;
}

#[tokio::test]
async fn include_ignored_delivers_what_the_plain_binding_skips() {
    let w = start(|_| {}).await;
    std::fs::create_dir_all(w.w("node_modules/pkg")).unwrap();
    let (_client, rx) = w.subscriber("e2e::all").await;
    let mut feed = Feed::new(rx);
    let (_c2, rx2) = w.subscriber("e2e::plain").await;
    let mut plain = Feed::new(rx2);
    let root = w.w("").display().to_string();
    w.bind(
        "e2e::all",
        json!({"path": root, "include_ignored": true}),
        None,
    )
    .await;
    w.bind("e2e::plain", json!({"path": root}), None).await;
    write(&w.w("node_modules/pkg/i.js"), "x");
    std::fs::create_dir(w.w("data")).unwrap();
    write(&w.w("~marker"), "m");
    let all = brief(&feed.until("~marker").await);
    assert!(
        all.contains(&ev("node_modules/pkg/i.js", "created", false)),
        "{all:?}"
    );
    assert!(all.contains(&ev("data", "created", true)), "{all:?}");
    assert_eq!(brief(&plain.until("~marker").await), vec![]);
    w.stop().await;
}

#[tokio::test]
async fn refused_bindings_are_reported_and_watch_nothing() {
    let w = start(|_| {}).await;
    write(&w.w("file"), "x");
    std::fs::create_dir(w.w("denied")).unwrap();
    let (_client, _rx) = w.subscriber("e2e::refused").await;
    let cases = [
        (
            json!({"path": w.w("file").display().to_string()}),
            "S212",
            "is a file, not a directory",
        ),
        (json!({"path": "/etc"}), "S215", "/etc"),
        (
            json!({"path": w.w("denied").display().to_string()}),
            "S211",
            "not found",
        ),
        (
            json!({"path": w.w("").display().to_string(), "recurse": true}),
            "S210",
            "unknown field `recurse`",
        ),
    ];
    for (config, code, needle) in cases {
        let from = w.ide.log_len();
        let payload =
            json!({"trigger_type": CHANGED, "function_id": "e2e::refused", "config": config});
        match w.engine.call("engine::register_trigger", payload).await {
            // an engine that waits for the provider answers with its refusal
            Err(e) => assert!(
                e.message.contains(code) && e.message.contains(needle),
                "{e:?}"
            ),
            // one that answers {id} at once (0.23, the stand-in): the
            // provider's TriggerRegistrationResult carries it, and ide logs it
            Ok(v) => {
                let id = v["id"].as_str().unwrap();
                let head = format!("{CHANGED} binding {id} -> e2e::refused refused: {code}: ");
                assert!(
                    w.ide.wait_for_log_from(from, &head, WAIT).await,
                    "no refusal {head} logged:\n{}",
                    w.ide.logs()
                );
                // the reason is on the refusal's own line
                let logs = w.ide.logs();
                let line = logs[from..]
                    .lines()
                    .find(|l| l.contains(&head))
                    .expect("the refusal line");
                assert!(line.contains(needle), "{needle:?} not in {line:?}");
                if let Some(lb) = w.engine.loopback() {
                    let deadline = Instant::now() + WAIT;
                    let err = loop {
                        let t = lb.triggers().into_iter().find(|t| t.id == id).unwrap();
                        if let Some(err) = t.provider_error {
                            break err;
                        }
                        assert!(Instant::now() < deadline, "no provider error for {id}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    };
                    assert_eq!(err.code, "trigger_registration_failed");
                    assert!(
                        err.message.contains(code) && err.message.contains(needle),
                        "{err:?}"
                    );
                }
            }
        }
    }
    assert_eq!(w.inotify_watches(), 0);
    w.wait_no_threads().await;
    w.stop().await;
}

#[tokio::test]
async fn shared_watcher_is_torn_down_with_its_last_binding() {
    let w = start(|_| {}).await;
    std::fs::create_dir_all(w.w("a/b")).unwrap();
    std::fs::create_dir_all(w.w("node_modules/x/y")).unwrap();
    let (_client, rx) = w.subscriber("e2e::shared").await;
    let mut feed = Feed::new(rx);
    let config = json!({"path": w.w("").display().to_string()});
    let one = w
        .bind("e2e::shared", config.clone(), Some(json!({"b": 1})))
        .await;
    // w, w/a, w/a/b — node_modules is not watched
    w.wait_watches(3).await;
    let two = w
        .bind("e2e::shared", config.clone(), Some(json!({"b": 2})))
        .await;
    assert_eq!(w.inotify_watches(), 3);
    // one watcher thread for both bindings: awaited, then it must stay one
    w.wait_threads(1).await;
    write(&w.w("f"), "x");
    feed.until("f").await;
    // each binding gets the event with its own metadata and seq 1
    let deadline = Instant::now() + WAIT;
    while feed.got.iter().filter(|(e, _)| e["path"] == "f").count() < 2 {
        assert!(Instant::now() < deadline, "{:?}", feed.got);
        if let Ok(Some(d)) = tokio::time::timeout(WAIT, feed.rx.recv()).await {
            feed.got.push(d);
        }
    }
    let mut metas: Vec<String> = feed
        .got
        .iter()
        .map(|(e, m)| format!("{}:{}", e["seq"], m.as_ref().unwrap()["b"]))
        .collect();
    metas.sort();
    assert_eq!(metas, ["1:1", "1:2"]);
    w.unbind(&one).await;
    // the other binding still holds the watcher
    write(&w.w("g"), "x");
    feed.until("g").await;
    assert_eq!(w.inotify_watches(), 3);
    assert!(!w.ide.logs().contains("change feed stopped"));
    w.unbind(&two).await;
    w.wait_watches(0).await;
    assert!(
        w.ide
            .wait_for_log(&format!("its last binding {two} went away"), WAIT)
            .await
    );
    w.wait_no_threads().await;
    w.stop().await;
}

#[tokio::test]
async fn a_subscriber_worker_going_away_tears_its_watch_down() {
    let w = start(|_| {}).await;
    let (client, _rx) = w.subscriber("e2e::leaving").await;
    let from = w.ide.log_len();
    let mut input = RegisterTriggerInput::new(
        CHANGED.to_string(),
        "e2e::leaving".to_string(),
        json!({"path": w.w("").display().to_string()}),
    );
    input.metadata = None;
    #[allow(deprecated)]
    let _trigger = client.register_trigger(input).expect("register");
    assert!(
        w.ide
            .wait_for_log_from(from, "trigger binding held: ", WAIT)
            .await
    );
    w.wait_watches(1).await;
    client.shutdown_async().await;
    w.wait_watches(0).await;
    w.wait_no_threads().await;
    w.stop().await;
}

#[tokio::test]
async fn a_burst_past_the_cap_is_one_rescan() {
    let w = start(|c| c.watch.max_paths_per_window = 20).await;
    let (_client, rx) = w.subscriber("e2e::burst").await;
    let mut feed = Feed::new(rx);
    w.bind(
        "e2e::burst",
        json!({"path": w.w("").display().to_string()}),
        None,
    )
    .await;
    // one window of 500 paths
    w.at_once(|| {
        for i in 0..500 {
            write(&w.w(&format!("f{i:03}")), "x");
        }
    });
    let got = feed.until("").await;
    let rescan = got.iter().find(|e| e["kind"] == "rescan").expect("rescan");
    assert_eq!(rescan["dir"], true);
    assert_eq!(rescan["root"], w.w("").display().to_string());
    assert!(
        w.ide.wait_for_log("change feed sends a rescan", WAIT).await,
        "{}",
        w.ide.logs()
    );
    // the rescan is the window's only fire: the one after it is the marker's
    // written next (`until` waits for every seq before the marker's)
    write(&w.w("~marker"), "m");
    let got = feed.until("~marker").await;
    assert_eq!(brief(&got), vec![ev("", "rescan", true)]);
    w.stop().await;
}

#[tokio::test]
async fn a_change_made_through_ide_carries_its_change_id() {
    let w = start(|_| {}).await;
    let (_client, rx) = w.subscriber("e2e::own").await;
    let mut feed = Feed::new(rx);
    let root = w.w("").display().to_string();
    w.bind("e2e::own", json!({"path": root}), None).await;
    let made = w
        .engine
        .call(
            "coder::create-file",
            json!({"files": [{"path": w.w("own.txt").display().to_string(), "content": "mine"}]}),
        )
        .await
        .expect("create-file");
    let id = made["results"][0]["change_id"]
        .as_str()
        .expect("a change id")
        .to_string();
    write(&w.w("other.txt"), "theirs");
    write(&w.w("~marker"), "m");
    let got = feed.until("~marker").await;
    let own = got
        .iter()
        .find(|e| e["path"] == "own.txt")
        .expect("own.txt event");
    assert_eq!(own["change_id"], id.as_str(), "{own}");
    let other = got
        .iter()
        .find(|e| e["path"] == "other.txt")
        .expect("other.txt event");
    assert!(other.get("change_id").is_none(), "{other}");
    // and the diff it names opens
    let d = w
        .engine
        .call("coder::change-diff", json!({"change_id": id}))
        .await
        .expect("change-diff");
    assert_eq!(d["new_contents"], "mine");
    w.stop().await;
}
