//! `shell::changed` benchmarks, side by side with their baselines in one run:
//!
//! - change → event latency through the loopback engine (the real `ide`
//!   binary, a subscriber worker), p50/p99 over single-file writes, against
//!   the 200 ms window;
//! - a burst of 10 000 file creations: fires and `rescan`s counted, the
//!   worker's peak RSS (VmHWM) before and after, with the default cap (1000
//!   paths per window) and with a cap above the burst (every file once);
//! - setting up the watches of a 100k-file tree whose bulk is ignored
//!   `node_modules`/`target`: watches installed, setup time against a
//!   plain recursive `read_dir` walk of the same tree.
//!
//! Run: `cargo bench --bench watch`. Results are summarized in BENCHMARKS.md.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iii_sdk::{Error as SdkError, RegisterFunction};
use serde_json::{Value, json};
use support::engine::{LoopbackEngine, connect_worker, unique_name};
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(60);

fn rss_kib(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct World {
    engine: LoopbackEngine,
    ide: IdeProcess,
    root: PathBuf,
    rx: mpsc::UnboundedReceiver<(Value, Instant)>,
    _client: iii_sdk::IIIClient,
    _dir: tempfile::TempDir,
}

async fn start(cap: u64) -> World {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("w")).unwrap();
    let cfg = root.join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "fs:\n  host_roots: [{}]\n  allow_unjailed: false\nwatch:\n  max_paths_per_window: {cap}\n",
            root.display()
        ),
    )
    .unwrap();
    let engine = LoopbackEngine::start().await;
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", cfg.to_str().unwrap()],
        &[("RUST_LOG", "info")],
    );
    assert!(engine.wait_for_trigger_type("shell::changed", WAIT).await);
    let (tx, rx) = mpsc::unbounded_channel();
    let client = connect_worker(&engine.url(), &unique_name("bench-sub"));
    client.register_function(
        "bench::changed",
        RegisterFunction::new_async(move |input: Value| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((input, Instant::now()));
                Ok::<Value, SdkError>(json!({}))
            }
        }),
    );
    assert!(
        engine
            .wait_for_function("bench::changed", WAIT)
            .await
            .is_some()
    );
    let id = engine.register_trigger(
        "shell::changed",
        "bench::changed",
        json!({"path": root.join("w").display().to_string()}),
        None,
    );
    assert!(
        ide.wait_for_log(&format!("trigger binding held: {id}"), WAIT)
            .await
    );
    World {
        engine,
        ide,
        root,
        rx,
        _client: client,
        _dir: dir,
    }
}

async fn latency() {
    let mut w = start(1000).await;
    let mut lat = Vec::new();
    for i in 0..60 {
        let name = format!("f{i}");
        let t = Instant::now();
        std::fs::write(w.root.join("w").join(&name), "x").unwrap();
        loop {
            let (e, at) = tokio::time::timeout(WAIT, w.rx.recv())
                .await
                .unwrap()
                .unwrap();
            if e["path"] == name.as_str() {
                lat.push(at - t);
                break;
            }
        }
        // an isolated change each time, not one window for all
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    lat.sort();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "latency over {} single-file writes: p50 {:.1} ms, p99 {:.1} ms, min {:.1} ms (window 200 ms; p50/window {:.3})",
        lat.len(),
        p(0.5).as_secs_f64() * 1e3,
        p(0.99).as_secs_f64() * 1e3,
        lat[0].as_secs_f64() * 1e3,
        p(0.5).as_secs_f64() / 0.2
    );
    w.engine.stop().await;
    drop(w.ide);
}

async fn burst(cap: u64) {
    let mut w = start(cap).await;
    let pid = w.ide.pid().unwrap();
    let (_, hwm0) = rss_kib(pid);
    let t = Instant::now();
    for i in 0..10_000 {
        std::fs::write(w.root.join("w").join(format!("f{i:05}")), "x").unwrap();
    }
    let wrote = t.elapsed();
    let mut seen: HashSet<String> = HashSet::new();
    let (mut fires, mut rescans, mut dups) = (0usize, 0usize, 0usize);
    let deadline = Instant::now() + WAIT;
    loop {
        match tokio::time::timeout(Duration::from_millis(800), w.rx.recv()).await {
            Ok(Some((e, _))) => {
                fires += 1;
                if e["kind"] == "rescan" {
                    rescans += 1;
                } else if !seen.insert(e["path"].as_str().unwrap().to_string()) {
                    dups += 1;
                }
            }
            _ => break,
        }
        if Instant::now() > deadline {
            break;
        }
    }
    let (_, hwm1) = rss_kib(pid);
    println!(
        "burst of 10000 creations (written in {:.0} ms), cap {cap}: {fires} fires, {} distinct paths, {dups} duplicates, {rescans} rescans; ide VmHWM {:.1} -> {:.1} MiB",
        wrote.as_secs_f64() * 1e3,
        seen.len(),
        hwm0 as f64 / 1024.0,
        hwm1 as f64 / 1024.0
    );
    w.engine.stop().await;
    drop(w.ide);
}

fn make_tree(root: &Path) -> usize {
    let mut n = 0;
    let mut files = |dir: PathBuf, count: usize| {
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..count {
            std::fs::write(dir.join(format!("f{i}")), "").unwrap();
        }
        n += count;
    };
    std::fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\nnode_modules/\n").unwrap();
    for d in 0..50 {
        files(root.join(format!("src/m{d}")), 20);
    }
    for d in 0..600 {
        files(
            root.join(format!("node_modules/p{}/lib{}", d / 10, d % 10)),
            100,
        );
    }
    for d in 0..390 {
        files(root.join(format!("target/debug/deps{d}")), 100);
    }
    n
}

fn plain_walk(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            n += 1;
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    n
}

fn setup() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let files = make_tree(&root);
    let mut cfg = ide::config::Config::zero_config();
    cfg.fs.host_roots = vec![root.clone()];
    cfg.fs.allow_unjailed = false;
    let live = Arc::new(ide::runtime::LiveRuntime::new(
        ide::runtime::Runtime::build(cfg).unwrap(),
    ));
    let loc = live
        .snapshot()
        .policy
        .resolve_existing(
            &root.display().to_string(),
            ide::error::Surface::Coder,
            ide::policy::Tail::Follow,
            None,
        )
        .unwrap()
        .loc()
        .clone();
    // warm the dentry cache for both sides
    let entries = plain_walk(&root);
    let mut walks = Vec::new();
    let mut setups = Vec::new();
    let mut watched = 0;
    for _ in 0..5 {
        let t = Instant::now();
        plain_walk(&root);
        walks.push(t.elapsed());
        let t = Instant::now();
        let feed = ide::watch::feed::Feed::new(
            Box::new(ide::watch::source::Inotify::new().unwrap()),
            ide::watch::feed::Setup {
                loc: loc.clone(),
                include_ignored: false,
                cap: 1000,
                marks: Default::default(),
            },
            live.clone(),
        );
        setups.push(t.elapsed());
        watched = feed.watched();
    }
    walks.sort();
    setups.sort();
    let total_dirs = 1 + 3 + 50 + 1 + 60 + 600 + 2 + 390;
    println!(
        "setup on {files} files / {entries} entries ({total_dirs} dirs incl. .git): {watched} watches; setup median {:.2} ms vs plain read_dir walk median {:.2} ms ({:.2}x)",
        setups[2].as_secs_f64() * 1e3,
        walks[2].as_secs_f64() * 1e3,
        setups[2].as_secs_f64() / walks[2].as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    setup();
    latency().await;
    burst(1000).await;
    burst(20_000).await;
}
