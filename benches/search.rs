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
//! by copying crates again until it holds at least 20,000 files and 200 MB.
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

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIN_FILES: usize = 20_000;
const MIN_BYTES: u64 = 200 * 1024 * 1024;
const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;
const EXCLUDED_NAMES: [&str; 6] = [
    ".git",
    "node_modules",
    "target",
    "dist",
    ".venv",
    "__pycache__",
];

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
    let tree = match std::env::var_os("IDE_BENCH_TREE") {
        Some(t) => PathBuf::from(t).canonicalize().expect("IDE_BENCH_TREE"),
        None => build_tree(&scratch.path().join("tree")),
    };
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
        let rg_cmd = || {
            let mut c = Command::new("rg");
            c.args([
                "--no-config",
                "--no-ignore",
                "--hidden",
                "--no-heading",
                "--line-number",
                "--column",
                "--color",
                "never",
            ])
            .arg(format!("--max-filesize={MAX_READ_BYTES}"));
            for name in EXCLUDED_NAMES {
                c.arg("-g").arg(format!("!{name}"));
            }
            if !q.regex {
                c.arg("--fixed-strings");
            }
            c.arg("--").arg(q.pattern).arg(&tree);
            c
        };
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
        "ratio ide/rg: best {:.2}x, median {:.2}x, worst {:.2}x (target <= 1.30x)",
        ratios[0],
        ratios[ratios.len() / 2],
        ratios[ratios.len() - 1]
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Run to completion, capturing stdout; the wall time includes reading it.
fn run(cmd: &mut Command) -> (Duration, Vec<u8>) {
    let start = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("spawn");
    let took = start.elapsed();
    // rg exits 1 when nothing matched
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{cmd:?} failed: {:?}",
        out.status
    );
    (took, out.stdout)
}

fn ide_count(stdout: &[u8]) -> usize {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("ide prints JSON");
    assert_eq!(v["truncated"], false, "the benchmark must not truncate");
    v["content_matches"].as_array().map_or(0, Vec::len)
}

fn registry_src() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    home.join("registry").join("src")
}

/// Copy the registry sources, then crates again, until the tree is big
/// enough.
fn build_tree(dest: &Path) -> PathBuf {
    let src = registry_src();
    let crates: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("registry sources")
        .flatten()
        .flat_map(|index| std::fs::read_dir(index.path()).into_iter().flatten())
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert!(!crates.is_empty(), "no crates under {}", src.display());
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut round = 0usize;
    'fill: loop {
        for krate in &crates {
            let name = krate.file_name().expect("crate dir name");
            let (f, b) = copy_tree(krate, &dest.join(format!("copy{round}")).join(name));
            files += f;
            bytes += b;
            if round > 0 && files >= MIN_FILES && bytes >= MIN_BYTES {
                break 'fill;
            }
        }
        if files >= MIN_FILES && bytes >= MIN_BYTES {
            break;
        }
        round += 1;
    }
    dest.canonicalize().expect("tree")
}

/// Copy regular files and directories (symlinks are left out).
fn copy_tree(from: &Path, to: &Path) -> (usize, u64) {
    let mut counts = (0, 0);
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        let target = to.join(entry.file_name());
        if ft.is_dir() {
            let (f, b) = copy_tree(&entry.path(), &target);
            counts.0 += f;
            counts.1 += b;
        } else if ft.is_file() {
            if let Ok(b) = std::fs::copy(entry.path(), &target) {
                counts.0 += 1;
                counts.1 += b;
            }
        }
    }
    counts
}

fn measure(dir: &Path) -> (usize, u64) {
    let mut counts = (0, 0);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            let (f, b) = measure(&entry.path());
            counts.0 += f;
            counts.1 += b;
        } else if ft.is_file() {
            counts.0 += 1;
            counts.1 += entry.metadata().map_or(0, |m| m.len());
        }
    }
    counts
}
