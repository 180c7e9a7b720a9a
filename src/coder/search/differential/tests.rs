//! The index against the scan: random trees, random edits (through ide's
//! own functions and through plain file I/O, between searches and never
//! announced to the index), random queries; every answer served with the
//! index must equal the scan's, field for field and in order.

use super::{SearchInput, run};
use crate::catalog::Catalog;
use crate::config::Config;
use crate::runtime::Runtime;
use crate::services::Services;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// xorshift64*: reproducible from the seed printed on failure.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn coin(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "Delta",
    "EPSILON",
    "fn",
    "parse_config",
    "use std::io;",
    "kelvin",
    "\u{212A}elvin",
    "naïve",
    "straße",
    "TODO",
    "fixme",
    "x",
    "  ",
    "\t",
    "value = 42",
    "beta_7",
    "alpha_3",
    "ab",
    "zzz",
    "return",
    "Return",
    "RETURN",
    "foo.bar",
    "a+b",
    "[x]",
    "é",
];
const DIRS: &[&str] = &[
    "",
    "src",
    "src/deep",
    "docs",
    ".hidden",
    "node_modules/pkg",
    "tests",
    "a b",
];
const NAMES: &[&str] = &[
    "main.rs", "lib.rs", "notes.md", ".env", "data.bin", "x.py", "README", "b.txt", "empty",
];

fn random_text(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let lines = rng.below(12);
    for _ in 0..lines {
        for _ in 0..rng.below(6) {
            out.extend_from_slice(rng.pick(WORDS).as_bytes());
            out.push(b' ');
        }
        if rng.coin(10) {
            out.extend(std::iter::repeat_n(b'y', 300 + rng.below(300)));
        }
        out.extend_from_slice(if rng.coin(20) { b"\r\n" } else { b"\n" });
    }
    if rng.coin(5) {
        out.push(0);
        out.extend_from_slice(b"binary tail alpha");
    }
    out
}

fn random_rel(rng: &mut Rng) -> String {
    let d = rng.pick(DIRS);
    let n = rng.pick(NAMES);
    if d.is_empty() {
        n.to_string()
    } else {
        format!("{d}/{n}")
    }
}

fn random_query(rng: &mut Rng) -> Value {
    let regexes = [
        r"fn\s+\w+",
        r"(alpha|beta)_\d",
        r"^use std",
        r"[Kk]elvin$",
        r"value = \d+",
        r"na.ve",
        r"\bRETURN\b",
        r"ret(urn)?",
        r"zz+",
        r".",
        r"(?i)straSSe",
        r"foo\.bar",
    ];
    let regex = rng.coin(40);
    let query = if regex {
        rng.pick(&regexes).to_string()
    } else if rng.coin(15) {
        format!("missing{}", rng.below(1000))
    } else {
        let w = rng.pick(WORDS).trim().to_string();
        if w.is_empty() { "alpha".into() } else { w }
    };
    let mut q = json!({
        "query": query,
        "regex": regex,
        "ignore_case": rng.coin(35),
        "search_paths": rng.coin(50),
        "include_hidden": rng.coin(70),
        "use_default_excludes": rng.coin(70),
    });
    if rng.coin(25) {
        q["include_globs"] = json!([rng.pick(&["**/*.rs", "src/**", "*.md", "**/x.py"])]);
    }
    if rng.coin(25) {
        q["exclude_globs"] = json!([rng.pick(&["src/deep/**", "**/*.md", "docs", "*.rs"])]);
    }
    if rng.coin(30) {
        q["max_matches"] = json!(1 + rng.below(6));
    }
    if rng.coin(20) {
        q["context_lines_before"] = json!(rng.below(3));
        q["context_lines_after"] = json!(rng.below(3));
    }
    if rng.coin(10) {
        q["max_line_bytes"] = json!(8 + rng.below(64));
    }
    if rng.coin(20) {
        q["path"] = json!(rng.pick(&["src", "docs", ".hidden", "node_modules"]));
    }
    q
}

/// One edit, through plain file I/O or through ide's functions.
async fn random_edit(rng: &mut Rng, root: &Path, services: &Arc<Services>) {
    let rel = random_rel(rng);
    let p = root.join(&rel);
    let through_ide = rng.coin(40) && !rel.ends_with(".env");
    match rng.below(6) {
        0 | 1 => {
            let body = random_text(rng);
            if through_ide && !body.contains(&0) {
                let text = String::from_utf8_lossy(&body).into_owned();
                let exists = p.exists();
                let call = if exists {
                    "coder::update-file"
                } else {
                    "coder::create-file"
                };
                let req = if exists {
                    json!({"path": rel, "content": text})
                } else {
                    json!({"path": rel, "content": text, "create_dirs": true})
                };
                // a refusal (e.g. a protected name) is fine: the disk decides
                drop(Catalog::standard().call(services, call, req).await);
            } else {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, body).unwrap();
            }
        }
        2 => {
            if p.is_file() {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
                f.write_all(&random_text(rng)).unwrap();
            }
        }
        3 => {
            if p.is_file() {
                if through_ide {
                    drop(
                        Catalog::standard()
                            .call(services, "coder::delete-file", json!({"path": rel}))
                            .await,
                    );
                } else {
                    std::fs::remove_file(&p).unwrap();
                }
            }
        }
        4 => {
            // an editor's save: a temp file renamed over the name
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let tmp = p.with_extension("tmp~");
            std::fs::write(&tmp, random_text(rng)).unwrap();
            std::fs::rename(&tmp, &p).unwrap();
        }
        _ => {
            let d = root.join(rng.pick(&["src/deep", "docs", "tests"]));
            if d.is_dir() && rng.coin(30) {
                std::fs::remove_dir_all(&d).unwrap();
            } else {
                std::fs::create_dir_all(d.join("new")).unwrap();
                std::fs::write(d.join("new/fresh.rs"), random_text(rng)).unwrap();
            }
        }
    }
}

fn input(q: &Value) -> SearchInput {
    serde_json::from_value(q.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_answers_equal_scan_answers() {
    let seed = std::env::var("IDE_INDEX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_1DE5_u64 ^ u64::from(std::process::id()));
    let mut rng = Rng(seed | 1);
    let dir = tempfile::TempDir::new().unwrap();
    let journal = tempfile::TempDir::new().unwrap();
    let root: PathBuf = dir.path().canonicalize().unwrap();
    for _ in 0..60 {
        let rel = random_rel(&mut rng);
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, random_text(&mut rng)).unwrap();
    }
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.turns.data_dir = journal.path().to_path_buf();
    let mut off = cfg.clone();
    off.code.search_index_max_bytes = 0;
    let services = Services::standalone(Runtime::build(cfg).unwrap());
    // the same tree with the index off: shell::fs::grep's reference
    let scanning = Services::standalone(Runtime::build(off).unwrap());
    let index = services.index.clone();
    let mut greps = 0usize;
    let mut compared = 0usize;
    let mut served = 0usize;
    for round in 0..80 {
        if round > 0 {
            for _ in 0..1 + rng.below(3) {
                random_edit(&mut rng, &root, &services).await;
            }
        }
        for _ in 0..30 {
            let q = random_query(&mut rng);
            let rt = services.live.snapshot();
            let ix = index.clone();
            let q2 = q.clone();
            let (with_index, scanned, was_served) = tokio::task::spawn_blocking(move || {
                let before = ix.served();
                let a = run(&rt, Some(&ix), input(&q2), Arc::new(AtomicBool::new(false)));
                let served = ix.served() > before;
                let b = run(&rt, None, input(&q2), Arc::new(AtomicBool::new(false)));
                (a, b, served)
            })
            .await
            .unwrap();
            let a = with_index
                .map(|o| serde_json::to_value(o).unwrap())
                .map_err(|e| e.message);
            let b = scanned
                .map(|o| serde_json::to_value(o).unwrap())
                .map_err(|e| e.message);
            assert_eq!(a, b, "seed {seed}, round {round}, query {q}");
            compared += 1;
            served += usize::from(was_served);
        }
        // shell::fs::grep: the index only rules files out of its disk walk
        for _ in 0..3 {
            let q = random_query(&mut rng);
            let pattern = if q["regex"] == true {
                q["query"].as_str().unwrap().to_string()
            } else {
                regex_syntax::escape(q["query"].as_str().unwrap())
            };
            let req = json!({"path": root, "pattern": pattern, "ignore_case": q["ignore_case"],
                              "max_matches": 100_000, "max_line_bytes": 1 << 20});
            let a = Catalog::standard()
                .call(&services, "shell::fs::grep", req.clone())
                .await;
            let b = Catalog::standard()
                .call(&scanning, "shell::fs::grep", req.clone())
                .await;
            let a = a.map_err(|e| e.message);
            let b = b.map_err(|e| e.message);
            assert_eq!(a, b, "seed {seed}, round {round}, grep {req}");
            greps += 1;
        }
        if round == 0 {
            let ix = index.clone();
            tokio::task::spawn_blocking(move || ix.settle(std::time::Duration::from_secs(20)))
                .await
                .unwrap();
        }
    }
    eprintln!(
        "differential: {compared} searches and {greps} greps compared, {served} searches served \
         by the index (seed {seed})"
    );
    assert!(compared >= 2400);
    assert!(
        served > compared / 2,
        "the index served {served} of {compared} searches"
    );
    services.shutdown().await;
    scanning.shutdown().await;
}
