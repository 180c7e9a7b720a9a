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
