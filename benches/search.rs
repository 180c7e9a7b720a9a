//! `coder::search` against ripgrep, side by side, whole processes.
//!
//! Runs `ide call coder::search '<json>'` (the in-process CLI mode, jailed to
//! the tree by a generated `--config`) and `rg` over the same tree with the
//! same excludes, alternating the two on every repetition, and prints median
//! wall times and the ratio. Run with:
//!
//! ```text
//! cargo bench --bench search
//! ```
//!
//! The tree is a copy of the local cargo registry sources
//! (`$CARGO_HOME/registry/src`, else `$HOME/.cargo/registry/src`), topped up
//! by copying crates again until it holds at least 45,000 files and 200 MB.
//! `IDE_BENCH_TREE=<dir>` searches an existing tree instead (nothing is
//! copied or deleted); `IDE_BENCH_REPS` sets the repetitions (default 9).
//! Needs `rg` on PATH (`apt-get install -y ripgrep`).
//!
//! Equal work on both sides: ripgrep runs with `--no-ignore --hidden` (our
//! defaults: gitignore off, hidden files walked), one `-g '!name'` per
//! default exclude, `--max-filesize` equal to `fs.max_read_bytes`, line
//! numbers and columns; `coder::search` runs content-only with caps high
//! enough that nothing is truncated, so both report every matching line.
//! The match counts are printed side by side as a sanity check.

#[path = "common/search_tree.rs"]
mod search_tree;

use search_tree::{MAX_READ_BYTES, ide_count, measure, median, ms, rg_command, run};
use std::path::PathBuf;
use std::process::Command;

const MIN_FILES: usize = 45_000;
const MIN_BYTES: u64 = 200 * 1024 * 1024;

struct Query {
    label: &'static str,
    pattern: &'static str,
    regex: bool,
}

const QUERIES: [Query; 6] = [
    Query {
        label: "literal, rare",
        pattern: "ZZ_NO_SUCH_IDENTIFIER_ZZ",
        regex: false,
    },
    Query {
        label: "literal, moderate",
        pattern: "unsafe impl Send",
        regex: false,
    },
    Query {
        label: "literal, frequent",
        pattern: "PhantomData<",
        regex: false,
    },
    Query {
        label: "regex, word + class",
        pattern: r"fn \w+_unchecked\(",
        regex: true,
    },
    Query {
        label: "regex, alternation",
        pattern: r"(?:SAFETY|Safety): [A-Z]\w+",
        regex: true,
    },
    Query {
        label: "regex, no literal",
        pattern: r"\b[A-Z]{5}_[0-9]{3}\b",
        regex: true,
    },
];

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let reps: usize = std::env::var("IDE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9)
        .max(1);
    let ide = PathBuf::from(env!("CARGO_BIN_EXE_ide"));
    if Command::new("rg").arg("--version").output().is_err() {
        eprintln!("rg not found on PATH: install ripgrep (apt-get install -y ripgrep)");
        std::process::exit(2);
    }
    let scratch = tempfile::TempDir::new().expect("temp dir");
    let tree = search_tree::tree(scratch.path(), MIN_FILES, MIN_BYTES);
    let (files, bytes) = measure(&tree);
    let config = scratch.path().join("bench-config.yaml");
    std::fs::write(
        &config,
        format!(
            "fs:\n  host_roots: [{tree:?}]\n  max_read_bytes: {MAX_READ_BYTES}\n\
             code:\n  search_response_budget_bytes: 4294967296\n"
        ),
    )
    .expect("write config");
    println!(
        "tree: {files} files, {:.0} MB; {reps} alternated repetitions per query\n",
        bytes as f64 / 1e6
    );
    println!(
        "{:<22} {:>9} {:>9} {:>10} {:>10} {:>7}",
        "query", "ide hits", "rg hits", "ide ms", "rg ms", "ratio"
    );
    let mut ratios = Vec::new();
    for q in &QUERIES {
        let ide_cmd = || {
            let payload = serde_json::json!({
                "query": q.pattern,
                "regex": q.regex,
                "search_paths": false,
                "max_matches": 10_000_000,
                "max_line_bytes": 16_777_216,
            });
            let mut c = Command::new(&ide);
            c.arg("--config")
                .arg(&config)
                .args(["call", "coder::search"])
                .arg(payload.to_string());
            c
        };
        let rg_cmd = || rg_command(&tree, q.pattern, q.regex, false);
        // warm-up, and the sanity counts
        let ide_hits = ide_count(&run(&mut ide_cmd()).1);
        let rg_hits = run(&mut rg_cmd()).1.iter().filter(|b| **b == b'\n').count();
        let mut ide_t = Vec::new();
        let mut rg_t = Vec::new();
        for rep in 0..reps {
            if rep % 2 == 0 {
                ide_t.push(run(&mut ide_cmd()).0);
                rg_t.push(run(&mut rg_cmd()).0);
            } else {
                rg_t.push(run(&mut rg_cmd()).0);
                ide_t.push(run(&mut ide_cmd()).0);
            }
        }
        let (i, r) = (median(&mut ide_t), median(&mut rg_t));
        let ratio = i.as_secs_f64() / r.as_secs_f64();
        ratios.push(ratio);
        println!(
            "{:<22} {:>9} {:>9} {:>10.1} {:>10.1} {:>6.2}x",
            q.label,
            ide_hits,
            rg_hits,
            ms(i),
            ms(r),
            ratio
        );
    }
    let mut startup_ide = Vec::new();
    let mut startup_rg = Vec::new();
    for _ in 0..reps {
        let mut c = Command::new(&ide);
        c.arg("--config").arg(&config).args(["call", "coder::info"]);
        startup_ide.push(run(&mut c).0);
        startup_rg.push(run(Command::new("rg").arg("--version")).0);
    }
    println!(
        "\nprocess start alone: ide call coder::info {:.1} ms, rg --version {:.1} ms",
        ms(median(&mut startup_ide)),
        ms(median(&mut startup_rg))
    );
    ratios.sort_by(f64::total_cmp);
    println!(
        "ratio ide/rg: best {:.2}x, median {:.2}x, worst {:.2}x (target <= 1.10x)",
        ratios[0],
        ratios[ratios.len() / 2],
        ratios[ratios.len() - 1]
    );
}
