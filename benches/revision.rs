//! What the whole-file `revision` costs a windowed `coder::read-file`.
//!
//! A window of a file up to `fs.max_read_bytes` now reads the rest of the
//! file through a SHA-256 ([`ide::coder::lines::Tap`]) so the answer can carry
//! the revision an edit is guarded with. This measures, on a 16 MiB file with
//! a warm page cache, the same window read without the hash (what 0.12 did)
//! and with it, for a window near the start (where the hash adds most: the
//! plain read stops after the window) and one at the end (both read it all),
//! plus the bare SHA-256 of the bytes in memory. Each side runs alternately,
//! 15 runs, medians reported.
//!
//! Run: `cargo bench --bench revision`. Results are in BENCHMARKS.md.

use ide::coder::lines::{Tap, read_window};
use sha2::Digest;
use std::io::Write;
use std::time::{Duration, Instant};

const RUNS: usize = 15;
const SIZE: usize = 16 << 20;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let path = dir.path().join("big.txt");
    let mut body = Vec::with_capacity(SIZE + 64);
    let mut lines = 0u64;
    while body.len() < SIZE {
        lines += 1;
        writeln!(
            body,
            "    let value_{lines} = compute({lines}); // a line of code"
        )
        .unwrap();
    }
    body.truncate(SIZE);
    std::fs::write(&path, &body).expect("write");
    let lines = ide::coder::lines::count_lines(&body);
    let open = || std::fs::File::open(&path).expect("open");

    let plain = |from: u64| {
        let t = Instant::now();
        let w = read_window(open(), from, Some(from + 10), None, false).unwrap();
        assert!(!w.content.is_empty());
        t.elapsed()
    };
    let hashed = |from: u64| {
        let t = Instant::now();
        let mut tap = Tap::new(open());
        let w = read_window(&mut tap, from, Some(from + 10), None, false).unwrap();
        let (revision, total) = tap.finish().unwrap();
        assert!(!w.content.is_empty());
        assert_eq!((revision.len(), total), (64, lines));
        t.elapsed()
    };
    // warm the page cache
    for _ in 0..3 {
        hashed(1);
    }
    let mut cases = Vec::new();
    for (name, from) in [("lines 2500..2510", 2500), ("last 10 lines", lines - 10)] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            a.push(plain(from));
            b.push(hashed(from));
        }
        cases.push((name, median(a), median(b)));
    }
    let mut hash_only = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let d = sha2::Sha256::digest(&body);
        std::hint::black_box(d);
        hash_only.push(t.elapsed());
    }
    let hash_only = median(hash_only);
    println!("16 MiB file, {lines} lines, warm cache, medians of {RUNS}");
    println!("| window | without revision | with revision | ratio |");
    println!("|---|---|---|---|");
    for (name, a, b) in cases {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.1}x |",
            ms(a),
            ms(b),
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
    println!(
        "SHA-256 of the 16 MiB in memory: {:.2} ms ({:.0} MiB/s)",
        ms(hash_only),
        16.0 / hash_only.as_secs_f64()
    );
}
