//! Side-by-side timings for the exec surface (plain timing loops).
//!
//! Run: `cargo bench --bench exec` (add `-- quick` for fewer iterations).
//! Each section measures ide and a bare baseline in the same run and prints
//! the ratio; BENCHMARKS-exec.md records the results.

use ide::catalog::{Catalog, Services};
use ide::config::Config;
use ide::runtime::Runtime;
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
