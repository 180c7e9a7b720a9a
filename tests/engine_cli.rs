//! The real engine's own CLI (`iii trigger`) against `ide`, as a user runs
//! it. Needs the real engine: without `IDE_TEST_ENGINE` there is no `iii`
//! binary to run, and the tests say so and pass.

mod support;

use support::output_text as text;

use std::process::Output;
use std::time::Duration;

use serde_json::Value;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const WAIT: Duration = Duration::from_secs(20);

/// `ide` serving on a real engine. These tests are ignored unless asked for
/// (`-- --ignored`), and asked for without `IDE_TEST_ENGINE` they fail.
async fn world() -> (Engine, IdeProcess, tempfile::TempDir) {
    assert!(
        support::harness::real_engine_binary().is_some(),
        "the iii CLI tests need the real engine: set IDE_TEST_ENGINE to its binary"
    );
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let seed = dir.path().join("seed.yaml");
    std::fs::write(&seed, "fs:\n  allow_unjailed: true\n").unwrap();
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    );
    assert!(
        engine.wait_for_ide(WAIT).await,
        "ide did not register:\n{}",
        ide.logs()
    );
    (engine, ide, dir)
}

/// Run the engine binary's CLI against `engine`.
async fn iii(engine: &Engine, args: &[&str]) -> Output {
    let real = engine.real().expect("a real engine");
    let port = engine.port().to_string();
    let mut command = tokio::process::Command::new(real.binary());
    command
        .args(args)
        .args(["--address", "127.0.0.1", "--port", &port])
        .env("HOME", real.data().path())
        .env("III_TELEMETRY_ENABLED", "false")
        .kill_on_drop(true);
    tokio::time::timeout(WAIT, command.output())
        .await
        .expect("the iii CLI did not finish")
        .expect("the iii CLI runs")
}

#[tokio::test]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test engine_cli -- --ignored"]
async fn iii_trigger_calls_coder_info() {
    let (engine, _ide, _dir) = world().await;
    let o = iii(&engine, &["trigger", "coder::info"]).await;
    assert!(o.status.success(), "{}", text(&o));
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["mode"], "unjailed");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    // an error is the {code, message} envelope on stderr, exit 1
    let o = iii(&engine, &["trigger", "shell::exec", "command="]).await;
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("S210"), "{}", text(&o));
    assert!(stderr.contains("empty command"), "{}", text(&o));
    engine.stop().await;
}

#[tokio::test]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test engine_cli -- --ignored"]
async fn iii_trigger_help_renders_literal_tokens_of_descriptions() {
    let (engine, _ide, _dir) = world().await;
    let o = iii(&engine, &["trigger", "--help", "shell::exec"]).await;
    assert!(o.status.success(), "{}", text(&o));
    let help = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    // the CLI renders descriptions as markdown: unquoted `*` would vanish
    for literal in ["shell::fs::*", "LD_*", "DYLD_*"] {
        assert!(help.contains(literal), "{literal:?} lost in:\n{help}");
    }
    engine.stop().await;
}

/// The shipped agent-safe deployment (`deploy/engine-agents.yaml`) on the
/// real engine: a client on the agent listener calls ide's agent
/// functions, and is refused (FORBIDDEN) what only the operator or the
/// console may call — the policy's configuration, ide's internal
/// functions, the engine's own functions.
#[tokio::test]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test engine_cli -- --ignored"]
async fn an_agent_on_the_rbac_listener_reaches_the_agent_functions_and_nothing_else() {
    use iii_sdk::protocol::TriggerRequest;
    use serde_json::json;
    use support::real_engine::{DataDir, RealEngine, free_port};
    let bin = support::harness::real_engine_binary()
        .expect("the RBAC test needs the real engine: set IDE_TEST_ENGINE to its binary");
    let shipped: Value = serde_norway::from_str(include_str!("../deploy/engine-agents.yaml"))
        .expect("the shipped configuration parses");
    let rbac = shipped["workers"][1]["config"]["rbac"].clone();
    assert!(rbac["expose_functions"].is_array(), "{shipped}");
    let agent_port = free_port();
    // JSON is YAML: the agent listener as shipped, on a port of the test's
    let listener = json!({"host": "127.0.0.1", "port": agent_port, "rbac": rbac});
    let engine = RealEngine::start_with_workers(&bin, 0, DataDir::new(), move |_| {
        format!("  - name: iii-worker-manager\n    config: {listener}\n")
    })
    .await;
    let engine = Engine::Real(engine);
    let dir = tempfile::TempDir::new().unwrap();
    let seed = dir.path().join("seed.yaml");
    std::fs::write(&seed, "fs:\n  allow_unjailed: true\n").unwrap();
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    );
    assert!(
        engine.wait_for_ide(WAIT).await,
        "ide did not register:\n{}",
        ide.logs()
    );
    let agent = support::engine::connect_worker(
        &format!("ws://127.0.0.1:{agent_port}"),
        &support::engine::unique_name("agent"),
    );
    let call = |id: &str, payload: Value| {
        let mut req = TriggerRequest::new(id, payload);
        req.timeout_ms = Some(WAIT.as_millis() as u64);
        agent.trigger(req)
    };
    let info = call("coder::info", json!({})).await.expect("coder::info");
    assert_eq!(info["mode"], "unjailed");
    let listed = call("shell::pty::sessions", json!({})).await;
    assert!(listed.is_ok(), "{listed:?}");
    for (id, payload) in [
        ("configuration::set", json!({"id": "ide", "value": {}})),
        ("configuration::get", json!({"id": "ide"})),
        ("shell::on-config-change", json!({})),
        ("shell::config-status", json!({})),
        ("shell::pty::open", json!({})),
        ("engine::functions::list", json!({})),
    ] {
        match call(id, payload).await {
            Err(iii_sdk::Error::Remote { code, message, .. }) => {
                assert_eq!(code, "FORBIDDEN", "{id}: {message}")
            }
            other => panic!("{id} was not refused: {other:?}"),
        }
    }
    // the trusted listener still reaches everything
    assert!(
        engine
            .call("configuration::get", json!({"id": "ide"}))
            .await
            .is_ok()
    );
    agent.shutdown_async().await;
    engine.stop().await;
}
