//! Code intelligence, measured side by side with its natural baselines in
//! one run:
//!
//! - the outline of a ~5 000-line file in process, against tree-sitter's
//!   own parse of it;
//! - the per-file work of the symbol index (parse, definitions query,
//!   identifiers) against tree-sitter's parse alone, over every Rust and
//!   Python file of the tree, one core, in MB/s;
//! - through a served `ide` (loopback stand-in, or `IDE_TEST_ENGINE`): the
//!   content index build and the symbol index build (the worker's log
//!   lines), `ctags -R` over the same tree, `coder::find-symbol` p50,
//!   `coder::references` for a rare identifier against `coder::search` for
//!   that word, `coder::map`, and a restart (the saved symbol index).
//!
//! ```text
//! cargo bench --bench code
//! ```
//!
//! The tree: `IDE_BENCH_TREE`, else a copy of the local cargo registry
//! sources topped up to `IDE_BENCH_FILES` files (default 90 000).
//! `IDE_BENCH_REPS` repetitions (default 9).

#[path = "common/search_tree.rs"]
mod search_tree;
#[path = "../tests/support/mod.rs"]
mod support;

use ide::code::{lang, outline};
use ide::config::Config;
use search_tree::{MAX_READ_BYTES, measure, median, ms};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::harness::Engine;
use support::ide_process::IdeProcess;

const WAIT: Duration = Duration::from_secs(1800);
/// Bytes of each language's files the one-core comparison parses.
const SAMPLE_BYTES: usize = 64 << 20;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(bench());
}

/// Every regular file under `dir` (no links followed, the default
/// excludes' names skipped).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let name = e.file_name();
        if search_tree::EXCLUDED_NAMES.iter().any(|x| name == *x) {
            continue;
        }
        if ft.is_dir() {
            files(&e.path(), out);
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

fn lang_of(p: &Path) -> Option<&'static lang::Compiled> {
    lang::detect(p, None)
}

fn time<R>(f: impl FnOnce() -> R) -> (Duration, R) {
    let t = Instant::now();
    let r = f();
    (t.elapsed(), r)
}

/// A number a log line carries (`key=123`).
fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        .unwrap_or(0)
}

async fn wait_log(ide: &IdeProcess, needle: &str, from: usize) -> String {
    assert!(
        ide.wait_for_log_from(from, needle, WAIT).await,
        "no {needle:?} in the log:\n{}",
        ide.logs()
    );
    let logs = ide.logs();
    logs[from..]
        .lines()
        .find(|l| l.contains(needle))
        .expect("found")
        .to_string()
}

async fn call(engine: &Engine, id: &str, p: Value) -> (Duration, Value) {
    let t = Instant::now();
    let out = engine
        .call_with_timeout(id, p.clone(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("{id} {p}: {e:?}"));
    (t.elapsed(), out)
}

async fn bench() {
    let reps: usize = std::env::var("IDE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9)
        .max(1);
    let scratch = tempfile::TempDir::new().expect("temp dir");
    let min_files = std::env::var("IDE_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(90_000);
    let tree = search_tree::tree(scratch.path(), min_files, 200 * 1024 * 1024);
    let (n_files, n_bytes) = measure(&tree);
    let mut all = Vec::new();
    files(&tree, &mut all);
    let sources: Vec<&PathBuf> = all.iter().filter(|p| lang_of(p).is_some()).collect();
    let source_bytes: u64 = sources
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "tree: {n_files} files, {:.0} MB; {} source files in ide's languages, {:.0} MB\n",
        n_bytes as f64 / 1e6,
        sources.len(),
        source_bytes as f64 / 1e6
    );

    // A. the outline of a ~5 000-line file, in process
    let big = sources
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| {
            let b = std::fs::read(p).ok()?;
            let lines = b.iter().filter(|c| **c == b'\n').count();
            Some((lines.abs_diff(5000), p, b, lines))
        })
        .min_by_key(|x| x.0)
        .expect("a Rust file");
    let (_, big_path, big_bytes, big_lines) = big;
    let l = lang_of(big_path).unwrap();
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&l.language).unwrap();
    let (mut t_parse, mut t_outline) = (Vec::new(), Vec::new());
    let mut count = 0;
    for _ in 0..(reps * 3) {
        t_parse.push(time(|| parser.parse(&big_bytes, None).unwrap()).0);
        let (d, o) = time(|| outline::outline(l, &big_bytes).unwrap());
        count = o.syms.len();
        t_outline.push(d);
    }
    let (p, o) = (median(&mut t_parse), median(&mut t_outline));
    println!(
        "outline of {} ({big_lines} lines, {} KB, {count} symbols): {:.2} ms; tree-sitter's parse \
         alone {:.2} ms; ratio {:.2}",
        big_path.strip_prefix(&tree).unwrap_or(big_path).display(),
        big_bytes.len() / 1024,
        ms(o),
        ms(p),
        ms(o) / ms(p)
    );

    // B. per-file work of the symbol index against the parse alone, one core
    for want in ["rust", "python"] {
        // a sample: every file of the language, in path order, up to 64 MB
        let mut kept = 0usize;
        let set: Vec<(Vec<u8>, &lang::Compiled)> = sources
            .iter()
            .filter_map(|p| {
                let l = lang_of(p)?;
                (l.lang.name == want && kept < SAMPLE_BYTES).then_some(())?;
                let b = std::fs::read(p).ok()?;
                kept += b.len();
                (b.len() <= outline::MAX_PARSE_BYTES).then_some((b, l))
            })
            .collect();
        if set.is_empty() {
            println!("{want}: no files");
            continue;
        }
        let total: usize = set.iter().map(|(b, _)| b.len()).sum();
        let (mut t_ts, mut t_ide) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let mut parsers: std::collections::HashMap<u8, tree_sitter::Parser> =
                Default::default();
            t_ts.push(
                time(|| {
                    for (b, l) in &set {
                        let p = parsers.entry(l.id).or_insert_with(|| {
                            let mut p = tree_sitter::Parser::new();
                            p.set_language(&l.language).unwrap();
                            p
                        });
                        std::hint::black_box(p.parse(b, None));
                    }
                })
                .0,
            );
            t_ide.push(
                time(|| {
                    for (b, l) in &set {
                        let tree = outline::parse(l, b).unwrap();
                        std::hint::black_box(outline::of_tree_and_identifiers(l, &tree, b));
                    }
                })
                .0,
            );
        }
        let (a, b) = (median(&mut t_ts), median(&mut t_ide));
        let mbs = |d: Duration| total as f64 / 1e6 / d.as_secs_f64();
        println!(
            "{want}, {} files, {:.0} MB, one core: tree-sitter parse {:.1} MB/s; ide's per-file \
             work (parse + definitions + identifiers) {:.1} MB/s; {:.0} % of the parse",
            set.len(),
            total as f64 / 1e6,
            mbs(a),
            mbs(b),
            100.0 * mbs(b) / mbs(a)
        );
    }

    // C. a served worker
    // a file changed within the racy window is not saved: let the copy age
    std::thread::sleep(ide::index::persist::RACY + Duration::from_millis(500));
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![tree.clone()];
    cfg.fs.max_read_bytes = MAX_READ_BYTES;
    cfg.code.search_response_budget_bytes = 4 << 30;
    cfg.turns.data_dir = scratch.path().join("journal");
    let seed = scratch.path().join("seed.yaml");
    std::fs::write(&seed, cfg.to_value().to_string()).expect("seed");
    let engine = Engine::start().await;
    let url = engine.url();
    let seed_arg = seed.display().to_string();
    let args = ["--url", url.as_str(), "--config", seed_arg.as_str()];
    let env = [("RUST_LOG", "ide=info")];
    let ide = IdeProcess::spawn(&args, &env);
    assert!(
        engine
            .wait_for_function("coder::find-symbol", Duration::from_secs(60))
            .await
            .is_some(),
        "ide did not start:\n{}",
        ide.logs()
    );
    let find = |name: &str| json!({"name_path": name, "max_results": 50});
    let (t_first, first) = call(&engine, "coder::find-symbol", find("from_str")).await;
    println!(
        "\nfind-symbol before any index: {:.0} ms ({}, {} files read)",
        ms(t_first),
        first["served_by"],
        first["files_scanned"]
    );
    let content = wait_log(&ide, "search index built", 0).await;
    let (t_second, second) = call(&engine, "coder::find-symbol", find("from_str")).await;
    println!(
        "find-symbol with the content index only: {:.0} ms ({}, {} files read)",
        ms(t_second),
        second["served_by"],
        second["files_scanned"]
    );
    let symbols = wait_log(&ide, "symbol index built", 0).await;
    let (c_ms, s_ms) = (field(&content, "ms"), field(&symbols, "ms"));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "content index build: {c_ms} ms ({} files, idle priority, one thread); symbol index \
         build: {s_ms} ms ({} files, {} symbols, {:.0} MB held, {cores} threads at idle \
         priority); ratio {:.2}; {:.1} MB/s of source per core",
        field(&content, "files"),
        field(&symbols, "files"),
        field(&symbols, "symbols"),
        field(&symbols, "bytes") as f64 / 1e6,
        s_ms as f64 / c_ms.max(1) as f64,
        source_bytes as f64 / 1e6 / (s_ms.max(1) as f64 / 1e3) / cores as f64
    );
    let mut t_ctags = Vec::new();
    for _ in 0..3 {
        // a real tag file: ctags truncates it at the end, which /dev/null
        // refuses (and ctags then exits non-zero)
        let tags = tempfile::NamedTempFile::new().expect("tag file");
        let mut cmd = std::process::Command::new("ctags");
        cmd.arg("-R").arg("-f").arg(tags.path());
        for x in search_tree::EXCLUDED_NAMES {
            cmd.arg(format!("--exclude={x}"));
        }
        cmd.arg(&tree);
        match time(|| cmd.output()) {
            (d, Ok(o)) if o.status.success() => t_ctags.push(d),
            (_, Ok(o)) => {
                println!(
                    "ctags -R: failed ({}): {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                );
                break;
            }
            (_, Err(e)) => {
                println!("ctags -R: not run ({e}; apt-get install universal-ctags)");
                break;
            }
        }
    }
    if !t_ctags.is_empty() {
        let c = median(&mut t_ctags);
        println!(
            "ctags -R over the same tree (one thread): {:.0} ms; symbol index build / ctags: {:.2}",
            ms(c),
            s_ms as f64 / ms(c)
        );
    }
    // find-symbol once ready, over names of every frequency
    let names = [
        "from_str",
        "new",
        "Serialize",
        "fmt",
        "Error",
        "try_reserve_exact",
        "Iterator/next",
        "parse",
        "len",
        "Display/fmt",
    ];
    let mut t_find = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..reps {
        for n in names {
            let (d, out) = call(&engine, "coder::find-symbol", find(n)).await;
            assert_eq!(out["served_by"], "symbol_index", "{out}");
            t_find.push(d);
            totals.push(out["total"].as_u64().unwrap_or(0));
        }
    }
    totals.sort_unstable();
    println!(
        "find-symbol once ready: p50 {:.1} ms over {} calls ({} names, {}..{} matches each)",
        ms(median(&mut t_find)),
        t_find.len(),
        names.len(),
        totals.first().unwrap_or(&0),
        totals.last().unwrap_or(&0)
    );
    let (_, sub) = call(
        &engine,
        "coder::find-symbol",
        json!({"name_path": "reserve_ex", "substring": true}),
    )
    .await;
    let mut t_sub = Vec::new();
    for _ in 0..reps {
        t_sub.push(
            call(
                &engine,
                "coder::find-symbol",
                json!({"name_path": "reserve_ex", "substring": true}),
            )
            .await
            .0,
        );
    }
    println!(
        "find-symbol, substring: p50 {:.1} ms ({} matches)",
        ms(median(&mut t_sub)),
        sub["total"]
    );
    // references for a rare identifier against a search for the word
    let word = "try_reserve_exact";
    let (mut t_refs, mut t_search) = (Vec::new(), Vec::new());
    let (mut n_refs, mut n_hits) = (0, 0);
    for _ in 0..reps {
        let (d, out) = call(
            &engine,
            "coder::references",
            json!({"symbol": word, "max_results": 100_000, "max_answer_bytes": 1_000_000_000u64}),
        )
        .await;
        t_refs.push(d);
        n_refs = out["total"].as_u64().unwrap_or(0);
        let (d, out) = call(
            &engine,
            "coder::search",
            json!({"query": word, "search_paths": false, "max_matches": 100_000}),
        )
        .await;
        t_search.push(d);
        n_hits = out["content_matches"].as_array().map_or(0, Vec::len);
    }
    let (r, s) = (median(&mut t_refs), median(&mut t_search));
    println!(
        "references of {word}: {:.1} ms ({n_refs} occurrences); coder::search for the word: \
         {:.1} ms ({n_hits} lines); ratio {:.2}",
        ms(r),
        ms(s),
        ms(r) / ms(s)
    );
    let mut t_map = Vec::new();
    for _ in 0..reps {
        let (d, out) = call(&engine, "coder::map", json!({})).await;
        assert_eq!(out["served_by"], "symbol_index");
        t_map.push(d);
    }
    println!("map (4 KB budget): p50 {:.0} ms", ms(median(&mut t_map)));
    // the outline of the ~5 000-line file through the worker: the first
    // parses, the next are kept by the revision of its bytes
    let big_rel = big_path
        .strip_prefix(&tree)
        .unwrap_or(big_path)
        .display()
        .to_string();
    let outline_req = json!({"path": big_rel, "max_answer_bytes": 100_000_000u64});
    let (cold, _) = call(&engine, "coder::symbols", outline_req.clone()).await;
    let mut warm = Vec::new();
    for _ in 0..reps {
        warm.push(call(&engine, "coder::symbols", outline_req.clone()).await.0);
    }
    println!(
        "coder::symbols of that file through the worker (the whole answer): first {:.1} ms, then \
         p50 {:.1} ms",
        ms(cold),
        ms(median(&mut warm))
    );
    drop(ide);
    // a restart: the saved symbol index
    let started = Instant::now();
    let ide = IdeProcess::spawn(&args, &env);
    let line = wait_log(&ide, "symbol index built", 0).await;
    println!(
        "restart: symbol index ready {:.1} s after the worker started ({} of {} files taken \
         from the saved index, build {} ms)",
        started.elapsed().as_secs_f64(),
        field(&line, "reused"),
        field(&line, "files"),
        field(&line, "ms")
    );
    drop(ide);
    engine.stop().await;
}
