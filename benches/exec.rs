//! Side-by-side timings for the exec surface (plain timing loops).
//!
//! Run: `cargo bench --bench exec` (add `-- quick` for fewer iterations).
//! Each section measures ide and a bare baseline in the same run and prints
//! the ratio; BENCHMARKS.md records the results.
//!
//! - handler overhead of `shell::exec {command: "true"}` in-process against
//!   a bare `Command::output()` of `true` (target ≤ 1.5×);
//! - 200 concurrent `shell::exec` through the loopback engine against the
//!   real `ide` binary (all must succeed; p50/p99), beside 200 concurrent
//!   bare spawns;
//! - a child writing 1 GiB to stdout: wall time against a bare reader that
//!   discards the pipe, and the worker's peak RSS growth.

#[path = "../tests/support/mod.rs"]
mod support;

use ide::catalog::Catalog;

use ide::config::Config;
use ide::runtime::Runtime;
use ide::services::Services;
use serde_json::json;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(std::env::temp_dir());
    let services = Services::standalone(Runtime::build(cfg).expect("runtime config"));
    let catalog = Arc::new(Catalog::standard());

    one_gigabyte(&rt, &services, &catalog);
    handler_overhead(&rt, &services, &catalog, if quick { 100 } else { 1000 });
    rt.block_on(services.shutdown());
    rt.block_on(concurrent_through_the_engine(200));
}

/// `n` concurrent `shell::exec {command: "true"}` calls through the loopback
/// engine against the release `ide` binary, then `n` concurrent bare spawns
/// of `true` from this process; per-call latency percentiles for both.
async fn concurrent_through_the_engine(n: usize) {
    use support::engine::LoopbackEngine;
    use support::ide_process::IdeProcess;
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(dir.path().to_path_buf());
    let seed = dir.path().join("seed.yaml");
    std::fs::write(&seed, cfg.to_value().to_string()).expect("seed");
    let engine = LoopbackEngine::start().await;
    let url = engine.url();
    let mut ide = IdeProcess::spawn(
        &["--url", &url, "--config", &seed.display().to_string()],
        &[],
    );
    assert!(
        engine
            .wait_for_function("shell::exec", Duration::from_secs(60))
            .await
            .is_some(),
        "ide did not start:\n{}",
        ide.logs()
    );
    for _ in 0..10 {
        engine
            .call("shell::exec", json!({"command": "true"}))
            .await
            .expect("warm-up call");
    }
    let started = Instant::now();
    let calls = (0..n).map(|_| {
        let engine = &engine;
        async move {
            let t = Instant::now();
            let r = engine
                .call_with_timeout(
                    "shell::exec",
                    json!({"command": "true"}),
                    Duration::from_secs(120),
                )
                .await;
            (t.elapsed(), r)
        }
    });
    let results = futures_util::future::join_all(calls).await;
    let ide_wall = started.elapsed();
    let mut ide_lat = Vec::with_capacity(n);
    let mut failed = 0;
    for (took, r) in results {
        match r {
            Ok(v) if v["exit_code"] == 0 => ide_lat.push(took),
            other => {
                failed += 1;
                eprintln!("call failed: {other:?}");
            }
        }
    }
    let started = Instant::now();
    let spawns = (0..n).map(|_| async {
        let t = Instant::now();
        let out = tokio::process::Command::new("true")
            .output()
            .await
            .expect("spawn true");
        assert!(out.status.success());
        t.elapsed()
    });
    let mut bare_lat = futures_util::future::join_all(spawns).await;
    let bare_wall = started.elapsed();
    println!(
        "{n} concurrent shell::exec {{command: \"true\"}} through the loopback engine (release ide binary):"
    );
    println!("  succeeded {} of {n}", ide_lat.len());
    println!(
        "  p50 {:>7.1} ms   p99 {:>7.1} ms   all done in {:>7.1} ms",
        ms(percentile(&mut ide_lat, 50)),
        ms(percentile(&mut ide_lat, 99)),
        ms(ide_wall)
    );
    println!(
        "  bare: {n} concurrent spawns of `true` in-process: p50 {:>7.1} ms   p99 {:>7.1} ms   all done in {:>7.1} ms",
        ms(percentile(&mut bare_lat, 50)),
        ms(percentile(&mut bare_lat, 99)),
        ms(bare_wall)
    );
    println!("  ratio (all done): {:.2}x", ms(ide_wall) / ms(bare_wall));
    assert_eq!(failed, 0, "every call must succeed");
    ide.signal_term();
    let _ = ide.wait_exit(Duration::from_secs(10)).await;
    engine.stop().await;
}

/// `shell::exec {command: "true"}` in-process against a bare
/// `std::process::Command::new("true").output()`, interleaved in rounds so
/// machine noise hits both sides alike.
fn handler_overhead(
    rt: &tokio::runtime::Runtime,
    services: &Arc<Services>,
    catalog: &Arc<Catalog>,
    iterations: usize,
) {
    let rounds = 10;
    let per_round = iterations / rounds;
    let mut ide = Vec::with_capacity(iterations);
    let mut bare = Vec::with_capacity(iterations);
    // warm up both paths
    for _ in 0..20 {
        bare_true();
        rt.block_on(ide_true(services, catalog));
    }
    for _ in 0..rounds {
        for _ in 0..per_round {
            let t = Instant::now();
            bare_true();
            bare.push(t.elapsed());
        }
        for _ in 0..per_round {
            let t = Instant::now();
            rt.block_on(ide_true(services, catalog));
            ide.push(t.elapsed());
        }
    }
    let (ide_p50, bare_p50) = (percentile(&mut ide, 50), percentile(&mut bare, 50));
    let (ide_mean, bare_mean) = (mean(&ide), mean(&bare));
    println!(
        "handler overhead: shell::exec {{command: \"true\"}} in-process vs bare Command::output() of `true`, {iterations} each"
    );
    println!(
        "  p50  ide {:>8.1} us   bare {:>8.1} us   ratio {:.2}x",
        us(ide_p50),
        us(bare_p50),
        us(ide_p50) / us(bare_p50)
    );
    println!(
        "  mean ide {:>8.1} us   bare {:>8.1} us   ratio {:.2}x",
        us(ide_mean),
        us(bare_mean),
        us(ide_mean) / us(bare_mean)
    );
    println!(
        "  p99  ide {:>8.1} us   bare {:>8.1} us",
        us(percentile(&mut ide, 99)),
        us(percentile(&mut bare, 99))
    );
}

async fn ide_true(services: &Arc<Services>, catalog: &Arc<Catalog>) {
    let v = catalog
        .call(services, "shell::exec", json!({"command": "true"}))
        .await
        .expect("shell::exec true");
    assert_eq!(v["exit_code"], 0);
}

fn bare_true() {
    let out = Command::new("true").output().expect("spawn true");
    assert!(out.status.success());
}

/// A child writing 1 GiB to stdout: wall time against the same child whose
/// output a bare reader discards, and the worker's peak RSS growth.
fn one_gigabyte(rt: &tokio::runtime::Runtime, services: &Arc<Services>, catalog: &Arc<Catalog>) {
    const GIB: &str = "1073741824";
    let cap = services.live.snapshot().config.max_output_bytes;
    // bare: read the pipe to its end, keep nothing
    let t = Instant::now();
    let mut child = Command::new("head")
        .args(["-c", GIB, "/dev/zero"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn head");
    let mut pipe = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 128 * 1024];
    let mut total = 0usize;
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("read: {e}"),
        }
    }
    child.wait().expect("wait head");
    let bare = t.elapsed();
    assert_eq!(total, 1 << 30);

    reset_peak_rss();
    let before = rss_kib("VmRSS");
    let t = Instant::now();
    let v = rt
        .block_on(catalog.call(
            services,
            "shell::exec",
            json!({"command": "head", "args": ["-c", GIB, "/dev/zero"], "timeout_ms": 120000}),
        ))
        .expect("shell::exec 1 GiB");
    let ide = t.elapsed();
    let peak = rss_kib("VmHWM");
    assert_eq!(v["stdout_truncated"], true);
    assert_eq!(v["timed_out"], false);
    let kept = v["stdout"].as_str().map(str::len).unwrap_or(0);
    drop(v);
    println!("1 GiB to stdout (max_output_bytes {cap}):");
    println!(
        "  wall ide {:>7.0} ms   bare reader {:>7.0} ms   ratio {:.2}x",
        ms(ide),
        ms(bare),
        ms(ide) / ms(bare)
    );
    match (before, peak) {
        (Some(b), Some(p)) => println!(
            "  worker RSS before {b} KiB, peak during {p} KiB: growth {} KiB = {:.2} MiB over max_output_bytes ({} bytes kept)",
            p.saturating_sub(b),
            (p.saturating_sub(b) as f64 * 1024.0 - cap as f64) / (1024.0 * 1024.0),
            kept
        ),
        _ => println!("  RSS not available on this platform"),
    }
}

/// Reset VmHWM to the current RSS (Linux: write 5 to clear_refs).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn rss_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort();
    let idx = ((samples.len() * p) / 100).min(samples.len() - 1);
    samples[idx]
}

fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / samples.len() as u32
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
