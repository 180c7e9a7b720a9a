//! A quick call's round trip three ways, in one run, against the same
//! release `ide` binary and configuration:
//!
//! - through `ide mcp` (one stdio connection, `tools/call coder_info`, one
//!   call at a time, after `initialize`);
//! - through the loopback engine to a served `ide` (`coder::info`, one call
//!   at a time over one client connection);
//! - `ide call coder::info` (a whole process per call, the one-shot way).
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

async fn through_the_engine(config: &str, n: usize) -> Vec<Duration> {
    use support::engine::LoopbackEngine;
    use support::ide_process::IdeProcess;
    let engine = LoopbackEngine::start().await;
    let ide = IdeProcess::spawn(&["--url", &engine.url(), "--config", config], &[]);
    assert!(
        engine
            .wait_for_function("coder::info", Duration::from_secs(60))
            .await
            .is_some(),
        "ide did not start:\n{}",
        ide.logs()
    );
    for _ in 0..20 {
        engine
            .call("coder::info", json!({}))
            .await
            .expect("warm-up");
    }
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        engine.call("coder::info", json!({})).await.expect("call");
        lat.push(t.elapsed());
    }
    drop(ide);
    engine.stop().await;
    lat
}

fn main() {
    let n = if std::env::args().any(|a| a == "quick") {
        200
    } else {
        1000
    };
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
    let (engine50, _) = report(
        "through the loopback engine (served ide)",
        rt.block_on(through_the_engine(&config, n)),
    );
    let (call50, _) = report("ide call (a process per call)", one_shot(&config, n));
    println!(
        "  p50 ratios: engine / mcp {:.1}x, ide call / mcp {:.1}x",
        engine50 / mcp50,
        call50 / mcp50
    );
}
