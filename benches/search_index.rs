//! `coder::search` with its content index, through the engine, against
//! ripgrep on the same tree, side by side in one run.
//!
//! ```text
//! cargo bench --bench search_index                 # loopback stand-in
//! IDE_TEST_ENGINE=/path/to/iii cargo bench --bench search_index
//! ```
//!
//! The served `ide` (jailed to the tree) answers over one long-lived
//! connection, as an agent's. The bench times: a full scan (a regex with no
//! literal) by a worker with the index off, the first search (no index
//! yet: it scans, and starts the build), the same full scan while the build
//! runs, the build (the worker's own log
//! line: files, bytes, ms) and the worker's RSS before and after, then for
//! each query kind `IDE_BENCH_REPS` (default 9) alternated repetitions of
//! ide and `rg` (whole process, same excludes as `coder::search`'s
//! defaults), and a search right after an edit (a file appended to through
//! plain I/O, then searched for the new text). `IDE_BENCH_ONLY=<text>` keeps
//! the query kinds whose label holds it. Match counts are compared:
//! ide's content matches must equal rg's matching lines.
//!
//! The tree: `IDE_BENCH_TREE`, else a copy of the local cargo registry
//! sources topped up to at least 45 000 files.

#[path = "common/search_tree.rs"]
mod search_tree;
#[path = "../tests/support/mod.rs"]
mod support;

use ide::config::Config;
use search_tree::{MAX_READ_BYTES, measure, median, ms, rg_command, run};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::harness::Engine;
use support::ide_process::IdeProcess;

const MIN_FILES: usize = 45_000;
const MIN_BYTES: u64 = 200 * 1024 * 1024;
const WAIT: Duration = Duration::from_secs(600);

struct Query {
    label: &'static str,
    pattern: &'static str,
    regex: bool,
    ignore_case: bool,
}

const QUERIES: [Query; 8] = [
    Query {
        label: "miss",
        pattern: "ZZ_NO_SUCH_IDENTIFIER_ZZ",
        regex: false,
        ignore_case: false,
    },
    Query {
        label: "rare literal",
        pattern: "fn try_reserve_exact",
        regex: false,
        ignore_case: false,
    },
    Query {
        label: "common literal",
        pattern: "TODO",
        regex: false,
        ignore_case: false,
    },
    Query {
        label: "multi-word literal",
        pattern: "impl Default for",
        regex: false,
        ignore_case: false,
    },
    Query {
        label: "regex w/ literal",
        pattern: r"fn \w+_unchecked\(",
        regex: true,
        ignore_case: false,
    },
    Query {
        label: "case-insensitive",
        pattern: "deserialize_identifier",
        regex: false,
        ignore_case: true,
    },
    Query {
        label: "regex alternatives",
        pattern: r"\b(?:shrink_to_fit|try_reserve)\(",
        regex: true,
        ignore_case: false,
    },
    // no usable fragment: every file is read, as without the index (shown,
    // not part of the target's median)
    Query {
        label: "regex, no literal",
        pattern: r"\b[A-Z]{5}_[0-9]{3}\b",
        regex: true,
        ignore_case: false,
    },
];

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn payload(pattern: &str, regex: bool, ignore_case: bool) -> Value {
    json!({
        "query": pattern,
        "regex": regex,
        "ignore_case": ignore_case,
        "search_paths": false,
        "max_matches": 10_000_000,
        "max_line_bytes": 16_777_216,
    })
}

async fn search(engine: &Engine, p: &Value) -> (Duration, usize) {
    let t = Instant::now();
    let out = engine
        .call_with_timeout("coder::search", p.clone(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("coder::search {p}: {e:?}"));
    let took = t.elapsed();
    assert_eq!(out["truncated"], false, "the benchmark must not truncate");
    (took, out["content_matches"].as_array().map_or(0, Vec::len))
}

fn rg_lines(out: &[u8]) -> usize {
    out.iter().filter(|b| **b == b'\n').count()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(bench());
}

async fn bench() {
    let reps: usize = std::env::var("IDE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9)
        .max(1);
    assert!(
        std::process::Command::new("rg")
            .arg("--version")
            .output()
            .is_ok(),
        "rg not found on PATH: install ripgrep"
    );
    let scratch = tempfile::TempDir::new().expect("temp dir");
    // IDE_BENCH_FILES: a larger tree (the scale curve)
    let min_files = std::env::var("IDE_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MIN_FILES);
    let tree = search_tree::tree(scratch.path(), min_files, MIN_BYTES);
    let (files, bytes) = measure(&tree);
    // a file changed within the window before a build is not saved (see
    // ide::index::persist): a tree copied a moment ago is all in it, and a
    // user's tree is not
    std::thread::sleep(ide::index::persist::RACY + Duration::from_millis(500));
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![tree.clone()];
    cfg.fs.max_read_bytes = MAX_READ_BYTES;
    cfg.code.search_response_budget_bytes = 4 << 30;
    // IDE_BENCH_INDEX_BYTES: another index budget (the scale curve)
    if let Some(b) = std::env::var("IDE_BENCH_INDEX_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        cfg.code.search_index_max_bytes = b;
    }
    cfg.turns.data_dir = scratch.path().join("journal");
    let seed = scratch.path().join("seed.yaml");
    std::fs::write(&seed, cfg.to_value().to_string()).expect("seed");
    // the full scan every search of a regex with no literal makes, first by
    // a worker with the index off (no build, ever), alternated with rg: what
    // a search during a build is measured against
    let scan_q = &QUERIES[QUERIES.len() - 1];
    let scan_p = payload(scan_q.pattern, scan_q.regex, scan_q.ignore_case);
    let scan_rg = || rg_command(&tree, scan_q.pattern, scan_q.regex, scan_q.ignore_case);
    let (mut unindexed_ide, mut unindexed_rg) = (Vec::new(), Vec::new());
    {
        let mut off = cfg.clone();
        off.code.search_index_max_bytes = 0;
        let seed = scratch.path().join("seed-off.yaml");
        std::fs::write(&seed, off.to_value().to_string()).expect("seed");
        let engine = Engine::start().await;
        let url = engine.url();
        let seed = seed.display().to_string();
        let ide = IdeProcess::spawn(&["--url", url.as_str(), "--config", seed.as_str()], &[]);
        assert!(
            engine
                .wait_for_function("coder::search", Duration::from_secs(60))
                .await
                .is_some(),
            "ide did not start:\n{}",
            ide.logs()
        );
        search(&engine, &scan_p).await;
        for _ in 0..reps {
            unindexed_ide.push(search(&engine, &scan_p).await.0);
            unindexed_rg.push(run(&mut scan_rg()).0);
        }
        drop(ide);
        engine.stop().await;
    }
    let engine = Engine::start().await;
    let url = engine.url();
    let log = std::env::var("RUST_LOG").unwrap_or_else(|_| "ide=info".into());
    let seed_arg = seed.display().to_string();
    let args = ["--url", url.as_str(), "--config", seed_arg.as_str()];
    let mut ide = IdeProcess::spawn(&args, &[("RUST_LOG", &log)]);
    assert!(
        engine
            .wait_for_function("coder::search", Duration::from_secs(60))
            .await
            .is_some(),
        "ide did not start:\n{}",
        ide.logs()
    );
    let pid = ide.pid().expect("ide runs");
    println!(
        "tree: {files} files, {:.0} MB; engine: {}; {reps} alternated repetitions per query\n",
        bytes as f64 / 1e6,
        if engine.is_real() {
            "real iii"
        } else {
            "loopback stand-in"
        }
    );
    let rss_before = rss_mb(pid);

    // the first search: no index yet (it scans, and starts the build)
    let first = payload(QUERIES[1].pattern, false, false);
    let (t_first, _) = search(&engine, &first).await;
    let build_started = Instant::now();
    // while the build runs: the scan that cannot use any index (a regex
    // with no literal), alternated with rg — what a build costs a search
    let (mut during_ide, mut during_rg) = (Vec::new(), Vec::new());
    let built = loop {
        let logs = ide.logs();
        if let Some(line) = logs.lines().find(|l| l.contains("search index built")) {
            break line.to_string();
        }
        if during_ide.len() < reps {
            during_ide.push(search(&engine, &scan_p).await.0);
            during_rg.push(run(&mut scan_rg()).0);
            continue;
        }
        assert!(
            build_started.elapsed() < WAIT,
            "no index after {WAIT:?}:\n{logs}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // the log's fields, without the terminal colours
    let plain: String = {
        let mut out = String::new();
        let mut esc = false;
        for c in built.chars() {
            match (esc, c) {
                (false, '\u{1b}') => esc = true,
                (true, 'm') => esc = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    };
    let field = |name: &str| {
        plain
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or("?")
            .to_string()
    };
    let rss_after = rss_mb(pid);
    // the same scan with no build running, alternated with rg again
    let (mut after_ide, mut after_rg) = (Vec::new(), Vec::new());
    for _ in 0..during_ide.len() {
        after_ide.push(search(&engine, &scan_p).await.0);
        after_rg.push(run(&mut scan_rg()).0);
    }
    println!(
        "first search (scan, starts the build): {:.1} ms\nbuild: {} ms, {} files filtered, {:.1} MB held (log); worker RSS {rss_before:.1} -> {rss_after:.1} MB\n",
        ms(t_first),
        field("ms"),
        field("files"),
        field("bytes").parse::<f64>().unwrap_or(0.0) / 1e6,
    );
    if !during_ide.is_empty() {
        let (di, dr) = (median(&mut during_ide), median(&mut during_rg));
        let (ui, ur) = (median(&mut unindexed_ide), median(&mut unindexed_rg));
        let (ai, ar) = (median(&mut after_ide), median(&mut after_rg));
        let during = di.as_secs_f64() / dr.as_secs_f64();
        let unindexed = ui.as_secs_f64() / ur.as_secs_f64();
        let after = ai.as_secs_f64() / ar.as_secs_f64();
        println!(
            "a full scan ({:?}), each alternated with rg:\n  while the build ran: {:.1} ms (rg {:.1} ms, ide/rg {during:.2}, {} runs)\n  with the index off (no build): {:.1} ms (rg {:.1} ms, ide/rg {unindexed:.2}, {} runs)\n  with the index ready: {:.1} ms (rg {:.1} ms, ide/rg {after:.2})\n  during the build / index off: {:.2}x (target <= 1.1x); during / index ready: {:.2}x\n",
            scan_q.label,
            ms(di),
            ms(dr),
            during_ide.len(),
            ms(ui),
            ms(ur),
            unindexed_ide.len(),
            ms(ai),
            ms(ar),
            during / unindexed,
            during / after,
        );
    } else {
        println!("the build ended before a search could run beside it\n");
    }
    println!(
        "{:<20} {:>9} {:>9} {:>10} {:>10} {:>9}",
        "query", "ide hits", "rg hits", "ide ms", "rg ms", "rg/ide"
    );
    let mut speedups = Vec::new();
    // IDE_BENCH_ONLY=<label part>: only the query kinds whose label has it
    let only = std::env::var("IDE_BENCH_ONLY").unwrap_or_default();
    for q in QUERIES.iter().filter(|q| q.label.contains(only.as_str())) {
        let p = payload(q.pattern, q.regex, q.ignore_case);
        let rg = || rg_command(&tree, q.pattern, q.regex, q.ignore_case);
        let (_, ide_hits) = search(&engine, &p).await;
        let rg_hits = rg_lines(&run(&mut rg()).1);
        let (mut ide_t, mut rg_t) = (Vec::new(), Vec::new());
        for rep in 0..reps {
            if rep % 2 == 0 {
                ide_t.push(search(&engine, &p).await.0);
                rg_t.push(run(&mut rg()).0);
            } else {
                rg_t.push(run(&mut rg()).0);
                ide_t.push(search(&engine, &p).await.0);
            }
        }
        let (i, r) = (median(&mut ide_t), median(&mut rg_t));
        let speedup = r.as_secs_f64() / i.as_secs_f64();
        if q.label != "regex, no literal" {
            speedups.push(speedup);
        }
        println!(
            "{:<20} {:>9} {:>9} {:>10.2} {:>10.1} {:>8.1}x{}",
            q.label,
            ide_hits,
            rg_hits,
            ms(i),
            ms(r),
            speedup,
            if ide_hits == rg_hits {
                ""
            } else {
                "  (hits differ!)"
            }
        );
    }

    // a restart: the worker stops (SIGTERM, as an upgrade or a compose
    // restart does) and a new one starts on the same configuration; its
    // saved index comes back as it starts, checked against the tree
    ide.signal_term();
    assert!(
        ide.wait_exit(Duration::from_secs(60)).await.is_some(),
        "the worker did not stop"
    );
    if std::env::var_os("IDE_BENCH_LOGS").is_some() {
        println!("the first worker's log:\n{}", ide.logs());
    }
    let started = Instant::now();
    ide = IdeProcess::spawn(&args, &[("RUST_LOG", &log)]);
    assert!(
        ide.wait_for_log("search index built", WAIT).await,
        "no index after the restart:\n{}",
        ide.logs()
    );
    let ready = started.elapsed();
    let line = ide
        .logs()
        .lines()
        .find(|l| l.contains("search index built"))
        .unwrap_or_default()
        .to_string();
    let miss = payload(QUERIES[0].pattern, false, false);
    let (t_miss, _) = search(&engine, &miss).await;
    let answered = started.elapsed();
    println!(
        "\nrestart: index ready {:.0} ms after the new worker started ({} of {} files' filters reused, {} ms in its build thread; the first build took {} ms); the first search after it (a miss) {:.1} ms, answered {:.0} ms after the start (target <= 2000 ms)",
        ms(ready),
        log_field(&line, "reused"),
        log_field(&line, "files"),
        log_field(&line, "ms"),
        field("ms"),
        ms(t_miss),
        ms(answered),
    );
    if let Ok(dir) = std::fs::read_dir(scratch.path().join("journal/search-index")) {
        for e in dir.flatten() {
            let size = e.metadata().map_or(0, |m| m.len());
            println!(
                "saved index: {:.1} MB on disk, {:.0} bytes per file of the tree",
                size as f64 / 1e6,
                size as f64 / files as f64
            );
        }
    }

    // right after an edit by another process: the next search sees it (on
    // the bench's own copy only: a tree the caller named is never written)
    if std::env::var_os("IDE_BENCH_TREE").is_some() {
        println!("\nsearch right after an edit: skipped (IDE_BENCH_TREE is never written to)");
        finish(&speedups, ide, engine).await;
        return;
    }
    let victim = walk_first_rs(&tree).expect("a .rs file in the tree");
    let mut after_edit = Vec::new();
    for rep in 0..reps {
        let token = format!("ZZ_FRESH_EDIT_{rep}_ZZ");
        let mut body = std::fs::read(&victim).expect("read");
        body.extend_from_slice(format!("\n// {token}\n").as_bytes());
        std::fs::write(&victim, &body).expect("edit");
        let (t, hits) = search(&engine, &payload(&token, false, false)).await;
        assert_eq!(hits, 1, "the search right after the edit must find it");
        after_edit.push(t);
    }
    println!(
        "\nsearch right after an edit (plain write, then the search for the new text): median {:.2} ms, found every time",
        ms(median(&mut after_edit))
    );
    finish(&speedups, ide, engine).await;
}

/// The value of `name=` in a log line.
fn log_field(line: &str, name: &str) -> String {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .unwrap_or("?")
        .to_string()
}

async fn finish(speedups: &[f64], ide: IdeProcess, engine: Engine) {
    let mut s = speedups.to_vec();
    s.sort_by(f64::total_cmp);
    if !s.is_empty() {
        println!(
            "rg/ide over the {} query kinds with a literal fragment: worst {:.1}x, median {:.1}x, best {:.1}x (target: each >= 5x, median >= 15x)",
            s.len(),
            s[0],
            s[s.len() / 2],
            s[s.len() - 1]
        );
    }
    if std::env::var_os("IDE_BENCH_LOGS").is_some() {
        println!("the restarted worker's log:\n{}", ide.logs());
    }
    drop(ide);
    engine.stop().await;
}

fn walk_first_rs(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in &entries {
        if p.is_file() && p.extension().is_some_and(|e| e == "rs" || e == "py") {
            return Some(p.clone());
        }
    }
    entries
        .iter()
        .filter(|p| p.is_dir() && !p.ends_with(".git"))
        .find_map(|p| walk_first_rs(p))
}
