//! Side-by-side benchmarks of the coder surface against its natural
//! baselines, run in one process so machine noise hits both sides alike.
//!
//! - windowed `coder::read-file` near the end of a 1 GiB file vs
//!   `sed -n 'A,Bp'` (wall time ratio), and the worker's peak RSS growth
//!   over an idle `ide call` (target < 32 MiB);
//! - `coder::tree` on a folder of 100k entries (node budget, wall time).
//!
//! Run: `cargo bench --bench coder` (set `IDE_BENCH_GIB` to change the file
//! size). Results are summarized in BENCHMARKS.md.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const IDE: &str = env!("CARGO_BIN_EXE_ide");
const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Wall time and peak RSS (KiB) of one child process.
fn run(cmd: &mut Command) -> (Duration, i64, Vec<u8>) {
    let start = Instant::now();
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .expect("spawn");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    (took, usage.max_rss(), out.stdout)
}

fn ide_call(config: &Path, function: &str, payload: &str) -> Command {
    let mut c = Command::new(IDE);
    c.arg("--config")
        .arg(config)
        .args(["call", function, payload]);
    c
}

fn main() {
    let gib: f64 = std::env::var("IDE_BENCH_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().unwrap();
    let config = root.join("bench-config.yaml");
    std::fs::write(
        &config,
        format!("fs:\n  host_roots: [{}]\n", root.display()),
    )
    .unwrap();

    // --- 1 GiB file of 100-byte lines -------------------------------------
    let big = root.join("big.txt");
    let line_len = 100usize;
    let lines = ((gib * (1u64 << 30) as f64) as usize) / line_len;
    {
        let mut f =
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&big).unwrap());
        let pad = "x".repeat(line_len - 12);
        for i in 1..=lines {
            writeln!(f, "{i:010} {pad}").unwrap();
        }
    }
    let (a, b) = (lines - 100, lines - 50);
    let sed_arg = format!("{a},{b}p");
    let payload = format!(r#"{{"path": "big.txt", "line_from": {a}, "line_to": {b}}}"#);
    // warm the page cache for both sides
    run(Command::new("sed").args(["-n", &sed_arg]).arg(&big));
    let (_, idle_rss, _) = run(&mut ide_call(&config, "coder::info", "{}"));
    let mut ide_times = Vec::new();
    let mut sed_times = Vec::new();
    let mut ide_rss = 0;
    for _ in 0..RUNS {
        let (t, rss, out) = run(&mut ide_call(&config, "coder::read-file", &payload));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["lines_returned"], 51);
        ide_times.push(t);
        ide_rss = ide_rss.max(rss);
        let (t, _, out) = run(Command::new("sed").args(["-n", &sed_arg]).arg(&big));
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 51);
        sed_times.push(t);
    }
    let (ide_m, sed_m) = (median(ide_times), median(sed_times));
    println!(
        "windowed read, lines {a}..={b} of a {gib} GiB file ({lines} lines):\n  \
         ide call coder::read-file  median {:>8.1} ms\n  sed -n '{sed_arg}'  median {:>8.1} ms\n  \
         ratio ide/sed = {:.2}x\n  peak RSS: ide call (window) {} KiB, ide call (coder::info) {} KiB, growth {} KiB",
        ide_m.as_secs_f64() * 1e3,
        sed_m.as_secs_f64() * 1e3,
        ide_m.as_secs_f64() / sed_m.as_secs_f64(),
        ide_rss,
        idle_rss,
        ide_rss - idle_rss
    );
    std::fs::remove_file(&big).unwrap();

    // --- coder::tree on 100k entries -------------------------------------
    let huge = root.join("huge");
    std::fs::create_dir(&huge).unwrap();
    for i in 0..100_000 {
        std::fs::File::create(huge.join(format!("f{i:06}"))).unwrap();
    }
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let (t, _, out) = run(&mut ide_call(&config, "coder::tree", r#"{"path": "huge"}"#));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["root"]["truncated"]["total"], 100_000);
        assert!(v["nodes"].as_u64().unwrap() <= 2000);
        times.push(t);
    }
    let (t, _, _) = run(Command::new("ls").arg("-f").arg(&huge));
    println!(
        "coder::tree on a folder of 100k entries: median {:.1} ms (ls -f of the same folder: {:.1} ms)",
        median(times).as_secs_f64() * 1e3,
        t.as_secs_f64() * 1e3
    );
}
