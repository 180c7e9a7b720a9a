//! End to end: terminal sessions through the engine (the loopback stand-in,
//! or a real iii engine with `IDE_TEST_ENGINE`), with a test worker acting
//! as the console page's per-tab output handler.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use ide::config::Config;
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction};
use serde_json::{Value, json};
use support::engine::{connect_worker, unique_name};
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(20);

struct World {
    engine: Engine,
    ide: IdeProcess,
    dir: tempfile::TempDir,
}

fn seed(dir: &Path) -> Config {
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(dir.to_path_buf());
    cfg
}

async fn start() -> World {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let cfg = seed(dir.path());
    let config_path = dir.path().join("config.yaml");
    let engine = Engine::start().await;
    let url = engine.url();
    let ide = IdeProcess::serve(&url, &cfg, &config_path);
    assert!(
        engine.wait_for_ide(WAIT).await,
        "ide did not register its functions:\n{}",
        ide.logs()
    );
    World { engine, ide, dir }
}

/// The console page's per-tab output handler.
struct Console {
    function_id: String,
    _client: IIIClient,
    rx: mpsc::UnboundedReceiver<Value>,
    /// Frames that landed ahead of their turn, by sequence.
    early: BTreeMap<u64, Value>,
    /// Every frame taken, by sequence (this attachment).
    seen: BTreeMap<u64, Value>,
    delay_ms: Arc<AtomicU64>,
}

/// How far apart frames may land: the worker's delivery window.
const WINDOW: u64 = 4;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn unb64(v: &Value) -> Vec<u8> {
    v.as_str()
        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
        .unwrap_or_default()
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| !r.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

impl World {
    async fn ok(&self, function_id: &str, payload: Value) -> Value {
        match self.engine.call(function_id, payload.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{function_id} {payload} failed: {e:?}\n{}", self.ide.logs()),
        }
    }

    async fn console(&self, page: &str) -> Console {
        let function_id = format!(
            "iii::{page}-ui::pty-output::console-{}",
            uuid::Uuid::new_v4()
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let client = connect_worker(&self.engine.url(), &unique_name("console"));
        let delay = delay_ms.clone();
        client.register_function(
            &function_id,
            RegisterFunction::new_async(move |input: Value| {
                let tx = tx.clone();
                let delay = delay.clone();
                async move {
                    let d = delay.load(Ordering::SeqCst);
                    if d > 0 {
                        tokio::time::sleep(Duration::from_millis(d)).await;
                    }
                    let _ = tx.send(input);
                    Ok::<Value, SdkError>(json!({}))
                }
            }),
        );
        assert!(
            self.engine
                .wait_for_function(&function_id, WAIT)
                .await
                .is_some()
        );
        Console {
            function_id,
            _client: client,
            rx,
            early: BTreeMap::new(),
            seen: BTreeMap::new(),
            delay_ms,
        }
    }

    async fn open(&self, console: &Console, program: Option<&str>, args: &[&str]) -> Value {
        let mut p = json!({"cwd": self.dir.path(), "cols": 80, "rows": 24,
                           "output_function_id": console.function_id});
        if let Some(program) = program {
            p["program"] = json!(program);
            p["args"] = json!(args);
        }
        self.ok("shell::pty::open", p).await
    }

    async fn stop(mut self) {
        self.ide.signal_term();
        assert!(self.ide.wait_exit(WAIT).await.is_some(), "ide did not stop");
        self.engine.stop().await;
    }
}

impl Console {
    /// Take one frame that landed: deliveries overtake each other in the
    /// engine, so the page reorders by `sequence` — but never sees one twice,
    /// one it already passed, or one further ahead than the window.
    fn accept(&mut self, next_seq: u64, ev: Value) {
        let seq = ev["sequence"].as_u64().expect("sequence");
        // A delivery whose answer was lost (or came too late) is sent
        // again; the page drops it. It must be the very same frame.
        if let Some(seen) = self.seen.get(&seq) {
            assert_eq!(
                seen, &ev,
                "frame {seq} delivered twice with different content"
            );
            return;
        }
        assert!(
            seq >= next_seq && seq < next_seq + WINDOW,
            "frame {seq} landed while expecting {next_seq}: {ev}"
        );
        self.seen.insert(seq, ev.clone());
        self.early.insert(seq, ev);
    }

    /// The frame numbered `seq`, waiting until `deadline`.
    async fn frame(&mut self, seq: u64, deadline: tokio::time::Instant) -> Option<Value> {
        loop {
            if let Some(ev) = self.early.remove(&seq) {
                return Some(ev);
            }
            let ev = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .ok()??;
            self.accept(seq, ev);
        }
    }

    /// Everything that already landed, in order from `next_seq`, with no gap.
    fn drain(&mut self, next_seq: &mut u64) {
        while let Ok(ev) = self.rx.try_recv() {
            self.accept(*next_seq, ev);
        }
        while let Some(ev) = self.early.remove(next_seq) {
            assert_eq!(ev["sequence"], json!(*next_seq));
            *next_seq += 1;
        }
        assert!(
            self.early.is_empty(),
            "a gap before {:?}",
            self.early.keys()
        );
    }

    /// Frames until `needle` shows in the text so far; checks sequence
    /// order. Each frame is decoded and searched once (with the needle's
    /// length before it), so a flood costs linear time.
    async fn until(&mut self, next_seq: &mut u64, needle: &str) -> String {
        let mut text = String::new();
        // no match starts before this (searched already)
        let mut from = 0;
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if text[from..].contains(needle) {
                return text;
            }
            from = (text.len() + 1).saturating_sub(needle.len());
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            let ev = self.frame(*next_seq, deadline).await.unwrap_or_else(|| {
                let tail = &text[text.len().saturating_sub(300)..];
                panic!(
                    "{needle:?} never showed; {} bytes, ending {tail:?}",
                    text.len()
                )
            });
            *next_seq += 1;
            text.push_str(&String::from_utf8_lossy(&unb64(&ev["data"])));
        }
    }
}

#[tokio::test]
async fn a_console_types_detaches_reattaches_and_closes() {
    let w = start().await;
    let mut console = w.console("ide").await;
    let o = w.open(&console, None, &[]).await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    let pid = o["pid"].as_u64().unwrap();
    let mut seq = 1;
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo hi-$((6*7))\r")}),
    )
    .await;
    console.until(&mut seq, "hi-42").await;
    // resize, then stty sees it
    w.ok(
        "shell::pty::resize",
        json!({"session_id": id, "access_key": key, "cols": 99, "rows": 31}),
    )
    .await;
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("stty size\r")}),
    )
    .await;
    console.until(&mut seq, "31 99").await;
    // detach, produce output, attach after what was seen: exact continuation
    let d = w
        .ok(
            "shell::pty::detach",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(d["status"], "detached");
    // detach returns after any delivery in flight: what arrived is all there is
    console.drain(&mut seq);
    let seen = seq - 1;
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo while-away\r")}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = w.ok("shell::pty::sessions", json!({})).await;
        let s = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .cloned()
            .unwrap();
        assert_eq!(s["ui"], "ide");
        assert!(s["output_function_id"].is_null());
        if s["sequence"].as_u64().unwrap() > seen {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // output may still be arriving: attach replays up to now, live follows
    let a = w
        .ok(
            "shell::pty::attach",
            json!({"session_id": id, "reconnect_token": o["reconnect_token"], "after_sequence": seen,
                   "cols": 99, "rows": 31, "output_function_id": console.function_id,
                   "request_id": "reload-1"}),
        )
        .await;
    assert_eq!(a["truncated"], false);
    let mut replay = Vec::new();
    let mut expect = seen + 1;
    for f in a["frames"].as_array().unwrap() {
        assert_eq!(f["sequence"], json!(expect));
        expect += 1;
        replay.extend(unb64(&f["data"]));
    }
    assert_eq!(a["next_sequence"], json!(expect));
    let key = a["access_key"].clone();
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo back\r")}),
    )
    .await;
    let mut seq = expect;
    let live = console.until(&mut seq, "back\r\n").await;
    let all = String::from_utf8_lossy(&replay).into_owned() + &live;
    assert!(all.contains("while-away"), "{all:?}");
    // the old key is locked out
    let err = w
        .engine
        .call(
            "shell::pty::write",
            json!({"session_id": id, "access_key": o["access_key"], "data": b64("x")}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    // close: the shell and its group are gone
    let c = w
        .ok(
            "shell::pty::close",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(c["closed"], true);
    assert!(!alive(pid));
    w.stop().await;
}

#[tokio::test]
async fn a_slow_console_under_a_flood_keeps_the_worker_flat_and_ctrl_c_works() {
    let w = start().await;
    let mut console = w.console("ide").await;
    console.delay_ms.store(50, Ordering::SeqCst);
    let o = w.open(&console, Some("/bin/sh"), &[]).await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    let mut seq = 1;
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("yes\r")}),
    )
    .await;
    console.until(&mut seq, "y\r\ny\r\ny").await;
    let rss = |pid: u32| -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    let ide_pid = w.ide.pid().expect("ide runs");
    let before = rss(ide_pid);
    for _ in 0..20 {
        let deadline = tokio::time::Instant::now() + WAIT;
        console
            .frame(seq, deadline)
            .await
            .expect("the flood goes on");
        seq += 1;
    }
    let after = rss(ide_pid);
    assert!(
        after < before + 16 * 1024,
        "RSS grew from {before} kB to {after} kB"
    );
    console.delay_ms.store(0, Ordering::SeqCst);
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("\u{3}")}),
    )
    .await;
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo done-$((2+3))\r")}),
    )
    .await;
    console.until(&mut seq, "done-5").await;
    w.stop().await;
}

#[tokio::test]
async fn shutdown_leaves_no_session_process() {
    let w = start().await;
    let mut console = w.console("ide").await;
    let login = w.open(&console, None, &[]).await;
    let a = login["pid"].as_u64().unwrap();
    // the login shell finishes its startup files first: one killed inside
    // them can leave their tools' locks behind (pyenv's rehash)
    w.ok(
        "shell::pty::write",
        json!({"session_id": login["session_id"], "access_key": login["access_key"],
               "data": b64("echo ready-$((1+1))\r")}),
    )
    .await;
    console.until(&mut 1, "ready-2").await;
    let b = w
        .open(
            &console,
            Some("/bin/sh"),
            &["-c", "trap '' HUP TERM; sleep 300"],
        )
        .await["pid"]
        .as_u64()
        .unwrap();
    assert!(alive(a) && alive(b));
    w.stop().await;
    assert!(!alive(a), "login shell {a} survived shutdown");
    assert!(!alive(b), "session {b} survived shutdown");
}

#[tokio::test]
async fn an_agent_drives_a_prompt_through_the_engine() {
    let w = start().await;
    let o = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "/bin/sh"}),
        )
        .await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    w.ok(
        "shell::pty::send",
        json!({"session_id": id, "access_key": key,
        "text": "read -p 'Continue? ' a; echo \"got $a\"", "keys": ["enter"]}),
    )
    .await;
    let r = w
        .ok("shell::pty::read", json!({"session_id": id, "access_key": key, "wait_ms": 10000, "until": "Continue\\? $"}))
        .await;
    assert_eq!(r["matched"], true, "{r}");
    // read on from the answer's next_sequence, as it is
    let from = r["next_sequence"].clone();
    w.ok(
        "shell::pty::send",
        json!({"session_id": id, "access_key": key, "text": "yes", "keys": ["enter"]}),
    )
    .await;
    let r = w
        .ok(
            "shell::pty::read",
            json!({"session_id": id, "access_key": key, "from_sequence": from,
                                       "wait_ms": 10000, "until": "got yes"}),
        )
        .await;
    assert_eq!(r["matched"], true, "{r}");
    let sc = w
        .ok(
            "shell::pty::screen",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert!(sc["rows"].to_string().contains("got yes"), "{sc}");
    let list = w.ok("shell::pty::sessions", json!({})).await;
    assert!(!list.to_string().contains(key.as_str().unwrap()));
    // the agent ends it through its own (non-internal) surface
    let stopped = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(stopped["stopped"], true, "{stopped}");
    assert!(stopped["status"]["exited"].is_object(), "{stopped}");
    let list = w.ok("shell::pty::sessions", json!({})).await;
    assert!(!list.to_string().contains(id.as_str().unwrap()), "{list}");
    // a second stop says it is over, with how it ended
    let again = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(again["stopped"], false, "{again}");
    assert_eq!(again["status"], stopped["status"], "{again}");
    w.stop().await;
}

/// The agent round's terminal steps, one call each, through the real
/// binary: a REPL reaches its prompt in the start call, a pager is paged
/// with one send per key answering the screen, and a program that exited
/// is stopped with its exit code.
#[tokio::test]
async fn an_agent_takes_one_call_per_terminal_step() {
    let w = start().await;
    // a REPL, started and at its prompt in one call
    let o = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "python3", "args": ["-q"],
                   "wait_ms": 20000, "until": ">>> $"}),
        )
        .await;
    assert_eq!(o["output"]["matched"], true, "{o}");
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    let r = w
        .ok(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "text": "6 * 7", "keys": ["enter"],
                   "wait_ms": 20000, "until": "42\\n>>> $"}),
        )
        .await;
    assert_eq!(r["output"]["matched"], true, "{r}");
    assert!(!r["output"]["text"].as_str().unwrap().contains('\r'), "{r}");
    let r = w
        .ok(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "text": "exit(4)", "keys": ["enter"],
                   "wait_ms": 20000, "until": "never printed"}),
        )
        .await;
    assert!(r["output"]["status"]["exited"].is_object(), "{r}");
    let r = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(r["stopped"], false, "it had exited: {r}");
    assert_eq!(r["status"]["exited"]["exit_code"], 4, "{r}");

    // less on a long file: each key is one call answering the screen
    let file = w.dir.path().join("long.txt");
    std::fs::write(
        &file,
        (1..=500).map(|i| format!("row {i}\n")).collect::<String>(),
    )
    .unwrap();
    let o = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "less", "args": [file],
                   "screen": true, "until": "^row 1\\b", "wait_ms": 20000}),
        )
        .await;
    assert_eq!(o["screen"]["matched"], true, "{o}");
    assert_eq!(o["screen"]["alternate_screen"], true, "{o}");
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    let page = |keys: Value, until: &str| {
        json!({"session_id": id, "access_key": key, "keys": keys, "screen": true,
               "until": until, "wait_ms": 20000})
    };
    for (keys, top) in [
        (json!(["pagedown"]), "^row 40\\b"),
        (json!(["pagedown"]), "^row 79\\b"),
        (json!(["end"]), "^row 462\\b"),
        (json!(["home"]), "^row 1\\b"),
    ] {
        let r = w.ok("shell::pty::send", page(keys.clone(), top)).await;
        assert_eq!(r["screen"]["matched"], true, "{keys} → {top}: {r}");
        assert!(r.get("output").is_none(), "{r}");
    }
    let r = w
        .ok(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "text": "q", "wait_ms": 20000,
                   "until": "never printed"}),
        )
        .await;
    assert!(
        r["output"]["status"]["exited"].is_object(),
        "less quit: {r}"
    );
    let r = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(r["stopped"], false, "{r}");
    assert_eq!(r["status"]["exited"]["exit_code"], 0, "{r}");
    w.stop().await;
}
