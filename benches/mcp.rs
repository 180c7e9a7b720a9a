//! A quick call's round trip three ways, in one run, against the same
//! release `ide` binary and configuration:
//!
//! - through `ide mcp` (one stdio connection, `tools/call coder_info`, one
//!   call at a time, after `initialize`);
//! - through the loopback engine to a served `ide` (`coder::info`, one call
//!   at a time over one client connection);
//! - `ide call coder::info` (a whole process per call, the one-shot way).
//!
//! Through the engine three ways: no answer hold (the floor), the default
//! hold, and the default hold with the stand-in's answer window open on
//! every call (answers that beat it are dropped, and counted as lost). Then
//! the long-lived Python and Node SDK clients (`tests/clients`) call back to
//! back for 60 s (`-- quick`: 10 s) through the windowed stand-in.
//!
//! Per-call latency p50/p99 over `N` calls each (1000; `-- quick`: 200).
//! Run: `cargo bench --bench mcp`. BENCHMARKS.md records the results.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const IDE: &str = env!("CARGO_BIN_EXE_ide");

fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort();
    let i = ((samples.len() * p).div_ceil(100)).saturating_sub(1);
    samples[i.min(samples.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(what: &str, mut lat: Vec<Duration>) -> (f64, f64) {
    let (p50, p99) = (ms(percentile(&mut lat, 50)), ms(percentile(&mut lat, 99)));
    println!(
        "  {what:<48} p50 {p50:>7.3} ms   p99 {p99:>7.3} ms   ({} calls)",
        lat.len()
    );
    (p50, p99)
}

fn through_mcp(config: &str, n: usize) -> Vec<Duration> {
    let mut child = Command::new(IDE)
        .args(["--config", config, "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ide mcp");
    let mut to = child.stdin.take().unwrap();
    let mut from = BufReader::new(child.stdout.take().unwrap());
    let mut ask = move |id: u64, method: &str, params: Value| -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(to, "{line}").unwrap();
        to.flush().unwrap();
        let mut answer = String::new();
        from.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    ask(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    for i in 0..20 {
        ask(
            1 + i,
            "tools/call",
            json!({"name": "coder_info", "arguments": {}}),
        );
    }
    let mut lat = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let t = Instant::now();
        let r = ask(
            100 + i,
            "tools/call",
            json!({"name": "coder_info", "arguments": {}}),
        );
        lat.push(t.elapsed());
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    // closing stdin ends the server
    drop(ask);
    child.wait().unwrap();
    lat
}

fn one_shot(config: &str, n: usize) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(IDE)
                .args(["--config", config, "call", "coder::info"])
                .stderr(Stdio::null())
                .output()
                .expect("ide call");
            assert!(out.status.success());
            t.elapsed()
        })
        .collect()
}

/// Where a call through the loopback engine goes: the stand-in's faults and
/// ide's answer hold (`None`: its default).
struct Route {
    faults: support::engine::Faults,
    hold_us: Option<&'static str>,
}

impl Route {
    fn plain() -> Route {
        Route {
            faults: support::engine::Faults::none(),
            hold_us: None,
        }
    }

    /// The answer window open on every call, at the stand-in's width.
    fn windowed() -> Route {
        use support::engine::Faults;
        Route {
            faults: Faults::none().answer_window(Faults::ANSWER_WINDOW, 100),
            hold_us: None,
        }
    }

    fn unheld() -> Route {
        Route {
            hold_us: Some("0"),
            ..Route::plain()
        }
    }
}

/// A served ide on a stand-in engine for `route`, ready for calls.
async fn served(
    config: &str,
    route: &Route,
) -> (
    support::engine::LoopbackEngine,
    support::ide_process::IdeProcess,
) {
    use support::engine::{ConfigStore, LoopbackEngine};
    use support::ide_process::IdeProcess;
    let engine = LoopbackEngine::start_faulted(0, ConfigStore::new(), route.faults.clone()).await;
    let envs: Vec<(&str, &str)> = route
        .hold_us
        .map(|h| ("IDE_ANSWER_HOLD_US", h))
        .into_iter()
        .collect();
    let ide = IdeProcess::spawn(&["--url", &engine.url(), "--config", config], &envs);
    assert!(
        engine
            .wait_for_function("coder::info", Duration::from_secs(60))
            .await
            .is_some(),
        "ide did not start:\n{}",
        ide.logs()
    );
    (engine, ide)
}

/// `n` calls one at a time from a Rust client; also how many got no answer
/// (each one waits out 2 s).
async fn through_the_engine(config: &str, n: usize, route: Route) -> (Vec<Duration>, usize) {
    let (engine, ide) = served(config, &route).await;
    let budget = Duration::from_secs(2);
    for _ in 0..20 {
        let _ = engine
            .call_with_timeout("coder::info", json!({}), budget)
            .await;
    }
    let mut lat = Vec::with_capacity(n);
    let mut lost = 0;
    for _ in 0..n {
        let t = Instant::now();
        match engine
            .call_with_timeout("coder::info", json!({}), budget)
            .await
        {
            Ok(_) => lat.push(t.elapsed()),
            Err(e) if e.code == "TIMEOUT" => lost += 1,
            Err(e) => panic!("coder::info: {e:?}"),
        }
    }
    drop(ide);
    engine.stop().await;
    (lat, lost)
}

/// One of the long-lived SDK clients of `tests/clients` (`soak.py`,
/// `soak.mjs`) calling back to back for `secs` through the stand-in: its
/// JSON report (answered, unanswered, p50_ms, p99_ms), or why it could not
/// run.
async fn sdk_client(
    config: &str,
    route: Route,
    program: &str,
    script: &str,
    secs: u64,
) -> Result<Value, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    if program == "node" && !dir.join("node_modules/iii-sdk").is_dir() {
        return Err("the Node iii-sdk is not installed (cd tests/clients && npm ci)".into());
    }
    let (engine, ide) = served(config, &route).await;
    let home = tempfile::TempDir::new().expect("temp dir");
    let out = tokio::process::Command::new(program)
        .arg(dir.join(script))
        .args([
            &engine.url(),
            "coder::info",
            "{}",
            &secs.to_string(),
            "12000",
        ])
        .current_dir(&dir)
        .env("HOME", home.path())
        .env_remove("III_URL")
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    drop(ide);
    engine.stop().await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!(
                "{script} printed no report: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let n = if quick { 200 } else { 1000 };
    let soak_secs = if quick { 10 } else { 60 };
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().unwrap();
    let config = root.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "fs:\n  allow_unjailed: false\n  host_roots: [{r}]\nturns:\n  data_dir: {r}/.turns\n",
            r = root.display()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("a quick call (coder::info) one at a time, release ide binary:");
    let (mcp50, _) = report("ide mcp (stdio, one connection)", through_mcp(&config, n));
    let through = |what: &str, route: Route| {
        let (lat, lost) = rt.block_on(through_the_engine(&config, n, route));
        let (p50, _) = report(what, lat);
        println!("  {:<48} {lost} of {n} calls got no answer", "");
        (p50, lost)
    };
    let (floor50, _) = through("loopback engine, no hold (floor)", Route::unheld());
    let (engine50, _) = through("loopback engine, answer hold", Route::plain());
    let (window50, lost) = through(
        "loopback engine, window on every call, hold",
        Route::windowed(),
    );
    let (call50, _) = report("ide call (a process per call)", one_shot(&config, n));
    println!(
        "  p50 ratios: engine / mcp {:.1}x, ide call / mcp {:.1}x; the hold costs {:.3} ms \
         a quick call ({:.3} ms with the window on every call, {lost} lost)",
        engine50 / mcp50,
        call50 / mcp50,
        engine50 - floor50,
        window50 - floor50,
    );
    println!(
        "long-lived SDK clients, {soak_secs} s each, through the stand-in with the answer \
         window open on every call ({} us):",
        support::engine::Faults::ANSWER_WINDOW.as_micros()
    );
    for (program, script) in [("python3", "soak.py"), ("node", "soak.mjs")] {
        let line = match rt.block_on(sdk_client(
            &config,
            Route::windowed(),
            program,
            script,
            soak_secs,
        )) {
            Ok(r) => format!(
                "answered {}, unanswered {}, p50 {:.3} ms, p99 {:.3} ms",
                r["answered"],
                r["unanswered"],
                r["p50_ms"].as_f64().unwrap_or(f64::NAN),
                r["p99_ms"].as_f64().unwrap_or(f64::NAN)
            ),
            Err(why) => format!("not run: {why}"),
        };
        println!("  {script:<10} {line}");
        if program == "python3" {
            let floor = rt.block_on(sdk_client(
                &config,
                Route::unheld(),
                program,
                script,
                soak_secs,
            ));
            if let Ok(r) = floor {
                println!(
                    "  {script:<10} (no window, no hold: p50 {:.3} ms)",
                    r["p50_ms"].as_f64().unwrap_or(f64::NAN)
                );
            }
        }
    }
}
