//! Soak: long-lived clients under steady traffic, as the console and agents
//! use ide (one connection each, held for the whole session), on the
//! loopback stand-in or a real iii engine (`IDE_TEST_ENGINE`).
//!
//! Every call must be answered: a call that gets no answer within its
//! budget is a lost keystroke or a write an agent retries although it
//! happened. Each test runs for [`soak_time`] (60 s; `IDE_SOAK_SECS`
//! overrides it, for a quick local look or a longer soak) and prints per-function latency percentiles
//! (recorded in BENCHMARKS.md). The same long-lived call loop also runs
//! from the Python and Node SDKs (`tests/clients/`), as agents and the
//! console run it.
//!
//! Each soak runs twice: on the engine of the run, and (`faulted_*`, for a
//! third of the time) on the loopback stand-in with every fault of the real
//! engine on ([`Faults::all`]): answers that come back before the engine
//! filed their call are dropped, Nagle on the engine's sockets, and so on.
//! ide's remedies must keep every answer. On a real engine the faulted runs
//! say so and pass: its faults are its own.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use iii_sdk::channel::{ChannelReader, StreamChannelRef};
use iii_sdk::helpers::ChannelDirection;
use iii_sdk::protocol::TriggerRequest;
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction};
use serde_json::{Value, json};
use support::engine::{ConfigStore, Faults, LoopbackEngine, connect_worker, unique_name};
use support::harness::{Engine, real_engine_binary};
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(30);
/// One call's budget: far above any answer's latency on a busy machine; a
/// call past it counts as unanswered.
const CALL_BUDGET: Duration = Duration::from_secs(12);

fn soak_time() -> Duration {
    let secs = std::env::var("IDE_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// The engine a soak runs on.
#[derive(Clone, Copy, PartialEq)]
enum Run {
    /// The run's engine: the well-behaved stand-in, or a real one.
    Plain,
    /// The stand-in with every fault on.
    Faulted,
}

impl Run {
    /// How long the soak goes on: a third of [`soak_time`] when faulted.
    fn soak_time(self) -> Duration {
        match self {
            Run::Plain => soak_time(),
            Run::Faulted => (soak_time() / 3).max(Duration::from_secs(1)),
        }
    }

    fn label(self, what: &str) -> String {
        match self {
            Run::Plain => what.to_string(),
            Run::Faulted => format!("{what}, faulted engine"),
        }
    }
}

struct World {
    engine: Engine,
    ide: IdeProcess,
    dir: tempfile::TempDir,
    run: Run,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl World {
    /// On the faulted stand-in: what the faults did, printed; the answer
    /// window must have opened, and, when only ide answers calls here
    /// (`only_ide_answers`), dropped none of them.
    fn fault_report(&self, label: &str, only_ide_answers: bool) {
        let Some(counts) = self
            .engine
            .loopback()
            .filter(|_| self.run == Run::Faulted)
            .map(|e| e.fault_counts())
        else {
            return;
        };
        eprintln!("soak {label}: {counts:?}");
        assert!(
            counts.windows_opened > 0,
            "no answer window opened: {counts:?}"
        );
        if only_ide_answers {
            assert_eq!(
                counts.answers_dropped,
                0,
                "ide answered inside the window: {counts:?}\n{}",
                self.ide.logs()
            );
        }
    }
}

/// One soak at a time: each measures one engine and one ide under its own
/// load, not four soaks fighting over two cores.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `None`: a faulted run on a real engine, skipped.
async fn start(run: Run) -> Option<World> {
    if run == Run::Faulted && real_engine_binary().is_some() {
        eprintln!("skipped: the faults are the loopback stand-in's (IDE_TEST_ENGINE is set)");
        return None;
    }
    let turn = TURN.lock().await;
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut cfg = ide::config::Config::zero_config();
    cfg.working_dir = Some(dir.path().to_path_buf());
    let engine = match run {
        Run::Plain => Engine::start().await,
        Run::Faulted => Engine::Loopback(
            LoopbackEngine::start_faulted(0, ConfigStore::new(), Faults::all()).await,
        ),
    };
    // a config file outside the tree the clients read
    let config_path = dir.path().join(".ide-seed.yaml");
    let ide = IdeProcess::serve(&engine.url(), &cfg, &config_path);
    assert!(
        engine.wait_for_ide(WAIT).await,
        "ide did not register its functions:\n{}",
        ide.logs()
    );
    Some(World {
        engine,
        ide,
        dir,
        run,
        _turn: turn,
    })
}

/// Latencies of one function, and the calls that got no answer.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    unanswered: Vec<String>,
}

#[derive(Clone, Default)]
struct Stats(Arc<Mutex<BTreeMap<String, Tally>>>);

impl Stats {
    fn answered(&self, function_id: &str, took: Duration) {
        let mut m = self.0.lock().unwrap();
        m.entry(function_id.to_string())
            .or_default()
            .latencies
            .push(took);
    }

    fn unanswered(&self, function_id: &str, what: String) {
        let mut m = self.0.lock().unwrap();
        m.entry(function_id.to_string())
            .or_default()
            .unanswered
            .push(what);
    }

    /// Print the table; fail when any call went unanswered.
    fn report(&self, label: &str, ide: &IdeProcess) {
        let m = self.0.lock().unwrap();
        eprintln!("soak {label}: function | calls | p50 ms | p99 ms | max ms | unanswered");
        let mut lost = Vec::new();
        for (id, t) in m.iter() {
            let mut l = t.latencies.clone();
            l.sort();
            let pct = |p: f64| -> f64 {
                if l.is_empty() {
                    return 0.0;
                }
                let i = ((l.len() as f64 - 1.0) * p).round() as usize;
                l[i].as_secs_f64() * 1e3
            };
            eprintln!(
                "soak {label}: {id} | {} | {:.2} | {:.2} | {:.2} | {}",
                l.len(),
                pct(0.5),
                pct(0.99),
                pct(1.0),
                t.unanswered.len()
            );
            assert!(!l.is_empty(), "{id}: no call was answered");
            lost.extend(t.unanswered.iter().map(|w| format!("{id}: {w}")));
        }
        assert!(
            lost.is_empty(),
            "{} call(s) got no answer within {CALL_BUDGET:?}:\n{}\n--- ide log ---\n{}",
            lost.len(),
            lost.join("\n"),
            ide.logs()
        );
    }
}

/// One call on a long-lived client, timed; `None` when it got no answer
/// (recorded), `Some(Err)` for an error answer.
async fn timed(
    client: &IIIClient,
    stats: &Stats,
    function_id: &str,
    payload: Value,
) -> Option<Result<Value, SdkError>> {
    let mut req = TriggerRequest::new(function_id, payload.clone());
    req.timeout_ms = Some(CALL_BUDGET.as_millis() as u64);
    let t = Instant::now();
    let r = tokio::time::timeout(CALL_BUDGET + Duration::from_secs(2), client.trigger(req)).await;
    let took = t.elapsed();
    match r {
        Err(_) | Ok(Err(SdkError::Timeout)) => {
            stats.unanswered(function_id, format!("{payload} (after {took:?})"));
            None
        }
        Ok(Err(SdkError::Remote { code, .. })) if code.eq_ignore_ascii_case("timeout") => {
            stats.unanswered(function_id, format!("{payload} (engine timeout)"));
            None
        }
        Ok(r) => {
            stats.answered(function_id, took);
            Some(r)
        }
    }
}

/// A long-lived client as the console or an agent holds one: connected, and
/// with `TCP_NODELAY` on its socket, as browsers and the Node and Python
/// SDKs' sockets have (the Rust SDK sets it only when the engine offers it).
async fn client(engine: &Engine, prefix: &str) -> IIIClient {
    let c = connect_worker(&engine.url(), &unique_name(prefix));
    let deadline = Instant::now() + WAIT;
    while c.get_connection_state() != iii_sdk::runtime::IIIConnectionState::Connected {
        assert!(Instant::now() < deadline, "{prefix} did not connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let port = engine.port();
    tokio::task::spawn_blocking(move || {
        ide::bus::nodelay::apply(&ide::bus::nodelay::resolve("127.0.0.1", port))
    })
    .await
    .unwrap();
    c
}

fn ok(function_id: &str, r: Result<Value, SdkError>) -> Value {
    r.unwrap_or_else(|e| panic!("{function_id} answered an error: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_long_lived_client_calling_back_to_back_gets_every_answer() {
    one_client(Run::Plain).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulted_engine_one_long_lived_client_calling_back_to_back_gets_every_answer() {
    one_client(Run::Faulted).await;
}

async fn one_client(run: Run) {
    let Some(w) = start(run).await else {
        return;
    };
    let client = client(&w.engine, "soak-agent").await;
    let stats = Stats::default();
    let end = Instant::now() + run.soak_time();
    while Instant::now() < end {
        if let Some(r) = timed(&client, &stats, "coder::info", json!({})).await {
            let v = ok("coder::info", r);
            assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{v}");
            assert!(v["max_read_bytes"].is_u64(), "{v}");
        }
    }
    let label = run.label("one client");
    stats.report(&label, &w.ide);
    w.fault_report(&label, true);
    client.shutdown_async().await;
    w.engine.stop().await;
}

/// A file of numbered lines, `line-{n}` on line n.
fn numbered(dir: &Path, lines: usize) -> std::path::PathBuf {
    let p = dir.join("numbered.txt");
    let body: String = (1..=lines).map(|n| format!("line-{n}\n")).collect();
    std::fs::write(&p, body).unwrap();
    p
}

/// The console page's terminal: frames reordered by `sequence`, each applied
/// once (a delivery whose answer was lost is sent again; the page drops a
/// frame it already applied, as `ui/src/terminal/router.js` does).
struct Pane {
    rx: mpsc::UnboundedReceiver<Value>,
    ahead: BTreeMap<u64, Vec<u8>>,
    next: u64,
    text: String,
}

impl Pane {
    fn take(&mut self, ev: Value) {
        let seq = ev["sequence"].as_u64().expect("sequence");
        let data = ev["data"]
            .as_str()
            .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
            .unwrap_or_default();
        if seq < self.next {
            return;
        }
        if let Some(prev) = self.ahead.insert(seq, data.clone()) {
            assert_eq!(
                prev, data,
                "frame {seq} delivered twice with different bytes"
            );
        }
        while let Some(d) = self.ahead.remove(&self.next) {
            self.text.push_str(&String::from_utf8_lossy(&d));
            self.next += 1;
        }
    }

    /// Wait until the applied text holds `needle` after byte `from`; returns
    /// where it ends.
    async fn until(&mut self, needle: &str, from: usize) -> Option<usize> {
        let deadline = Instant::now() + CALL_BUDGET;
        loop {
            if let Some(i) = self.text[from..].find(needle) {
                return Some(from + i + needle.len());
            }
            let ev = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .ok()??;
            self.take(ev);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_long_lived_clients_under_mixed_load_lose_nothing() {
    mixed_load(Run::Plain).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulted_engine_four_long_lived_clients_under_mixed_load_lose_nothing() {
    mixed_load(Run::Faulted).await;
}

async fn mixed_load(run: Run) {
    let Some(w) = start(run).await else {
        return;
    };
    let root = w.dir.path().canonicalize().unwrap();
    numbered(&root, 5_000);
    let blob: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(root.join("blob.bin"), &blob).unwrap();
    let url = w.engine.url();
    let stats = Stats::default();
    let end = Instant::now() + run.soak_time();

    // 1. an agent reading windows of a file
    let reader = {
        let (client, stats, root) = (
            client(&w.engine, "soak-reader").await,
            stats.clone(),
            root.clone(),
        );
        tokio::spawn(async move {
            let mut n = 0usize;
            while Instant::now() < end {
                let from = 1 + (n * 37) % 4_990;
                let p = json!({"path": root.join("numbered.txt"), "line_from": from,
                               "line_to": from + 9});
                if let Some(r) = timed(&client, &stats, "coder::read-file", p).await {
                    let v = ok("coder::read-file", r);
                    let want: String = (from..from + 10).map(|k| format!("line-{k}\n")).collect();
                    assert_eq!(v["content"], json!(want), "window from {from}");
                }
                n += 1;
            }
            client.shutdown_async().await;
        })
    };

    // 2. an agent running commands
    let runner = {
        let (client, stats, root) = (
            client(&w.engine, "soak-runner").await,
            stats.clone(),
            root.clone(),
        );
        tokio::spawn(async move {
            while Instant::now() < end {
                let p = json!({"command": "true", "cwd": root});
                if let Some(r) = timed(&client, &stats, "shell::exec", p).await {
                    let v = ok("shell::exec", r);
                    assert_eq!(v["exit_code"], 0, "{v}");
                }
            }
            client.shutdown_async().await;
        })
    };

    // 3. a console typing into a shell, every keystroke's echo checked in order
    let typist = {
        let client = client(&w.engine, "soak-console").await;
        let output = format!("iii::ide-ui::pty-output::console-{}", uuid::Uuid::new_v4());
        let (tx, rx) = mpsc::unbounded_channel();
        client.register_function(
            &output,
            RegisterFunction::new_async(move |input: Value| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(input);
                    Ok::<Value, SdkError>(json!({}))
                }
            }),
        );
        assert!(w.engine.wait_for_function(&output, WAIT).await.is_some());
        let (stats, root) = (stats.clone(), root.clone());
        tokio::spawn(async move {
            let open = json!({"cwd": root, "cols": 120, "rows": 30, "program": "cat",
                              "output_function_id": output});
            let o = ok(
                "shell::pty::open",
                timed(&client, &stats, "shell::pty::open", open)
                    .await
                    .expect("pty open answered"),
            );
            let (id, key) = (o["session_id"].clone(), o["access_key"].clone());
            let mut pane = Pane {
                rx,
                ahead: BTreeMap::new(),
                next: 1,
                text: String::new(),
            };
            let (mut n, mut at) = (0u64, 0usize);
            while Instant::now() < end {
                n += 1;
                // one keystroke at a time, as a person types a line
                for ch in format!("k{n}\r").chars() {
                    let data = base64::engine::general_purpose::STANDARD.encode(ch.to_string());
                    let p = json!({"session_id": id, "access_key": key, "data": data});
                    if let Some(r) = timed(&client, &stats, "shell::pty::write", p).await {
                        ok("shell::pty::write", r);
                    }
                }
                // the terminal echoes what was typed, in order
                at = pane
                    .until(&format!("k{n}\r\n"), at)
                    .await
                    .unwrap_or_else(|| {
                        panic!(
                            "keystrokes k{n} never echoed after byte {at}; the pane shows {:?}",
                            &pane.text[pane.text.len().saturating_sub(200)..]
                        )
                    });
            }
            let p = json!({"session_id": id, "access_key": key});
            if let Some(r) = timed(&client, &stats, "shell::pty::close", p).await {
                ok("shell::pty::close", r);
            }
            client.shutdown_async().await;
            n
        })
    };

    // 4. a console streaming a file's bytes
    let streamer = {
        let (client, stats, root, url) = (
            client(&w.engine, "soak-streamer").await,
            stats.clone(),
            root.clone(),
            url.clone(),
        );
        tokio::spawn(async move {
            while Instant::now() < end {
                let p = json!({"path": root.join("blob.bin")});
                let Some(r) = timed(&client, &stats, "shell::fs::read", p).await else {
                    continue;
                };
                let v = ok("shell::fs::read", r);
                let c = &v["content"];
                let reader = ChannelReader::new(
                    &url,
                    &StreamChannelRef {
                        channel_id: c["channel_id"].as_str().unwrap().to_string(),
                        access_key: c["access_key"].as_str().unwrap().to_string(),
                        direction: ChannelDirection::Read,
                    },
                );
                let got = tokio::time::timeout(CALL_BUDGET, reader.read_all())
                    .await
                    .expect("the stream ended in time")
                    .expect("the stream read");
                assert!(got == blob, "streamed {} bytes, not the file", got.len());
            }
            client.shutdown_async().await;
        })
    };

    reader.await.expect("reader");
    runner.await.expect("runner");
    let keystrokes = typist.await.expect("typist");
    streamer.await.expect("streamer");
    let label = run.label("mixed");
    eprintln!("soak {label}: {keystrokes} keystroke groups echoed in order");
    assert!(keystrokes > 0);
    stats.report(&label, &w.ide);
    // the console's own answers (terminal output) can be dropped: ide sends
    // the frame again, the pane applies it once
    w.fault_report(&label, false);
    w.engine.stop().await;
}

/// How the SDK clients' absence is treated: `IDE_SDK_CLIENTS=required` (CI)
/// makes a missing Python or Node SDK a failure instead of a skip.
fn sdk_clients_required() -> bool {
    std::env::var("IDE_SDK_CLIENTS").is_ok_and(|v| v == "required")
}

/// Run one of `tests/clients/soak.*` against ide and check its report.
async fn sdk_client_soak(
    run: Run,
    program: &str,
    script: &str,
    ready: impl Fn() -> Result<(), String>,
) {
    if let Err(why) = ready() {
        assert!(!sdk_clients_required(), "{why}");
        eprintln!("skipped: {why}");
        return;
    }
    let Some(w) = start(run).await else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    let home = tempfile::TempDir::new().unwrap();
    let secs = run.soak_time().as_secs().to_string();
    let budget = CALL_BUDGET.as_millis().to_string();
    let out = tokio::process::Command::new(program)
        .arg(dir.join(script))
        .args([&w.engine.url(), "coder::info", "{}", &secs, &budget])
        .current_dir(&dir)
        // the SDKs mark their process under $HOME/.iii/run
        .env("HOME", home.path())
        .env_remove("III_URL")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(run.soak_time() + Duration::from_secs(60), out)
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish"))
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "{script} printed no report (exit {:?}):\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let label = run.label(script);
    eprintln!("soak {label}: {report}");
    assert_eq!(
        report["unanswered"],
        0,
        "calls without an answer: {report}\n{}",
        w.ide.logs()
    );
    assert!(report["answered"].as_u64().unwrap_or(0) > 0, "{report}");
    w.fault_report(&label, true);
    w.engine.stop().await;
}

fn python_sdk() -> Result<(), String> {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import iii"])
        .output();
    match probe {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("the Python iii-sdk is not installed (pip install iii-sdk==0.25.0)".into()),
    }
}

fn node_sdk() -> Result<(), String> {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node_modules/iii-sdk");
    if modules.is_dir() {
        Ok(())
    } else {
        Err("the Node iii-sdk is not installed (cd tests/clients && npm ci)".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_python_sdk_client_gets_every_answer() {
    sdk_client_soak(Run::Plain, "python3", "soak.py", python_sdk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulted_engine_a_long_lived_python_sdk_client_gets_every_answer() {
    sdk_client_soak(Run::Faulted, "python3", "soak.py", python_sdk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_node_sdk_client_gets_every_answer() {
    sdk_client_soak(Run::Plain, "node", "soak.mjs", node_sdk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulted_engine_a_long_lived_node_sdk_client_gets_every_answer() {
    sdk_client_soak(Run::Faulted, "node", "soak.mjs", node_sdk).await;
}
