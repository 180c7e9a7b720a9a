//! What the search benchmarks share: the tree they search (a copy of the
//! local cargo registry sources), running a process to completion, and
//! ripgrep with the excludes `coder::search` applies by default.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Files larger than this are skipped by both sides (`fs.max_read_bytes`).
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;
/// The names `code.default_exclude_globs` leaves out.
pub const EXCLUDED_NAMES: [&str; 6] = [
    ".git",
    "node_modules",
    "target",
    "dist",
    ".venv",
    "__pycache__",
];

/// `rg` over `tree` for `pattern`, with the same excludes, size cap and
/// hidden files as `coder::search`'s defaults (gitignore off).
pub fn rg_command(tree: &Path, pattern: &str, regex: bool, ignore_case: bool) -> Command {
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
    if !regex {
        c.arg("--fixed-strings");
    }
    if ignore_case {
        c.arg("--ignore-case");
    }
    c.arg("--").arg(pattern).arg(tree);
    c
}

/// The tree to search: `IDE_BENCH_TREE`, or a copy of the registry sources
/// under `scratch` with at least `min_files` files and `min_bytes` bytes.
pub fn tree(scratch: &Path, min_files: usize, min_bytes: u64) -> PathBuf {
    match std::env::var_os("IDE_BENCH_TREE") {
        Some(t) => PathBuf::from(t).canonicalize().expect("IDE_BENCH_TREE"),
        None => build_tree(&scratch.join("tree"), min_files, min_bytes),
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Run to completion, capturing stdout; the wall time includes reading it.
pub fn run(cmd: &mut Command) -> (Duration, Vec<u8>) {
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

pub fn ide_count(stdout: &[u8]) -> usize {
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
fn build_tree(dest: &Path, min_files: usize, min_bytes: u64) -> PathBuf {
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
            if round > 0 && files >= min_files && bytes >= min_bytes {
                break 'fill;
            }
        }
        if files >= min_files && bytes >= min_bytes {
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

pub fn measure(dir: &Path) -> (usize, u64) {
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
