//! End to end: the real `ide` binary against the engine (the loopback
//! stand-in, or a real iii engine with `IDE_TEST_ENGINE`) — boot,
//! registration of exactly the catalog, configuration sync (seed once, carry
//! over `shell`, hot reload applied/rejected), every fail-closed boot, the
//! unreachable-engine error, reconnection, and clean shutdown.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use support::harness::{Engine, Store, real_engine_binary};
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(15);

fn catalog() -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ide"))
        .arg("functions")
        .output()
        .expect("ide functions");
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("catalog JSON")
}

fn seed_file(dir: &tempfile::TempDir, yaml: &str) -> String {
    let p = dir.path().join("seed.yaml");
    std::fs::write(&p, yaml).unwrap();
    p.display().to_string()
}

/// A temp dir holding two directories `a` and `b` usable as jail roots.
fn two_roots() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::TempDir::new().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    (dir, a, b)
}

fn spawn(engine: &Engine, config: &str) -> IdeProcess {
    IdeProcess::spawn(&["--url", &engine.url(), "--config", config], &[])
}

/// Boot `ide` and wait until it serves.
async fn boot(engine: &Engine, config: &str) -> IdeProcess {
    let ide = spawn(engine, config);
    assert!(
        ide.wait_for_log("ide serving", T).await,
        "ide did not start:\n{}",
        ide.logs()
    );
    assert!(engine.wait_for_function("coder::info", T).await.is_some());
    // boot takes the value `configuration::register` answers with: no
    // second read that can miss it, no 2 s retry
    assert!(
        !ide.logs()
            .contains("cannot confirm the authoritative configuration"),
        "boot needed a retry:\n{}",
        ide.logs()
    );
    ide
}

fn canon(p: &std::path::Path) -> String {
    p.canonicalize().unwrap().display().to_string()
}

#[tokio::test]
async fn boot_registers_exactly_the_catalog() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let missing = dir.path().join("no-such-seed.yaml");
    let _ide = boot(&engine, missing.to_str().unwrap()).await;
    let want = catalog();
    let want: BTreeMap<String, &Value> = want["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_str().unwrap().to_string(), f))
        .collect();
    let n = want.len();
    assert!(
        engine.wait_for_functions(|fs| fs.len() >= n, T).await,
        "not every function registered"
    );
    let got = engine.functions().await;
    let got_ids: Vec<&str> = got.iter().map(|f| f.id.as_str()).collect();
    let want_ids: Vec<&str> = want.keys().map(String::as_str).collect();
    assert_eq!(got_ids, want_ids);
    for f in &got {
        let w = want[&f.id];
        assert_eq!(
            f.description.as_deref(),
            w["description"].as_str(),
            "{}",
            f.id
        );
        assert_eq!(
            f.request_format.as_ref(),
            Some(&w["request_schema"]),
            "{}",
            f.id
        );
        assert_eq!(
            f.response_format.as_ref(),
            Some(&w["response_schema"]),
            "{}",
            f.id
        );
        assert_eq!(f.metadata.as_ref(), Some(&w["metadata"]), "{}", f.id);
        assert_eq!(f.worker_name.as_deref(), Some("ide"));
    }
    // the zero-config default was seeded on first registration
    let stored = engine.stored_value("ide").await.expect("stored config");
    assert_eq!(stored["fs"]["allow_unjailed"], true);
    assert_eq!(stored["max_timeout_ms"], 120_000);
}

#[tokio::test]
async fn coder_info_round_trip_and_the_caller_field() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let seed = seed_file(&dir, &format!("fs:\n  host_roots: [{}]\n", root.display()));
    let _ide = boot(&engine, &seed).await;
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["mode"], "jailed");
    assert_eq!(info["primary_root"], canon(&root));
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    // a typo is refused with the field named, not silently ignored
    let err = engine
        .call("coder::info", json!({"verbose": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
    assert!(err.message.contains("verbose"));
    let status = engine
        .call("shell::config-status", json!({}))
        .await
        .unwrap();
    assert_eq!(status["last_outcome"], "applied");
    assert_eq!(status["rejected_reloads"], 0);
}

#[tokio::test]
async fn hot_reload_applied_then_rejected_keeps_last_good() {
    let engine = Engine::start().await;
    let (dir, a, b) = two_roots();
    let seed = seed_file(&dir, &format!("fs:\n  host_roots: [{}]\n", a.display()));
    let ide = boot(&engine, &seed).await;

    let mark = ide.log_len();
    engine
        .call(
            "configuration::set",
            json!({"id": "ide", "value": {"fs": {"host_roots": [b]}}}),
        )
        .await
        .unwrap();
    assert!(
        ide.wait_for_log_from(mark, "configuration reload applied", T)
            .await,
        "{}",
        ide.logs()
    );
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["primary_root"], canon(&b));

    // a value the store takes (it passes the schema) but the worker cannot
    // enforce: a hand edit of the store, refused by ide, last good kept
    let mark = ide.log_len();
    engine
        .hand_edit(
            "ide",
            json!({"fs": {"host_roots": ["/definitely/not/here"]}}),
        )
        .unwrap();
    assert!(
        ide.wait_for_log_from(mark, "configuration reload rejected", T)
            .await,
        "{}",
        ide.logs()
    );
    let status = engine
        .call("shell::config-status", json!({}))
        .await
        .unwrap();
    assert_eq!(status["last_outcome"], "rejected");
    assert_eq!(status["rejected_reloads"], 1);
    assert!(
        status["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot be resolved"),
        "{status}"
    );
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["primary_root"], canon(&b), "last good runtime kept");
    let mut rejected = 1;

    // values the real store refuses to take (they fail the schema) reach ide
    // only through the stand-in: a removed key, and a nulled value, which is
    // rejected too, never replaced by a default
    if let Some(lb) = engine.loopback() {
        for bad in [
            json!({"allowlist": [], "fs": {"allow_unjailed": true}}),
            Value::Null,
        ] {
            let mark = ide.log_len();
            lb.hand_edit_unchecked("ide", bad);
            assert!(
                ide.wait_for_log_from(mark, "configuration reload rejected", T)
                    .await
            );
            rejected += 1;
        }
        let status = engine
            .call("shell::config-status", json!({}))
            .await
            .unwrap();
        assert_eq!(status["rejected_reloads"], rejected);
    }

    // widening the jail is applied and logged as a privilege change
    let mark = ide.log_len();
    engine
        .call(
            "configuration::set",
            json!({"id": "ide", "value": {"fs": {"allow_unjailed": true}}}),
        )
        .await
        .unwrap();
    assert!(ide.wait_for_log_from(mark, "PRIVILEGE CHANGE", T).await);
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["mode"], "unjailed");
    let status = engine
        .call("shell::config-status", json!({}))
        .await
        .unwrap();
    assert_eq!(status["last_outcome"], "applied");
    assert_eq!(
        status["rejected_reloads"], rejected,
        "the count is since boot, never reset"
    );
}

#[tokio::test]
async fn the_seed_is_used_on_first_registration_only() {
    let engine = Engine::start().await;
    let (dir, a, b) = two_roots();
    let seed_a = seed_file(&dir, &format!("fs:\n  host_roots: [{}]\n", a.display()));
    let mut ide = boot(&engine, &seed_a).await;
    ide.signal_term();
    assert!(ide.wait_exit(T).await.is_some_and(|s| s.success()));
    assert!(engine.wait_for_worker_gone("ide", T).await);
    let seed_b = dir.path().join("b.yaml");
    std::fs::write(&seed_b, format!("fs:\n  host_roots: [{}]\n", b.display())).unwrap();
    let _ide = boot(&engine, seed_b.to_str().unwrap()).await;
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(
        info["primary_root"],
        canon(&a),
        "the stored value wins over a new seed"
    );
}

#[tokio::test]
async fn a_stored_shell_value_is_carried_over_once() {
    let store = Store::new();
    let dir = tempfile::TempDir::new().unwrap();
    let legacy_root = dir.path().join("legacy");
    std::fs::create_dir(&legacy_root).unwrap();
    store.preload("shell", json!({"fs": {"host_roots": [legacy_root]}}));
    // Any free port, taken by the engine itself: no restart here needs it
    // again, and a port picked first can be taken by a parallel test.
    let engine = Engine::start_with(0, &store).await;
    let seed = seed_file(&dir, "fs:\n  allow_unjailed: true\n");
    let mut ide = boot(&engine, &seed).await;
    assert!(
        ide.wait_for_log("carrying the stored 'shell' configuration", T)
            .await
    );
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["primary_root"], canon(&legacy_root));
    assert_eq!(
        engine.stored_value("ide").await.unwrap()["fs"]["host_roots"][0],
        json!(legacy_root)
    );
    ide.signal_term();
    assert!(ide.wait_exit(T).await.is_some());
    assert!(engine.wait_for_worker_gone("ide", T).await);
    // a later change of the legacy value is not carried over again
    store.preload("shell", json!({"fs": {"allow_unjailed": true}}));
    let ide2 = boot(&engine, &seed).await;
    assert!(!ide2.logs().contains("carrying the stored 'shell'"));
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["mode"], "jailed");
}

/// A loopback port kept bound but not listening: a connection to it is
/// refused (nobody listens), and while this socket holds it no ephemeral
/// bind or connect of any process can take it. Bound with `SO_REUSEADDR`,
/// as the engines bind theirs, so an engine started on the port later can
/// bind it and listen (the kernel lets reuse sockets share a port with one
/// that does not listen); drop it once the engine listens.
fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("a loopback port");
    let port = socket.local_addr().expect("its address").port();
    (socket, port)
}

/// Boot must fail closed: exit non-zero, say why, register nothing.
async fn assert_fails_closed(engine: &Engine, config: &str, needle: &str) {
    let mut ide = spawn(engine, config);
    let status = ide.wait_exit(T).await.expect("ide should exit");
    assert!(!status.success(), "ide must exit non-zero");
    assert!(
        ide.logs().contains(needle),
        "expected {needle:?} in:\n{}",
        ide.logs()
    );
    assert!(
        engine.function("coder::info").await.is_none(),
        "no function may be registered"
    );
}

#[tokio::test]
async fn a_seed_file_that_does_not_parse_aborts_boot() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let seed = seed_file(&dir, "inherit_env: true\nfs:\n  allow_unjailed: true\n");
    assert_fails_closed(&engine, &seed, "config keys removed in 0.7.0").await;
    let seed = seed_file(&dir, "fs: [not, a, map\n");
    assert_fails_closed(&engine, &seed, "does not parse").await;
}

#[tokio::test]
async fn stored_values_that_cannot_be_enforced_fail_closed() {
    let dir = tempfile::TempDir::new().unwrap();
    let seed = seed_file(&dir, "fs:\n  allow_unjailed: true\n");
    for (stored, needle) in [
        (Value::Null, "null"),
        (json!({}), "refusing to start unjailed"),
        (
            json!({"allowlist": [], "fs": {"allow_unjailed": true}}),
            "removed in 0.8.0",
        ),
        (
            json!({"fs": {"host_root": "/srv"}}),
            "fs.host_root -> fs.host_roots",
        ),
        (
            json!({"fs": {"host_roots": ["/definitely/not/here"]}}),
            "cannot be resolved",
        ),
    ] {
        let store = Store::new();
        store.preload("ide", stored.clone());
        let engine = Engine::start_with(0, &store).await;
        assert_fails_closed(&engine, &seed, needle).await;
        engine.stop().await;
    }
}

/// Stand-in only: a real engine always carries its configuration worker, so
/// its absence cannot be staged there (see `tests/support/ENGINE-FACTS.md`).
#[tokio::test]
async fn no_functions_until_the_configuration_worker_answers() {
    if real_engine_binary().is_some() {
        eprintln!("stand-in only: a real engine cannot run without its configuration worker");
        return;
    }
    let engine = Engine::start().await;
    let lb = engine.loopback().expect("the stand-in");
    lb.set_configuration_available(false);
    let dir = tempfile::TempDir::new().unwrap();
    let seed = seed_file(&dir, "fs:\n  allow_unjailed: true\n");
    let ide = spawn(&engine, &seed);
    assert!(
        ide.wait_for_log("cannot confirm the authoritative configuration", T)
            .await,
        "{}",
        ide.logs()
    );
    assert!(engine.function("coder::info").await.is_none());
    lb.set_configuration_available(true);
    assert!(
        ide.wait_for_log("ide serving", Duration::from_secs(20))
            .await,
        "{}",
        ide.logs()
    );
    assert!(engine.wait_for_function("coder::info", T).await.is_some());
}

#[tokio::test]
async fn an_unreachable_engine_logs_one_error_and_recovery_is_automatic() {
    // the port stays this test's from the unreachable phase to the engine
    let (hold, port) = refusing_port();
    let url = format!("ws://127.0.0.1:{port}");
    let dir = tempfile::TempDir::new().unwrap();
    let seed = seed_file(&dir, "fs:\n  allow_unjailed: true\n");
    let ide = IdeProcess::spawn(&["--url", &url, "--config", &seed], &[]);
    let needle = format!("engine unreachable at 127.0.0.1:{port}");
    assert!(ide.wait_for_log(&needle, T).await, "{}", ide.logs());
    assert!(ide.logs().contains("III_URL"));
    let engine = Engine::start_with(port, &Store::new()).await;
    drop(hold);
    assert!(
        ide.wait_for_log("ide serving", Duration::from_secs(20))
            .await,
        "{}",
        ide.logs()
    );
    assert!(engine.wait_for_function("coder::info", T).await.is_some());
    assert_eq!(
        ide.logs().matches("engine unreachable").count(),
        1,
        "exactly one ERROR line"
    );
}

#[tokio::test]
async fn the_worker_reconnects_after_an_engine_restart() {
    let store = Store::new();
    // The engine takes any free port itself; the restart reuses it.
    let engine = Engine::start_with(0, &store).await;
    let port = engine.port();
    let dir = tempfile::TempDir::new().unwrap();
    let seed = seed_file(&dir, "fs:\n  allow_unjailed: true\n");
    let ide = boot(&engine, &seed).await;
    engine.stop().await;
    let mark = ide.log_len();
    let engine = Engine::start_with(port, &store).await;
    assert!(
        engine
            .wait_for_function("coder::info", Duration::from_secs(20))
            .await
            .is_some()
    );
    assert!(
        ide.wait_for_log_from(mark, "configuration re-confirmed", T)
            .await,
        "{}",
        ide.logs()
    );
    let info = engine.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["mode"], "unjailed");
    // the schema was registered again, so the store accepts new values and
    // the change reaches ide through the re-bound trigger
    let mark = ide.log_len();
    engine
        .call(
            "configuration::set",
            json!({"id": "ide", "value": {"fs": {"allow_unjailed": true}, "max_timeout_ms": 5000}}),
        )
        .await
        .unwrap();
    assert!(
        ide.wait_for_log_from(mark, "configuration reload applied", T)
            .await,
        "{}",
        ide.logs()
    );
}

#[tokio::test]
async fn sigterm_shuts_down_cleanly() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let seed = seed_file(&dir, "fs:\n  allow_unjailed: true\n");
    let mut ide = boot(&engine, &seed).await;
    ide.signal_term();
    let status = ide.wait_exit(T).await.expect("exit");
    assert!(status.success(), "{}", ide.logs());
    assert!(ide.logs().contains("ide stopped"));
    assert!(engine.wait_for_worker_gone("ide", T).await);
}
