//! In-process tests of the `shell::pty::*` functions, with a fake engine
//! standing in for the console's output handler.

use crate::catalog::Catalog;

use crate::ports::Outbound;

use crate::config::Config;
use crate::error::WireError;
use crate::runtime::Runtime;
use crate::services::Services;
use base64::Engine as _;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

const TARGET: &str = "iii::ide-ui::pty-output::console-tab1";
const WAIT: Duration = Duration::from_secs(10);

/// The console's output handler: records every frame, optionally slowly.
struct FakeConsole {
    tx: mpsc::UnboundedSender<(String, Value)>,
    delay_ms: AtomicU64,
    missing: std::sync::Mutex<Vec<String>>,
    /// Answers to lose: the frame lands, its answer never comes back, and
    /// the call times out as a real one does.
    lose: AtomicU64,
    /// Lost answers whose calls are still waiting out their timeout.
    lost_waiting: AtomicU64,
    /// Every frame whose call has been answered, in answer order.
    answered: std::sync::Mutex<Vec<Value>>,
}

#[async_trait::async_trait]
impl Outbound for FakeConsole {
    async fn call(
        &self,
        id: &str,
        payload: Value,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        if self.missing.lock().unwrap().iter().any(|m| m == id) {
            return Err(WireError {
                code: "function_not_found".into(),
                message: format!("Function {id} not found"),
            });
        }
        // Recorded when the call starts: the worker starts its deliveries in
        // sequence order, and this records them in that order (a page over
        // the engine reorders by `sequence` instead; see tests/pty_e2e.rs).
        let _ = self.tx.send((id.to_string(), payload.clone()));
        if self
            .lose
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            self.lost_waiting.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(timeout_ms.unwrap_or(30_000))).await;
            self.lost_waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(WireError {
                code: crate::ports::CALL_TIMED_OUT.into(),
                message: format!("no answer from {id}"),
            });
        }
        let d = self.delay_ms.load(Ordering::SeqCst);
        if d > 0 {
            tokio::time::sleep(Duration::from_millis(d)).await;
        }
        self.answered.lock().unwrap().push(payload);
        Ok(json!({}))
    }
    fn fire(&self, _: &crate::ports::Binding, _: Value) {}
}

struct World {
    services: Arc<Services>,
    console: Arc<FakeConsole>,
    frames: mpsc::UnboundedReceiver<(String, Value)>,
    catalog: Catalog,
    dir: tempfile::TempDir,
}

fn world_with(configure: impl FnOnce(&mut Config)) -> World {
    let dir = tempfile::TempDir::new().unwrap();
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(dir.path().to_path_buf());
    configure(&mut cfg);
    let (tx, frames) = mpsc::unbounded_channel();
    let console = Arc::new(FakeConsole {
        tx,
        delay_ms: AtomicU64::new(0),
        missing: Default::default(),
        lose: AtomicU64::new(0),
        lost_waiting: AtomicU64::new(0),
        answered: Default::default(),
    });
    let outbound: Arc<dyn Outbound> = console.clone();
    let services = Arc::new(Services::new(
        Runtime::build(cfg).unwrap(),
        None,
        Some(outbound.clone()),
    ));
    World {
        services,
        console,
        frames,
        catalog: Catalog::standard(),
        dir,
    }
}

fn world() -> World {
    world_with(|_| {})
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn unb64(v: &Value) -> Vec<u8> {
    v.as_str()
        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
        .unwrap_or_default()
}

fn alive(pid: u64) -> bool {
    crate::exec::tree::stat(pid as i32).is_some_and(|s| s.live())
}

impl World {
    async fn call(&self, id: &str, mut payload: Value) -> Result<Value, WireError> {
        // A test's shells and pagers keep their history out of the home of
        // whoever runs the tests (a test given its own `env` sets it).
        let opens = id == "shell::pty::open" || id == "shell::pty::start";
        if opens && payload.get("env").is_none() {
            payload["env"] = json!({"HISTFILE": "/dev/null", "LESSHISTFILE": "-"});
        }
        self.catalog.call(&self.services, id, payload).await
    }

    async fn ok(&self, id: &str, payload: Value) -> Value {
        self.call(id, payload.clone())
            .await
            .unwrap_or_else(|e| panic!("{id} {payload}: {e}"))
    }

    /// An agent session (`shell::pty::start`) running `sh -c script`.
    async fn start_sh(&self, script: &str) -> Value {
        self.ok(
            "shell::pty::start",
            json!({"cwd": self.dir.path(), "program": "/bin/sh", "args": ["-c", script]}),
        )
        .await
    }

    /// Call an agent function on the session `start` answered, with
    /// `fields` beside its session_id and access_key.
    async fn on(&self, start: &Value, id: &str, fields: Value) -> Result<Value, WireError> {
        let mut payload =
            json!({"session_id": start["session_id"], "access_key": start["access_key"]});
        for (k, v) in fields.as_object().into_iter().flatten() {
            payload[k] = v.clone();
        }
        self.call(id, payload).await
    }

    async fn open_program(&self, program: &str, args: &[&str]) -> Value {
        self.ok(
            "shell::pty::open",
            json!({"cwd": self.dir.path(), "cols": 80, "rows": 24,
                   "output_function_id": TARGET, "program": program, "args": args}),
        )
        .await
    }

    /// The next frame, recorded by sequence in `seen`; `Some(seq)` when it
    /// repeats one already there (and is the same frame).
    async fn record_frame(
        &mut self,
        seen: &mut std::collections::BTreeMap<u64, Value>,
        deadline: tokio::time::Instant,
    ) -> Option<u64> {
        let (_, ev) = tokio::time::timeout_at(deadline, self.frames.recv())
            .await
            .unwrap_or_else(|_| panic!("no frame sent again, or no output; frames {seen:?}"))
            .unwrap();
        let seq = ev["sequence"].as_u64().unwrap();
        let prev = seen.insert(seq, ev.clone())?;
        assert_eq!(prev, ev, "the frame sent again is the same frame");
        Some(seq)
    }

    /// Frames delivered until `needle` shows in the output so far.
    async fn until_output(&mut self, needle: &str) -> (String, Vec<Value>) {
        self.until_output_without(needle, None).await
    }

    /// Frames delivered until `needle` shows in the output so far, with the
    /// byte `skip` (when given) left out of it. Each frame is decoded and
    /// searched once (the session never cuts a character between frames),
    /// with the needle's length of what came before: linear in the output,
    /// however much floods in.
    async fn until_output_without(
        &mut self,
        needle: &str,
        skip: Option<u8>,
    ) -> (String, Vec<Value>) {
        let mut text = String::new();
        let mut events = Vec::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        // no match starts before this (searched already)
        let mut from = 0;
        loop {
            if text[from..].contains(needle) {
                return (text, events);
            }
            from = (text.len() + 1).saturating_sub(needle.len());
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            let (_, ev) = tokio::time::timeout_at(deadline, self.frames.recv())
                .await
                .unwrap_or_else(|_| {
                    let tail = &text[text.len().saturating_sub(300)..];
                    panic!(
                        "{needle:?} never showed; {} bytes, ending {tail:?}",
                        text.len()
                    )
                })
                .unwrap();
            let mut data = unb64(&ev["data"]);
            if let Some(b) = skip {
                data.retain(|&c| c != b);
            }
            text.push_str(&String::from_utf8_lossy(&data));
            events.push(ev);
        }
    }
}

impl World {
    /// Every frame delivered until (and with) the eof frame.
    async fn eof_events(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (_, ev) = tokio::time::timeout_at(deadline, self.frames.recv())
                .await
                .expect("an eof frame")
                .unwrap();
            let eof = ev["eof"] == json!(true);
            events.push(ev);
            if eof {
                return events;
            }
        }
    }
}

#[test]
fn the_eight_console_functions_match_the_published_contract() {
    crate::testkit::assert_matches_contract(
        include_str!("../../tests/fixtures/contract-shell-pty.json"),
        8,
    );
    let catalog = Catalog::standard();
    for id in ["start", "send", "read", "screen"] {
        let d = catalog.get(&format!("shell::pty::{id}")).unwrap();
        assert_eq!(d.metadata, json!({}), "agent functions are not internal");
    }
}

#[tokio::test]
async fn a_shell_echoes_and_frames_are_numbered_from_one() {
    let mut w = world();
    let o = w.open_program("/bin/sh", &[]).await;
    assert!(o.get("program").is_some());
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo hi-$((40+2))\r")}),
    )
    .await;
    let (_, events) = w.until_output("hi-42").await;
    for (i, ev) in events.iter().enumerate() {
        assert_eq!(ev["sequence"], json!(i as u64 + 1), "{ev}");
        assert_eq!(ev["session_id"], id);
        assert_eq!(ev["eof"], json!(false));
    }
    let list = w.ok("shell::pty::sessions", json!({})).await;
    let mine = &list["sessions"][0];
    assert_eq!(mine["ui"], "ide");
    assert_eq!(mine["status"], "attached");
    assert_eq!(mine["output_function_id"], TARGET);
    let shown = list.to_string();
    assert!(!shown.contains(key.as_str().unwrap()));
    assert!(!shown.contains(o["reconnect_token"].as_str().unwrap()));
    w.services.shutdown().await;
}

#[tokio::test]
async fn a_login_shell_is_the_default() {
    // The login shell reads its home's startup files: it gets a home of the
    // test's own (through the operator's forwarding, as HOME cannot be set
    // per call), never the dotfiles of whoever runs the tests.
    let mut w = world_with(|c| {
        c.env.inherit = false;
        c.env.allow = vec!["PATH".into(), "HOME".into()];
    });
    let home = w.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    for rc in [".profile", ".bash_profile", ".bash_login"] {
        std::fs::write(home.join(rc), "echo profile-$((2+3))\n").unwrap();
    }
    crate::exec::env_gate::TEST_WORKER_ENV.with(|e| {
        *e.borrow_mut() = Some(vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), home.to_string_lossy().into_owned()),
        ])
    });
    let o = w
        .ok(
            "shell::pty::open",
            json!({"cwd": w.dir.path(), "cols": 80, "rows": 24, "output_function_id": TARGET,
                   "env": {"HISTFILE": "/dev/null"}}),
        )
        .await;
    assert!(o.get("program").is_none(), "{o}");
    let pid = o["pid"].as_u64().unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert_eq!(cmdline.first(), Some(&b'-'), "argv[0] marks a login shell");
    // let the shell finish its startup files first: a login shell killed
    // inside them can leave their tools' locks behind (pyenv's rehash)
    w.ok(
        "shell::pty::write",
        json!({"session_id": o["session_id"], "access_key": o["access_key"],
               "data": b64("echo ready-$((1+1))\r")}),
    )
    .await;
    let (text, _) = w.until_output("ready-2").await;
    assert!(
        text.contains("profile-5"),
        "the shell read the given home's .profile: {text:?}"
    );
    w.services.shutdown().await;
    assert!(!alive(pid));
}

#[tokio::test]
async fn bad_input_is_refused_with_its_code() {
    let w = world();
    let file = w.dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let base = json!({"cwd": w.dir.path(), "cols": 80, "rows": 24, "output_function_id": TARGET});
    let with = |k: &str, v: Value| {
        let mut p = base.clone();
        p[k] = v;
        p
    };
    for (payload, code, needle) in [
        (
            with("output_function_id", json!("shell::exec")),
            "S210",
            "pty-output",
        ),
        (with("cols", json!(0)), "S210", "out of range"),
        (with("rows", json!(9999)), "S210", "out of range"),
        (with("env", json!({"PATH": "/tmp"})), "S210", "PATH"),
        (with("env", json!({"LD_PRELOAD": "x"})), "S210", "LD_"),
        (
            with("env", json!({"PATH=/tmp/evil": "x"})),
            "S210",
            "not a valid variable name",
        ),
        (with("cwd", json!(w.dir.path().join("missing"))), "S211", ""),
        (with("cwd", json!(file)), "S212", "not a directory"),
        (
            with("program", json!("no-such-program-xyz")),
            "S211",
            "PATH",
        ),
    ] {
        let err = w
            .call("shell::pty::open", payload.clone())
            .await
            .unwrap_err();
        assert_eq!(err.code, code, "{payload}: {}", err.message);
        assert!(err.message.contains(needle), "{}", err.message);
    }
    assert!(w.services.pty.is_empty());
}

#[tokio::test]
async fn a_jailed_cwd_must_be_inside_a_root() {
    let root = tempfile::TempDir::new().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let w = world_with(|c| {
        c.fs.host_roots = vec![root_path.clone()];
        c.fs.allow_unjailed = false;
        c.working_dir = Some(root_path.clone());
    });
    let err = w
        .call(
            "shell::pty::open",
            json!({"cwd": "/", "cols": 80, "rows": 24, "output_function_id": TARGET, "program": "/bin/sh"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S215", "{}", err.message);
}

#[tokio::test]
async fn credentials_rotate_on_attach_and_a_retry_gets_the_same_answer() {
    let mut w = world();
    let o = w.open_program("/bin/sh", &[]).await;
    let id = o["session_id"].clone();
    let attach = |token: &Value, rid: &str| {
        json!({"session_id": id, "reconnect_token": token, "after_sequence": 0, "cols": 80,
               "rows": 24, "output_function_id": "iii::ide-ui::pty-output::console-tab2",
               "request_id": rid})
    };
    let a = w
        .ok("shell::pty::attach", attach(&o["reconnect_token"], "r1"))
        .await;
    assert_ne!(a["access_key"], o["access_key"]);
    assert_ne!(a["reconnect_token"], o["reconnect_token"]);
    // a retry of the same attach gets the same answer, not a lock-out
    let again = w
        .ok("shell::pty::attach", attach(&o["reconnect_token"], "r1"))
        .await;
    assert_eq!(again["access_key"], a["access_key"]);
    assert_eq!(again["reconnect_token"], a["reconnect_token"]);
    // the old token with another request id is locked out
    let err = w
        .call("shell::pty::attach", attach(&o["reconnect_token"], "r2"))
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    // the old access key is locked out, the new one works
    let write =
        |key: &Value| json!({"session_id": id, "access_key": key, "data": b64("echo rot\r")});
    let err = w
        .call("shell::pty::write", write(&o["access_key"]))
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    assert!(!err.message.contains(o["access_key"].as_str().unwrap()));
    w.ok("shell::pty::write", write(&a["access_key"])).await;
    w.until_output("rot").await;
    // a retried open with the same request_id is the same session
    let p = json!({"cwd": w.dir.path(), "cols": 80, "rows": 24, "output_function_id": TARGET,
                   "program": "/bin/sh", "request_id": "open-1"});
    let first = w.ok("shell::pty::open", p.clone()).await;
    let second = w.ok("shell::pty::open", p).await;
    assert_eq!(first["session_id"], second["session_id"]);
    assert_eq!(first["access_key"], second["access_key"]);
    assert_eq!(w.services.pty.len(), 2);
    w.services.shutdown().await;
}

#[tokio::test]
async fn detach_then_attach_continues_exactly() {
    let mut w = world();
    let o = w.open_program("/bin/sh", &[]).await;
    let id = o["session_id"].clone();
    let key = o["access_key"].clone();
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo one\r")}),
    )
    .await;
    let (_, events) = w.until_output("one\r\n").await;
    let mut seen = events.last().unwrap()["sequence"].as_u64().unwrap();
    let d = w
        .ok(
            "shell::pty::detach",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(d["status"], "detached");
    // detach returned after any delivery in flight: drain what arrived
    while let Ok((_, ev)) = w.frames.try_recv() {
        seen += 1;
        assert_eq!(ev["sequence"], json!(seen));
    }
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo two\r")}),
    )
    .await;
    // wait until the session produced it (no delivery while detached)
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = w.ok("shell::pty::sessions", json!({})).await;
        let s = &list["sessions"][0];
        assert_eq!(s["output_function_id"], Value::Null);
        assert_eq!(s["ui"], "ide");
        let (_, r) = (0, w.services.pty.get(id.as_str().unwrap()).unwrap());
        let (out, _, _) = r.read(seen, Duration::ZERO, |_| true).await;
        if String::from_utf8_lossy(&out.raw).contains("two\r\n") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        w.frames.try_recv().is_err(),
        "nothing is delivered while detached"
    );
    let a = w
        .ok(
            "shell::pty::attach",
            json!({"session_id": id, "reconnect_token": o["reconnect_token"], "after_sequence": seen,
                   "cols": 80, "rows": 24, "output_function_id": TARGET}),
        )
        .await;
    assert_eq!(a["truncated"], false);
    let frames = a["frames"].as_array().unwrap();
    assert_eq!(frames[0]["sequence"].as_u64().unwrap(), seen + 1);
    let mut replay = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f["sequence"].as_u64().unwrap(), seen + 1 + i as u64);
        replay.extend(unb64(&f["data"]));
    }
    assert!(String::from_utf8_lossy(&replay).contains("two"));
    assert_eq!(
        a["next_sequence"].as_u64().unwrap(),
        frames.last().unwrap()["sequence"].as_u64().unwrap() + 1
    );
    // live frames continue right after the replay
    let key = a["access_key"].clone();
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo three\r")}),
    )
    .await;
    let (_, live) = w.until_output("three\r\n").await;
    assert_eq!(live[0]["sequence"], a["next_sequence"]);
    w.services.shutdown().await;
}

#[tokio::test]
async fn a_lost_ring_replays_as_a_redraw_of_the_screen() {
    let w = world_with(|c| c.pty.ring_bytes = super::MIN_RING_BYTES);
    let o = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "/bin/sh",
                   "args": ["-c", "printf '\\033]2;T1\\007\\033[?2004h'; seq 1 200000; printf 'tail-marker'; sleep 30"]}),
        )
        .await;
    let id = o["session_id"].as_str().unwrap().to_string();
    let key = o["access_key"].clone();
    let r = w
        .ok(
            "shell::pty::read",
            json!({"session_id": id, "access_key": key, "wait_ms": 10000, "until": "tail-marker"}),
        )
        .await;
    assert_eq!(r["truncated"], true, "the ring overflowed");
    assert_eq!(r["matched"], true);
    let a = w
        .ok(
            "shell::pty::attach",
            json!({"session_id": id, "reconnect_token": o["reconnect_token"], "after_sequence": 0,
                   "cols": 120, "rows": 40, "output_function_id": TARGET}),
        )
        .await;
    assert_eq!(a["truncated"], true);
    let frames = a["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 1, "one synthesized frame");
    assert_eq!(
        frames[0]["sequence"].as_u64().unwrap() + 1,
        a["next_sequence"].as_u64().unwrap()
    );
    let mut fresh = super::emulator::Screen::new(120, 40);
    fresh.process(&unb64(&frames[0]["data"]));
    let (want, _) = w.services.pty.get(&id).unwrap().render();
    assert_eq!(fresh.render(), want);
    assert_eq!(want.title, "T1");
    assert!(want.rows.iter().any(|r| r.contains("tail-marker")));
    let list = w.ok("shell::pty::sessions", json!({})).await;
    let s = &list["sessions"][0];
    assert!(s["frame_bytes"].as_u64().unwrap() <= super::MIN_RING_BYTES);
    assert_eq!(s["truncated"], true);
    w.services.shutdown().await;
}

#[tokio::test]
async fn adopt_refuses_attached_and_foreign_sessions_and_rotates() {
    let w = world();
    let o = w.open_program("/bin/sh", &[]).await;
    let id = o["session_id"].clone();
    let adopt = |target: &str| json!({"session_id": id, "output_function_id": target, "cols": 80, "rows": 24});
    let err = w
        .call(
            "shell::pty::adopt",
            adopt("iii::ide-ui::pty-output::console-new"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    assert!(err.message.contains("attached"), "{}", err.message);
    w.ok(
        "shell::pty::detach",
        json!({"session_id": id, "access_key": o["access_key"]}),
    )
    .await;
    let err = w
        .call(
            "shell::pty::adopt",
            adopt("iii::claude-ui::pty-output::console-new"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    assert!(err.message.contains("claude"), "{}", err.message);
    let a = w
        .ok(
            "shell::pty::adopt",
            adopt("iii::ide-ui::pty-output::console-new"),
        )
        .await;
    assert_ne!(a["access_key"], o["access_key"]);
    assert_eq!(a["status"], "attached");
    // what the previous owner held no longer works
    let err = w
        .call(
            "shell::pty::detach",
            json!({"session_id": id, "access_key": o["access_key"]}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    let err = w
        .call(
            "shell::pty::attach",
            json!({"session_id": id, "reconnect_token": o["reconnect_token"], "after_sequence": 0,
                   "cols": 80, "rows": 24, "output_function_id": TARGET}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    w.ok(
        "shell::pty::close",
        json!({"session_id": id, "access_key": a["access_key"]}),
    )
    .await;
}

#[tokio::test]
async fn exit_codes_and_signals_end_with_an_eof_frame() {
    let mut w = world();
    w.open_program("/bin/sh", &["-c", "echo bye; exit 7"]).await;
    let events = w.eof_events().await;
    let last = events.last().unwrap();
    assert_eq!(last["eof"], true);
    assert_eq!(last["exit_code"], 7);
    let list = w.ok("shell::pty::sessions", json!({})).await;
    assert_eq!(
        list["sessions"][0]["status"],
        json!({"exited": {"exit_code": 7, "signal": null, "error": null}})
    );
    let o = w.open_program("/bin/sh", &["-c", "kill -TERM $$"]).await;
    let events = w.eof_events().await;
    let last = events.last().unwrap();
    assert_eq!(last["signal"], "SIGTERM", "{last}");
    assert_eq!(last["session_id"], o["session_id"]);
    w.services.shutdown().await;
}

#[tokio::test]
async fn close_and_shutdown_leave_no_process() {
    let w = world();
    // a shell with a background job that ignores HUP and TERM
    let o = w
        .open_program(
            "/bin/sh",
            &[
                "-c",
                "trap '' HUP TERM; (trap '' HUP TERM; sleep 300) & sleep 300",
            ],
        )
        .await;
    let pid = o["pid"].as_u64().unwrap();
    let s = w
        .services
        .pty
        .get(o["session_id"].as_str().unwrap())
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let kids = loop {
        let t = s.summary();
        let _ = t;
        let kids: Vec<i32> = crate::exec::tree::scan()
            .into_iter()
            .filter(|p| p.ppid == pid as i32 && p.live())
            .map(|p| p.pid)
            .collect();
        if !kids.is_empty() {
            break kids;
        }
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let c = w
        .ok(
            "shell::pty::close",
            json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
        )
        .await;
    assert_eq!(c["closed"], true);
    assert!(!alive(pid), "the shell is gone");
    for k in kids {
        assert!(!alive(k as u64), "its job {k} is gone");
    }
    assert!(w.services.pty.is_empty());
    let err = w
        .call(
            "shell::pty::close",
            json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    // shutdown ends every session
    let a = w.open_program("/bin/sh", &[]).await["pid"]
        .as_u64()
        .unwrap();
    let b = w.open_program("/bin/sh", &["-c", "sleep 300"]).await["pid"]
        .as_u64()
        .unwrap();
    assert!(alive(a) && alive(b));
    w.services.shutdown().await;
    assert!(!alive(a) && !alive(b));
}

#[tokio::test]
async fn the_session_cap_is_enforced_and_named() {
    let w = world_with(|c| c.pty.max_sessions = 2);
    w.open_program("/bin/sh", &[]).await;
    let exited = w.open_program("/bin/sh", &["-c", "exit 0"]).await;
    // an exited session makes room
    let s = w
        .services
        .pty
        .get(exited["session_id"].as_str().unwrap())
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !matches!(s.status(), super::session::Status::Exited(_)) {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.open_program("/bin/sh", &[]).await;
    assert_eq!(w.services.pty.len(), 2);
    let err = w
        .call(
            "shell::pty::open",
            json!({"cwd": w.dir.path(), "cols": 80, "rows": 24, "output_function_id": TARGET}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S218");
    assert!(
        err.message.contains("pty.max_sessions (2)"),
        "{}",
        err.message
    );
    w.services.shutdown().await;
}

#[tokio::test]
async fn resize_reaches_the_program() {
    let mut w = world();
    let o = w.open_program("/bin/sh", &[]).await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    let r = w
        .ok(
            "shell::pty::resize",
            json!({"session_id": id, "access_key": key, "cols": 101, "rows": 33}),
        )
        .await;
    assert_eq!(r, json!({"cols": 101, "rows": 33}));
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("stty size\r")}),
    )
    .await;
    w.until_output("33 101").await;
    let err = w
        .call(
            "shell::pty::resize",
            json!({"session_id": id, "access_key": key, "cols": 0, "rows": 33}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    w.services.shutdown().await;
}

#[tokio::test]
async fn a_slow_console_bounds_delivery_and_ctrl_c_still_gets_through() {
    use super::session::{FRAME_MAX, WINDOW};
    let mut w = world();
    w.console.delay_ms.store(100, Ordering::SeqCst);
    let o = w.open_program("/bin/sh", &[]).await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("yes\r")}),
    )
    .await;
    let (_, mut seen) = w.until_output("y\r\ny").await;
    let s = w.services.pty.get(id.as_str().unwrap()).unwrap();
    // While the console is slow, production stays within the window of what
    // it answered: checked at each of the next 10 frames it receives, by
    // counting (the reader stops at WINDOW undelivered frames, however fast
    // or slow the machine is).
    for _ in 0..10 {
        let (_, ev) = tokio::time::timeout(WAIT, w.frames.recv())
            .await
            .expect("the flood goes on")
            .unwrap();
        seen.push(ev);
        let answered = w.console.answered.lock().unwrap().len() as u64;
        let produced = s.last_sequence();
        assert!(
            produced <= answered + WINDOW,
            "{produced} frames produced, {answered} answered: more than the window of {WINDOW} ahead"
        );
    }
    // The console speeds up and the user presses Ctrl+C: what the flood
    // produced before the interrupt and is still queued is at most the
    // window; what is read after it is at most one frame the reader held
    // plus what the terminal buffered (the kernel flushes it on the
    // interrupt). Counted in bytes between the interrupt and the prompt.
    w.console.delay_ms.store(0, Ordering::SeqCst);
    let produced_before = s.last_sequence();
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("\u{3}")}),
    )
    .await;
    w.ok(
        "shell::pty::write",
        json!({"session_id": id, "access_key": key, "data": b64("echo stopped-$((1+1))\r")}),
    )
    .await;
    let (_, after) = w.until_output("stopped-2").await;
    seen.extend(after);
    let bytes_of = |keep: &dyn Fn(u64) -> bool| -> usize {
        let mut by_seq = std::collections::BTreeMap::new();
        for ev in &seen {
            by_seq.insert(ev["sequence"].as_u64().unwrap(), unb64(&ev["data"]).len());
        }
        by_seq
            .iter()
            .filter(|(q, _)| keep(**q))
            .map(|(_, n)| n)
            .sum()
    };
    let read_after = bytes_of(&|q| q > produced_before);
    let queued_before =
        bytes_of(&|q| q > produced_before.saturating_sub(WINDOW) && q <= produced_before);
    eprintln!(
        "after Ctrl+C: {queued_before} bytes queued before it, {read_after} bytes read after it (frames {produced_before}..{})",
        s.last_sequence()
    );
    assert!(
        read_after <= FRAME_MAX + PTY_BUFFERED,
        "{read_after} bytes of output read after the interrupt reached the console before the prompt"
    );
    w.services.shutdown().await;
}

/// The most a pseudo-terminal holds between program and reader (the
/// kernel's flip buffers of 64 KiB and the line discipline's 4 KiB).
const PTY_BUFFERED: usize = 68 * 1024;

#[tokio::test]
async fn a_vanished_console_detaches_the_session() {
    let w = world();
    w.console.missing.lock().unwrap().push(TARGET.to_string());
    let o = w.open_program("/bin/sh", &["-c", "echo x; sleep 30"]).await;
    let s = w
        .services
        .pty
        .get(o["session_id"].as_str().unwrap())
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while s.status() != super::session::Status::Detached {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(s.summary().ui.as_deref(), Some("ide"));
    w.services.shutdown().await;
}

#[tokio::test]
async fn an_agent_answers_a_prompt_and_quits_less() {
    let w = world();
    let o = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "/bin/sh"}),
        )
        .await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    let read = |after: u64, until: &str| json!({"session_id": id, "access_key": key, "after_sequence": after, "wait_ms": 10000, "until": until});
    w.ok(
        "shell::pty::send",
        json!({"session_id": id, "access_key": key,
        "text": "read -p 'Your name? ' n; echo \"hello, $n\"", "keys": ["enter"]}),
    )
    .await;
    let r = w.ok("shell::pty::read", read(0, "Your name\\? $")).await;
    assert_eq!(r["matched"], true, "{r}");
    let after = r["next_sequence"].as_u64().unwrap() - 1;
    w.ok(
        "shell::pty::send",
        json!({"session_id": id, "access_key": key, "text": "Ada", "keys": ["enter"]}),
    )
    .await;
    let r = w.ok("shell::pty::read", read(after, "hello, Ada")).await;
    assert_eq!(r["matched"], true, "{r}");
    assert!(!r["text"].as_str().unwrap().contains('\u{1b}'));
    // less on the alternate screen, then quit it
    let file = w.dir.path().join("notes.txt");
    std::fs::write(
        &file,
        (1..200)
            .map(|i| format!("note line {i}\n"))
            .collect::<String>(),
    )
    .unwrap();
    // one call per step: each send answers the screen once less settled
    // (or, with `until`, once the screen shows what the step is for)
    let step = |text: &str, keys: &[&str], until: &str| {
        json!({"session_id": id, "access_key": key, "text": text, "keys": keys,
               "screen": true, "until": until, "wait_ms": 10000})
    };
    let r = w
        .ok(
            "shell::pty::send",
            step(
                &format!("less {}", file.display()),
                &["enter"],
                "note line 1\\b",
            ),
        )
        .await;
    assert!(r.get("output").is_none(), "{r}");
    let screen = &r["screen"];
    assert_eq!(screen["matched"], true, "{r}");
    assert_eq!(screen["alternate_screen"], true, "{r}");
    assert_eq!(screen["height"], 40);
    assert_eq!(screen["cols"], 120);
    // a page down shows the next page: line 40 on top (39 rows a page)
    let r = w
        .ok(
            "shell::pty::send",
            step("", &["pagedown"], "^note line 40\\b"),
        )
        .await;
    assert_eq!(r["screen"]["matched"], true, "{r}");
    assert_eq!(r["screen"]["rows"][0], "note line 40", "{r}");
    // without `until`, the answer waits for less to go quiet after the key
    let r = w
        .ok(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "keys": ["up"], "screen": true,
                   "wait_ms": 10000}),
        )
        .await;
    assert_eq!(r["screen"]["matched"], true, "settled: {r}");
    assert_eq!(r["screen"]["alternate_screen"], true, "{r}");
    // (what a settled screen shows is the program's business; that the
    // key went through is checked by waiting for it, not by timing)
    let sc = w
        .ok(
            "shell::pty::screen",
            json!({"session_id": id, "access_key": key, "until": "^note line 39\\b", "wait_ms": 10000}),
        )
        .await;
    assert_eq!(sc["matched"], true, "{sc}");
    let r = w
        .ok(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "text": "q", "screen": true,
                   "wait_ms": 10000}),
        )
        .await;
    assert_eq!(r["screen"]["matched"], true, "settled: {r}");
    let sc = w
        .ok(
            "shell::pty::screen",
            json!({"session_id": id, "access_key": key, "until": "hello, Ada", "wait_ms": 10000}),
        )
        .await;
    assert_eq!(sc["alternate_screen"], false, "less quit: {sc}");
    let err = w
        .call(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "keys": ["hyper"]}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    let err = w
        .call(
            "shell::pty::read",
            json!({"session_id": id, "access_key": key, "until": "("}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S217");
    w.ok(
        "shell::pty::close",
        json!({"session_id": id, "access_key": key}),
    )
    .await;
}

#[tokio::test]
async fn a_delivery_whose_answer_is_lost_is_sent_again_and_the_terminal_goes_on() {
    let mut w = world();
    w.console.lose.store(1, Ordering::SeqCst);
    let o = w
        .open_program(
            "sh",
            &["-c", "printf first; sleep 0.2; printf second; sleep 30"],
        )
        .await;
    // frames by sequence; the one whose answer was lost comes again, the same
    let mut frames = std::collections::BTreeMap::<u64, Value>::new();
    // (the deadline is a hang guard: the frame comes again after the lost
    // call's timeout at the latest, well inside it)
    let mut repeated = false;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text: Vec<u8> = frames.values().flat_map(|f| unb64(&f["data"])).collect();
        if repeated && text.windows(11).any(|w| w == b"firstsecond") {
            break;
        }
        repeated |= w.record_frame(&mut frames, deadline).await.is_some();
    }
    // still attached: a lost answer is not a gone page
    let list = w.ok("shell::pty::sessions", json!({})).await;
    assert_eq!(
        list["sessions"][0]["output_function_id"],
        json!(TARGET),
        "{list}"
    );
    w.ok(
        "shell::pty::close",
        json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
    )
    .await;
}

#[tokio::test]
async fn a_lost_answer_behind_a_later_one_is_sent_again_without_waiting_out_its_timeout() {
    let mut w = world();
    w.console.lose.store(1, Ordering::SeqCst);
    let o = w
        .open_program(
            "sh",
            // later frames keep coming, whatever the first one holds
            &["-c", "printf first; while :; do sleep 0.1; printf x; done"],
        )
        .await;
    // frame 1's answer is lost; the next ones are answered: the page applies in
    // order, so frame 1 landed, and it is sent again at once — while the
    // lost call is still waiting out its timeout, not after it
    let mut seen = std::collections::BTreeMap::<u64, Value>::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    let waiting_at_repeat = loop {
        if let Some(seq) = w.record_frame(&mut seen, deadline).await {
            assert_eq!(seq, 1, "only the frame whose answer was lost comes again");
            break w.console.lost_waiting.load(Ordering::SeqCst);
        }
    };
    assert!(
        seen.contains_key(&2),
        "sent again only after a later frame: {seen:?}"
    );
    assert_eq!(
        waiting_at_repeat, 1,
        "frame 1 came again only after its lost call timed out: the window stayed full that long"
    );
    // the terminal goes on: input is echoed and delivered
    w.ok(
        "shell::pty::write",
        json!({"session_id": o["session_id"], "access_key": o["access_key"], "data": b64("typed")}),
    )
    .await;
    w.until_output_without("typed", Some(b'x')).await;
    w.ok(
        "shell::pty::close",
        json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
    )
    .await;
}

#[tokio::test]
async fn an_agent_stops_its_session_without_an_internal_function() {
    let w = world();
    let stop = crate::catalog::Catalog::standard()
        .get("shell::pty::stop")
        .map(|d| d.metadata.clone())
        .expect("shell::pty::stop is in the catalog");
    assert!(stop.get("internal").is_none(), "{stop}");
    let o = w.start_sh("sleep 600 & sleep 600").await;
    let id = o["session_id"].as_str().unwrap().to_string();
    let pid = o["pid"].as_u64().unwrap() as i32;
    let err = w
        .call(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": "not-the-key"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211", "{err:?}");
    assert!(crate::testkit::pid_alive(pid));
    let r = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": o["access_key"]}),
        )
        .await;
    assert_eq!(r["stopped"], true, "{r}");
    assert!(
        r["status"]["exited"]["signal"].is_string(),
        "ended by a signal: {r}"
    );
    assert!(!crate::testkit::pid_alive(pid), "the program is gone");
    assert!(w.services.pty.get(&id).is_err(), "the session is gone");
    // stopping again answers the same, not an error about console panes
    let again = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": o["access_key"]}),
        )
        .await;
    assert_eq!(again["stopped"], false, "{again}");
    assert_eq!(again["status"], r["status"], "{again}");
    // a stranger still learns nothing, and the agent is told its next call
    let err = w
        .call(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": "not-the-key"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211", "{err:?}");
    assert!(err.message.contains("shell::pty::start"), "{err:?}");
    assert!(!err.message.contains("adopt"), "{err:?}");
    w.services.shutdown().await;
}

#[tokio::test]
async fn stopping_a_session_whose_program_exited_says_so() {
    let w = world();
    let o = w.start_sh("echo bye; exit 3").await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    // wait for the exit through the agent's own read
    let r = w
        .ok(
            "shell::pty::read",
            json!({"session_id": id, "access_key": key, "wait_ms": 10000, "until": "never printed"}),
        )
        .await;
    assert!(r["status"]["exited"].is_object(), "{r}");
    // typing into it names the agent's next calls and how it ended
    let err = w
        .call(
            "shell::pty::send",
            json!({"session_id": id, "access_key": key, "text": "x"}),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("exit code 3"), "{err:?}");
    assert!(err.message.contains("shell::pty::start"), "{err:?}");
    assert!(!err.message.contains("shell::pty::close"), "{err:?}");
    let r = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(r["stopped"], false, "it had already exited: {r}");
    assert_eq!(r["status"]["exited"]["exit_code"], 3, "{r}");
    let r = w
        .ok(
            "shell::pty::stop",
            json!({"session_id": id, "access_key": key}),
        )
        .await;
    assert_eq!(r["stopped"], false, "{r}");
    assert_eq!(r["status"]["exited"]["exit_code"], 3, "{r}");
    w.services.shutdown().await;
}

#[tokio::test]
async fn start_answers_once_the_program_reached_its_prompt() {
    let w = world();
    let o = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "/bin/sh",
                   "args": ["-c", "echo starting; sleep 0.2; printf 'ready> '; read x; echo \"got $x\""],
                   "wait_ms": 10000, "until": "ready> $"}),
        )
        .await;
    assert_eq!(o["output"]["matched"], true, "{o}");
    assert!(
        o["output"]["text"].as_str().unwrap().contains("starting"),
        "{o}"
    );
    assert!(o.get("screen").is_none(), "{o}");
    // and with the screen instead: a program that settles on its first page
    let o2 = w
        .ok(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "/bin/sh",
                   "args": ["-c", "printf 'one\\ntwo\\n'; sleep 600"], "screen": true,
                   "wait_ms": 10000}),
        )
        .await;
    assert_eq!(o2["screen"]["matched"], true, "settled: {o2}");
    assert_eq!(o2["screen"]["rows"][1], "two", "one write, settled: {o2}");
    // until without anything to wait is refused before a session starts
    let before = w.services.pty.len();
    let err = w
        .call(
            "shell::pty::start",
            json!({"cwd": w.dir.path(), "program": "/bin/sh", "until": "x"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210", "{err:?}");
    assert_eq!(w.services.pty.len(), before);
    w.services.shutdown().await;
}

#[tokio::test]
async fn named_keys_follow_the_cursor_mode_the_program_set() {
    let w = world();
    // The program switches the cursor keys to application mode (as less
    // does), then prints the bytes it receives for one key.
    let o = w.start_sh("printf '\\033[?1hREADY\\n'; stty raw -echo; head -c 3 | od -An -c; printf 'normal\\033[?1lREADY2\\n'; head -c 3 | od -An -c; sleep 5").await;
    let r = w
        .on(
            &o,
            "shell::pty::read",
            json!({"wait_ms": 10000, "until": "READY"}),
        )
        .await
        .unwrap();
    assert_eq!(r["matched"], true, "{r}");
    w.on(&o, "shell::pty::send", json!({"keys": ["up"]}))
        .await
        .unwrap();
    let r = w
        .on(
            &o,
            "shell::pty::read",
            json!({"wait_ms": 10000, "until": "READY2"}),
        )
        .await
        .unwrap();
    let text = r["text"].as_str().unwrap_or_default().to_string();
    assert!(
        text.contains("033   O   A"),
        "application mode got: {text:?}"
    );
    w.on(&o, "shell::pty::send", json!({"keys": ["up"]}))
        .await
        .unwrap();
    let r = w
        .on(
            &o,
            "shell::pty::read",
            json!({"wait_ms": 10000, "until": "033   \\[   A"}),
        )
        .await
        .unwrap();
    assert_eq!(r["matched"], true, "normal mode again: {r}");
    w.services.shutdown().await;
}

#[tokio::test]
async fn read_takes_the_previous_next_sequence_as_it_is() {
    let w = world();
    let o = w.start_sh("echo one; read a; echo two; sleep 5").await;
    let r = w
        .on(
            &o,
            "shell::pty::read",
            json!({"wait_ms": 10000, "until": "one"}),
        )
        .await
        .unwrap();
    w.on(&o, "shell::pty::send", json!({"keys": ["enter"]}))
        .await
        .unwrap();
    let next = w
        .on(
            &o,
            "shell::pty::read",
            json!({"from_sequence": r["next_sequence"],
                   "wait_ms": 10000, "until": "two"}),
        )
        .await
        .unwrap();
    assert_eq!(next["matched"], true, "{next}");
    assert!(!next["text"].as_str().unwrap().contains("one"), "{next}");
    let err = w
        .on(
            &o,
            "shell::pty::read",
            json!({"from_sequence": 2, "after_sequence": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    // a wait past what a caller can wait is clamped, and the schema says so
    let schema = crate::catalog::Catalog::standard()
        .get("shell::pty::read")
        .unwrap()
        .request_schema
        .to_string();
    assert!(schema.contains("at most 25000"), "{schema}");
    w.services.shutdown().await;
}

#[tokio::test]
async fn send_waits_for_what_comes_back_in_one_call() {
    let w = world();
    let o = w
        .start_sh("read -p 'name? ' n; echo \"hello $n\"; sleep 5")
        .await;
    let first = w
        .on(
            &o,
            "shell::pty::read",
            json!({"wait_ms": 10000, "until": "name\\? $"}),
        )
        .await
        .unwrap();
    assert_eq!(first["matched"], true, "{first}");
    let r = w
        .on(
            &o,
            "shell::pty::send",
            json!({"text": "ide", "keys": ["enter"],
                   "wait_ms": 10000, "until": "hello ide"}),
        )
        .await
        .unwrap();
    let out = &r["output"];
    assert_eq!(out["matched"], true, "{r}");
    // only what came after this send: not the prompt printed before it
    assert!(!out["text"].as_str().unwrap().contains("name?"), "{r}");
    assert!(out["next_sequence"].as_u64().unwrap() > first["next_sequence"].as_u64().unwrap());
    // no wait asked: no output, as before
    let plain = w
        .on(&o, "shell::pty::send", json!({"text": "x"}))
        .await
        .unwrap();
    assert!(plain.get("output").is_none(), "{plain}");
    // a bad pattern is refused before anything is typed
    let err = w
        .on(
            &o,
            "shell::pty::send",
            json!({"text": "y", "wait_ms": 10, "until": "("}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S217");
    w.services.shutdown().await;
}

#[tokio::test]
async fn screen_waits_until_it_shows_a_pattern() {
    let w = world();
    let o = w
        .start_sh("sleep 0.3; printf 'status: READY'; sleep 5")
        .await;
    let sc = w
        .on(
            &o,
            "shell::pty::screen",
            json!({"until": "status: READY", "wait_ms": 10000}),
        )
        .await
        .unwrap();
    assert_eq!(sc["matched"], true, "{sc}");
    assert!(sc["rows"][0].as_str().unwrap().contains("READY"), "{sc}");
    let now = w.on(&o, "shell::pty::screen", json!({})).await.unwrap();
    assert!(now.get("matched").is_none(), "{now}");
    let t = std::time::Instant::now();
    let never = w
        .on(
            &o,
            "shell::pty::screen",
            json!({"until": "never shown", "wait_ms": 300}),
        )
        .await
        .unwrap();
    assert_eq!(never["matched"], false, "{never}");
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    w.services.shutdown().await;
}

#[tokio::test]
async fn an_agent_session_reads_as_running_not_detached_and_a_console_can_watch_it() {
    let w = world();
    let o = w.start_sh("echo up; sleep 600").await;
    let id = o["session_id"].clone();
    let r = w
        .on(
            &o,
            "shell::pty::read",
            json!({"wait_ms": 10000, "until": "up"}),
        )
        .await
        .unwrap();
    assert_eq!(r["status"], "running", "{r}");
    let status_in_list = |list: &Value| {
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .map(|s| s["status"].clone())
    };
    let list = w.ok("shell::pty::sessions", json!({})).await;
    assert_eq!(status_in_list(&list), Some(json!("running")), "{list}");
    // a console attaches to watch: attached; it leaves: running again
    let a = w
        .ok(
            "shell::pty::attach",
            json!({"session_id": id, "reconnect_token": o["reconnect_token"], "after_sequence": 0,
                   "cols": 80, "rows": 24, "output_function_id": TARGET}),
        )
        .await;
    assert_eq!(a["status"], "attached", "{a}");
    let d = w
        .ok(
            "shell::pty::detach",
            json!({"session_id": id, "access_key": a["access_key"]}),
        )
        .await;
    assert_eq!(d["status"], "running", "{d}");
    // a console's own session still reads as detached when it lets go
    let c = w.open_program("/bin/sh", &[]).await;
    let d = w
        .ok(
            "shell::pty::detach",
            json!({"session_id": c["session_id"], "access_key": c["access_key"]}),
        )
        .await;
    assert_eq!(d["status"], "detached", "{d}");
    w.services.shutdown().await;
}

/// The engine forwards an answer faster than it routes a call, and keeps
/// Nagle on the page's socket: a write answered before the page took its
/// echo reaches the page first and the echo then waits ~40 ms for the
/// page's delayed ACK. So an attached session's write answers once the
/// output that followed it was delivered (bounded by `ECHO_WAIT`).
#[tokio::test]
async fn a_write_answers_after_the_page_took_its_echo() {
    let mut w = world();
    let o = w.open_program("/bin/cat", &[]).await;
    let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
    // a slow page: each frame takes 8 ms to be answered
    w.console.delay_ms.store(8, Ordering::SeqCst);
    for ch in ["q", "r", "s"] {
        w.ok(
            "shell::pty::write",
            json!({"session_id": id, "access_key": key, "data": b64(ch)}),
        )
        .await;
        let answered: String = w
            .console
            .answered
            .lock()
            .unwrap()
            .iter()
            .map(|f| String::from_utf8_lossy(&unb64(&f["data"])).into_owned())
            .collect();
        assert!(
            answered.contains(ch),
            "the write of {ch:?} answered before its echo was delivered; delivered so far: {answered:?}"
        );
    }
    w.until_output("qrs").await;
    let cat = w.services.pty.get(id.as_str().unwrap()).unwrap();
    assert!(cat.expects_echo(), "cat's terminal echoed every write");

    // a program that does not echo: the write still answers, after at most
    // ECHO_WAIT
    w.console.delay_ms.store(0, Ordering::SeqCst);
    let silent = w
        .open_program("/bin/sh", &["-c", "stty -echo; echo ready; cat >/dev/null"])
        .await;
    w.until_output("ready").await;
    let write_x = || async {
        let started = std::time::Instant::now();
        w.ok(
            "shell::pty::write",
            json!({"session_id": silent["session_id"], "access_key": silent["access_key"], "data": b64("x")}),
        )
        .await;
        started.elapsed()
    };
    use crate::pty::session::{ECHO_WAIT, ECHO_WAIT_QUIET};
    let s = w
        .services
        .pty
        .get(silent["session_id"].as_str().unwrap())
        .unwrap();
    // Which wait a write takes is decided by whether the last write was
    // echoed; a timer never fires early, so each write takes at least its
    // wait (upper bounds would time the machine, not the session).
    assert!(s.expects_echo(), "a new session expects its writes echoed");
    let took = write_x().await;
    assert!(
        took >= ECHO_WAIT,
        "the first write with no echo waits ECHO_WAIT for it: took {took:?}"
    );
    // it did not echo: the next ones wait only the short while
    for _ in 0..3 {
        assert!(
            !s.expects_echo(),
            "a write that was not echoed makes the next one wait only ECHO_WAIT_QUIET"
        );
        let took = write_x().await;
        assert!(took >= ECHO_WAIT_QUIET, "took {took:?}");
    }
    w.services.shutdown().await;
}
