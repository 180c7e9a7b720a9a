//! The exec surface through the catalog, as a caller sees it: decoding,
//! policy, processes, the job table and job-finished fan-out.

use crate::catalog::Catalog;

use crate::ports::{Binding, Outbound};

use crate::config::Config;
use crate::error::WireError;
use crate::exec::jobs::{JobStatus, JobTable, MAX_RETAINED, NewJob, Runner, Started};
use crate::exec::process::Outputs;
use crate::runtime::Runtime;
use crate::services::Services;
use crate::testkit::pid_alive;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// A fake engine: records fires, answers `sandbox::exec` with a script.
struct FakeEngine {
    fires: mpsc::UnboundedSender<(String, Value, Option<Value>)>,
    calls: Mutex<Vec<(String, Value, Option<u64>)>>,
    answer: Mutex<Result<Value, WireError>>,
    /// Held while a sandbox call should stay "in the VM".
    gate: tokio::sync::Mutex<()>,
}

#[async_trait::async_trait]
impl Outbound for FakeEngine {
    async fn call(
        &self,
        function_id: &str,
        payload: Value,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        self.calls
            .lock()
            .unwrap()
            .push((function_id.to_string(), payload, timeout_ms));
        let _open = self.gate.lock().await;
        self.answer.lock().unwrap().clone()
    }

    fn fire(&self, binding: &Binding, payload: Value) {
        let _ = self.fires.send((
            binding.function_id.clone(),
            payload,
            binding.metadata.clone(),
        ));
    }
}

struct World {
    services: Arc<Services>,
    engine: Arc<FakeEngine>,
    fires: mpsc::UnboundedReceiver<(String, Value, Option<Value>)>,
    catalog: Catalog,
    _dirs: TestDirs,
}

/// A test's own directories: where its commands start, and where its
/// journal lives (nothing lands in a shared temp dir or the user's home).
struct TestDirs {
    _cwd: tempfile::TempDir,
    _state: tempfile::TempDir,
}

/// The zero config pointed at fresh [`TestDirs`] (kept alive by the world
/// built from it).
struct TestConfig {
    config: Config,
    dirs: TestDirs,
}

impl std::ops::Deref for TestConfig {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.config
    }
}

impl std::ops::DerefMut for TestConfig {
    fn deref_mut(&mut self) -> &mut Config {
        &mut self.config
    }
}

fn config() -> TestConfig {
    let cwd = tempfile::TempDir::new().unwrap();
    let state = tempfile::TempDir::new().unwrap();
    let mut c = Config::zero_config();
    c.working_dir = Some(cwd.path().canonicalize().unwrap());
    c.turns.data_dir = state.path().join("turns");
    TestConfig {
        config: c,
        dirs: TestDirs {
            _cwd: cwd,
            _state: state,
        },
    }
}

fn world(cfg: TestConfig) -> World {
    let (tx, rx) = mpsc::unbounded_channel();
    let engine = Arc::new(FakeEngine {
        fires: tx,
        calls: Mutex::new(Vec::new()),
        answer: Mutex::new(Ok(json!({
            "stdout": "in vm\n", "stderr": "", "exit_code": 0,
            "timed_out": false, "duration_ms": 7, "success": true
        }))),
        gate: tokio::sync::Mutex::new(()),
    });
    let outbound: Arc<dyn Outbound> = engine.clone();
    let services = Arc::new(Services::new(
        Runtime::build(cfg.config).unwrap(),
        None,
        Some(outbound.clone()),
    ));
    World {
        services,
        engine,
        fires: rx,
        catalog: Catalog::standard(),
        _dirs: cfg.dirs,
    }
}

impl World {
    async fn call(&self, id: &str, payload: Value) -> Result<Value, WireError> {
        self.catalog.call(&self.services, id, payload).await
    }

    async fn ok(&self, id: &str, payload: Value) -> Value {
        match self.call(id, payload.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{id} {payload} failed: {e}"),
        }
    }

    async fn err(&self, id: &str, payload: Value) -> WireError {
        match self.call(id, payload.clone()).await {
            Ok(v) => panic!("{id} {payload} should fail, got {v}"),
            Err(e) => e,
        }
    }

    async fn bind(&self, binding: &str, config: Value, metadata: Option<Value>) {
        let provider = crate::exec::job_finished::trigger_type().provider;
        provider
            .register(
                &self.services,
                Binding {
                    id: binding.to_string(),
                    function_id: format!("fn::{binding}"),
                    config,
                    metadata,
                    namespace: None,
                },
            )
            .await
            .unwrap();
    }

    /// The next fire, or None when none comes within `limit`.
    async fn next_fire(&mut self, limit: Duration) -> Option<(String, Value, Option<Value>)> {
        tokio::time::timeout(limit, self.fires.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next fire (a test that waits 20 s for it has hung).
    async fn fire(&mut self) -> (String, Value, Option<Value>) {
        self.next_fire(Duration::from_secs(20))
            .await
            .expect("a job-finished fire")
    }

    /// Bind a fresh sentinel to `finished_job` (terminal and retained: the
    /// binding replays it while it registers) and assert that its fire is
    /// the next one: whatever was fired before the sentinel registered
    /// would have come first. This is how a test says "nothing else was
    /// fired" without waiting for a quiet moment.
    async fn assert_next_is_sentinel(&mut self, finished_job: &str) {
        let id = format!("sentinel-{}", uuid::Uuid::new_v4().simple());
        self.bind(&id, json!({"job_id": finished_job}), None).await;
        let (f, event, _) = self.fire().await;
        assert_eq!(
            f,
            format!("fn::{id}"),
            "a fire came before the sentinel: {event}"
        );
        assert_eq!(event["job_id"], finished_job);
    }

    async fn wait_status(&self, job_id: &str, want: &str) -> Value {
        let job = self
            .services
            .jobs
            .get(job_id, &self.services.live.snapshot());
        if let Ok(job) = job {
            job.wait_terminal(Duration::from_secs(20)).await;
        }
        let v = self.ok("shell::status", json!({"job_id": job_id})).await;
        assert_eq!(v["job"]["status"], want, "{v}");
        v
    }
}

async fn gone(pid: i32) -> bool {
    for _ in 0..500 {
        if !pid_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

// ---- shell::exec -------------------------------------------------------

#[tokio::test]
async fn exec_round_trip_with_tokenized_and_verbatim_argv() {
    let w = world(config());
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sh -c 'echo \"$0 $1\"; echo e >&2; exit 4' a b", "_caller_worker_id": "w"}),
        )
        .await;
    assert_eq!(v["stdout"], "a b\n");
    assert_eq!(v["stderr"], "e\n");
    assert_eq!(v["exit_code"], 4);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["stdout_truncated"], false);
    assert!(v.get("job_id").is_none());
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "echo", "args": ["one two", "$HOME"]}),
        )
        .await;
    assert_eq!(v["stdout"], "one two $HOME\n");
    let v = w
        .ok("shell::exec", json!({"command": "echo", "args": []}))
        .await;
    assert_eq!(v["stdout"], "\n");
}

#[tokio::test]
async fn exec_refuses_empty_commands_unknown_fields_and_bad_timeouts() {
    let w = world(config());
    assert_eq!(
        w.err("shell::exec", json!({"command": " "})).await.code,
        "S210"
    );
    assert_eq!(w.err("shell::exec", json!({})).await.code, "S210");
    let e = w
        .err("shell::exec", json!({"command": "true", "timeout": 5}))
        .await;
    assert_eq!(e.code, "S210");
    assert!(e.message.contains("timeout"));
    let e = w
        .err("shell::exec", json!({"command": "true", "timeout_ms": "5"}))
        .await;
    assert_eq!(e.code, "S210");
    let e = w
        .err("shell::exec", json!({"command": "no-such-program-xyz"}))
        .await;
    assert_eq!(e.code, "S216");
    assert!(e.message.contains("no-such-program-xyz"), "{}", e.message);
}

#[tokio::test]
async fn denylisted_commands_are_refused_with_the_plain_message() {
    let w = world(config());
    let e = w
        .err("shell::exec", json!({"command": "sudo shutdown -h now"}))
        .await;
    assert_eq!(e.code, "S210");
    assert!(
        e.message.starts_with("command matches denylist: "),
        "{}",
        e.message
    );
    let e = w
        .err(
            "shell::exec_bg",
            json!({"command": "timeout", "args": ["5", "reboot"]}),
        )
        .await;
    assert!(e.message.starts_with("command matches denylist: "));
    assert_eq!(w.services.jobs.all(&w.services.live.snapshot()).len(), 0);
    // the word as an argument is fine
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "echo grep -rn shutdown src/"}),
        )
        .await;
    assert_eq!(v["exit_code"], 0);
}

#[tokio::test]
async fn per_call_env_is_deny_only_and_stdin_is_fed_then_closed() {
    let w = world(config());
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "echo $NODE_ENV; cat"],
                   "env": {"NODE_ENV": "test"}, "stdin": "piped\n"}),
        )
        .await;
    assert_eq!(v["stdout"], "test\npiped\n");
    for key in ["PATH", "LD_PRELOAD", "DYLD_X", "HOME", "BASH_ENV", "9X"] {
        let e = w
            .err("shell::exec", json!({"command": "true", "env": {key: "x"}}))
            .await;
        assert_eq!(e.code, "S210", "{key}");
        assert!(e.message.contains(key), "{key}: {}", e.message);
    }
    // no stdin: /dev/null, so cat ends at once
    let v = w.ok("shell::exec", json!({"command": "cat"})).await;
    assert_eq!(v["stdout"], "");
    assert_eq!(v["exit_code"], 0);
}

#[tokio::test]
async fn env_forwarding_follows_inherit_false_and_allow() {
    let mut cfg = config();
    cfg.env.inherit = false;
    cfg.env.allow = vec!["PATH".into()];
    let w = world(cfg);
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "env", "env": {"A_B": "1"}}),
        )
        .await;
    let mut keys: Vec<&str> = v["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    keys.sort();
    // plus the worker's command marker, which every command carries
    assert_eq!(keys, vec!["A_B", "IDE_COMMAND_ID", "PATH"]);
}

#[tokio::test]
async fn cwd_goes_through_the_one_policy() {
    let root = tempfile::TempDir::new().unwrap();
    let outside = tempfile::TempDir::new().unwrap();
    std::fs::create_dir(root.path().join("sub")).unwrap();
    std::fs::write(root.path().join("file"), "x").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
    let mut cfg = config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.path().to_path_buf()];
    let w = world(cfg);
    let canon = root.path().canonicalize().unwrap();
    let v = w
        .ok("shell::exec", json!({"command": "pwd", "cwd": "sub"}))
        .await;
    assert_eq!(v["stdout"], format!("{}\n", canon.join("sub").display()));
    let abs = canon.join("sub").display().to_string();
    let v = w
        .ok("shell::exec", json!({"command": "pwd", "cwd": abs}))
        .await;
    assert_eq!(v["exit_code"], 0);
    let escape = |cwd: &str| json!({"command": "pwd", "cwd": cwd});
    assert_eq!(w.err("shell::exec", escape("out")).await.code, "S215");
    assert_eq!(w.err("shell::exec", escape("../..")).await.code, "S215");
    assert_eq!(w.err("shell::exec", escape("/")).await.code, "S215");
    assert_eq!(w.err("shell::exec", escape("missing")).await.code, "S211");
    let e = w.err("shell::exec", escape("file")).await;
    assert_eq!(e.code, "S210");
    assert!(e.message.contains("not a directory"));
    // the bg path resolves the same way, before anything runs
    assert_eq!(
        w.err("shell::exec_bg", escape("missing")).await.code,
        "S211"
    );
    assert!(w.services.jobs.all(&w.services.live.snapshot()).is_empty());
}

#[tokio::test]
async fn unjailed_cwd_must_be_absolute_and_not_denylisted() {
    let w = world(config());
    assert_eq!(
        w.err("shell::exec", json!({"command": "pwd", "cwd": "rel"}))
            .await
            .code,
        "S210"
    );
    let dir = tempfile::TempDir::new().unwrap();
    let mut cfg = config();
    cfg.fs.denylist_paths.push(dir.path().to_path_buf());
    let w = world(cfg);
    let e = w
        .err(
            "shell::exec",
            json!({"command": "pwd", "cwd": dir.path().display().to_string()}),
        )
        .await;
    assert_eq!(e.code, "S211");
}

#[tokio::test]
async fn timeouts_kill_the_group_and_unusable_values_mean_default() {
    let mut cfg = config();
    // long enough for `sh` to print under load, far below max_timeout_ms
    cfg.default_timeout_ms = 1000;
    let w = world(cfg);
    for t in [json!(null), json!(-5), json!(1.5), json!(0)] {
        let started = std::time::Instant::now();
        let v = w
            .ok(
                "shell::exec",
                json!({"command": "sh -c 'echo before; sleep 30'", "timeout_ms": t}),
            )
            .await;
        assert_eq!(v["timed_out"], true, "{t}");
        assert_eq!(v["exit_code"], Value::Null);
        assert_eq!(v["stdout"], "before\n");
        assert!(started.elapsed() < Duration::from_secs(10), "{t}");
        // the answer names the next call, and why it came now
        let note = v["note"].as_str().unwrap_or_default();
        assert!(note.contains("names no timeout_ms"), "{v}");
        assert!(note.contains("on_timeout: \"background\""), "{v}");
        assert!(note.contains("shell::exec_bg"), "{v}");
    }
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sleep 0.05", "timeout_ms": 20000}),
        )
        .await;
    assert_eq!(v["timed_out"], false);
}

#[tokio::test]
async fn timeout_is_clamped_to_max_timeout_ms() {
    let mut cfg = config();
    cfg.max_timeout_ms = 200;
    let w = world(cfg);
    let started = std::time::Instant::now();
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sleep 30", "timeout_ms": 600000}),
        )
        .await;
    assert_eq!(v["timed_out"], true);
    assert!(started.elapsed() < Duration::from_secs(10));
    let note = v["note"].as_str().unwrap_or_default();
    assert!(note.contains("its 200 ms deadline"), "{v}");
}

#[tokio::test]
async fn output_is_capped_per_stream_while_the_pipe_drains() {
    let mut cfg = config();
    cfg.max_output_bytes = 100;
    let w = world(cfg);
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo tail >&2"]}),
        )
        .await;
    assert_eq!(v["stdout"].as_str().unwrap().len(), 100);
    assert_eq!(v["stdout_truncated"], true);
    assert_eq!(v["stderr"], "tail\n");
    assert_eq!(v["stderr_truncated"], false);
    assert_eq!(v["exit_code"], 0);
}

/// A command printing lines `1`..`n` (one number a line) to stdout.
fn counting(n: u32) -> Value {
    json!({"command": "seq", "args": ["1", n.to_string()]})
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[tokio::test]
async fn per_call_output_keeps_head_tail_or_both_and_says_what_was_dropped() {
    let w = world(config());
    // seq 1 10000 writes 48894 bytes
    let total = (1..=10000)
        .map(|i: u32| i.to_string().len() + 1)
        .sum::<usize>() as u64;
    let v = w
        .ok(
            "shell::exec",
            with(counting(10000), json!({"max_output_bytes": 10})),
        )
        .await;
    assert_eq!(v["stdout"], "1\n2\n3\n4\n5\n");
    assert_eq!(v["stdout_truncated"], true);
    assert_eq!(v["stdout_dropped_bytes"], total - 10);
    assert_eq!(v["stderr_dropped_bytes"], 0);
    let v = w
        .ok(
            "shell::exec",
            with(
                counting(10000),
                json!({"max_output_bytes": 11, "keep": "tail"}),
            ),
        )
        .await;
    assert_eq!(v["stdout"], "9999\n10000\n");
    assert_eq!(v["stdout_dropped_bytes"], total - 11);
    let v = w
        .ok(
            "shell::exec",
            with(
                counting(10000),
                json!({"max_output_bytes": 8, "keep": "both"}),
            ),
        )
        .await;
    let marker = crate::exec::capture::cut_marker(total - 8);
    assert_eq!(v["stdout"], format!("1\n2\n{marker}000\n"));
    assert_eq!(v["stdout_dropped_bytes"], total - 8);
    // output that fits is whole, with nothing dropped, whatever `keep` says
    let v = w
        .ok("shell::exec", with(counting(3), json!({"keep": "both"})))
        .await;
    assert_eq!(v["stdout"], "1\n2\n3\n");
    assert_eq!(
        (
            v["stdout_truncated"].clone(),
            v["stdout_dropped_bytes"].clone()
        ),
        (json!(false), json!(0))
    );
    assert!(v.get("note").is_none(), "{v}");
}

#[tokio::test]
async fn a_per_call_output_limit_is_clamped_to_the_configured_cap() {
    let mut cfg = config();
    cfg.max_output_bytes = 6;
    let w = world(cfg);
    let v = w
        .ok(
            "shell::exec",
            with(
                counting(100),
                json!({"max_output_bytes": 1_000_000, "keep": "tail"}),
            ),
        )
        .await;
    assert_eq!(v["stdout"], "9\n100\n");
    let err = w
        .err("shell::exec", with(counting(1), json!({"keep": "middle"})))
        .await;
    assert_eq!(err.code, "S210");
    assert!(err.message.contains("keep"), "{}", err.message);
}

#[tokio::test]
async fn a_bare_shell_operator_runs_as_given_with_a_note() {
    let w = world(config());
    let v = w
        .ok("shell::exec", json!({"command": "echo one | tr o 0"}))
        .await;
    // echo received the operator and the rest as arguments
    assert_eq!(v["stdout"], "one | tr o 0\n");
    let note = v["note"].as_str().unwrap();
    assert!(note.contains("no shell interprets the command"), "{note}");
    assert!(
        note.contains(r#"command: "sh", args: ["-c", "echo one | tr o 0"]"#),
        "{note}"
    );
    // what the note suggests does what was meant
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "echo one | tr o 0"]}),
        )
        .await;
    assert_eq!(v["stdout"], "0ne\n");
    assert!(v.get("note").is_none(), "{v}");
    // a background job says it too
    let v = w
        .ok("shell::exec_bg", json!({"command": "echo one ; echo two"}))
        .await;
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("\";\" reached \"echo\""),
        "{v}"
    );
    let id = v["job_id"].as_str().unwrap().to_string();
    let s = w.wait_status(&id, "finished").await;
    assert_eq!(s["job"]["stdout"], "one ; echo two\n");
}

#[tokio::test]
async fn status_shows_any_part_of_a_jobs_output() {
    let w = world(config());
    let total = (1..=10000)
        .map(|i: u32| i.to_string().len() + 1)
        .sum::<usize>() as u64;
    let bg = w.ok("shell::exec_bg", counting(10000)).await;
    let id = bg["job_id"].as_str().unwrap().to_string();
    w.wait_status(&id, "finished").await;
    let s = w
        .ok(
            "shell::status",
            json!({"job_id": id, "max_output_bytes": 11, "keep": "tail"}),
        )
        .await;
    assert_eq!(s["job"]["stdout"], "9999\n10000\n");
    assert_eq!(s["job"]["stdout_truncated"], true);
    assert_eq!(s["job"]["stdout_dropped_bytes"], total - 11);
    let s = w
        .ok(
            "shell::status",
            json!({"job_id": id, "max_output_bytes": 4}),
        )
        .await;
    assert_eq!(s["job"]["stdout"], "1\n2\n");
    let s = w
        .ok(
            "shell::status",
            json!({"job_id": id, "max_output_bytes": 8, "keep": "both"}),
        )
        .await;
    assert_eq!(
        s["job"]["stdout"],
        format!("1\n2\n{}000\n", crate::exec::capture::cut_marker(total - 8))
    );
    // the default is the whole output up to the cap, as before
    let s = w.ok("shell::status", json!({"job_id": id})).await;
    assert_eq!(s["job"]["stdout"].as_str().unwrap().len() as u64, total);
    assert_eq!(s["job"]["stdout_dropped_bytes"], 0);
}

#[tokio::test]
async fn on_timeout_background_hands_the_command_over_as_a_job() {
    let mut w = world(config());
    w.bind("all", json!({}), None).await;
    let dir = tempfile::TempDir::new().unwrap();
    // the command waits for a file the test creates once it has been handed over
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "echo early; while [ ! -e go ]; do sleep 0.02; done; echo late"],
                   "cwd": dir.path().display().to_string(),
                   "timeout_ms": 1000, "on_timeout": "background"}),
        )
        .await;
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["stdout"], "early\n");
    assert_eq!(v["exit_code"], Value::Null);
    let job_id = v["job_id"].as_str().expect("job_id").to_string();
    assert!(job_id.starts_with("job-"));
    let note = v["note"].as_str().unwrap_or_default();
    assert!(note.contains(&format!("background job {job_id}")), "{v}");
    assert!(note.contains("shell::status"), "{v}");
    let s = w.ok("shell::status", json!({"job_id": job_id})).await;
    assert_eq!(s["job"]["status"], "running");
    std::fs::write(dir.path().join("go"), "").unwrap();
    let s = w.wait_status(&job_id, "finished").await;
    assert_eq!(s["job"]["stdout"], "early\nlate\n");
    assert_eq!(s["job"]["exit_code"], 0);
    let (_, event, _) = w.next_fire(Duration::from_secs(5)).await.unwrap();
    assert_eq!(event["job_id"], job_id.as_str());
    // default stays kill
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sleep 30", "timeout_ms": 100}),
        )
        .await;
    assert!(v.get("job_id").is_none());
    let e = w
        .err(
            "shell::exec",
            json!({"command": "true", "on_timeout": "detach"}),
        )
        .await;
    assert_eq!(e.code, "S210");
}

#[tokio::test]
async fn on_timeout_background_without_a_free_slot_kills_instead() {
    let mut cfg = config();
    cfg.max_concurrent_jobs = 1;
    let w = world(cfg);
    let bg = w.ok("shell::exec_bg", json!({"command": "sleep 30"})).await;
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sleep 30", "timeout_ms": 100, "on_timeout": "background"}),
        )
        .await;
    assert_eq!(v["timed_out"], true);
    assert!(v.get("job_id").is_none());
    w.ok("shell::kill", json!({"job_id": bg["job_id"]})).await;
}

// ---- background jobs ---------------------------------------------------

#[tokio::test]
async fn exec_bg_status_list_kill() {
    let w = world(config());
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sh -c 'echo hi; echo err >&2'", "timeout_ms": 1}),
        )
        .await;
    assert_eq!(v["argv"], json!(["sh", "-c", "echo hi; echo err >&2"]));
    let id = v["job_id"].as_str().unwrap().to_string();
    assert!(uuid::Uuid::parse_str(id.trim_start_matches("job-")).is_ok());
    let s = w.wait_status(&id, "finished").await;
    assert_eq!(s["job"]["stdout"], "hi\n");
    assert_eq!(s["job"]["stderr"], "err\n");
    assert_eq!(s["job"]["exit_code"], 0);
    assert!(
        s["job"]["finished_at_ms"].as_u64().unwrap() >= s["job"]["started_at_ms"].as_u64().unwrap()
    );

    let long = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sleep 30", "job_id": "mine-1"}),
        )
        .await;
    assert_eq!(long["job_id"], "mine-1");
    let l = w.ok("shell::list", json!({})).await;
    assert_eq!(l["count"], 2);
    for j in l["jobs"].as_array().unwrap() {
        assert!(j.get("argv").is_none() && j.get("stdout").is_none() && j.get("stderr").is_none());
    }
    assert_eq!(l["jobs"][1]["status"], "running");
    let k = w.ok("shell::kill", json!({"job_id": "mine-1"})).await;
    assert_eq!(k["killed"], true);
    assert_eq!(k["status"], "killed");
    assert_eq!(k["job_id"], "mine-1");
    // the record says which signal ended it; a job that exited by itself names none
    let s = w.wait_status("mine-1", "killed").await;
    assert_eq!(s["job"]["signal"], "SIGTERM", "{s}");
    let done = w.ok("shell::exec_bg", json!({"command": "true"})).await;
    let d = w
        .wait_status(done["job_id"].as_str().unwrap(), "finished")
        .await;
    assert!(d["job"].get("signal").is_none(), "{d}");
    let again = w.ok("shell::kill", json!({"job_id": "mine-1"})).await;
    assert_eq!(again["killed"], false);
    assert_eq!(again["status"], "killed");
    assert!(again["reason"].as_str().unwrap().contains("already ended"));
    let e = w.err("shell::status", json!({"job_id": "nope"})).await;
    assert_eq!(e.code, "S211");
    assert!(e.message.contains("no such job"));
    assert_eq!(
        w.err("shell::kill", json!({"job_id": "nope"})).await.code,
        "S211"
    );
}

#[tokio::test]
async fn kill_reaches_the_grandchild() {
    let w = world(config());
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sh", "args": ["-c", "sleep 300 & echo $!; wait"]}),
        )
        .await;
    let id = v["job_id"].as_str().unwrap();
    let grandchild: i32 = loop {
        let s = w.ok("shell::status", json!({"job_id": id})).await;
        if let Ok(pid) = s["job"]["stdout"].as_str().unwrap().trim().parse() {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(pid_alive(grandchild));
    let k = w.ok("shell::kill", json!({"job_id": id})).await;
    assert_eq!(k["status"], "killed");
    assert!(gone(grandchild).await, "grandchild {grandchild} survived");
}

#[tokio::test]
async fn blank_ids_are_refused_and_failed_spawns_leave_nothing() {
    let mut w = world(config());
    w.bind("b", json!({"job_id": "spawn-fails"}), None).await;
    let e = w
        .err("shell::exec_bg", json!({"command": "true", "job_id": "  "}))
        .await;
    assert_eq!(e.code, "S210");
    let e = w
        .err(
            "shell::exec_bg",
            json!({"command": "no-such-program-xyz", "job_id": "spawn-fails"}),
        )
        .await;
    assert_eq!(e.code, "S216");
    assert_eq!(
        w.err("shell::status", json!({"job_id": "spawn-fails"}))
            .await
            .code,
        "S211"
    );
    assert_eq!(w.services.jobs.running(), 0);
    // and the id is free again; the binding's one fire is this job's, so
    // the failed spawn fired nothing (it would have fired first)
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": "spawn-fails"}),
    )
    .await;
    let (f, event, _) = w.fire().await;
    assert_eq!(f, "fn::b");
    assert_eq!(event["argv"], json!(["true"]), "{event}");
    assert_eq!(event["status"], "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_exec_bg_with_one_id_runs_exactly_once() {
    let w = Arc::new(world(config()));
    let dir = tempfile::TempDir::new().unwrap();
    let marker = dir.path().join("runs");
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let w = w.clone();
        let marker = marker.display().to_string();
        tasks.push(tokio::spawn(async move {
            w.call(
                "shell::exec_bg",
                json!({"command": "sh", "args": ["-c", format!("echo x >> {marker}")],
                       "job_id": "same-id"}),
            )
            .await
        }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(v) => {
                assert_eq!(v["job_id"], "same-id");
                won += 1;
            }
            Err(e) => {
                assert_eq!(e.code, "S213", "{e}");
                assert!(e.message.contains("same-id"));
            }
        }
    }
    assert_eq!(won, 1);
    w.wait_status("same-id", "finished").await;
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "x\n");
    // a retained duplicate is refused without touching the original
    let e = w
        .err(
            "shell::exec_bg",
            json!({"command": "false", "job_id": "same-id"}),
        )
        .await;
    assert_eq!(e.code, "S213");
    let s = w.ok("shell::status", json!({"job_id": "same-id"})).await;
    assert_eq!(s["job"]["exit_code"], 0);
}

#[tokio::test]
async fn max_concurrent_jobs_is_enforced_and_slots_come_back() {
    let mut cfg = config();
    cfg.max_concurrent_jobs = 2;
    let w = world(cfg);
    let a = w.ok("shell::exec_bg", json!({"command": "sleep 30"})).await;
    let b = w.ok("shell::exec_bg", json!({"command": "sleep 30"})).await;
    let e = w
        .err(
            "shell::exec_bg",
            json!({"command": "true", "job_id": "third"}),
        )
        .await;
    assert_eq!(e.code, "S218");
    assert!(e.message.contains("max_concurrent_jobs"));
    // the refused id was not kept
    assert_eq!(
        w.err("shell::status", json!({"job_id": "third"}))
            .await
            .code,
        "S211"
    );
    w.ok("shell::kill", json!({"job_id": a["job_id"]})).await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": "third"}),
    )
    .await;
    w.ok("shell::kill", json!({"job_id": b["job_id"]})).await;
}

#[tokio::test]
async fn max_bg_timeout_ms_kills_with_the_snapshot_the_job_started_under() {
    let mut cfg = config();
    cfg.max_bg_timeout_ms = 300;
    let w = world(cfg);
    let v = w.ok("shell::exec_bg", json!({"command": "sleep 30"})).await;
    // a reload to "unbounded" does not reach the running job
    let mut unbounded = w.services.live.snapshot().config.clone();
    unbounded.max_bg_timeout_ms = 0;
    w.services
        .live
        .apply(&unbounded.to_value())
        .expect("reload applies");
    let id = v["job_id"].as_str().unwrap();
    let s = w.wait_status(id, "killed").await;
    assert_eq!(s["job"]["exit_code"], Value::Null);
    let later = w
        .ok("shell::exec_bg", json!({"command": "sleep 0.5"}))
        .await;
    w.wait_status(later["job_id"].as_str().unwrap(), "finished")
        .await;
}

#[tokio::test]
async fn finished_records_are_pruned_after_retention() {
    let mut cfg = config();
    cfg.job_retention_secs = 0;
    let w = world(cfg);
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "true", "job_id": "short"}),
        )
        .await;
    let job = w
        .services
        .jobs
        .get("short", &w.services.live.snapshot())
        .unwrap();
    assert!(job.wait_terminal(Duration::from_secs(10)).await);
    assert_eq!(v["job_id"], "short");
    let e = w.err("shell::status", json!({"job_id": "short"})).await;
    assert_eq!(e.code, "S211");
    assert_eq!(w.ok("shell::list", json!({})).await["count"], 0);
}

#[tokio::test]
async fn running_jobs_are_never_pruned_and_the_record_budget_holds() {
    let table = JobTable::new(None);
    let cfg = config();
    let rt = Arc::new(Runtime::build(cfg.config.clone()).unwrap());
    let running = table
        .reserve(
            NewJob {
                id: Some("still-running"),
                argv: vec!["x".into()],
                runner: Runner::Sandbox,
                outputs: Outputs::new(crate::exec::capture::Shape::job(1 << 20)),
                started: Started::now(),
            },
            &rt,
        )
        .unwrap();
    for i in 0..MAX_RETAINED + 10 {
        let id = format!("j{i}");
        let job = table
            .reserve(
                NewJob {
                    id: Some(&id),
                    argv: vec!["x".into()],
                    runner: Runner::Sandbox,
                    outputs: Outputs::new(crate::exec::capture::Shape::job(1 << 20)),
                    started: Started::now(),
                },
                &rt,
            )
            .unwrap();
        assert!(table.finish(&job, JobStatus::Finished, Some(0), None));
    }
    table.prune_with(Duration::from_secs(3600));
    let all = table.all(&rt);
    assert_eq!(all.len(), MAX_RETAINED + 1);
    assert!(table.get("still-running", &rt).is_ok());
    // the oldest went first
    assert!(table.get("j0", &rt).is_err());
    assert!(table.get(&format!("j{}", MAX_RETAINED + 9), &rt).is_ok());
    table.prune_with(Duration::ZERO);
    assert_eq!(table.all(&rt).len(), 1);
    assert!(Arc::ptr_eq(
        &table.get("still-running", &rt).unwrap(),
        &running
    ));
}

// ---- shell::job-finished -----------------------------------------------

#[tokio::test]
async fn a_binding_registered_before_start_gets_the_completion_once() {
    let mut w = world(config());
    w.bind(
        "b1",
        json!({"job_id": "job-a"}),
        Some(json!({"session": "s1"})),
    )
    .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "sh -c 'exit 3'", "job_id": "job-a"}),
    )
    .await;
    let (function_id, event, metadata) = w.next_fire(Duration::from_secs(10)).await.unwrap();
    assert_eq!(function_id, "fn::b1");
    assert_eq!(metadata, Some(json!({"session": "s1"})));
    assert_eq!(event["job_id"], "job-a");
    assert_eq!(event["argv"], json!(["sh", "-c", "exit 3"]));
    assert_eq!(event["status"], "finished");
    assert_eq!(event["exit_code"], 3);
    assert!(event.get("stdout").is_none());
    let started = event["started_at_ms"].as_u64().unwrap();
    let finished = event["finished_at_ms"].as_u64().unwrap();
    assert!(finished >= started);
    assert!(event["duration_ms"].as_u64().is_some());
    // re-registering the same binding does not fire again: the next fire
    // is a sentinel's replay (a replay fires while the binding registers)
    w.bind("b1", json!({"job_id": "job-a"}), None).await;
    w.assert_next_is_sentinel("job-a").await;
}

#[tokio::test]
async fn a_binding_registered_after_completion_is_replayed() {
    let mut w = world(config());
    // the probe's fire says the job's completion has been fanned out
    w.bind("probe", json!({"job_id": "job-done"}), None).await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": "job-done"}),
    )
    .await;
    let (f, _, _) = w.fire().await;
    assert_eq!(f, "fn::probe");
    w.bind("late", json!({"job_id": "job-done"}), None).await;
    let (f, event, _) = w.fire().await;
    assert_eq!(f, "fn::late");
    assert_eq!(event["status"], "finished");
    // once: the next fire is a sentinel's
    w.assert_next_is_sentinel("job-done").await;
    // a pruned or unknown job has nothing to replay
    w.bind("never", json!({"job_id": "job-unknown"}), None)
        .await;
    w.assert_next_is_sentinel("job-done").await;
}

#[tokio::test]
async fn an_unfiltered_binding_gets_future_completions_only() {
    let mut w = world(config());
    // the probe's fire says the completion of "before" has been fanned out
    w.bind("probe", json!({"job_id": "before"}), None).await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": "before"}),
    )
    .await;
    let (f, _, _) = w.fire().await;
    assert_eq!(f, "fn::probe");
    // no replay: the next two fires are the two jobs run after it
    w.bind("all", json!({"job_id": null}), None).await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": "after-1"}),
    )
    .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "sleep 30", "job_id": "after-2"}),
    )
    .await;
    w.ok("shell::kill", json!({"job_id": "after-2"})).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let (f, e, _) = w.fire().await;
        seen.push((
            f,
            e["job_id"].as_str().unwrap().to_string(),
            e["status"].clone(),
        ));
    }
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        seen,
        vec![
            (
                "fn::all".to_string(),
                "after-1".to_string(),
                json!("finished")
            ),
            (
                "fn::all".to_string(),
                "after-2".to_string(),
                json!("killed")
            )
        ]
    );
    // unregistered bindings hear nothing more: a job's fan-out fires every
    // binding at once, so a job's only fire is the probe's, and the next
    // fire after it is the sentinel's
    let provider = crate::exec::job_finished::trigger_type().provider;
    provider.unregister(&w.services, "all").await;
    w.bind("probe-after", json!({"job_id": "after-3"}), None)
        .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": "after-3"}),
    )
    .await;
    let (f, e, _) = w.fire().await;
    assert_eq!(
        (f.as_str(), &e["job_id"]),
        ("fn::probe-after", &json!("after-3"))
    );
    w.assert_next_is_sentinel("after-3").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn registration_racing_completion_fires_exactly_once() {
    for round in 0..20 {
        let mut w = world(config());
        let id = format!("race-{round}");
        // the probe's fire says the completion has been fanned out
        w.bind("probe", json!({"job_id": id}), None).await;
        w.ok("shell::exec_bg", json!({"command": "true", "job_id": id}))
            .await;
        w.bind("racer", json!({"job_id": id}), None).await;
        let mut fires = Vec::new();
        while !(fires.contains(&"fn::probe".to_string())
            && fires.contains(&"fn::racer".to_string()))
        {
            fires.push(w.fire().await.0);
        }
        // every fire of this job has been sent: the next is the sentinel's
        w.assert_next_is_sentinel(&id).await;
        assert_eq!(
            fires.iter().filter(|f| *f == "fn::racer").count(),
            1,
            "round {round}: {fires:?}"
        );
    }
}

#[tokio::test]
async fn binding_configs_are_checked() {
    let w = world(config());
    let provider = crate::exec::job_finished::trigger_type().provider;
    let bad = Binding {
        id: "x".into(),
        function_id: "f".into(),
        config: json!({"jobid": "a"}),
        metadata: None,
        namespace: None,
    };
    let e = provider.register(&w.services, bad).await.unwrap_err();
    assert_eq!(e.to_wire(crate::error::Surface::Shell).code, "S210");
    assert_eq!(w.services.jobs.subscriber_count(), 0);
}

// ---- sandbox target ----------------------------------------------------

const SANDBOX: &str = "8c1c5c63-0a5e-4a5b-9e0e-0d7b0c1f2e3d";

#[tokio::test]
async fn sandbox_exec_is_forwarded_and_capped() {
    let mut cfg = config();
    cfg.max_output_bytes = 3;
    cfg.default_timeout_ms = 1234;
    let w = world(cfg);
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "python3 -c 'print(4)'", "target": {"kind": "sandbox", "sandbox_id": SANDBOX}}),
        )
        .await;
    assert_eq!(v["stdout"], "in ");
    assert_eq!(v["stdout_truncated"], true);
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["duration_ms"], 7);
    let calls = w.engine.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    let (f, payload, timeout) = &calls[0];
    assert_eq!(f, "sandbox::exec");
    assert_eq!(
        payload,
        &json!({"sandbox_id": SANDBOX, "cmd": "python3", "args": ["-c", "print(4)"], "timeout_ms": 1234})
    );
    assert_eq!(*timeout, Some(1234 + 5000));
}

#[tokio::test]
async fn sandbox_calls_refuse_host_fields_denylist_and_disabled_sandboxes() {
    let w = world(config());
    let target = json!({"kind": "sandbox", "sandbox_id": SANDBOX});
    for extra in [
        json!({"cwd": "/tmp"}),
        json!({"env": {"A": "1"}}),
        json!({"stdin": ""}),
        json!({"on_timeout": "background"}),
    ] {
        let mut p = json!({"command": "ls", "target": target});
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        let e = w.err("shell::exec", p.clone()).await;
        assert_eq!(e.code, "S210", "{p}");
    }
    let e = w
        .err(
            "shell::exec_bg",
            json!({"command": "ls", "cwd": "/tmp", "target": target}),
        )
        .await;
    assert_eq!(e.code, "S210");
    let e = w
        .err(
            "shell::exec",
            json!({"command": "reboot", "target": target}),
        )
        .await;
    assert!(e.message.starts_with("command matches denylist"));
    assert!(w.engine.calls.lock().unwrap().is_empty());
    let mut cfg = config();
    cfg.sandbox.enabled = false;
    let w = world(cfg);
    let e = w
        .err("shell::exec", json!({"command": "ls", "target": target}))
        .await;
    assert_eq!(e.code, "S210");
    assert!(e.message.contains("sandbox.enabled"));
}

#[tokio::test]
async fn sandbox_codes_pass_through_and_unknown_ones_collapse() {
    let w = world(config());
    let target = json!({"kind": "sandbox", "sandbox_id": SANDBOX});
    *w.engine.answer.lock().unwrap() = Err(WireError {
        code: "S002".into(),
        message: "sandbox not found".into(),
    });
    let e = w
        .err("shell::exec", json!({"command": "ls", "target": target}))
        .await;
    assert_eq!(e.code, "S002");
    *w.engine.answer.lock().unwrap() = Err(WireError {
        code: "weird".into(),
        message: "x".into(),
    });
    let e = w
        .err("shell::exec", json!({"command": "ls", "target": target}))
        .await;
    assert_eq!(e.code, "S216");
}

#[tokio::test]
async fn sandbox_jobs_complete_fail_and_are_marked_killed() {
    let mut w = world(config());
    let target = json!({"kind": "sandbox", "sandbox_id": SANDBOX});
    w.bind("all", json!({}), None).await;
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "ls", "target": target, "job_id": "vm-1", "timeout_ms": 900}),
        )
        .await;
    assert_eq!(v["job_id"], "vm-1");
    let s = w.wait_status("vm-1", "finished").await;
    assert_eq!(s["job"]["stdout"], "in vm\n");
    let (_, e, _) = w.next_fire(Duration::from_secs(5)).await.unwrap();
    assert_eq!(e["status"], "finished");
    assert_eq!(
        w.engine.calls.lock().unwrap()[0].1["timeout_ms"],
        json!(900)
    );

    *w.engine.answer.lock().unwrap() = Err(WireError {
        code: "S004".into(),
        message: "sandbox already stopped".into(),
    });
    w.ok(
        "shell::exec_bg",
        json!({"command": "ls", "target": target, "job_id": "vm-2"}),
    )
    .await;
    let s = w.wait_status("vm-2", "failed").await;
    assert!(s["job"]["stderr"].as_str().unwrap().contains("S004"));
    let (_, e, _) = w.next_fire(Duration::from_secs(5)).await.unwrap();
    assert_eq!(e["status"], "failed");

    // a job still "in the VM" can only be marked killed
    let engine = w.engine.clone();
    let gate = engine.gate.lock().await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "ls", "target": target, "job_id": "vm-3"}),
    )
    .await;
    let k = w.ok("shell::kill", json!({"job_id": "vm-3"})).await;
    assert_eq!(k["killed"], true);
    assert_eq!(k["status"], "killed");
    assert!(
        k["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be hard-killed")
    );
    let (_, e, _) = w.next_fire(Duration::from_secs(5)).await.unwrap();
    assert_eq!(e["status"], "killed");
    // the VM answers late: the job's task handles the answer and ends (it
    // lets go of the job), having fired nothing
    let job = w
        .services
        .jobs
        .get("vm-3", &w.services.live.snapshot())
        .unwrap();
    let held = Arc::strong_count(&job);
    drop(gate);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while Arc::strong_count(&job) >= held {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the job's task did not end"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    w.assert_next_is_sentinel("vm-3").await;
    assert_eq!(w.services.jobs.running(), 0);
}

// ---- lifecycle ----------------------------------------------------------

#[tokio::test]
async fn shutdown_kills_running_jobs_and_foreground_commands() {
    let w = Arc::new(world(config()));
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sh", "args": ["-c", "sleep 300 & echo $!; wait"]}),
        )
        .await;
    let id = v["job_id"].as_str().unwrap().to_string();
    let fg = {
        let w = w.clone();
        tokio::spawn(async move {
            w.call(
                "shell::exec",
                json!({"command": "sleep 300", "timeout_ms": 100000}),
            )
            .await
        })
    };
    let grandchild: i32 = loop {
        let s = w.ok("shell::status", json!({"job_id": id})).await;
        if let Ok(pid) = s["job"]["stdout"].as_str().unwrap().trim().parse() {
            if w.services.jobs.live().len() == 2 {
                break pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    w.services.shutdown().await;
    assert!(w.services.jobs.live().is_empty());
    assert!(gone(grandchild).await);
    let s = w.ok("shell::status", json!({"job_id": id})).await;
    assert_eq!(s["job"]["status"], "killed");
    let fg = tokio::time::timeout(Duration::from_secs(10), fg)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(fg["exit_code"], Value::Null);
}

// ---- published shapes --------------------------------------------------

#[test]
fn request_and_response_schemas_match_the_contract() {
    let c = Catalog::standard();
    let exec = c.get("shell::exec").unwrap();
    let req = &exec.request_schema;
    assert_eq!(req["title"], "ExecRequest");
    assert_eq!(req["description"], "Wire request for `shell::exec`.");
    assert_eq!(req["required"], json!(["command"]));
    // the contract's draft-07 shapes, as registered in 2020-12
    let published = crate::testkit::as_registered;
    // the contract's integer, widened to what the function takes: any
    // number or null, all but a positive whole number meaning the default
    assert_eq!(
        req["properties"]["timeout_ms"],
        json!({
            "default": null,
            "description": "Per-call timeout in milliseconds, capped at the configured max; negative or fractional values fall back to the default (so do omitting it, null and 0).",
            "type": ["number", "null"]
        })
    );
    assert_eq!(
        req["properties"]["env"],
        published(
            json!({
                "additionalProperties": {"type": "string"},
                "default": null,
                "description": "Per-call env values (host only, S210 on sandbox); exec-hijacking keys (PATH, IFS, HOME, `LD_*`/`DYLD_*`, …) reject the whole call S210.",
                "type": ["object", "null"]
            }),
            true
        )
    );
    assert_eq!(
        req["properties"]["target"]["default"],
        json!({"kind": "host"})
    );
    // "Omit/null to tokenize": null says something here, so it stays
    assert_eq!(req["properties"]["args"]["type"], json!(["array", "null"]));
    assert_eq!(req["properties"]["on_timeout"]["default"], "kill");
    let resp = &exec.response_schema;
    assert_eq!(resp["title"], "ExecResponse");
    assert_eq!(
        resp["required"],
        json!([
            "duration_ms",
            "stderr",
            "stderr_truncated",
            "stdout",
            "stdout_truncated",
            "timed_out"
        ])
    );
    assert_eq!(
        resp["properties"]["exit_code"],
        published(
            json!({"format": "int32", "type": ["integer", "null"]}),
            false
        )
    );

    let bg = c.get("shell::exec_bg").unwrap();
    assert_eq!(
        bg.request_schema["properties"]["job_id"],
        published(
            json!({
                "default": null,
                "description": "Optional non-blank ID for registering shell::job-finished before execution. Must be unique among retained jobs in this worker. Omit or pass null to generate a job-UUID automatically.",
                "minLength": 1,
                "type": ["string", "null"]
            }),
            true
        )
    );
    assert!(bg.request_schema["properties"].get("on_timeout").is_none());
    assert_eq!(bg.response_schema["required"], json!(["argv", "job_id"]));

    let status = c.get("shell::status").unwrap();
    assert_eq!(status.request_schema["required"], json!(["job_id"]));
    let record = &status.response_schema["$defs"]["JobRecord"];
    assert_eq!(
        record["required"],
        json!([
            "argv",
            "id",
            "started_at_ms",
            "status",
            "stderr",
            "stderr_truncated",
            "stdout",
            "stdout_truncated"
        ])
    );
    assert!(record.get("description").is_none());
    let list = c.get("shell::list").unwrap();
    assert_eq!(
        list.request_schema["description"],
        "`shell::list` takes no arguments."
    );
    // a count: an integer from 0 (JSON Schema has no `uint` format)
    assert_eq!(
        list.response_schema["properties"]["count"],
        json!({"minimum": 0, "type": "integer"})
    );
    let summary = &list.response_schema["$defs"]["JobSummary"];
    assert!(summary["properties"].get("argv").is_none());
    assert_eq!(
        summary["required"],
        json!([
            "id",
            "started_at_ms",
            "status",
            "stderr_truncated",
            "stdout_truncated"
        ])
    );
    let kill = c.get("shell::kill").unwrap();
    assert_eq!(
        kill.response_schema["required"],
        json!(["job_id", "killed", "status"])
    );
    assert_eq!(
        kill.response_schema["properties"]["reason"],
        json!({"type": ["string", "null"]})
    );
}

#[test]
fn the_trigger_type_is_in_the_catalog() {
    let c = Catalog::standard();
    let t = c
        .trigger_types()
        .find(|t| t.id == "shell::job-finished")
        .unwrap();
    assert!(
        t.description
            .starts_with("Fires once when a shell::exec_bg")
    );
    assert_eq!(t.config_schema["title"], "JobFinishedConfig");
    assert_eq!(t.payload_schema["title"], "JobFinishedEvent");
}

/// A process a command started in the background does not outlive it.
#[tokio::test]
async fn processes_left_behind_by_a_command_are_killed_with_it() {
    let j = crate::testkit::Jail::new();
    let v = j
        .call(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "sleep 1000 >/dev/null 2>&1 & echo $!"]}),
        )
        .await
        .unwrap();
    let pid: i32 = v["stdout"].as_str().unwrap().trim().parse().unwrap();
    // gone, or a zombie waiting for init to reap it
    assert!(!pid_alive(pid), "pid {pid} still running");
}

// ---- nothing outlives its command (processes that leave the group) ------

/// Live processes below this test process whose argv holds `token` as a
/// whole argument. Only this process's own tree is looked at: the worker is
/// a child subreaper, so whatever a command leaves behind (a daemon that
/// double-forked included) is re-parented to it and stays in its tree,
/// while a process of anyone else on the host never matches.
fn pids_with_arg(token: &str) -> Vec<i32> {
    assert!(
        crate::exec::tree::init(),
        "the test process must be a child subreaper"
    );
    let all = crate::exec::tree::scan();
    let mut below = vec![std::process::id() as i32];
    let mut i = 0;
    while i < below.len() {
        let parent = below[i];
        below.extend(all.iter().filter(|s| s.ppid == parent).map(|s| s.pid));
        i += 1;
    }
    let mut out = Vec::new();
    for &pid in &below[1..] {
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmd.split(|&b| b == 0).any(|a| a == token.as_bytes()) && pid_alive(pid) {
            out.push(pid);
        }
    }
    out.sort();
    out
}

/// Wait (at most 20 s) until `n` live processes carry `token`.
async fn find_pids(token: &str, n: usize) -> Vec<i32> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let pids = pids_with_arg(token);
        if pids.len() >= n {
            return pids;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "expected {n} processes with argument {token:?}, found {pids:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The parent of `pid`.
fn ppid(pid: i32) -> i32 {
    crate::exec::tree::stat(pid).expect("running").ppid
}

async fn assert_all_gone(pids: &[i32]) {
    for &pid in pids {
        assert!(gone(pid).await, "pid {pid} survived its command");
    }
}

/// The tests below make a child leave its process group with Python's
/// `os.setpgrp()` / `os.setsid()`: without python3 they fail (they are
/// never skipped silently).
fn require_python() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 is required by this test (it starts a child that leaves its process \
         group): install python3 and run it again"
    );
}

/// GNU `timeout` leads a process group of its own; started in the
/// background it leaves the command's group, and its sleep with it.
#[tokio::test]
async fn a_background_timeout_dies_when_its_command_ends() {
    let w = world(config());
    let call = w.call(
        "shell::exec",
        json!({"command": "sh", "args": ["-c", "timeout 300 sleep 309 & echo hi"]}),
    );
    // The leftovers hold stdout, so the call drains for a while: long
    // enough to see both (timeout and its sleep) before it returns.
    let (v, pids) = tokio::join!(call, find_pids("309", 2));
    let v = v.unwrap();
    assert_eq!(v["stdout"], "hi\n");
    assert_eq!(v["exit_code"], 0);
    assert_all_gone(&pids).await;
}

/// A timed-out command whose `timeout` left the group (it is not the
/// leader when a shell runs it), and one where it leads the group.
#[tokio::test]
async fn a_timed_out_timeout_dies_with_its_command() {
    let w = world(config());
    for (args, token) in [
        (
            json!(["-c", "timeout 300 sleep 316; echo unreachable"]),
            "316",
        ),
        (json!(["-c", "exec timeout 300 sleep 3160"]), "3160"),
    ] {
        let call = w.call(
            "shell::exec",
            json!({"command": "sh", "args": args, "timeout_ms": 1500}),
        );
        let (v, pids) = tokio::join!(call, find_pids(token, 2));
        let v = v.unwrap();
        assert_eq!(v["timed_out"], true, "{v}");
        assert_all_gone(&pids).await;
    }
}

/// A Python child that leaves the group (`os.setpgrp()`) and starts a
/// grandchild there; the shell that started it exits at once.
#[tokio::test]
async fn a_child_that_leaves_the_group_dies_when_its_command_ends() {
    require_python();
    let w = world(config());
    // the command ends only once the grandchild exists (else it could end
    // first, and there would be nothing left to kill)
    let marks = tempfile::TempDir::new().unwrap();
    let ready = marks.path().join("ready");
    let script = format!(
        r#"python3 -c 'import os,subprocess,time; os.setpgrp(); subprocess.Popen(["sleep","327"]); open("{r}","w").close(); time.sleep(327)' & while [ ! -e "{r}" ]; do sleep 0.01; done; echo started"#,
        r = ready.display()
    );
    let call = w.call(
        "shell::exec",
        json!({"command": "sh", "args": ["-c", script]}),
    );
    // the grandchild's parent is the Python process, in a group of its own
    let found = async {
        let sleep = find_pids("327", 1).await[0];
        (sleep, ppid(sleep))
    };
    let (v, (sleep, python)) = tokio::join!(call, found);
    let v = v.unwrap();
    assert_eq!(v["stdout"], "started\n");
    assert_all_gone(&[sleep, python]).await;
}

/// `shell::kill` of a job reaches a child that left the group (and its
/// grandchild), and a double-forked `setsid` daemon re-parented to the
/// worker.
#[tokio::test]
async fn kill_reaches_children_that_left_the_group_and_daemons() {
    require_python();
    let w = world(config());
    let script = r#"python3 -c 'import os,subprocess,time; os.setpgrp(); subprocess.Popen(["sleep","338"]); time.sleep(338)' & python3 -c 'import os; os.fork() and os._exit(0); os.setsid(); os.fork() and os._exit(0); os.execvp("sleep", ["sleep", "339"])'; wait"#;
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sh", "args": ["-c", script]}),
        )
        .await;
    let id = v["job_id"].as_str().unwrap();
    let grandchild = find_pids("338", 1).await[0];
    let python = ppid(grandchild);
    let daemon = find_pids("339", 1).await[0];
    assert_eq!(
        ppid(daemon),
        std::process::id() as i32,
        "re-parented to the worker"
    );
    let k = w.ok("shell::kill", json!({"job_id": id})).await;
    assert_eq!(k["status"], "killed");
    assert_all_gone(&[grandchild, python, daemon]).await;
}

/// Worker shutdown ends every job, with what left its group.
#[tokio::test]
async fn shutdown_reaches_children_that_left_the_group() {
    require_python();
    let w = world(config());
    let script = r#"python3 -c 'import os,subprocess,time; os.setpgrp(); subprocess.Popen(["sleep","347"]); time.sleep(347)' & timeout 300 sleep 348 & wait"#;
    w.ok(
        "shell::exec_bg",
        json!({"command": "sh", "args": ["-c", script]}),
    )
    .await;
    let grandchild = find_pids("347", 1).await[0];
    let python = ppid(grandchild);
    let timeout = find_pids("348", 2).await;
    w.services.shutdown().await;
    assert_all_gone(&[grandchild, python]).await;
    assert_all_gone(&timeout).await;
}
