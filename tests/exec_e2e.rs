//! End to end: the real `ide` binary on the engine (the loopback stand-in,
//! or a real iii engine with `IDE_TEST_ENGINE`), driven like a
//! harness drives it — calls through the engine, `shell::job-finished`
//! bindings registered with the engine, a fake sandbox worker on the bus.

mod support;

use std::path::Path;
use std::time::Duration;

use ide::config::Config;
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction};
use serde_json::{Value, json};
use support::engine::{connect_worker, unique_name};
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(15);
const SANDBOX: &str = "8c1c5c63-0a5e-4a5b-9e0e-0d7b0c1f2e3d";
const JOB_FINISHED: &str = "shell::job-finished";

/// An engine with `ide` serving on it.
struct World {
    engine: Engine,
    ide: IdeProcess,
    dir: tempfile::TempDir,
}

/// The seed every test starts from: the zero config, commands run in the
/// test's own temporary directory.
fn seed(dir: &Path) -> Config {
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(dir.to_path_buf());
    cfg
}

async fn start(configure: impl FnOnce(&mut Config)) -> World {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut cfg = seed(dir.path());
    configure(&mut cfg);
    let config_path = dir.path().join("config.yaml");
    let engine = Engine::start().await;
    let url = engine.url();
    let ide = IdeProcess::serve(&url, &cfg, &config_path);
    assert!(
        engine.wait_for_ide(WAIT).await,
        "ide did not register its functions:\n{}",
        ide.logs()
    );
    assert!(engine.wait_for_trigger_type(JOB_FINISHED, WAIT).await);
    World { engine, ide, dir }
}

impl World {
    async fn ok(&self, function_id: &str, payload: Value) -> Value {
        match self.engine.call(function_id, payload.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{function_id} {payload} failed: {e:?}\n{}", self.ide.logs()),
        }
    }

    /// A subscriber worker whose `function_id` reports every delivery.
    async fn subscriber(
        &self,
        function_id: &str,
    ) -> (IIIClient, mpsc::UnboundedReceiver<(Value, Option<Value>)>) {
        self.engine.subscriber(function_id, WAIT).await
    }

    /// Bind `function_id` to job completions with `engine::register_trigger`
    /// and wait until ide holds the binding (it logs each one it takes; the
    /// engine answers the caller before the provider has it).
    async fn bind(&self, function_id: &str, config: Value, metadata: Option<Value>) -> String {
        let id = self
            .engine
            .register_trigger(JOB_FINISHED, function_id, config, metadata)
            .await;
        let held = self
            .ide
            .wait_for_log(&format!("trigger binding held: {id}"), WAIT)
            .await;
        assert!(
            held,
            "ide did not acknowledge binding {id}:\n{}",
            self.ide.logs()
        );
        id
    }

    async fn stop(mut self) {
        self.ide.signal_term();
        assert!(self.ide.wait_exit(WAIT).await.is_some(), "ide did not stop");
        self.engine.stop().await;
    }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<(Value, Option<Value>)>) -> (Value, Option<Value>) {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("a job-finished delivery")
        .expect("subscriber alive")
}

/// Nothing more is on its way to `function_id` (whose deliveries `rx`
/// receives): bind it to a fresh sentinel job, run that, and assert the
/// sentinel's completion is the next delivery. ide fires whatever it owes a
/// binding before (or while) the call that caused it returns, so anything
/// more would have been fired before the sentinel; the stand-in delivers in
/// order, so there it would arrive first. (An engine that reorders
/// deliveries can let such an extra one arrive later; it is caught there
/// only when it happens to come first.)
async fn assert_next_is_sentinel(
    w: &World,
    function_id: &str,
    rx: &mut mpsc::UnboundedReceiver<(Value, Option<Value>)>,
) {
    let job_id = format!("sentinel-{}", uuid::Uuid::new_v4());
    w.bind(
        function_id,
        json!({"job_id": job_id}),
        Some(json!({"sentinel": job_id})),
    )
    .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "true", "job_id": job_id}),
    )
    .await;
    let (event, metadata) = next(rx).await;
    assert_eq!(
        metadata,
        Some(json!({"sentinel": job_id})),
        "a delivery came before the sentinel: {event}"
    );
    assert_eq!(event["job_id"], job_id.as_str());
}

fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// There is no event for "this pid is gone"; poll /proc briefly.
async fn wait_gone(pid: i32) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if !pid_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Start a job that prints its grandchild's pid and waits on it; return
/// the job id and that pid (read back through shell::status).
async fn job_with_grandchild(w: &World) -> (String, i32) {
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sh", "args": ["-c", "sleep 300 & echo $!; wait"]}),
        )
        .await;
    let id = v["job_id"].as_str().expect("job_id").to_string();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = w.ok("shell::status", json!({"job_id": id})).await;
        if let Ok(pid) = s["job"]["stdout"].as_str().unwrap_or("").trim().parse() {
            return (id, pid);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no pid printed: {s}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn exec_round_trip_through_the_engine() {
    let w = start(|_| {}).await;
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "pwd; cat; echo $GREETING >&2"],
                   "stdin": "fed", "env": {"GREETING": "hi"}}),
        )
        .await;
    let cwd = w.dir.path().canonicalize().unwrap();
    assert_eq!(v["stdout"], format!("{}\nfed", cwd.display()));
    assert_eq!(v["stderr"], "hi\n");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["timed_out"], false);
    // S-codes are the top-level wire code
    let err = w
        .engine
        .call("shell::exec", json!({"command": ""}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    let err = w
        .engine
        .call(
            "shell::exec",
            json!({"command": "true", "env": {"LD_PRELOAD": "x"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    assert!(err.message.contains("LD_PRELOAD"));
    let err = w
        .engine
        .call("shell::exec", json!({"command": "sudo shutdown -h now"}))
        .await
        .unwrap_err();
    assert!(err.message.starts_with("command matches denylist: "));
    let err = w
        .engine
        .call("shell::status", json!({"job_id": "job-none"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "S211");
    // the registered trigger type carries its typed schemas
    let t = w
        .engine
        .trigger_type(JOB_FINISHED)
        .await
        .expect("trigger type");
    assert_eq!(
        t.trigger_request_format
            .as_ref()
            .map(|s| s["title"].clone()),
        Some(json!("JobFinishedConfig"))
    );
    assert_eq!(
        t.call_request_format.as_ref().map(|s| s["title"].clone()),
        Some(json!("JobFinishedEvent"))
    );
    w.stop().await;
}

#[tokio::test]
async fn a_binding_registered_before_the_job_receives_its_completion() {
    let w = start(|_| {}).await;
    let (_sub, mut rx) = w.subscriber("test::on-job").await;
    let job_id = format!("job-{}", uuid::Uuid::new_v4());
    w.bind(
        "test::on-job",
        json!({"job_id": job_id}),
        Some(json!({"wake": "session-1"})),
    )
    .await;
    let v = w
        .ok(
            "shell::exec_bg",
            json!({"command": "sh -c 'echo out; exit 7'", "job_id": job_id}),
        )
        .await;
    assert_eq!(v["job_id"], job_id.as_str());
    let (event, metadata) = next(&mut rx).await;
    assert_eq!(event["job_id"], job_id.as_str());
    assert_eq!(event["argv"], json!(["sh", "-c", "echo out; exit 7"]));
    assert_eq!(event["status"], "finished");
    assert_eq!(event["exit_code"], 7);
    // the engine stamps the firing worker's id on trigger events too
    assert!(event[support::engine::CALLER_FIELD].is_string(), "{event}");
    assert!(event.get("stdout").is_none());
    assert_eq!(metadata, Some(json!({"wake": "session-1"})));
    // once
    assert_next_is_sentinel(&w, "test::on-job", &mut rx).await;
    let s = w.ok("shell::status", json!({"job_id": job_id})).await;
    assert_eq!(s["job"]["stdout"], "out\n");
    // the id is taken while retained
    let err = w
        .engine
        .call(
            "shell::exec_bg",
            json!({"command": "true", "job_id": job_id}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S213");
    w.stop().await;
}

#[tokio::test]
async fn a_binding_registered_after_completion_is_replayed_and_unfiltered_ones_are_not() {
    let w = start(|_| {}).await;
    let (_sub, mut all) = w.subscriber("test::all-jobs").await;
    w.bind("test::all-jobs", json!({}), None).await;
    let v = w.ok("shell::exec_bg", json!({"command": "true"})).await;
    let job_id = v["job_id"].as_str().unwrap().to_string();
    // the unfiltered binding hears the completion: the job is now terminal
    let (event, _) = next(&mut all).await;
    assert_eq!(event["job_id"], job_id.as_str());

    let (_late_sub, mut late) = w.subscriber("test::late").await;
    w.bind("test::late", json!({"job_id": job_id}), None).await;
    let (event, _) = next(&mut late).await;
    assert_eq!(event["job_id"], job_id.as_str());
    assert_eq!(event["status"], "finished");
    // replayed once
    assert_next_is_sentinel(&w, "test::late", &mut late).await;
    // the sentinel's completion went to the unfiltered binding too
    let (event, _) = next(&mut all).await;
    assert!(
        event["job_id"].as_str().unwrap().starts_with("sentinel-"),
        "{event}"
    );

    // a second unfiltered binding gets future completions only: its first
    // delivery is the next job's, not a replay
    let (_fut_sub, mut future) = w.subscriber("test::future").await;
    w.bind("test::future", json!({}), None).await;
    let v = w
        .ok("shell::exec_bg", json!({"command": "sh -c 'exit 2'"}))
        .await;
    let (event, _) = next(&mut future).await;
    assert_eq!(event["job_id"], v["job_id"]);
    assert_eq!(event["exit_code"], 2);
    let (event, _) = next(&mut all).await;
    assert_eq!(event["job_id"], v["job_id"]);
    // and the filtered binding did not hear that job
    assert_next_is_sentinel(&w, "test::late", &mut late).await;
    w.stop().await;
}

#[tokio::test]
async fn kill_takes_the_grandchild_with_it() {
    let w = start(|_| {}).await;
    let (_sub, mut rx) = w.subscriber("test::on-kill").await;
    w.bind("test::on-kill", json!({}), None).await;
    let (id, grandchild) = job_with_grandchild(&w).await;
    assert!(pid_alive(grandchild));
    let k = w.ok("shell::kill", json!({"job_id": id})).await;
    assert_eq!(k["killed"], true);
    assert_eq!(k["status"], "killed");
    assert!(
        wait_gone(grandchild).await,
        "grandchild {grandchild} survived the kill"
    );
    let (event, _) = next(&mut rx).await;
    assert_eq!(event["status"], "killed");
    assert_eq!(event["job_id"], id.as_str());
    let l = w.ok("shell::list", json!({})).await;
    assert_eq!(l["count"], 1);
    assert_eq!(l["jobs"][0]["status"], "killed");
    let s = w.ok("shell::status", json!({"job_id": id})).await;
    assert_eq!(s["job"]["timed_out"], false);
    assert!(
        s["job"]["reason"].as_str().unwrap().contains("shell::kill"),
        "{s}"
    );
    w.stop().await;
}

#[tokio::test]
async fn a_job_killed_by_max_bg_timeout_says_why() {
    let w = start(|c| c.max_bg_timeout_ms = 300).await;
    let (_sub, mut rx) = w.subscriber("test::capped").await;
    w.bind("test::capped", json!({"job_id": "capped-1"}), None)
        .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "sleep 30", "job_id": "capped-1"}),
    )
    .await;
    let (event, _) = next(&mut rx).await;
    assert_eq!(event["status"], "killed");
    let s = w.ok("shell::status", json!({"job_id": "capped-1"})).await;
    let job = &s["job"];
    assert_eq!(job["status"], "killed");
    assert_eq!(job["timed_out"], true, "{s}");
    assert!(
        job["reason"]
            .as_str()
            .unwrap()
            .contains("max_bg_timeout_ms (300 ms)"),
        "{s}"
    );
    assert!(
        job["stderr"]
            .as_str()
            .unwrap()
            .contains("killed: exceeded max_bg_timeout_ms (300 ms), the hard cap"),
        "{s}"
    );
    w.stop().await;
}

/// Callers written against the original worker match substrings of its
/// messages; each phrase is kept inside the richer message.
#[tokio::test]
async fn messages_keep_the_original_phrases() {
    let w = start(|c| c.max_concurrent_jobs = 1).await;
    for (payload, phrases) in [
        (json!({"command": 5}), vec!["must be a string", "'command'"]),
        (json!({}), vec!["'command'"]),
        (
            json!({"command": "ls", "args": "-la"}),
            vec!["must be an array of strings", "'args'"],
        ),
        (
            json!({"command": "ls", "args": ["-l", 2]}),
            vec![
                "must be an array of strings",
                "must be a string",
                "'args[1]'",
            ],
        ),
        (json!({"command": "  "}), vec!["empty command"]),
        (json!({"command": "echo \"open"}), vec!["parse command"]),
    ] {
        for id in ["shell::exec", "shell::exec_bg"] {
            let err = w.engine.call(id, payload.clone()).await.unwrap_err();
            assert_eq!(err.code, "S210", "{id} {payload}: {err:?}");
            for phrase in &phrases {
                assert!(
                    err.message.contains(phrase),
                    "{id} {payload}: {phrase:?} not in {:?}",
                    err.message
                );
            }
        }
    }
    // a missing program keeps the OS's words
    let err = w
        .engine
        .call("shell::exec", json!({"command": "no-such-program-ide-e2e"}))
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("No such file or directory (os error 2)"),
        "{err:?}"
    );
    w.ok("shell::exec_bg", json!({"command": "sleep 30"})).await;
    let err = w
        .engine
        .call("shell::exec_bg", json!({"command": "sleep 30"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("max concurrent jobs"), "{err:?}");
    w.stop().await;
}

/// Stored configs carry a relative `working_dir`: it resolves against the
/// worker's cwd, and both reports show the resolved directory.
#[tokio::test]
async fn a_relative_working_dir_resolves_against_the_worker_cwd() {
    let dir = tempfile::TempDir::new().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir(cwd.join("data")).unwrap();
    std::fs::write(
        cwd.join("config.yaml"),
        "working_dir: ./data\nfs:\n  allow_unjailed: true\n",
    )
    .unwrap();
    let engine = Engine::start().await;
    let ide = IdeProcess::spawn_in(
        Some(&cwd),
        &["--url", &engine.url(), "--config", "config.yaml"],
        &[],
    );
    assert!(
        engine
            .wait_for_function("shell::exec", WAIT)
            .await
            .is_some(),
        "ide did not boot:\n{}",
        ide.logs()
    );
    let want = cwd.join("data").display().to_string();
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["working_dir"], want.as_str());
    let status = engine
        .call("shell::config-status", json!({}))
        .await
        .unwrap();
    assert_eq!(status["working_dir"], want.as_str());
    let v = engine
        .call("shell::exec", json!({"command": "pwd"}))
        .await
        .unwrap();
    assert_eq!(v["stdout"], format!("{want}\n"));
    drop(ide);
    engine.stop().await;
}

#[tokio::test]
async fn worker_shutdown_kills_running_jobs() {
    let w = start(|_| {}).await;
    let (_id, grandchild) = job_with_grandchild(&w).await;
    let (_id2, grandchild2) = job_with_grandchild(&w).await;
    w.stop().await;
    assert!(wait_gone(grandchild).await && wait_gone(grandchild2).await);
}

/// A stand-in for the iii-sandbox worker: answers `sandbox::exec`.
fn fake_sandbox(url: &str, calls: mpsc::UnboundedSender<Value>) -> IIIClient {
    let client = connect_worker(url, &unique_name("sandbox"));
    client.register_function(
        "sandbox::exec",
        RegisterFunction::new_async(move |input: Value| {
            let calls = calls.clone();
            async move {
                let _ = calls.send(input.clone());
                if input["cmd"] == "missing-vm" {
                    return Err(SdkError::Remote {
                        code: "S002".to_string(),
                        message: "sandbox not found; call sandbox::create first".to_string(),
                        stacktrace: None,
                    });
                }
                Ok::<Value, SdkError>(json!({
                    "stdout": format!("vm ran {}\n", input["cmd"].as_str().unwrap_or("?")),
                    "stderr": "",
                    "exit_code": 0,
                    "timed_out": false,
                    "duration_ms": 12,
                    "success": true
                }))
            }
        }),
    );
    client
}

#[tokio::test]
async fn sandbox_targets_are_forwarded_to_the_sandbox_worker() {
    let w = start(|_| {}).await;
    let (tx, mut calls) = mpsc::unbounded_channel();
    let _sandbox = fake_sandbox(&w.engine.url(), tx);
    assert!(
        w.engine
            .wait_for_function("sandbox::exec", WAIT)
            .await
            .is_some()
    );
    let target = json!({"kind": "sandbox", "sandbox_id": SANDBOX});
    let v = w
        .ok(
            "shell::exec",
            json!({"command": "python3", "args": ["-c", "print(4)"], "target": target, "timeout_ms": 5000}),
        )
        .await;
    assert_eq!(v["stdout"], "vm ran python3\n");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["duration_ms"], 12);
    let sent = calls.recv().await.expect("sandbox::exec call");
    assert_eq!(sent["sandbox_id"], SANDBOX);
    assert_eq!(sent["cmd"], "python3");
    assert_eq!(sent["args"], json!(["-c", "print(4)"]));
    assert_eq!(sent["timeout_ms"], 5000);

    // the sandbox worker's codes pass through
    let err = w
        .engine
        .call(
            "shell::exec",
            json!({"command": "missing-vm", "target": target}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S002");
    // host-only fields are refused before anything is sent
    let err = w
        .engine
        .call(
            "shell::exec",
            json!({"command": "ls", "cwd": "/tmp", "target": target}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");

    // a background sandbox job completes through the same worker
    let (_sub, mut rx) = w.subscriber("test::vm-job").await;
    w.bind("test::vm-job", json!({"job_id": "vm-job-1"}), None)
        .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "node main.js", "target": target, "job_id": "vm-job-1"}),
    )
    .await;
    let (event, _) = next(&mut rx).await;
    assert_eq!(event["status"], "finished");
    assert_eq!(event["argv"], json!(["node", "main.js"]));
    let s = w.ok("shell::status", json!({"job_id": "vm-job-1"})).await;
    assert_eq!(s["job"]["stdout"], "vm ran node\n");
    w.stop().await;
}

#[tokio::test]
async fn sandbox_targets_are_refused_when_disabled() {
    let w = start(|c| c.sandbox.enabled = false).await;
    let err = w
        .engine
        .call(
            "shell::exec",
            json!({"command": "ls", "target": {"kind": "sandbox", "sandbox_id": SANDBOX}}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "S210");
    assert!(err.message.contains("sandbox.enabled"));
    w.stop().await;
}

#[tokio::test]
async fn status_shows_the_tail_of_a_finished_jobs_long_output() {
    let w = start(|_| {}).await;
    let (_client, mut rx) = w.subscriber("test::on-long-job").await;
    let job_id = format!("job-{}", uuid::Uuid::new_v4());
    w.bind("test::on-long-job", json!({"job_id": job_id}), None)
        .await;
    w.ok(
        "shell::exec_bg",
        json!({"command": "sh", "job_id": job_id, "args": ["-c",
            "i=0; while [ $i -lt 20000 ]; do echo \"test_$i ... ok\"; i=$((i+1)); done; echo '20000 passed'"]}),
    )
    .await;
    let (event, _) = next(&mut rx).await;
    assert_eq!(event["status"], "finished");
    let s = w
        .ok(
            "shell::status",
            json!({"job_id": job_id, "max_output_bytes": 13, "keep": "tail"}),
        )
        .await;
    assert_eq!(s["job"]["stdout"], "20000 passed\n", "{s}");
    assert_eq!(s["job"]["stdout_truncated"], true);
    let total: u64 = (0..20000u64)
        .map(|i| format!("test_{i} ... ok\n").len() as u64)
        .sum::<u64>()
        + 13;
    assert_eq!(s["job"]["stdout_dropped_bytes"], total - 13);
    let s = w
        .ok(
            "shell::status",
            json!({"job_id": job_id, "max_output_bytes": 40, "keep": "both"}),
        )
        .await;
    let out = s["job"]["stdout"].as_str().unwrap();
    assert!(out.starts_with("test_0 ... ok\n"), "{out:?}");
    assert!(out.ends_with("20000 passed\n"), "{out:?}");
    assert!(
        out.contains(&format!("\n[… {} bytes cut …]\n", total - 40)),
        "{out:?}"
    );
    // without keep: the head, as before
    let s = w.ok("shell::status", json!({"job_id": job_id})).await;
    assert!(
        s["job"]["stdout"]
            .as_str()
            .unwrap()
            .starts_with("test_0 ... ok\n")
    );
    assert_eq!(s["job"]["stdout_dropped_bytes"], 0);
    w.stop().await;
}

/// A 40 s command with every default (the worker's default_timeout_ms of
/// 30 s, no `timeout_ms`, an SDK client's default 30 s call timeout) gets
/// ide's own answer — the output so far and the next call — not the SDK's
/// generic timeout that carries nothing.
#[tokio::test]
async fn a_long_command_with_defaults_gets_ides_answer_before_the_sdk_gives_up() {
    let w = start(|_| {}).await;
    assert_eq!(Config::zero_config().default_timeout_ms, 30_000);
    let info = w.ok("coder::info", json!({})).await;
    assert_eq!(info["exec_limits"]["answer_within_ms"], 25_000, "{info}");
    let client = connect_worker(&w.engine.url(), &unique_name("agent"));
    let answer = client
        // no timeout_ms: the SDK's own default call timeout
        .trigger(iii_sdk::protocol::TriggerRequest::new(
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "echo started; sleep 40; echo late"]}),
        ))
        .await;
    let v = match answer {
        Ok(v) => v,
        Err(e) => panic!("the caller lost ide's answer: {e:?}\n{}", w.ide.logs()),
    };
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["stdout"], "started\n", "the output so far is kept: {v}");
    let note = v["note"].as_str().unwrap_or_default();
    assert!(note.contains("on_timeout: \"background\""), "{v}");
    assert!(note.contains("shell::exec_bg"), "{v}");
    client.shutdown_async().await;
    w.stop().await;
}
