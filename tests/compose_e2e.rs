//! ide under the real engine's compose daemon (`iii compose`), as a user
//! runs it: a `worker-compose.yaml` naming this checkout (`path://`, started
//! by `scripts.start` in iii.worker.yaml), the compose functions through the
//! engine's own CLI (`iii trigger compose::* --namespace ...`), and ide
//! honouring the environment compose builds (`III_WORKER_NAME`,
//! `III_NAMESPACE`, `III_CONFIG`, `III_CONFIG_NAME`, `config_override`).
//!
//! Needs the real engine (the loopback stand-in has no compose daemon):
//! without `IDE_TEST_ENGINE` each test says so and passes; CI's second pass
//! runs them.
//!
//! The worker directory is a copy of this checkout's manifest and start
//! script with `target/release/ide` linked to the binary under test, so the
//! start path is exactly what compose runs, without a release build.

mod support;

use support::output_text as text;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use iii_sdk::IIIClient;
use iii_sdk::protocol::TriggerRequest;
use serde_json::{Value, json};
use support::engine::{connect_worker, unique_name};
use support::harness::Engine;
use tokio::time::Instant;

/// Compose's own budget for a container is 60 s; the calls wait a little
/// longer than that so a timeout is compose's to report, not ours.
const COMPOSE_CALL: Duration = Duration::from_secs(90);
const WAIT: Duration = Duration::from_secs(30);

/// The real engine. These tests are ignored unless asked for
/// (`-- --ignored`), and asked for without `IDE_TEST_ENGINE` they fail.
async fn real_engine(test: &str) -> Engine {
    assert!(
        support::harness::real_engine_binary().is_some(),
        "{test} needs the real engine's compose daemon: set IDE_TEST_ENGINE to its binary"
    );
    Engine::start().await
}

/// A worker directory as compose sees a checkout of ide, named `ide` (the
/// container key `compose::add` derives from it): the manifest, the start
/// script, and `target/release/ide` (linked to the binary under test unless
/// `built` is false).
struct WorkerDir {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl WorkerDir {
    fn path(&self) -> &Path {
        &self.dir
    }
}

fn worker_dir(built: bool) -> WorkerDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::TempDir::new().unwrap();
    let w = tmp.path().join("ide");
    std::fs::create_dir_all(w.join("scripts")).unwrap();
    std::fs::copy(src.join("iii.worker.yaml"), w.join("iii.worker.yaml")).unwrap();
    std::fs::copy(src.join("scripts/start.sh"), w.join("scripts/start.sh")).unwrap();
    if built {
        std::fs::create_dir_all(w.join("target/release")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ide"), w.join("target/release/ide"))
            .unwrap();
    }
    WorkerDir { _tmp: tmp, dir: w }
}

/// `iii compose --namespace NS` on `engine`, its state in a temp dir.
struct Daemon {
    child: Child,
    ns: String,
    state: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl Daemon {
    async fn start(engine: &Engine) -> Daemon {
        let real = engine.real().expect("a real engine");
        let state = tempfile::TempDir::new().unwrap();
        let ns = unique_name("dev").replace('-', "");
        let log = std::fs::File::create(state.path().join("daemon.log")).unwrap();
        let child = Command::new(real.binary())
            .args(["compose", "--namespace", &ns, "--engine", &engine.url()])
            .env("HOME", state.path())
            .env("III_COMPOSE_STATE_DIR", state.path().join("compose"))
            .env("III_TELEMETRY_ENABLED", "false")
            .env_remove("III_URL")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("iii compose starts");
        let d = Daemon {
            child,
            ns,
            state,
            bin: real.binary().to_path_buf(),
            port: engine.port(),
        };
        let deadline = Instant::now() + WAIT;
        loop {
            let o = d.trigger("compose::list", json!({})).await;
            if o.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the compose daemon never answered compose::list:\n{}\n{}",
                text(&o),
                d.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        d
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.state.path().join("daemon.log")).unwrap_or_default()
    }

    /// `iii trigger FUNCTION --namespace NS --json PAYLOAD`, as typed.
    async fn trigger(&self, function_id: &str, payload: Value) -> Output {
        let mut command = tokio::process::Command::new(&self.bin);
        command
            .args(["trigger", function_id, "--namespace", &self.ns])
            .args(["--json", &payload.to_string()])
            .args(["--timeout-ms", &COMPOSE_CALL.as_millis().to_string()])
            .args(["--address", "127.0.0.1", "--port", &self.port.to_string()])
            .env("HOME", self.state.path())
            .env("III_TELEMETRY_ENABLED", "false")
            .kill_on_drop(true);
        tokio::time::timeout(COMPOSE_CALL + Duration::from_secs(10), command.output())
            .await
            .expect("the iii CLI did not finish")
            .expect("the iii CLI runs")
    }

    /// A compose call that must succeed; its JSON answer.
    async fn ok(&self, function_id: &str, payload: Value) -> Value {
        let o = self.trigger(function_id, payload.clone()).await;
        assert!(
            o.status.success(),
            "{function_id} {payload} failed:\n{}\ndaemon log:\n{}",
            text(&o),
            self.log()
        );
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{function_id} answered non-JSON ({e}):\n{}", text(&o)))
    }

    /// A container's startup output (compose keeps it under the project's
    /// state directory until the container is ready).
    fn container_logs(&self) -> String {
        let mut out = String::new();
        let root = self.state.path().join("compose");
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.parent().is_some_and(|q| q.ends_with("logs")) {
                    out.push_str(&format!(
                        "--- {}\n{}\n",
                        p.display(),
                        std::fs::read_to_string(&p).unwrap_or_default()
                    ));
                }
            }
        }
        out
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A test client calling into one namespace.
struct Caller {
    iii: IIIClient,
}

impl Caller {
    fn new(engine: &Engine) -> Caller {
        Caller {
            iii: connect_worker(&engine.url(), &unique_name("compose-e2e")),
        }
    }

    async fn call(&self, ns: &str, function_id: &str, payload: Value) -> Result<Value, String> {
        let mut req = TriggerRequest::new(function_id, payload);
        req.timeout_ms = Some(20_000);
        self.iii
            .trigger(req.namespace(ns))
            .await
            .map_err(|e| e.to_string())
    }

    /// Call until it answers (a worker that just registered may still be
    /// registering its functions).
    async fn eventually(&self, ns: &str, function_id: &str, payload: Value) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.call(ns, function_id, payload.clone()).await {
                Ok(v) => return v,
                Err(e) if Instant::now() > deadline => {
                    panic!("{function_id} in {ns} never answered: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

/// ide processes whose working directory is `dir` (compose starts each in
/// its worker directory).
fn ide_processes_in(dir: &Path) -> Vec<i32> {
    let dir = dir.canonicalize().unwrap();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let exe = std::fs::read_link(e.path().join("exe")).unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if exe.file_name().is_some_and(|n| n == "ide") && cwd == dir {
            pids.push(pid);
        }
    }
    pids
}

fn container_state(status: &Value, key: &str) -> String {
    status["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["container"] == key || c["name"] == key)
        .and_then(|c| c["state"].as_str())
        .unwrap_or("absent")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test compose_e2e -- --ignored"]
async fn compose_runs_ide_on_two_hosts_by_namespace() {
    let engine = real_engine("compose_runs_ide_on_two_hosts_by_namespace").await;
    let daemon = Daemon::start(&engine).await;
    let w = worker_dir(true);
    let project = tempfile::TempDir::new().unwrap();
    let (root_a, root_b) = (project.path().join("root-a"), project.path().join("root-b"));
    std::fs::create_dir_all(&root_a).unwrap();
    std::fs::create_dir_all(&root_b).unwrap();
    std::fs::write(root_a.join("only-in-a.txt"), "A\n").unwrap();
    std::fs::write(root_b.join("only-in-b.txt"), "B\n").unwrap();
    let ns_a = unique_name("host-a");
    let ns_b = unique_name("host-b");
    // One compose file per host: a project is its file and registers in
    // the file's namespace, and one namespace holds one ide (the engine
    // routes a function id to one worker per namespace).
    let host_file = |ns: &str, key: &str, root: &Path, turns: &str| {
        let file = project.path().join(format!("{key}.compose.yaml"));
        std::fs::write(
            &file,
            format!(
                "namespace: {ns}\ncontainers:\n  {key}:\n    worker: path://{w}\n    config_name: {ns}-ide\n    \
                 config_override:\n      fs:\n        allow_unjailed: false\n        host_roots: [{root}]\n      \
                 turns:\n        data_dir: {turns}\n    environment:\n      RUST_LOG: info\n",
                w = w.path().display(),
                root = root.display(),
                turns = project.path().join(turns).display(),
            ),
        )
        .unwrap();
        file
    };
    let file_a = host_file(&ns_a, "ide-a", &root_a, "turns-a");
    let file_b = host_file(&ns_b, "ide-b", &root_b, "turns-b");
    for file in [&file_a, &file_b] {
        let up = daemon
            .ok("compose::up", json!({"file": file.display().to_string()}))
            .await;
        assert_eq!(
            up["status"],
            "ok",
            "{up}\n{}\n{}",
            daemon.log(),
            daemon.container_logs()
        );
    }
    let status_a = daemon
        .ok(
            "compose::status",
            json!({"file": file_a.display().to_string()}),
        )
        .await;
    assert_eq!(container_state(&status_a, "ide-a"), "ready", "{status_a}");
    // Each host answers in its own namespace, jailed to its own root.
    let c = Caller::new(&engine);
    let info_a = c.eventually(&ns_a, "coder::info", json!({})).await;
    let info_b = c.eventually(&ns_b, "coder::info", json!({})).await;
    let roots = |v: &Value| v["base_paths"].to_string();
    assert!(
        roots(&info_a).contains("root-a") && !roots(&info_a).contains("root-b"),
        "{info_a}"
    );
    assert!(
        roots(&info_b).contains("root-b") && !roots(&info_b).contains("root-a"),
        "{info_b}"
    );
    let read = c
        .call(
            &ns_a,
            "coder::read-file",
            json!({"path": root_a.join("only-in-a.txt").display().to_string()}),
        )
        .await
        .unwrap();
    assert!(read.to_string().contains("A"), "{read}");
    let across = c
        .call(
            &ns_a,
            "coder::read-file",
            json!({"path": root_b.join("only-in-b.txt").display().to_string()}),
        )
        .await;
    assert!(across.is_err(), "host-a read host-b's file: {across:?}");
    // The configuration each host owns is the entry compose named, with the
    // override in it.
    let stored_a = engine
        .real()
        .unwrap()
        .stored_value(&format!("{ns_a}-ide"))
        .await
        .expect("the host-a entry");
    assert_eq!(stored_a["fs"]["allow_unjailed"], false, "{stored_a}");
    // Restart one host: the other keeps answering throughout.
    let restart = daemon
        .ok(
            "compose::restart",
            json!({"file": file_a.display().to_string(), "worker": "ide-a"}),
        )
        .await;
    assert!(!restart.is_null());
    c.eventually(&ns_b, "coder::info", json!({})).await;
    c.eventually(&ns_a, "coder::info", json!({})).await;
    // Down leaves no ide process behind.
    for file in [&file_a, &file_b] {
        daemon
            .ok("compose::down", json!({"file": file.display().to_string()}))
            .await;
    }
    let deadline = Instant::now() + WAIT;
    while !ide_processes_in(w.path()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "ide processes left after compose::down: {:?}",
            ide_processes_in(w.path())
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    engine.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test compose_e2e -- --ignored"]
async fn compose_add_of_the_checkout_starts_ide_and_a_missing_build_says_how_to_build() {
    let engine =
        real_engine("compose_add_of_the_checkout_starts_ide_and_a_missing_build_says_how_to_build")
            .await;
    let daemon = Daemon::start(&engine).await;
    let project = tempfile::TempDir::new().unwrap();
    let ns = unique_name("proj");
    // An empty project file, then `compose::add worker=<checkout>`.
    let file = project.path().join("worker-compose.yaml");
    let w = worker_dir(true);
    std::fs::write(&file, format!("namespace: {ns}\ncontainers:\n")).unwrap();
    let added = daemon
        .trigger(
            "compose::add",
            json!({"file": file.display().to_string(), "worker": w.path().display().to_string()}),
        )
        .await;
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        added.status.success(),
        "compose::add failed:\n{}\nfile:\n{written}\n{}\n{}",
        text(&added),
        daemon.log(),
        daemon.container_logs()
    );
    assert!(written.contains("path://"), "{written}");
    let c = Caller::new(&engine);
    let info = c.eventually(&ns, "coder::info", json!({})).await;
    assert!(info.get("mode").is_some(), "{info}");
    daemon
        .ok("compose::down", json!({"file": file.display().to_string()}))
        .await;

    // Without a built binary the container fails at once, and its log
    // says how to build it (compose gives a container 60 s, a build takes
    // minutes).
    let unbuilt = worker_dir(false);
    let file2 = project.path().join("unbuilt.yaml");
    std::fs::write(
        &file2,
        format!(
            "namespace: {ns}u\ncontainers:\n  ide:\n    worker: path://{}\n",
            unbuilt.path().display()
        ),
    )
    .unwrap();
    let t = Instant::now();
    let up = daemon
        .trigger("compose::up", json!({"file": file2.display().to_string()}))
        .await;
    let said = format!("{}{}", text(&up), daemon.container_logs());
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "a missing build must fail at once, took {:?}",
        t.elapsed()
    );
    assert!(
        said.contains("cargo build --release"),
        "the failure does not say how to build:\n{said}"
    );
    engine.stop().await;
}
