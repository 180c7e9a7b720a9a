//! End to end: language servers managed by the real `ide` binary, through
//! the engine (stand-in or real).
//!
//! - Faults, on a server that misbehaves on purpose (`tests/lsp/fake_server.py`):
//!   one that hangs (killed, restarted), one that cancels (kept), one that
//!   writes garbage, one that exits at start (crashed after repeats), kill -9
//!   mid-request, a rename whose third file's edit is bad (nothing written),
//!   a rename touching a protected file (refused, named), 100 rounds of
//!   edits with diagnostics (no process and no descriptor left over), and
//!   every server dying with the worker.
//! - Real servers installed by `.ci/run` (`tests/lsp/node_modules`: pyright,
//!   typescript-language-server; clangd from apt): diagnostics after a
//!   breaking edit and after the fix, a definition the structural answer
//!   gets ambiguous, references that leave out a same-named unrelated
//!   method, hover, and a rename across five files undone by one revert.
//!   `IDE_LSP_TESTS=required` (set by `.ci/run`) turns a missing server into
//!   a failure instead of a skip.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(60);

struct World {
    engine: Engine,
    ide: IdeProcess,
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    async fn call(&self, id: &str, payload: Value) -> Value {
        self.engine
            .call_with_timeout(id, payload.clone(), T)
            .await
            .unwrap_or_else(|e| panic!("{id} {payload}: {e:?}"))
    }

    async fn fail(&self, id: &str, payload: Value) -> String {
        match self.engine.call_with_timeout(id, payload.clone(), T).await {
            Ok(v) => panic!("{id} {payload} answered {v}"),
            Err(e) => format!("{e:?}"),
        }
    }

    fn pidfile(&self) -> PathBuf {
        self.dir.path().join("server.pid")
    }

    /// The fake server's pid, as it wrote it.
    fn server_pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.pidfile())
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

fn lsp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp")
}

/// A world whose root holds `files`, with the language servers `servers`
/// (YAML of code.language_servers entries, given the world's temp dir)
/// and `secret*` protected.
async fn world(files: &[(&str, &str)], servers: impl FnOnce(&Path) -> String) -> World {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    for (rel, src) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, src).unwrap();
    }
    let root = root.canonicalize().unwrap();
    let seed = dir.path().join("seed.yaml");
    std::fs::write(
        &seed,
        format!(
            "fs:\n  host_roots: [{}]\ncode:\n  non_accessible_globs: [\"**/secret*\"]\n  language_servers:\n{}",
            root.display(),
            servers(dir.path())
        ),
    )
    .unwrap();
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[("RUST_LOG", "info,ide::lsp=debug")],
    );
    assert!(ide.wait_for_log("ide serving", T).await, "{}", ide.logs());
    assert!(engine.wait_for_ide(T).await);
    World {
        engine,
        ide,
        dir,
        root,
    }
}

/// The fake server in `mode`, for `.txt` files, with a short timeout.
async fn fake_world(mode: &str, files: &[(&str, &str)]) -> World {
    fake_world_with(mode, files, "").await
}

/// [`fake_world`] with more settings of its entry (YAML lines).
async fn fake_world_with(mode: &str, files: &[(&str, &str)], more: &str) -> World {
    world(files, |dir| {
        format!(
            "    fake:\n      command: python3\n      args: [{script}, {mode}, {pid}]\n      extensions: [txt]\n      request_timeout_ms: 1500\n{more}",
            script = lsp_dir().join("fake_server.py").display(),
            pid = dir.join("server.pid").display(),
        )
    })
    .await
}

/// The fake server's entry in coder::info.
async fn fake_info(w: &World) -> Value {
    let info = w.call("coder::info", json!({})).await;
    info["code"]["language_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fake")
        .cloned()
        .unwrap()
}

async fn wait_info(w: &World, mut f: impl FnMut(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..1200 {
        last = fake_info(w).await;
        if f(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("coder::info never showed it: {last}");
}

#[tokio::test]
async fn a_server_started_for_ide_call_stops_with_it() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "x ERROR\n").unwrap();
    let pidfile = dir.path().join("server.pid");
    let seed = dir.path().join("seed.yaml");
    std::fs::write(
        &seed,
        format!(
            "fs:\n  host_roots: [{}]\ncode:\n  language_servers:\n    fake:\n      command: python3\n      args: [{}, ok, {}]\n      extensions: [txt]\n",
            root.display(),
            lsp_dir().join("fake_server.py").display(),
            pidfile.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ide"))
        .args([
            "call",
            "--config",
            seed.to_str().unwrap(),
            "coder::diagnostics",
        ])
        .arg(json!({"path": "a.txt"}).to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"], 1, "{v}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the server outlived `ide call`");
}

#[tokio::test]
async fn definitions_into_protected_files_are_dropped_and_outside_ones_marked() {
    let w = fake_world(
        "ok",
        &[("r1.txt", "old one\n"), ("secret.txt", "old secret\n")],
    )
    .await;
    let d = w
        .call(
            "coder::definition",
            json!({"path": "r1.txt", "line": 1, "column": 1}),
        )
        .await;
    assert_eq!(d["precision"], "semantic", "{d}");
    let locs = d["locations"].as_array().unwrap();
    assert_eq!(locs.len(), 2, "{d}");
    assert!(
        locs[0]["path"].as_str().unwrap().ends_with("/r1.txt"),
        "{d}"
    );
    assert_eq!(locs[1]["path"], "/usr/include/stdio.h", "{d}");
    assert_eq!(locs[1]["outside_roots"], true, "{d}");
    assert!(!d.to_string().contains("secret"), "{d}");
}

#[tokio::test]
async fn a_server_over_its_memory_limit_is_restarted_and_says_why() {
    let w = fake_world_with(
        "ok",
        &[("a.txt", "word\n")],
        "      memory_limit_bytes: 4096\n",
    )
    .await;
    w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    let pid = w.server_pid().unwrap();
    let s = wait_info(&w, |s| {
        s["last_error"].to_string().contains("memory_limit_bytes")
    })
    .await;
    assert!(s["last_error"].as_str().unwrap().contains("4096"), "{s}");
    assert!(wait_until(|| !alive(pid)).await, "it was not stopped");
    // the next call starts it again
    let d = w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    assert_eq!(d["files"][0]["stale"], false, "{d}");
    assert_ne!(w.server_pid().unwrap(), pid);
}

#[tokio::test]
async fn an_idle_server_is_shut_down_and_started_again_on_demand() {
    let w = fake_world_with("ok", &[("a.txt", "word\n")], "      idle_timeout_ms: 1\n").await;
    w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    let pid = w.server_pid().unwrap();
    assert!(wait_until(|| !alive(pid)).await, "the idle server lives on");
    let s = fake_info(&w).await;
    assert_eq!(s["state"], "idle", "{s}");
    assert!(s["pid"].is_null(), "{s}");
    let d = w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    assert_eq!(d["files"][0]["language_server"], "fake", "{d}");
}

fn alive(pid: i32) -> bool {
    // a zombie is dead
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next())
                .is_some_and(|st| st != "Z" && st != "X")
        })
        .unwrap_or(false)
}

/// Processes whose parent is `pid`, recursively.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        if let Some(pp) = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|x| x.parse::<u32>().ok())
        {
            parent.insert(p, pp);
        }
    }
    parent
        .keys()
        .copied()
        .filter(|&p| {
            let mut at = p;
            for _ in 0..64 {
                match parent.get(&at) {
                    Some(&pp) if pp == pid => return true,
                    Some(&pp) if pp > 1 => at = pp,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

async fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + T;
    while std::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn diagnostics_follow_each_edit_and_a_hundred_rounds_leak_nothing() {
    let w = fake_world("ok", &[("a.txt", "fine\n")]).await;
    let d = w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    assert_eq!(d["errors"], 0, "{d}");
    assert_eq!(d["files"][0]["stale"], false, "{d}");
    assert_eq!(d["files"][0]["language_server"], "fake");
    // a folder: its files that have a server, protected ones never
    std::fs::write(w.root.join("b.txt"), "one ERROR\n").unwrap();
    std::fs::write(w.root.join("secret.txt"), "ERROR\n").unwrap();
    std::fs::write(w.root.join("c.md"), "no server\n").unwrap();
    let f = w.call("coder::diagnostics", json!({"folder": "."})).await;
    let names: Vec<&str> = f["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(names, ["a.txt", "b.txt"], "{f}");
    assert_eq!(f["errors"], 1, "{f}");
    std::fs::remove_file(w.root.join("b.txt")).unwrap();
    let ide = w.ide.pid().unwrap();
    // one round first, so every lazily made thing exists
    let round = |i: usize| {
        let text = if i % 2 == 0 { "x ERROR y\n" } else { "fine\n" };
        json!({"files": [{"path": "a.txt", "ops": [{"op": "update_lines",
            "from_line": 1, "to_line": 1, "content": text.trim_end()}]}], "diagnostics": true})
    };
    let out = w.call("coder::update-file", round(0)).await;
    let diags = &out["diagnostics"][0];
    assert_eq!(diags["diagnostics"][0]["message"], "ERROR found", "{out}");
    assert_eq!(diags["diagnostics"][0]["line"], 1);
    assert_eq!(diags["diagnostics"][0]["column"], 3);
    assert_eq!(diags["revision"], out["results"][0]["revision"], "{out}");
    let before_fds = fds(ide);
    let before_procs = descendants(ide).len();
    for i in 1..=100 {
        let out = w.call("coder::update-file", round(i)).await;
        let n = out["diagnostics"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(n, usize::from(i % 2 == 0), "round {i}: {out}");
        assert_eq!(out["diagnostics"][0]["stale"], false, "round {i}: {out}");
    }
    assert_eq!(
        descendants(ide).len(),
        before_procs,
        "a process was left over"
    );
    assert_eq!(fds(ide), before_fds, "a descriptor was left over");
    // info reports it ready, with its memory
    let info = w.call("coder::info", json!({})).await;
    let s = info["code"]["language_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fake")
        .unwrap()
        .clone();
    assert_eq!(s["state"], "ready", "{s}");
    // its memory, once the monitor has read it
    let mut rss = 0;
    for _ in 0..600 {
        let info = w.call("coder::info", json!({})).await;
        rss = info["code"]["language_servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "fake")
            .and_then(|s| s["rss_bytes"].as_u64())
            .unwrap_or(0);
        if rss > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(rss > 1 << 20, "rss {rss}");
    // the server dies with the worker
    let pid = w.server_pid().unwrap();
    assert!(alive(pid));
    let mut ide = w.ide;
    ide.signal_term();
    ide.wait_exit(T).await.expect("ide exits");
    assert!(
        wait_until(|| !alive(pid)).await,
        "the server outlived the worker"
    );
}

#[tokio::test]
async fn a_hung_server_is_killed_and_the_next_call_starts_another() {
    let w = fake_world("hang", &[("a.txt", "word\n")]).await;
    let e = w
        .fail(
            "coder::hover",
            json!({"path": "a.txt", "line": 1, "column": 1}),
        )
        .await;
    assert!(e.contains("killed as hung"), "{e}");
    assert!(e.contains("textDocument/hover"), "{e}");
    let first = w.server_pid().unwrap();
    assert!(
        wait_until(|| !alive(first)).await,
        "the hung server lives on"
    );
    // the structural functions never noticed; the next semantic call starts a new one
    let d = w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    assert_eq!(d["files"][0]["language_server"], "fake", "{d}");
    let second = w.server_pid().unwrap();
    assert_ne!(first, second);
    let info = w.call("coder::info", json!({})).await;
    let text = info["code"]["language_servers"].to_string();
    assert!(text.contains("killed as hung"), "{text}");
}

#[tokio::test]
async fn an_answer_given_while_the_server_is_busy_is_asked_again_and_says_so() {
    let w = fake_world("busy", &[("a.txt", "word\n")]).await;
    let h = w
        .call(
            "coder::hover",
            json!({"path": "a.txt", "line": 1, "column": 1}),
        )
        .await;
    assert_eq!(h["contents"], "fake hover", "{h}");
    let note = h["note"].as_str().unwrap_or_default();
    assert!(note.contains("was busy (Indexing (40%))"), "{h}");
    assert!(note.contains("asked again"), "{h}");
}

#[tokio::test]
async fn a_server_that_acknowledges_the_cancellation_is_kept() {
    let w = fake_world("cancel", &[("a.txt", "word\n")]).await;
    let e = w
        .fail(
            "coder::hover",
            json!({"path": "a.txt", "line": 1, "column": 1}),
        )
        .await;
    assert!(e.contains("cancelled"), "{e}");
    let pid = w.server_pid().unwrap();
    let d = w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    assert_eq!(d["files"][0]["stale"], false, "{d}");
    assert_eq!(w.server_pid().unwrap(), pid, "it was restarted");
    assert!(alive(pid));
}

#[tokio::test]
async fn garbage_on_stdout_kills_the_server_and_says_so() {
    let w = fake_world("garbage", &[("a.txt", "word\n")]).await;
    let e = w
        .fail(
            "coder::hover",
            json!({"path": "a.txt", "line": 1, "column": 1}),
        )
        .await;
    assert!(e.contains("not LSP"), "{e}");
    let pid = w.server_pid().unwrap();
    assert!(wait_until(|| !alive(pid)).await, "the server lives on");
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_left_crashed_after_repeats() {
    let w = fake_world("exit", &[("a.txt", "word\n")]).await;
    let mut last = String::new();
    for _ in 0..3 {
        last = w
            .fail(
                "coder::hover",
                json!({"path": "a.txt", "line": 1, "column": 1}),
            )
            .await;
        assert!(last.contains("did not start"), "{last}");
    }
    assert!(
        last.contains("refusing to start"),
        "its stderr is not in: {last}"
    );
    let e = w
        .fail(
            "coder::hover",
            json!({"path": "a.txt", "line": 1, "column": 1}),
        )
        .await;
    assert!(e.contains("left stopped"), "{e}");
    let info = w.call("coder::info", json!({})).await;
    let s = info["code"]["language_servers"].to_string();
    assert!(s.contains("\"crashed\""), "{s}");
    // structural answers are untouched
    let o = w.call("coder::read-file", json!({"path": "a.txt"})).await;
    assert_eq!(o["content"], "word\n", "{o}");
}

#[tokio::test]
async fn kill_9_mid_request_answers_at_once_and_the_next_call_restarts() {
    let w = fake_world("hang", &[("a.txt", "word\n")]).await;
    w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    let pid = w.server_pid().unwrap();
    let engine = &w.engine;
    let hover = engine.call_with_timeout(
        "coder::hover",
        json!({"path": "a.txt", "line": 1, "column": 1}),
        T,
    );
    let marker = w.dir.path().join("server.pid.hover");
    let kill = async {
        // once the server has the request (it never answers it)
        assert!(wait_until(|| marker.exists()).await);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    };
    let (r, ()) = tokio::join!(hover, kill);
    let e = format!("{:?}", r.unwrap_err());
    // answered by the death, not by the timeout
    assert!(e.contains("it stopped") && e.contains("exited"), "{e}");
    assert!(!e.contains("in time"), "{e}");
    let d = w.call("coder::diagnostics", json!({"path": "a.txt"})).await;
    assert_eq!(d["files"][0]["stale"], false, "{d}");
    assert_ne!(w.server_pid().unwrap(), pid);
}

const RENAME_FILES: &[(&str, &str)] = &[
    ("r1.txt", "old one\n"),
    ("r2.txt", "old two\n"),
    ("r3.txt", "old three\n"),
    ("r4.txt", "old four\n"),
];

#[tokio::test]
async fn a_rename_lands_whole_as_one_turn_or_not_at_all() {
    let w = fake_world("ok", RENAME_FILES).await;
    let dry = w
        .call(
            "coder::rename",
            json!({"path": "r1.txt", "line": 1, "column": 1, "new_name": "new", "dry_run": true}),
        )
        .await;
    assert_eq!(dry["files"].as_array().unwrap().len(), 4, "{dry}");
    assert!(
        dry["files"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+new one"),
        "{dry}"
    );
    assert_eq!(
        std::fs::read_to_string(w.root.join("r1.txt")).unwrap(),
        "old one\n"
    );
    let done = w
        .call(
            "coder::rename",
            json!({"path": "r1.txt", "line": 1, "column": 1, "new_name": "new"}),
        )
        .await;
    assert_eq!(done["edits"], 4, "{done}");
    for (f, _) in RENAME_FILES {
        let now = std::fs::read_to_string(w.root.join(f)).unwrap();
        assert!(now.starts_with("new "), "{f}: {now}");
    }
    let turn = done["turn_id"].as_str().unwrap();
    w.call("shell::turns::revert", json!({"turn_id": turn}))
        .await;
    for (f, before) in RENAME_FILES {
        assert_eq!(std::fs::read_to_string(w.root.join(f)).unwrap(), *before);
    }
}

#[tokio::test]
async fn a_rename_with_a_bad_third_file_writes_nothing() {
    let w = fake_world("rename-bad", RENAME_FILES).await;
    let e = w
        .fail(
            "coder::rename",
            json!({"path": "r1.txt", "line": 1, "column": 1, "new_name": "new"}),
        )
        .await;
    assert!(
        e.contains("r3.txt") && e.contains("nothing was written"),
        "{e}"
    );
    for (f, before) in RENAME_FILES {
        assert_eq!(std::fs::read_to_string(w.root.join(f)).unwrap(), *before);
    }
}

#[tokio::test]
async fn a_rename_touching_a_protected_file_is_refused_and_names_it() {
    let mut files = RENAME_FILES.to_vec();
    files.push(("secret.txt", "old secret\n"));
    let w = fake_world("rename-secret", &files).await;
    let e = w
        .fail(
            "coder::rename",
            json!({"path": "r1.txt", "line": 1, "column": 1, "new_name": "new"}),
        )
        .await;
    assert!(
        e.contains("secret.txt") && e.contains("nothing was written"),
        "{e}"
    );
    for (f, before) in &files {
        assert_eq!(std::fs::read_to_string(w.root.join(f)).unwrap(), *before);
    }
    // and a protected file is never handed to a server: it reads as
    // coder::read-file reads it, like a missing one
    let e = w
        .fail("coder::diagnostics", json!({"path": "secret.txt"}))
        .await;
    let read = w
        .fail("coder::read-file", json!({"path": "secret.txt"}))
        .await;
    assert_eq!(e, read);
    let missing = w
        .fail("coder::diagnostics", json!({"path": "nope.txt"}))
        .await;
    assert!(
        e.contains("C211") && missing.contains("C211"),
        "{e} / {missing}"
    );
    // `paths` answers each file: the protected one as coder::read-file fails for it
    let both = w
        .call(
            "coder::diagnostics",
            json!({"paths": ["secret.txt", "nope.txt"]}),
        )
        .await;
    for f in both["files"].as_array().unwrap() {
        let error = f["error"].as_str().unwrap_or("");
        assert!(
            error.starts_with("C211: path not found or not accessible"),
            "{both}"
        );
        assert!(
            f["language_server"].is_null() && f["revision"].is_null(),
            "{both}"
        );
    }
    let secret = both["files"][0]["error"].as_str().unwrap();
    assert!(
        read.contains("protected glob") && secret.contains("protected glob"),
        "{read} / {both}"
    );
    let one = w
        .call("coder::diagnostics", json!({"paths": ["nope.txt"]}))
        .await;
    assert!(
        one["files"][0]["error"].as_str().unwrap().contains("C211"),
        "{one}"
    );
}

// ---- real servers -------------------------------------------------------

/// The path of an installed server, or None (a skip, unless required).
fn server(name: &str) -> Option<PathBuf> {
    let local = lsp_dir().join("node_modules/.bin").join(name);
    let found = if local.exists() {
        Some(local)
    } else {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|c| c.exists())
        })
    };
    if found.is_none() {
        assert!(
            std::env::var("IDE_LSP_TESTS").as_deref() != Ok("required"),
            "{name} is not installed (npm ci in tests/lsp, apt-get install clangd) and IDE_LSP_TESTS=required"
        );
        eprintln!("skipped: {name} is not installed");
    }
    found
}

const PY_UTIL: &str = "class Parser:\n    def parse(self, text: str) -> int:\n        return len(text)\n\n\nclass Other:\n    def parse(self, text: str) -> int:\n        return 0\n";

fn py_files() -> Vec<(String, String)> {
    let mut v = vec![("util.py".to_string(), PY_UTIL.to_string())];
    for i in 1..=5 {
        v.push((
            format!("m{i}.py"),
            format!(
                "from util import Parser, Other\n\n\ndef run{i}() -> int:\n    n: int = Parser().parse(\"x\")\n    return n + Other().parse(\"y\")\n"
            ),
        ));
    }
    v
}

#[tokio::test]
async fn python_through_pyright_diagnostics_definition_references_hover_rename() {
    let Some(pyright) = server("pyright-langserver") else {
        return;
    };
    let files = py_files();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let w = world(&refs, |_| {
        format!(
            "    python:\n      command: {}\n      args: [--stdio]\n      extensions: [py]\n      request_timeout_ms: 30000\n",
            pyright.display()
        )
    })
    .await;
    // clean, then broken by an edit, then fixed by the next
    let d = w.call("coder::diagnostics", json!({"path": "m1.py"})).await;
    assert_eq!(d["errors"], 0, "{d}");
    let broke = w
        .call(
            "coder::update-file",
            json!({"files": [{"path": "m1.py", "ops": [{"op": "edit",
                "old_text": "n: int = Parser().parse(\"x\")", "new_text": "n: str = Parser().parse(\"x\")"}]}],
                "diagnostics": true}),
        )
        .await;
    let diags = &broke["diagnostics"][0];
    assert_eq!(diags["stale"], false, "{broke}");
    let errors: Vec<&Value> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(!errors.is_empty(), "{broke}");
    assert_eq!(errors[0]["line"], 5, "{broke}");
    assert_eq!(errors[0]["source"], "Pyright");
    let fixed = w
        .call(
            "coder::update-file",
            json!({"files": [{"path": "m1.py", "ops": [{"op": "edit",
                "old_text": "n: str", "new_text": "n: int"}]}], "diagnostics": true}),
        )
        .await;
    assert_eq!(fixed["diagnostics"][0]["diagnostics"], json!([]), "{fixed}");

    // definition of `parse` in `Parser().parse`: structurally there are two
    let line5 = "    n: int = Parser().parse(\"x\")";
    let col = line5.find("parse").unwrap() as u32 + 1;
    let def = w
        .call(
            "coder::definition",
            json!({"path": "m2.py", "line": 5, "column": col}),
        )
        .await;
    assert_eq!(def["precision"], "semantic", "{def}");
    let locs = def["locations"].as_array().unwrap();
    assert_eq!(locs.len(), 1, "{def}");
    assert!(
        locs[0]["path"].as_str().unwrap().ends_with("util.py"),
        "{def}"
    );
    assert_eq!(locs[0]["line"], 2, "{def}");
    assert_eq!(locs[0]["name_path"], "Parser/parse", "{def}");

    // references: Parser.parse's, never Other.parse's
    let refs = w
        .call(
            "coder::references",
            json!({"path": "util.py", "line": 2, "column": 9}),
        )
        .await;
    assert_eq!(refs["precision"], "semantic", "{refs}");
    let list = refs["references"].as_array().unwrap();
    for i in 1..=5 {
        assert!(
            list.iter().any(
                |r| r["path"].as_str().unwrap().ends_with(&format!("m{i}.py")) && r["line"] == 5
            ),
            "m{i}.py's call is missing: {refs}"
        );
    }
    assert!(
        list.iter().all(|r| r["line"] != 6 && r["line"] != 7),
        "Other.parse is listed: {refs}"
    );

    // hover
    let h = w
        .call(
            "coder::hover",
            json!({"path": "m3.py", "line": 5, "column": col}),
        )
        .await;
    assert!(h["contents"].as_str().unwrap().contains("def parse"), "{h}");

    // rename across six files, then one revert
    let before: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(f, _)| (f.clone(), std::fs::read(w.root.join(f)).unwrap()))
        .collect();
    let done = w
        .call(
            "coder::rename",
            json!({"path": "util.py", "line": 2, "column": 9, "new_name": "parse_text"}),
        )
        .await;
    assert!(done["files"].as_array().unwrap().len() >= 6, "{done}");
    let util = std::fs::read_to_string(w.root.join("util.py")).unwrap();
    assert!(
        util.contains("def parse_text(self") && util.contains("    def parse(self"),
        "{util}"
    );
    let m4 = std::fs::read_to_string(w.root.join("m4.py")).unwrap();
    assert!(
        m4.contains("Parser().parse_text(\"x\")") && m4.contains("Other().parse(\"y\")"),
        "{m4}"
    );
    let d = w
        .call("coder::diagnostics", json!({"paths": ["m1.py", "m5.py"]}))
        .await;
    assert_eq!(d["errors"], 0, "the rename broke something: {d}");
    w.call("shell::turns::revert", json!({"turn_id": done["turn_id"]}))
        .await;
    for (f, bytes) in &before {
        assert_eq!(&std::fs::read(w.root.join(f)).unwrap(), bytes, "{f}");
    }
    // the server saw the revert: the same rename again names every file
    let again = w
        .call(
            "coder::rename",
            json!({"path": "util.py", "line": 2, "column": 9, "new_name": "parse_text", "dry_run": true}),
        )
        .await;
    assert_eq!(
        again["files"].as_array().unwrap().len(),
        done["files"].as_array().unwrap().len(),
        "{again}"
    );
    // and a file changed behind ide's back is read again before the next answer
    std::fs::write(
        w.root.join("m5.py"),
        "from util import Parser\n\n\ndef run5() -> int:\n    n: str = Parser().parse(\"x\")\n    return 0\n",
    )
    .unwrap();
    let d = w.call("coder::diagnostics", json!({"path": "m5.py"})).await;
    assert!(d["errors"].as_u64().unwrap() >= 1, "{d}\n{}", w.ide.logs());
}

#[tokio::test]
async fn typescript_through_its_server_diagnostics_and_definition() {
    let Some(tls) = server("typescript-language-server") else {
        return;
    };
    let w = world(
        &[
            ("lib.ts", "export class Box {\n  area(r: number): number {\n    return r * r;\n  }\n}\n"),
            ("main.ts", "import { Box } from './lib';\n\nconst a: number = new Box().area(2);\nconsole.log(a);\n"),
            ("tsconfig.json", "{\"compilerOptions\": {\"strict\": true}}\n"),
        ],
        |_| format!(
            "    typescript:\n      command: {}\n      args: [--stdio]\n      extensions: [ts]\n      request_timeout_ms: 30000\n      initialization_options: {{tsserver: {{path: {}}}}}\n",
            tls.display(),
            lsp_dir().join("node_modules/typescript/lib/tsserver.js").display()
        ),
    )
    .await;
    let def = w
        .call(
            "coder::definition",
            json!({"path": "main.ts", "line": 3, "column": 29}),
        )
        .await;
    assert_eq!(def["precision"], "semantic", "{def}");
    assert!(
        def["locations"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("lib.ts"),
        "{def}"
    );
    assert_eq!(def["locations"][0]["line"], 2, "{def}");
    assert_eq!(def["locations"][0]["name_path"], "Box/area", "{def}");
    // references, hover and a rename across both files
    let refs = w
        .call(
            "coder::references",
            json!({"path": "lib.ts", "line": 2, "column": 3}),
        )
        .await;
    assert_eq!(refs["precision"], "semantic", "{refs}");
    let paths: Vec<&str> = refs["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(paths, ["lib.ts", "main.ts"], "{refs}");
    let h = w
        .call(
            "coder::hover",
            json!({"path": "main.ts", "line": 3, "column": 29}),
        )
        .await;
    assert!(
        h["contents"]
            .as_str()
            .unwrap()
            .contains("area(r: number): number"),
        "{h}"
    );
    let before = std::fs::read(w.root.join("main.ts")).unwrap();
    let done = w
        .call(
            "coder::rename",
            json!({"path": "lib.ts", "line": 2, "column": 3, "new_name": "surface"}),
        )
        .await;
    assert_eq!(done["files"].as_array().unwrap().len(), 2, "{done}");
    let main = std::fs::read_to_string(w.root.join("main.ts")).unwrap();
    assert!(main.contains("new Box().surface(2)"), "{main}");
    w.call("shell::turns::revert", json!({"turn_id": done["turn_id"]}))
        .await;
    assert_eq!(std::fs::read(w.root.join("main.ts")).unwrap(), before);
    let broke = w
        .call(
            "coder::update-file",
            json!({"files": [{"path": "main.ts", "ops": [{"op": "edit",
                "old_text": "area(2)", "new_text": "area(\"2\")"}]}], "diagnostics": true}),
        )
        .await;
    let text = broke["diagnostics"][0].to_string();
    assert!(text.contains("\"error\""), "{broke}");
}

#[tokio::test]
async fn c_through_clangd_diagnostics_and_definition() {
    let Some(clangd) = server("clangd") else {
        return;
    };
    let w = world(
        &[
            ("shape.h", "int area(int r);\n"),
            ("shape.c", "#include \"shape.h\"\nint area(int r) { return r * r; }\n"),
            ("main.c", "#include \"shape.h\"\nint main(void) { return area(2); }\n"),
            ("compile_flags.txt", "-xc\n-std=c11\n"),
        ],
        |_| format!(
            "    c:\n      command: {}\n      args: [--background-index=false]\n      extensions: [c, h]\n      request_timeout_ms: 30000\n      open_related: true\n",
            clangd.display()
        ),
    )
    .await;
    let d = w
        .call("coder::diagnostics", json!({"path": "main.c"}))
        .await;
    assert_eq!(d["errors"], 0, "{d}");
    let def = w
        .call(
            "coder::definition",
            json!({"path": "main.c", "line": 2, "column": 25}),
        )
        .await;
    assert_eq!(def["precision"], "semantic", "{def}");
    assert!(
        def["locations"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("shape.h"),
        "{def}"
    );
    let broke = w
        .call(
            "coder::update-file",
            json!({"files": [{"path": "main.c", "ops": [{"op": "edit",
                "old_text": "area(2)", "new_text": "area(2, 3)"}]}], "diagnostics": true}),
        )
        .await;
    let list = broke["diagnostics"][0]["diagnostics"].as_array().unwrap();
    assert!(
        list.iter()
            .any(|d| d["severity"] == "error" && d["line"] == 2),
        "{broke}"
    );
    // hover, references, and a rename as far as clangd can without its index
    let h = w
        .call(
            "coder::hover",
            json!({"path": "main.c", "line": 2, "column": 25}),
        )
        .await;
    assert!(h["contents"].as_str().unwrap().contains("area"), "{h}");
    let refs = w
        .call(
            "coder::references",
            json!({"path": "main.c", "line": 2, "column": 25}),
        )
        .await;
    assert_eq!(refs["precision"], "semantic", "{refs}");
    assert!(refs["total"].as_u64().unwrap() >= 1, "{refs}");
    // clangd knows only the files it was sent: ide opens the ones holding
    // the name first, so the rename reaches the declaration and the definition
    let before: Vec<Vec<u8>> = ["shape.h", "shape.c", "main.c"]
        .iter()
        .map(|f| std::fs::read(w.root.join(f)).unwrap())
        .collect();
    let done = w
        .call(
            "coder::rename",
            json!({"path": "main.c", "line": 2, "column": 25, "new_name": "surface"}),
        )
        .await;
    assert_eq!(done["files"].as_array().unwrap().len(), 3, "{done}");
    assert_eq!(
        std::fs::read_to_string(w.root.join("shape.h")).unwrap(),
        "int surface(int r);\n"
    );
    w.call("shell::turns::revert", json!({"turn_id": done["turn_id"]}))
        .await;
    for (f, b) in ["shape.h", "shape.c", "main.c"].iter().zip(before) {
        assert_eq!(std::fs::read(w.root.join(f)).unwrap(), b, "{f}");
    }
}

/// A server that is not part of `.ci/run` (gopls, rust-analyzer): used
/// when it answers `--version`, else the test says so and skips.
fn optional_server(name: &str) -> Option<PathBuf> {
    let ok = std::process::Command::new(name)
        .arg("version")
        .output()
        .or_else(|_| std::process::Command::new(name).arg("--version").output())
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: {name} is not installed here (or not usable)");
        return None;
    }
    server(name)
}

#[tokio::test]
async fn go_through_gopls_when_present() {
    let Some(gopls) = optional_server("gopls") else {
        return;
    };
    let w = world(
        &[
            ("go.mod", "module example.com/m\n\ngo 1.19\n"),
            ("shape.go", "package m\n\nfunc Area(r int) int { return r * r }\n"),
            ("main.go", "package m\n\nfunc Use() int { return Area(2) }\n"),
        ],
        |_| {
            format!(
                "    go:\n      command: {}\n      extensions: [go]\n      request_timeout_ms: 60000\n",
                gopls.display()
            )
        },
    )
    .await;
    let def = w
        .call(
            "coder::definition",
            json!({"path": "main.go", "line": 3, "column": 25}),
        )
        .await;
    assert_eq!(def["precision"], "semantic", "{def}");
    assert!(
        def["locations"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("shape.go"),
        "{def}"
    );
}

#[tokio::test]
async fn rust_through_rust_analyzer_when_present() {
    let Some(ra) = optional_server("rust-analyzer") else {
        return;
    };
    let w = world(
        &[
            ("Cargo.toml", "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
            ("src/lib.rs", "mod shape;\npub fn use_it() -> i32 { shape::area(2) }\n"),
            ("src/shape.rs", "pub fn area(r: i32) -> i32 { r * r }\n"),
        ],
        |_| {
            format!(
                "    rust:\n      command: {}\n      extensions: [rs]\n      request_timeout_ms: 120000\n",
                ra.display()
            )
        },
    )
    .await;
    let def = w
        .call(
            "coder::definition",
            json!({"path": "src/lib.rs", "line": 2, "column": 34}),
        )
        .await;
    assert_eq!(def["precision"], "semantic", "{def}");
    assert!(
        def["locations"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("shape.rs"),
        "{def}"
    );
}
