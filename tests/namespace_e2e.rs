//! Two ide on one real engine, each in its own namespace (two hosts): every
//! call reaches the one it names, each trigger type binds in its own
//! namespace and sees its own host only, and reconfiguring one host's entry
//! leaves the other alone. ide takes its identity from the variables a
//! supervisor sets (`III_NAMESPACE`, `III_WORKER_NAME`, `III_CONFIG_NAME`).
//!
//! Needs the real engine (the loopback stand-in routes no namespaces):
//! without `IDE_TEST_ENGINE` each test says so and passes.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use iii_sdk::protocol::{RegisterTriggerInput, TriggerRequest};
use iii_sdk::runtime::WorkerMetadata;
use iii_sdk::{IIIClient, InitOptions, RegisterFunction, WorkerIdentityMode};
use serde_json::{Value, json};
use support::engine::unique_name;
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(30);

/// The real engine and a scratch directory. These tests are ignored unless
/// asked for (`-- --ignored`), and asked for without `IDE_TEST_ENGINE` they
/// fail: they test what only the real engine has.
async fn real_engine() -> (Engine, tempfile::TempDir) {
    assert!(
        support::harness::real_engine_binary().is_some(),
        "namespace e2e needs the real engine: set IDE_TEST_ENGINE to its binary"
    );
    (Engine::start().await, tempfile::TempDir::new().unwrap())
}

/// A test client registered in `namespace` (`None`: the engine's default).
fn client(engine: &Engine, namespace: Option<&str>) -> IIIClient {
    iii_sdk::register_worker(
        &engine.url(),
        InitOptions {
            metadata: Some(WorkerMetadata {
                name: unique_name("ns-e2e"),
                ..Default::default()
            }),
            identity: WorkerIdentityMode::Explicit,
            namespace: namespace.map(str::to_string),
            otel: Some(iii_helpers::observability::OtelConfig {
                enabled: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
}

async fn call(
    iii: &IIIClient,
    ns: &str,
    function_id: &str,
    payload: Value,
) -> Result<Value, String> {
    let mut req = TriggerRequest::new(function_id, payload);
    req.timeout_ms = Some(20_000);
    iii.trigger(req.namespace(ns))
        .await
        .map_err(|e| e.to_string())
}

/// Call until it answers (the worker may still be registering).
async fn eventually(iii: &IIIClient, ns: &str, function_id: &str, payload: Value) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        match call(iii, ns, function_id, payload.clone()).await {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => panic!("{function_id} in {ns}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

struct Host {
    ns: String,
    entry: String,
    root: PathBuf,
    ide: IdeProcess,
}

fn host(engine: &Engine, dir: &Path, label: &str) -> Host {
    let ns = unique_name(&format!("host-{label}"));
    let entry = format!("{ns}-ide");
    let (root, ide) = serve_in(engine, dir, &ns, &format!("ide-{label}"), &entry);
    Host {
        ns,
        entry,
        root,
        ide,
    }
}

/// An ide serving namespace `ns` as worker `name` with configuration entry
/// `entry`, jailed to a fresh root of its own (returned, canonical).
fn serve_in(
    engine: &Engine,
    dir: &Path,
    ns: &str,
    name: &str,
    entry: &str,
) -> (PathBuf, IdeProcess) {
    let root = dir.join(format!("root-{name}"));
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let seed = dir.join(format!("seed-{name}.yaml"));
    std::fs::write(
        &seed,
        format!(
            "fs:\n  allow_unjailed: false\n  host_roots: [{}]\nturns:\n  data_dir: {}\n",
            root.display(),
            dir.join(format!("turns-{name}")).display()
        ),
    )
    .unwrap();
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[
            ("RUST_LOG", "info"),
            ("III_NAMESPACE", ns),
            ("III_WORKER_NAME", name),
            ("III_CONFIG_NAME", entry),
        ],
    );
    (root, ide)
}

/// A function in `iii`'s namespace that forwards what it is called with.
fn sink(iii: &IIIClient, function_id: &str) -> mpsc::UnboundedReceiver<Value> {
    let (tx, rx) = mpsc::unbounded_channel();
    iii.register_function(
        function_id,
        RegisterFunction::new_async(move |input: Value, _meta: Option<Value>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(input);
                Ok::<Value, iii_sdk::Error>(json!({}))
            }
        }),
    );
    rx
}

/// Bind `function_id` (in `iii`'s namespace) to `trigger_type`, found in
/// that namespace first, as a worker there would.
fn bind(
    iii: &IIIClient,
    trigger_type: &str,
    function_id: &str,
    config: Value,
) -> iii_sdk::trigger::Trigger {
    let mut input =
        RegisterTriggerInput::new(trigger_type.to_string(), function_id.to_string(), config);
    input.metadata = None;
    #[allow(deprecated)]
    iii.register_trigger(input)
        .unwrap_or_else(|e| panic!("bind {trigger_type}: {e}"))
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Value>, what: &str) -> Value {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}"))
        .expect("the sink is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test namespace_e2e -- --ignored"]
async fn two_hosts_on_one_engine_are_routed_bound_and_configured_by_namespace() {
    let (engine, dir) = real_engine().await;
    let a = host(&engine, dir.path(), "a");
    let b = host(&engine, dir.path(), "b");
    let outside = client(&engine, None);

    // Every call reaches the host it names, jailed to that host's root.
    let info_a = eventually(&outside, &a.ns, "coder::info", json!({})).await;
    let info_b = eventually(&outside, &b.ns, "coder::info", json!({})).await;
    assert_eq!(
        info_a["primary_root"],
        a.root.display().to_string(),
        "{info_a}"
    );
    assert_eq!(
        info_b["primary_root"],
        b.root.display().to_string(),
        "{info_b}"
    );
    std::fs::write(b.root.join("b.txt"), "bee\n").unwrap();
    let denied = call(
        &outside,
        &a.ns,
        "coder::read-file",
        json!({"path": b.root.join("b.txt").display().to_string()}),
    )
    .await;
    assert!(denied.is_err(), "host a read host b's file: {denied:?}");
    // Nothing of ide is in the default namespace.
    let none = call(&outside, "default", "coder::info", json!({})).await;
    assert!(none.is_err(), "coder::info answered in default: {none:?}");
    // Each host registered its own configuration entry (in `default`, where
    // the configuration worker lives), and no `ide` entry.
    let real = engine.real().unwrap();
    assert!(real.stored_value(&a.entry).await.is_some());
    assert!(real.stored_value(&b.entry).await.is_some());
    assert!(real.stored_value("ide").await.is_none_or(|v| v.is_null()));

    // shell::changed, bound by a client in host a's namespace, sees host a.
    let in_a = client(&engine, Some(&a.ns));
    let mut changes = sink(&in_a, "e2e::changed");
    let mark = a.ide.log_len();
    let _changed = bind(
        &in_a,
        "shell::changed",
        "e2e::changed",
        json!({"path": a.root.display().to_string()}),
    );
    assert!(
        a.ide
            .wait_for_log_from(mark, "trigger binding held: ", WAIT)
            .await,
        "host a never held the binding:\n{}",
        a.ide.logs()
    );
    std::fs::write(a.root.join("a.txt"), "ay\n").unwrap();
    let ev = next(&mut changes, "shell::changed event from host a").await;
    assert_eq!(ev["root"], a.root.display().to_string(), "{ev}");
    assert!(ev["path"].as_str().unwrap().ends_with("a.txt"), "{ev}");
    // Host a cannot be made to watch host b's root: refused, nothing fires.
    let mark = a.ide.log_len();
    let _refused = bind(
        &in_a,
        "shell::changed",
        "e2e::changed",
        json!({"path": b.root.display().to_string()}),
    );
    assert!(
        a.ide.wait_for_log_from(mark, "refused", WAIT).await,
        "host a did not refuse a binding on host b's root:\n{}",
        a.ide.logs()
    );

    // shell::job-finished, bound in host b's namespace, reports host b's job.
    let in_b = client(&engine, Some(&b.ns));
    let mut finished = sink(&in_b, "e2e::finished");
    let mark = b.ide.log_len();
    let mut bind = RegisterTriggerInput::new(
        "shell::job-finished".to_string(),
        "e2e::finished".to_string(),
        json!({}),
    );
    bind.metadata = None;
    #[allow(deprecated)]
    let _jobs = in_b
        .register_trigger(bind)
        .expect("bind shell::job-finished");
    assert!(
        b.ide
            .wait_for_log_from(mark, "trigger binding held: ", WAIT)
            .await,
        "host b never held the binding:\n{}",
        b.ide.logs()
    );
    let job = call(&outside, &b.ns, "shell::exec_bg", json!({"command": "pwd"}))
        .await
        .unwrap();
    let done = next(&mut finished, "shell::job-finished from host b").await;
    assert_eq!(done["job_id"], job["job_id"], "{done}");

    // Reconfigure host a: its entry, its reload; host b untouched.
    let mark_a = a.ide.log_len();
    let mark_b = b.ide.log_len();
    engine
        .call(
            "configuration::set",
            json!({"id": a.entry, "value": {
                "fs": {"allow_unjailed": false, "host_roots": [a.root], "max_read_bytes": 4096},
                "turns": {"data_dir": dir.path().join("turns-a")},
            }}),
        )
        .await
        .unwrap();
    assert!(
        a.ide
            .wait_for_log_from(mark_a, "configuration reload applied", WAIT)
            .await,
        "host a did not reload:\n{}",
        a.ide.logs()
    );
    let info_a = call(&outside, &a.ns, "coder::info", json!({}))
        .await
        .unwrap();
    let info_b = call(&outside, &b.ns, "coder::info", json!({}))
        .await
        .unwrap();
    assert_eq!(info_a["max_read_bytes"], 4096, "{info_a}");
    assert_eq!(info_b["max_read_bytes"], 16777216, "{info_b}");
    assert!(
        !b.ide.logs()[mark_b..].contains("configuration reload"),
        "host b reloaded on host a's change:\n{}",
        b.ide.logs()
    );
    drop((in_a, in_b, outside));
    engine.stop().await;
}

/// A second ide started in `ns` as `name`, jailed to its own root.
fn intruder(engine: &Engine, dir: &Path, ns: &str, name: &str) -> IdeProcess {
    serve_in(engine, dir, ns, name, &format!("{ns}-{name}")).1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test namespace_e2e -- --ignored"]
async fn a_second_ide_in_one_namespace_stops_loudly_and_the_first_keeps_serving() {
    let (engine, dir) = real_engine().await;
    let a = host(&engine, dir.path(), "a");
    let outside = client(&engine, None);
    let info = eventually(&outside, &a.ns, "coder::info", json!({})).await;
    assert_eq!(info["primary_root"], a.root.display().to_string());

    // Another worker name in the same namespace: every function id is
    // taken. It stops with one error naming the owner, instead of sitting
    // connected and serving nothing.
    let mut other = intruder(&engine, dir.path(), &a.ns, "ide-other");
    let Some(status) = other.wait_exit(WAIT).await else {
        panic!("the second ide stops: {}", other.logs())
    };
    assert!(!status.success(), "{}", other.logs());
    let logs = other.logs();
    assert!(logs.contains("FUNCTION_NAMESPACE_CONFLICT"), "{logs}");
    assert!(logs.contains("'ide-a'"), "names the owner: {logs}");
    assert!(logs.contains("III_NAMESPACE"), "says the fix: {logs}");

    // The same worker name in the same namespace: refused by the engine.
    let mut twin = intruder(&engine, dir.path(), &a.ns, "ide-a");
    let Some(status) = twin.wait_exit(WAIT).await else {
        panic!("the same-named ide stops: {}", twin.logs())
    };
    assert!(!status.success(), "{}", twin.logs());
    assert!(twin.logs().contains("III_WORKER_NAME"), "{}", twin.logs());

    // The first one never noticed.
    let info = eventually(&outside, &a.ns, "coder::info", json!({})).await;
    assert_eq!(info["primary_root"], a.root.display().to_string());
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test namespace_e2e -- --ignored"]
async fn a_console_in_the_default_namespace_drives_a_terminal_on_another_host() {
    use base64::Engine as _;
    let (engine, dir) = real_engine().await;
    let a = host(&engine, dir.path(), "a");
    // The console's tab: its per-tab output handler lives in `default`.
    let console = client(&engine, None);
    let target = format!("iii::ide-ui::pty-output::console-{}", unique_name("tab"));
    let mut frames = sink(&console, &target);
    // every function registered (coder::info answering says only that the
    // first one is)
    assert!(
        a.ide.wait_for_log("ide serving", WAIT).await,
        "{}",
        a.ide.logs()
    );
    let open = call(
        &console,
        &a.ns,
        "shell::pty::open",
        json!({"cwd": a.root, "cols": 80, "rows": 24, "output_function_id": target,
               "program": "/bin/sh", "args": [], "env": {"HISTFILE": "/dev/null"}}),
    )
    .await
    .unwrap_or_else(|e| panic!("shell::pty::open in {}: {e}", a.ns));
    let data = base64::engine::general_purpose::STANDARD.encode("echo hi-$((40+2)); pwd\r");
    call(
        &console,
        &a.ns,
        "shell::pty::write",
        json!({"session_id": open["session_id"], "access_key": open["access_key"], "data": data}),
    )
    .await
    .expect("write");
    let mut text = String::new();
    let mut last = 0;
    while !(text.contains("hi-42") && text.contains(&a.root.display().to_string())) {
        let f = next(&mut frames, "terminal output from host a").await;
        assert_eq!(f["session_id"], open["session_id"]);
        last = last.max(f["sequence"].as_u64().unwrap());
        if let Some(d) = f["data"].as_str() {
            let bytes = base64::engine::general_purpose::STANDARD.decode(d).unwrap();
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    assert!(last >= 1, "numbered frames");
    call(
        &console,
        &a.ns,
        "shell::pty::close",
        json!({"session_id": open["session_id"], "access_key": open["access_key"]}),
    )
    .await
    .expect("close");
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test namespace_e2e -- --ignored"]
async fn every_function_is_served_in_a_non_default_namespace() {
    let (engine, dir) = real_engine().await;
    let a = host(&engine, dir.path(), "a");
    let outside = client(&engine, None);
    assert!(
        a.ide.wait_for_log("ide serving", WAIT).await,
        "{}",
        a.ide.logs()
    );
    let catalog = ide::catalog::Catalog::standard();
    let mut reached = 0;
    for f in catalog.iter() {
        // An empty request: ide answers each one, with its result or its
        // own {code, message} (never the engine's "not found").
        let answer = call(&outside, &a.ns, f.id, json!({})).await;
        if let Err(e) = &answer {
            assert!(
                !e.contains("not found in namespace") && !e.contains("function_not_found"),
                "{} is not served in {}: {e}",
                f.id,
                a.ns
            );
            assert!(
                e.contains("(S2") || e.contains("(C2") || e.contains("(I2"),
                "{} answered with something other than ide's error: {e}",
                f.id
            );
        }
        reached += 1;
    }
    assert!(reached >= 45, "{reached} functions");
    drop(a);
}
