//! What an agent trips over, end to end: every point is exercised through
//! the engine (stand-in or real, with the real `ide` binary serving) and
//! through one-shot `ide call`, with the same assertions on both; and one
//! short agent session whose call count is asserted, so a regression that
//! costs an agent calls shows up here.

mod support;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(20);

fn revision(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A project tree in a temp dir, a worker serving it through an engine, and
/// a seed for `ide call` against the same tree.
struct World {
    engine: Engine,
    _ide: IdeProcess,
    dir: tempfile::TempDir,
    root: PathBuf,
    /// The `--config` for `ide call` (its own change journal).
    cli_seed: PathBuf,
}

fn seed(dir: &Path, root: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "fs:\n  host_roots: [{}]\nturns:\n  data_dir: {}\n",
            root.display(),
            dir.join(format!("{name}-turns")).display()
        ),
    )
    .unwrap();
    path
}

async fn world() -> World {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let served = seed(dir.path(), &root, "served");
    let cli_seed = seed(dir.path(), &root, "cli");
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", served.to_str().unwrap()],
        &[],
    );
    // every function of the catalog: the tests call several, and they
    // register one by one
    assert!(
        engine.wait_for_ide(T).await,
        "ide did not register its functions:\n{}",
        ide.logs()
    );
    World {
        engine,
        _ide: ide,
        dir,
        root,
        cli_seed,
    }
}

impl World {
    fn write(&self, rel: &str, body: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    /// Both ways in, for a test that runs its assertions on each.
    fn both(&self) -> [Via<'_>; 2] {
        [Via::Engine(self), Via::Cli(self)]
    }
}

/// How a call reaches the worker.
#[derive(Clone, Copy)]
enum Via<'a> {
    Engine(&'a World),
    Cli(&'a World),
}

/// A call's outcome: the answer (or the `{code, message}` failure) and, for
/// `ide call`, the exit status.
struct Answer {
    result: Result<Value, (String, String)>,
    exit: Option<i32>,
}

impl Via<'_> {
    fn name(&self) -> &'static str {
        match self {
            Via::Engine(_) => "engine",
            Via::Cli(_) => "ide call",
        }
    }

    async fn answer(&self, id: &str, payload: Value) -> Answer {
        match self {
            Via::Engine(w) => Answer {
                result: w
                    .engine
                    .call(id, payload)
                    .await
                    .map_err(|e| (e.code, e.message)),
                exit: None,
            },
            Via::Cli(w) => {
                let cwd = tempfile::TempDir::new_in(w.dir.path()).unwrap();
                let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_ide"))
                    .current_dir(cwd.path())
                    .env("XDG_STATE_HOME", cwd.path())
                    .env_remove("III_URL")
                    .arg("--config")
                    .arg(&w.cli_seed)
                    .args(["call", id, &payload.to_string()])
                    .stdin(Stdio::null())
                    .output()
                    .await
                    .expect("ide call runs");
                let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                    panic!(
                        "ide call {id} printed no JSON ({e}): {}\n{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
                let exit = out.status.code();
                let result = if exit == Some(1) {
                    Err((
                        v["code"].as_str().unwrap_or_default().to_string(),
                        v["message"].as_str().unwrap_or_default().to_string(),
                    ))
                } else {
                    Ok(v)
                };
                Answer { result, exit }
            }
        }
    }

    async fn ok(&self, id: &str, payload: Value) -> Value {
        match self.answer(id, payload.clone()).await.result {
            Ok(v) => v,
            Err(e) => panic!("{}: {id} {payload} failed: {e:?}", self.name()),
        }
    }

    async fn err(&self, id: &str, payload: Value) -> (String, String) {
        match self.answer(id, payload.clone()).await.result {
            Ok(v) => panic!("{}: {id} {payload} should fail, got {v}", self.name()),
            Err(e) => e,
        }
    }
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

// ---- a revision wherever a file is read --------------------------------

#[tokio::test]
async fn every_read_carries_the_whole_files_revision_and_guards_a_window_edit() {
    let w = world().await;
    for via in w.both() {
        let at = via.name();
        let body = numbered(5000);
        w.write("big.txt", &body);
        let whole = revision(body.as_bytes());
        let win = via
            .ok(
                "coder::read-file",
                json!({"path": "big.txt", "line_from": 2500, "line_to": 2510}),
            )
            .await;
        assert_eq!(win["revision"], whole, "{at}");
        assert_eq!(win["total_lines"], 5000, "{at}");
        let stat = via
            .ok("coder::read-file", json!({"path": "big.txt", "stat": true}))
            .await;
        assert_eq!(stat["revision"], whole, "{at}");
        let batch = via
            .ok(
                "coder::read-file",
                json!({"paths": ["big.txt", {"path": "big.txt", "line_from": 1, "line_to": 2}]}),
            )
            .await;
        assert_eq!(batch["failed"], 0, "{at}: {batch}");
        for e in batch["results"].as_array().unwrap() {
            assert_eq!(e["revision"], whole, "{at}: {e}");
        }
        // someone inserts a line above the window
        w.write("big.txt", format!("inserted\n{body}"));
        // the batch's only entry is stale: the call fails with its error
        let (code, message) = via
            .err(
                "coder::update-file",
                json!({"files": [{"path": "big.txt", "expected_revision": whole,
                    "ops": [{"op": "update_lines", "from_line": 2505, "to_line": 2505, "content": "edited"}]}]}),
            )
            .await;
        assert_eq!(code, "C221", "{at}: {message}");
        if at == "ide call" {
            // a one-shot process never served that window: it cannot say
            // what changed, only that a window re-read is enough
            assert!(
                message.contains("a windowed coder::read-file"),
                "{at}: {message}"
            );
        } else {
            // the worker served that window, so it says what changed since
            assert!(
                message.contains("1 line inserted before your line 1")
                    && message.contains("ops[0] lines 2505–2505 are now 2506–2506, unchanged"),
                "{at}: {message}"
            );
        }
        assert!(!w.read("big.txt").contains("edited"), "{at}");
    }
}

// ---- globs relative to what the caller named ----------------------------

#[tokio::test]
async fn globs_match_relative_to_path_and_a_glob_that_matches_nothing_says_so() {
    let w = world().await;
    w.write("py/calcpkg/core.py", "def compute():\n    return 1\n");
    w.write(
        "py/calcpkg/sub/ops.py",
        "def compute_more():\n    return 2\n",
    );
    w.write("py/setup.py", "compute = None\n");
    for via in w.both() {
        let at = via.name();
        let found = via
            .ok(
                "coder::search",
                json!({"query": "compute", "path": "py", "include_globs": ["calcpkg/**/*.py"],
                       "search_paths": false}),
            )
            .await;
        assert_eq!(found["files_scanned"], 2, "{at}: {found}");
        assert_eq!(found["content_matches"].as_array().unwrap().len(), 2);
        assert!(found.get("note").is_none(), "{at}: {found}");
        let none = via
            .ok(
                "coder::search",
                json!({"query": "compute", "path": "py", "include_globs": ["py/calcpkg/**"],
                       "search_paths": false}),
            )
            .await;
        assert_eq!(none["files_scanned"], 0, "{at}");
        let note = none["note"].as_str().unwrap();
        assert!(
            note.contains(&format!(
                "relative to the searched folder {}",
                w.root.join("py").display()
            )),
            "{at}: {note}"
        );
        let grep = via
            .ok(
                "shell::fs::grep",
                json!({"path": "py", "pattern": "compute", "include_glob": ["calcpkg/**/*.py"]}),
            )
            .await;
        assert_eq!(grep["matches"].as_array().unwrap().len(), 2, "{at}: {grep}");
        let grep = via
            .ok(
                "shell::fs::grep",
                json!({"path": "py", "pattern": "compute", "include_glob": ["py/**"]}),
            )
            .await;
        assert!(
            grep["note"].as_str().unwrap().contains("matched no file"),
            "{at}: {grep}"
        );
        let sed = via
            .ok(
                "shell::fs::sed",
                json!({"path": "py", "pattern": "zzz", "replacement": "y", "include_glob": ["py/**"]}),
            )
            .await;
        assert!(
            sed["note"].as_str().unwrap().contains("matched no file"),
            "{at}: {sed}"
        );
    }
}

// ---- command output an agent can afford ---------------------------------

/// A test runner that prints a long log and its summary last.
fn runner() -> Value {
    json!({"command": "sh", "args": ["-c",
        "i=0; while [ $i -lt 20000 ]; do echo \"test_$i ... ok\"; i=$((i+1)); done; echo '20000 passed'"]})
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[tokio::test]
async fn exec_keeps_the_tail_or_both_ends_and_says_how_much_was_dropped() {
    let w = world().await;
    for via in w.both() {
        let at = via.name();
        let v = via
            .ok(
                "shell::exec",
                with(runner(), json!({"max_output_bytes": 40, "keep": "tail"})),
            )
            .await;
        let out = v["stdout"].as_str().unwrap();
        assert!(
            out.ends_with("test_19999 ... ok\n20000 passed\n"),
            "{at}: {out:?}"
        );
        assert!(out.len() <= 40, "{at}");
        assert_eq!(v["stdout_truncated"], true, "{at}");
        let dropped = v["stdout_dropped_bytes"].as_u64().unwrap();
        assert!(dropped > 300_000, "{at}: {dropped}");
        let v = via
            .ok(
                "shell::exec",
                with(runner(), json!({"max_output_bytes": 64, "keep": "both"})),
            )
            .await;
        let out = v["stdout"].as_str().unwrap();
        assert!(out.starts_with("test_0 ... ok\n"), "{at}: {out:?}");
        assert!(out.ends_with("20000 passed\n"), "{at}: {out:?}");
        let dropped = v["stdout_dropped_bytes"].as_u64().unwrap();
        assert!(
            out.contains(&format!("\n[… {dropped} bytes cut …]\n")),
            "{at}: {out:?}"
        );
    }
    // a background job's output, any part of it: tests/exec_e2e.rs
    // (`ide call` refuses exec_bg: the job would die with the process)
}

// ---- no shell, said plainly ---------------------------------------------

#[tokio::test]
async fn a_bare_shell_operator_runs_as_given_and_the_answer_says_so() {
    let w = world().await;
    let exec = w.engine.function("shell::exec").await.unwrap();
    let description = exec.description.unwrap();
    assert!(
        description.contains("No shell interprets it"),
        "{description}"
    );
    assert!(
        description.contains(r#"command: "sh", args: ["-c""#),
        "{description}"
    );
    assert!(!description.contains("never argv in"), "{description}");
    for via in w.both() {
        let at = via.name();
        let v = via
            .ok("shell::exec", json!({"command": "echo a && echo b"}))
            .await;
        assert_eq!(v["stdout"], "a && echo b\n", "{at}");
        let note = v["note"].as_str().unwrap();
        assert!(note.contains("\"&&\" reached \"echo\""), "{at}: {note}");
        assert!(
            note.contains(r#"command: "sh", args: ["-c", "echo a && echo b"]"#),
            "{at}: {note}"
        );
        let v = via
            .ok(
                "shell::exec",
                json!({"command": "sh", "args": ["-c", "echo a && echo b"]}),
            )
            .await;
        assert_eq!(v["stdout"], "a\nb\n", "{at}");
        assert!(v.get("note").is_none(), "{at}: {v}");
    }
}

// ---- what exec can reach, said plainly ----------------------------------

#[tokio::test]
async fn info_and_the_exec_description_say_commands_ignore_the_protected_globs() {
    let w = world().await;
    w.write(".env", "SECRET=1\n");
    let exec = w.engine.function("shell::exec").await.unwrap();
    assert!(
        exec.description
            .unwrap()
            .contains("Not confined by code.non_accessible_globs")
    );
    for via in w.both() {
        let at = via.name();
        let info = via.ok("coder::info", json!({})).await;
        let said = info["exec_confinement"].as_str().unwrap();
        assert!(
            said.contains("not confined by non_accessible_globs"),
            "{at}: {said}"
        );
        assert!(said.contains("not a security boundary"), "{at}: {said}");
        // exactly what it says: the coder surface refuses, a command reads it
        let (code, _) = via.err("coder::read-file", json!({"path": ".env"})).await;
        assert_eq!(code, "C211", "{at}");
        let v = via
            .ok(
                "shell::exec",
                json!({"command": "cat", "args": [".env"], "cwd": w.root.display().to_string()}),
            )
            .await;
        assert_eq!(v["stdout"], "SECRET=1\n", "{at}");
    }
}

// ---- batch failures visible to scripts ----------------------------------

#[tokio::test]
async fn a_failed_batch_entry_makes_ide_call_exit_3_with_the_json_unchanged() {
    let w = world().await;
    w.write("a.txt", "one\n");
    // a folder with content, deleted without `recursive`: a failed entry
    w.write("full-dir/x.txt", "x\n");
    let batch = json!({"files": [
        {"path": "a.txt", "ops": [{"op": "edit", "old_text": "one", "new_text": "two"}]},
        {"path": "missing.txt", "ops": [{"op": "edit", "old_text": "x", "new_text": "y"}]}
    ]});
    let cli = Via::Cli(&w)
        .answer("coder::update-file", batch.clone())
        .await;
    assert_eq!(cli.exit, Some(3));
    let cli = cli.result.unwrap();
    assert_eq!(cli["failed"], 1, "{cli}");
    assert_eq!(cli["results"][0]["success"], true);
    assert_eq!(cli["results"][1]["success"], false);
    assert_eq!(cli["results"][1]["error"]["code"], "C211");
    assert_eq!(w.read("a.txt"), "two\n");
    // the same batch through the engine answers the same JSON shape
    w.write("a.txt", "one\n");
    let via_engine = w.engine.call("coder::update-file", batch).await.unwrap();
    let strip = |mut v: Value| {
        for r in v["results"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("change_id");
        }
        v
    };
    assert_eq!(strip(via_engine), strip(cli));
    // beside an entry that worked, a failed entry: 3, and `failed` counts it
    for (id, payload) in [
        (
            "coder::create-file",
            json!({"files": [{"path": "new.txt", "content": "x"}, {"path": "a.txt", "content": "x", "overwrite": false}]}),
        ),
        (
            "coder::move",
            json!({"files": [{"from": "nope.txt", "to": "b.txt"}, {"from": "a.txt", "to": "a.txt"}]}),
        ),
        (
            "coder::delete-file",
            json!({"paths": ["full-dir", "already-gone.txt"]}),
        ),
        ("coder::read-file", json!({"paths": ["a.txt", "nope.txt"]})),
        (
            "shell::fs::sed",
            json!({"files": ["a.txt", "nope.txt"], "pattern": "zzz", "replacement": "y"}),
        ),
    ] {
        let a = Via::Cli(&w).answer(id, payload).await;
        assert_eq!(a.exit, Some(3), "{id}: {:?}", a.result);
        let v = a.result.unwrap();
        assert_eq!(v["failed"], 1, "{id}: {v}");
    }
    // every entry failed: the call failed, 1, with the entry's own error
    // (one entry) or the first entry's code and each entry's error
    for (id, payload, code, paths) in [
        (
            "coder::move",
            json!({"files": [{"from": "nope.txt", "to": "b.txt"}]}),
            "C211",
            vec![],
        ),
        (
            "coder::delete-file",
            json!({"paths": ["full-dir"]}),
            "C214",
            vec![],
        ),
        (
            "coder::create-file",
            json!({"files": [{"path": "a.txt", "content": "x"}, {"path": "new.txt", "content": "x"}]}),
            "C213",
            vec!["a.txt: C213 ", "new.txt: C213 "],
        ),
    ] {
        let a = Via::Cli(&w).answer(id, payload).await;
        assert_eq!(a.exit, Some(1), "{id}: {:?}", a.result);
        let (got, message) = a.result.unwrap_err();
        assert_eq!(got, code, "{id}: {message}");
        if paths.is_empty() {
            assert!(!message.contains("every entry"), "{id}: {message}");
        } else {
            assert!(message.contains("(2 of 2)"), "{id}: {message}");
        }
        for p in paths {
            assert!(message.contains(p), "{id}: {message}");
        }
    }
    assert!(w.root.join("full-dir/x.txt").exists());
    // all entries succeeded: 0; the function itself failed: 1
    let a = Via::Cli(&w)
        .answer(
            "coder::create-file",
            json!({"files": [{"path": "c.txt", "content": "x"}]}),
        )
        .await;
    assert_eq!(a.exit, Some(0));
    let a = Via::Cli(&w)
        .answer("coder::update-file", json!({"files": "nope"}))
        .await;
    assert_eq!(a.exit, Some(1));
}

// ---- echoes with visible gaps --------------------------------------------

#[tokio::test]
async fn an_echo_with_a_gap_says_where_the_gap_is() {
    let w = world().await;
    for via in w.both() {
        let at = via.name();
        w.write("f.txt", "a\nb\nc\n");
        let content: String = (1..=30).map(|i| format!("n{i}\n")).collect();
        let v = via
            .ok(
                "coder::update-file",
                json!({"files": [{"path": "f.txt",
                    "ops": [{"op": "update_lines", "from_line": 2, "to_line": 2, "content": content}]}]}),
            )
            .await;
        let e = &v["results"][0]["echoes"][0];
        let lines = e["lines"].as_array().unwrap();
        let from = e["from_line"].as_u64().unwrap() as usize;
        let after = e["elided_after"].as_u64().unwrap() as usize;
        let elided = e["elided"].as_u64().unwrap() as usize;
        let file = w.read("f.txt");
        let file: Vec<&str> = file.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let number = if i < after {
                from + i
            } else {
                from + i + elided
            };
            assert_eq!(l, file[number - 1], "{at}: echo line {i} is line {number}");
        }
    }
}

// ---- small ones -----------------------------------------------------------

#[tokio::test]
async fn the_line_window_schema_matches_what_is_enforced() {
    let w = world().await;
    let read = w.engine.function("coder::read-file").await.unwrap();
    let schema = read.request_format.unwrap();
    for key in ["line_from", "line_to"] {
        assert_eq!(
            schema["properties"][key]["minimum"].as_f64(),
            Some(1.0),
            "{key}"
        );
    }
    w.write("a.txt", "x\n");
    for via in w.both() {
        let (code, message) = via
            .err("coder::read-file", json!({"path": "a.txt", "line_from": 0}))
            .await;
        assert_eq!(code, "C210", "{}", via.name());
        assert!(message.contains("line_from >= 1"), "{message}");
    }
}

#[test]
fn ide_functions_into_a_closed_pipe_exits_quietly() {
    // The reading end is closed before `ide` writes: its first write fails
    // with EPIPE, whatever the size of the catalog.
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    let cwd = tempfile::TempDir::new().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(cwd.path())
        .env("XDG_STATE_HOME", cwd.path())
        .arg("functions")
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr, "");
}

// ---- an agent session, with its call count -------------------------------

/// Counts the calls an agent makes.
struct Agent<'a> {
    via: Via<'a>,
    calls: AtomicUsize,
}

impl Agent<'_> {
    async fn call(&self, id: &str, payload: Value) -> Result<Value, (String, String)> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.via.answer(id, payload).await.result
    }

    async fn ok(&self, id: &str, payload: Value) -> Value {
        self.call(id, payload.clone())
            .await
            .unwrap_or_else(|e| panic!("{id} {payload}: {e:?}"))
    }
}

/// The session: orient, rename a function across files, edit a window of a
/// long file that someone else changes meanwhile, run the tests. The agent
/// takes the short way whenever the answers allow it and falls back
/// (spending calls) where they do not, as an agent would.
async fn session(w: &World, agent: &Agent<'_>) {
    // rename compute_total -> sum_total in the package
    let found = agent
        .ok(
            "coder::search",
            json!({"query": "compute_total", "path": "py", "include_globs": ["calcpkg/**/*.py"],
                   "search_paths": false}),
        )
        .await;
    let found = if found["content_matches"].as_array().unwrap().is_empty() {
        // a silent zero: the agent drops its filter and searches again
        agent
            .ok(
                "coder::search",
                json!({"query": "compute_total", "path": "py", "search_paths": false}),
            )
            .await
    } else {
        found
    };
    let mut files: Vec<String> = found["content_matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_string())
        .collect();
    files.dedup();
    assert_eq!(files.len(), 3, "{found}");
    let entries: Vec<Value> = files
        .iter()
        .map(|p| {
            json!({"path": p, "ops": [{"op": "replace", "pattern": r"\bcompute_total\b",
                                         "replacement": "sum_total"}]})
        })
        .collect();
    let renamed = agent
        .ok("coder::update-file", json!({"files": entries}))
        .await;
    for r in renamed["results"].as_array().unwrap() {
        assert_eq!(r["success"], true, "{renamed}");
    }
    let left = agent
        .ok(
            "coder::search",
            json!({"query": "compute_total", "path": "py", "search_paths": false}),
        )
        .await;
    assert_eq!(left["content_matches"], json!([]));

    // a guarded edit of line 2505 of a 5000-line file
    let wanted = "    value_2505 = compute(2505)";
    let target = "    value_2505 = compute(2505) + 1";
    let window = agent
        .ok(
            "coder::read-file",
            json!({"path": "py/big.py", "line_from": 2500, "line_to": 2510}),
        )
        .await;
    let mut rev = match window["revision"].as_str() {
        Some(r) => r.to_string(),
        None => {
            // no revision on a window: a full read just for the guard
            let full = agent
                .ok(
                    "coder::read-file",
                    json!({"path": "py/big.py", "max_output_bytes": 1_000_000}),
                )
                .await;
            full["revision"].as_str().unwrap().to_string()
        }
    };
    let mut line = 2500
        + window["content"]
            .as_str()
            .unwrap()
            .lines()
            .position(|l| l == wanted)
            .unwrap() as u64;
    // meanwhile someone inserts a line at the top
    let body = w.read("py/big.py");
    w.write("py/big.py", format!("# header\n{body}"));
    let mut rebase = false;
    loop {
        let edit = agent
            .call(
                "coder::update-file",
                json!({"files": [{"path": "py/big.py", "expected_revision": rev, "rebase_lines": rebase,
                    "ops": [{"op": "update_lines", "from_line": line, "to_line": line, "content": target}]}]}),
            )
            .await;
        // the only entry failing fails the call with the entry's error
        let (code, message) = match edit {
            Ok(v) => {
                assert_eq!(v["results"][0]["success"], true, "{v}");
                break;
            }
            Err(e) => e,
        };
        assert_eq!(code, "C221", "{message}");
        // the refusal says what changed and where the line went: the agent
        // takes the offer to move its op, no re-read
        if message.contains("rebase_lines: true") && !rebase {
            assert!(
                message.contains("1 line inserted before your line 1"),
                "{message}"
            );
            rebase = true;
            continue;
        }
        // otherwise the message says a window re-read is enough
        assert!(message.contains("windowed"), "{message}");
        let again = agent
            .ok(
                "coder::read-file",
                json!({"path": "py/big.py", "line_from": line - 5, "line_to": line + 5}),
            )
            .await;
        rev = again["revision"].as_str().unwrap().to_string();
        line = line - 5
            + again["content"]
                .as_str()
                .unwrap()
                .lines()
                .position(|l| l == wanted)
                .unwrap() as u64;
    }
    let now = w.read("py/big.py");
    assert_eq!(now.lines().nth(2505), Some(target));
    assert!(!now.contains(&format!("{wanted}\n")));

    // run the tests and read their summary
    let run = agent
        .ok(
            "shell::exec",
            with(runner(), json!({"max_output_bytes": 4096, "keep": "tail"})),
        )
        .await;
    let out = run["stdout"].as_str().unwrap();
    if !out.ends_with("20000 passed\n") {
        // the summary was cut off: run again with the output filtered
        agent
            .ok(
                "shell::exec",
                json!({"command": "sh", "args": ["-c", format!("{} | tail -1",
                    runner()["args"][1].as_str().unwrap())]}),
            )
            .await;
    }
}

fn session_tree(w: &World) {
    w.write(
        "py/calcpkg/core.py",
        "def compute_total(xs):\n    return sum(xs)\n",
    );
    w.write(
        "py/calcpkg/report.py",
        "from .core import compute_total\n\nprint(compute_total([1, 2]))\n",
    );
    w.write(
        "py/calcpkg/sub/stats.py",
        "from ..core import compute_total\n",
    );
    w.write("py/setup.py", "name = 'calcpkg'\n");
    let big: String = (1..=5000)
        .map(|i| format!("    value_{i} = compute({i})\n"))
        .collect();
    w.write("py/big.py", big);
}

/// 3 calls for the rename (search, one batch edit, a check), 4 for the
/// guarded window edit under a concurrent change (window read, refused edit,
/// window re-read, edit), 1 for the test run.
/// Calls the session takes through a served worker: the stale edit's
/// refusal says where the line went and the retry moves the op (no re-read).
const SESSION_CALLS: usize = 7;
/// Through `ide call`, where each call is its own process and holds no
/// revision an earlier one served: the refusal cannot say what changed, so
/// the agent re-reads the window.
const SESSION_CALLS_ONE_SHOT: usize = 8;

#[tokio::test]
async fn an_agent_session_takes_the_calls_it_needs_and_no_more() {
    let w = world().await;
    for via in w.both() {
        session_tree(&w);
        let agent = Agent {
            via,
            calls: AtomicUsize::new(0),
        };
        session(&w, &agent).await;
        let want = if via.name() == "ide call" {
            SESSION_CALLS_ONE_SHOT
        } else {
            SESSION_CALLS
        };
        assert_eq!(agent.calls.load(Ordering::SeqCst), want, "{}", via.name());
        let report = w.read("py/calcpkg/report.py");
        assert!(report.contains("sum_total([1, 2])"), "{report}");
        assert_eq!(w.read("py/setup.py"), "name = 'calcpkg'\n");
    }
}
