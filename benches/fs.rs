//! Side-by-side benchmarks of `shell::fs::*` against their natural
//! baselines, in one run so machine noise hits both sides alike:
//!
//! - `shell::fs::read` and `shell::fs::write` of a 1 GiB file through engine
//!   channels on the loopback engine (the real `ide` binary, over the bus),
//!   and a channel copy (read's channel piped into write's), against `cp` of
//!   the same file; plus the worker's peak RSS (VmHWM) after a 64 MiB pass
//!   and after the 1 GiB passes (target: constant, under 64 MiB);
//! - `shell::fs::grep` against `rg -uu` on a copy of ~/.cargo/registry/src.
//!
//! Run: `cargo bench --bench fs` (`FS_BENCH_MB` sets the file size, default
//! 1024; `FS_BENCH_DIR` where the temp files go, default the system temp
//! dir; `FS_BENCH_TREE` the tree to grep). Everything is created in a temp
//! dir and deleted at the end. Results are summarized in BENCHMARKS-fs.md.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iii_sdk::channel::{ChannelReader, ChannelWriter, StreamChannelRef};
use iii_sdk::helpers::ChannelDirection;
use serde_json::{Value, json};
use support::engine::LoopbackEngine;
use support::ide_process::IdeProcess;
use tokio::io::AsyncReadExt;

const RUNS: usize = 3;
const CALL: Duration = Duration::from_secs(900);
const CHUNK: usize = 1 << 20;
const GREP_PATTERN: &str = r"fn\s+new\s*\(";

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn mib_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1u64 << 20) as f64 / d.as_secs_f64()
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn channel_ref(v: &Value) -> StreamChannelRef {
    StreamChannelRef {
        channel_id: v["channel_id"].as_str().unwrap().to_string(),
        access_key: v["access_key"].as_str().unwrap().to_string(),
        direction: match v["direction"].as_str() {
            Some("write") => ChannelDirection::Write,
            _ => ChannelDirection::Read,
        },
    }
}

fn make_file(path: &Path, mib: usize) {
    use std::io::Write;
    let mut block = vec![0u8; CHUNK];
    for (i, b) in block.iter_mut().enumerate() {
        *b = (i.wrapping_mul(2_654_435_761) >> 13) as u8;
    }
    let mut f = std::fs::File::create(path).unwrap();
    for i in 0..mib {
        block[0] = i as u8;
        f.write_all(&block).unwrap();
    }
    f.sync_all().unwrap();
}

struct Bench {
    engine: LoopbackEngine,
    url: String,
}

impl Bench {
    async fn call(&self, id: &str, payload: Value) -> Value {
        self.engine
            .call_with_timeout(id, payload.clone(), CALL)
            .await
            .unwrap_or_else(|e| panic!("{id} {payload}: {e:?}"))
    }

    /// `shell::fs::read`, the channel drained by this process.
    async fn read(&self, rel: &str) -> (Duration, u64) {
        let start = Instant::now();
        let r = self.call("shell::fs::read", json!({"path": rel})).await;
        let reader = ChannelReader::new(&self.url, &channel_ref(&r["content"]));
        let mut n = 0u64;
        while let Some(chunk) = reader.next_binary().await.unwrap() {
            n += chunk.len() as u64;
        }
        assert_eq!(n, r["size"].as_u64().unwrap());
        (start.elapsed(), n)
    }

    /// `shell::fs::write` fed from `src` through a channel this process writes.
    async fn write(&self, src: &Path, rel: &str) -> (Duration, u64) {
        let start = Instant::now();
        let refs = self.call("engine::channels::create", json!({})).await;
        let writer = ChannelWriter::new(&self.url, &channel_ref(&refs["writer"]));
        let src = src.to_path_buf();
        let feed = tokio::spawn(async move {
            let mut f = tokio::fs::File::open(src).await.unwrap();
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = f.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                writer.write(&buf[..n]).await.unwrap();
            }
            writer.close().await.unwrap();
        });
        let r = self
            .call(
                "shell::fs::write",
                json!({"path": rel, "content": refs["reader"]}),
            )
            .await;
        feed.await.unwrap();
        (start.elapsed(), r["bytes_written"].as_u64().unwrap())
    }

    /// read's channel piped into write's channel: a copy through the worker.
    async fn copy(&self, from: &str, to: &str) -> (Duration, u64) {
        let start = Instant::now();
        let r = self.call("shell::fs::read", json!({"path": from})).await;
        let reader = ChannelReader::new(&self.url, &channel_ref(&r["content"]));
        let refs = self.call("engine::channels::create", json!({})).await;
        let writer = ChannelWriter::new(&self.url, &channel_ref(&refs["writer"]));
        let pipe = tokio::spawn(async move {
            while let Some(chunk) = reader.next_binary().await.unwrap() {
                writer.write(&chunk).await.unwrap();
            }
            writer.close().await.unwrap();
        });
        let w = self
            .call(
                "shell::fs::write",
                json!({"path": to, "content": refs["reader"]}),
            )
            .await;
        pipe.await.unwrap();
        (start.elapsed(), w["bytes_written"].as_u64().unwrap())
    }
}

fn cp(src: &Path, dst: &Path) -> Duration {
    let start = Instant::now();
    let ok = Command::new("cp")
        .arg(src)
        .arg(dst)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    start.elapsed()
}

fn main() {
    let mib: usize = std::env::var("FS_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let base = std::env::var("FS_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let dir = tempfile::TempDir::new_in(base).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(&root, mib));
    drop(dir);
}

async fn run(root: &Path, mib: usize) {
    let cfg = root.join("bench-config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "fs:\n  host_roots: [{}]\n  allow_unjailed: false\n  max_read_bytes: 0\n  max_write_bytes: 0\n",
            root.display()
        ),
    )
    .unwrap();
    let engine = LoopbackEngine::start().await;
    let url = engine.url();
    let ide = IdeProcess::spawn(
        &["--url", &url, "--config", cfg.to_str().unwrap()],
        &[("RUST_LOG", "warn")],
    );
    assert!(
        engine
            .wait_for_function("shell::fs::grep", Duration::from_secs(30))
            .await
            .is_some()
    );
    let pid = ide.pid().unwrap();
    let b = Bench { engine, url };
    let (_, hwm_idle) = rss_kib(pid);

    // A small pass first: the peak after it vs after 1 GiB shows whether
    // memory grows with the file.
    make_file(&root.join("small.bin"), 64);
    b.read("small.bin").await;
    b.write(&root.join("small.bin"), "small.out").await;
    b.copy("small.bin", "small.copy").await;
    let (_, hwm_small) = rss_kib(pid);

    let src = root.join("src.bin");
    make_file(&src, mib);
    let bytes = (mib as u64) << 20;
    // warm the page cache for every side
    Command::new("cat")
        .arg(&src)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let (mut t_cp, mut t_read, mut t_write, mut t_copy) = (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        let dst = root.join("cp.out");
        t_cp.push(cp(&src, &dst));
        std::fs::remove_file(&dst).unwrap();
        let (t, n) = b.read("src.bin").await;
        assert_eq!(n, bytes);
        t_read.push(t);
        let (t, n) = b.write(&src, "w.out").await;
        assert_eq!(n, bytes);
        t_write.push(t);
        std::fs::remove_file(root.join("w.out")).unwrap();
        let (t, n) = b.copy("src.bin", "c.out").await;
        assert_eq!(n, bytes);
        t_copy.push(t);
        std::fs::remove_file(root.join("c.out")).unwrap();
    }
    let (rss_big, hwm_big) = rss_kib(pid);
    std::fs::remove_file(&src).unwrap();
    let (cp_m, read_m, write_m, copy_m) = (
        median(t_cp),
        median(t_read),
        median(t_write),
        median(t_copy),
    );
    println!("== shell::fs::read / write through channels, {mib} MiB, median of {RUNS} ==");
    println!(
        "cp                      {:>8.3}s {:>8.1} MiB/s",
        cp_m.as_secs_f64(),
        mib_s(bytes, cp_m)
    );
    for (name, t) in [
        ("shell::fs::read", read_m),
        ("shell::fs::write", write_m),
        ("read -> write (copy)", copy_m),
    ] {
        println!(
            "{name:<23} {:>8.3}s {:>8.1} MiB/s  throughput vs cp {:.2}x",
            t.as_secs_f64(),
            mib_s(bytes, t),
            cp_m.as_secs_f64() / t.as_secs_f64()
        );
    }
    println!(
        "ide peak RSS (VmHWM): idle {:.1} MiB, after 64 MiB pass {:.1} MiB, after {mib} MiB passes {:.1} MiB (VmRSS now {:.1} MiB)",
        hwm_idle as f64 / 1024.0,
        hwm_small as f64 / 1024.0,
        hwm_big as f64 / 1024.0,
        rss_big as f64 / 1024.0
    );

    // --- grep vs rg ---------------------------------------------------------
    let source = std::env::var("FS_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/registry/src")
        });
    if !source.is_dir()
        || Command::new("rg")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
    {
        println!(
            "grep vs rg skipped: need rg and the tree {}",
            source.display()
        );
        return;
    }
    let tree = root.join("tree");
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(&source)
            .arg(&tree)
            .status()
            .unwrap()
            .success()
    );
    let rg = || {
        let start = Instant::now();
        let out = Command::new("rg")
            .args(["-uu", "-n", "--no-heading", "-e", GREP_PATTERN])
            .arg(&tree)
            .stderr(Stdio::null())
            .output()
            .unwrap();
        (
            start.elapsed(),
            out.stdout.iter().filter(|c| **c == b'\n').count(),
        )
    };
    rg();
    let (mut t_rg, mut t_grep) = (vec![], vec![]);
    let (mut n_rg, mut n_grep) = (0, 0);
    for _ in 0..RUNS {
        let (t, n) = rg();
        t_rg.push(t);
        n_rg = n;
        let start = Instant::now();
        let r = b
            .call(
                "shell::fs::grep",
                json!({"path": "tree", "pattern": GREP_PATTERN, "max_matches": 10_000_000u64, "max_line_bytes": 100_000_000u64}),
            )
            .await;
        t_grep.push(start.elapsed());
        n_grep = r["matches"].as_array().unwrap().len();
    }
    let (_, hwm_grep) = rss_kib(pid);
    let (rg_m, grep_m) = (median(t_rg), median(t_grep));
    println!(
        "== shell::fs::grep vs rg -uu on {} (copy), pattern {GREP_PATTERN:?}, median of {RUNS} ==",
        source.display()
    );
    println!(
        "rg               {:>8.3}s  {n_rg} matches",
        rg_m.as_secs_f64()
    );
    println!(
        "shell::fs::grep  {:>8.3}s  {n_grep} matches  time vs rg {:.2}x",
        grep_m.as_secs_f64(),
        grep_m.as_secs_f64() / rg_m.as_secs_f64()
    );
    println!(
        "ide peak RSS after grep (VmHWM) {:.1} MiB",
        hwm_grep as f64 / 1024.0
    );
    drop(ide);
}
