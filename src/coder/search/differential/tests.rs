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

/// A tree for the restart tests: random files, and three known ones that
/// change while no worker runs. Waits until every file is older than the
/// window a save leaves out ([`crate::index::persist::RACY`]).
struct Restart {
    _dir: tempfile::TempDir,
    _journal: tempfile::TempDir,
    root: PathBuf,
    cfg: Config,
    rng: Rng,
    seed: u64,
}

impl Restart {
    fn new() -> Restart {
        let seed = std::env::var("IDE_INDEX_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x0BAD_5EED_u64 ^ u64::from(std::process::id()));
        let mut rng = Rng(seed | 1);
        let dir = tempfile::TempDir::new().unwrap();
        let journal = tempfile::TempDir::new().unwrap();
        let root: PathBuf = dir.path().canonicalize().unwrap();
        for i in 0..150 {
            let rel = random_rel(&mut rng);
            let (d, n) = rel.rsplit_once('/').unwrap_or(("", &rel));
            let p = root.join(d).join(format!("{i}_{n}"));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, random_text(&mut rng)).unwrap();
        }
        std::fs::create_dir_all(root.join("keep")).unwrap();
        for (name, text) in [
            ("x.txt", "alpha before the restart\n"),
            ("y.txt", "beta before the restart\n"),
            ("z.txt", "gamma goes away\n"),
        ] {
            std::fs::write(root.join("keep").join(name), text).unwrap();
        }
        let mut cfg = Config::zero_config();
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![root.clone()];
        cfg.turns.data_dir = journal.path().to_path_buf();
        // a save leaves out files changed just before its build began
        std::thread::sleep(crate::index::persist::RACY + std::time::Duration::from_millis(200));
        Restart {
            _dir: dir,
            _journal: journal,
            root,
            cfg,
            rng,
            seed,
        }
    }

    fn saved_file(&self) -> PathBuf {
        let rt = Runtime::build(self.cfg.clone()).unwrap();
        crate::index::saved_dir(&rt).join(crate::index::persist::file_name(&self.root))
    }

    /// A worker on the tree, its saved indexes resumed as at start-up, and
    /// its root's index once no build runs (a search starts one when the
    /// start-up found nothing to resume).
    async fn start(&self) -> (Arc<Services>, crate::index::Status) {
        let services = Services::standalone(Runtime::build(self.cfg.clone()).unwrap());
        services.index.resume(&services.live.snapshot());
        let rt = services.live.snapshot();
        let ix = services.index.clone();
        let q = json!({"query": "alpha", "search_paths": false});
        let status = tokio::task::spawn_blocking(move || {
            let _ = run(&rt, Some(&ix), input(&q), Arc::new(AtomicBool::new(false)));
            // at idle priority: on a machine kept busy, the build gets
            // only what the busy loops leave
            assert!(
                ix.settle(std::time::Duration::from_secs(300)),
                "build settles"
            );
            ix.describe().pop().expect("the root is known").1
        })
        .await
        .unwrap();
        (services, status)
    }

    /// Every query answers the same with the index as by a scan, and the
    /// index served them.
    async fn answers_as_a_scan(&mut self, services: &Arc<Services>, extra: &[&str]) {
        let mut queries: Vec<Value> = (0..120).map(|_| random_query(&mut self.rng)).collect();
        for q in extra {
            queries.push(json!({"query": q, "search_paths": false}));
        }
        let rt = services.live.snapshot();
        let ix = services.index.clone();
        let seed = self.seed;
        tokio::task::spawn_blocking(move || {
            let before = ix.served();
            for q in &queries {
                let a = run(&rt, Some(&ix), input(q), Arc::new(AtomicBool::new(false)))
                    .map(|o| serde_json::to_value(o).unwrap())
                    .map_err(|e| e.message);
                let b = run(&rt, None, input(q), Arc::new(AtomicBool::new(false)))
                    .map(|o| serde_json::to_value(o).unwrap())
                    .map_err(|e| e.message);
                assert_eq!(a, b, "seed {seed}, query {q}");
            }
            assert_eq!(
                ix.served() - before,
                queries.len() as u64,
                "the index served every search"
            );
        })
        .await
        .unwrap();
    }
}

/// The paths of `out`'s content matches.
fn hit_paths(out: &Value) -> Vec<String> {
    out["content_matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_reads_again_only_what_changed_while_no_worker_ran() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let mut t = Restart::new();
    let (first, built) = t.start().await;
    assert_eq!(built.phase, crate::index::Phase::Ready);
    assert_eq!(built.reused, 0, "nothing was saved before");
    let saved = std::fs::read(t.saved_file()).expect("the build saved its index");
    let loaded = crate::index::persist::decode(&t.root, &saved).unwrap();
    assert_eq!(loaded.files, built.files, "every filtered file was saved");
    // saved in the state directory, never in the tree
    assert!(!t.saved_file().starts_with(&t.root));
    first.shutdown().await;
    drop(first);

    // while no worker runs: x rewritten to the same size with its mtime
    // put back (only the ctime tells), y appended to, z deleted, a file
    // and a directory added
    let keep = t.root.join("keep");
    let x = keep.join("x.txt");
    let before = std::fs::metadata(&x).unwrap();
    std::fs::write(&x, "omega after! the restart\n").unwrap();
    assert_eq!(std::fs::metadata(&x).unwrap().len(), before.len());
    std::fs::File::options()
        .write(true)
        .open(&x)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(before.modified().unwrap()))
        .unwrap();
    assert_eq!(std::fs::metadata(&x).unwrap().mtime(), before.mtime());
    std::fs::OpenOptions::new()
        .append(true)
        .open(keep.join("y.txt"))
        .unwrap()
        .write_all(b"appended_marker\n")
        .unwrap();
    std::fs::remove_file(keep.join("z.txt")).unwrap();
    std::fs::write(keep.join("w.txt"), "new_file_marker\n").unwrap();
    std::fs::create_dir_all(t.root.join("added/deeper")).unwrap();
    std::fs::write(t.root.join("added/deeper/n.rs"), "fn new_dir_marker() {}\n").unwrap();

    let (second, resumed) = t.start().await;
    assert_eq!(resumed.phase, crate::index::Phase::Ready);
    // x and y read again, z gone: every other saved filter reused
    assert_eq!(
        resumed.reused,
        loaded.files - 3,
        "seed {}: {resumed:?}",
        t.seed
    );
    assert_eq!(resumed.files, loaded.files - 1 + 2);
    t.answers_as_a_scan(
        &second,
        &[
            "omega after",
            "alpha before",
            "appended_marker",
            "gamma goes away",
            "new_file_marker",
            "new_dir_marker",
        ],
    )
    .await;
    let rt = second.live.snapshot();
    let ix = second.index.clone();
    let found = tokio::task::spawn_blocking(move || {
        [
            "omega after",
            "appended_marker",
            "new_dir_marker",
            "gamma goes away",
        ]
        .map(|q| {
            let out = run(
                &rt,
                Some(&ix),
                input(&json!({"query": q, "search_paths": false})),
                Arc::new(AtomicBool::new(false)),
            )
            .unwrap();
            hit_paths(&serde_json::to_value(out).unwrap())
        })
    })
    .await
    .unwrap();
    assert!(found[0][0].ends_with("keep/x.txt"), "{found:?}");
    assert!(found[1][0].ends_with("keep/y.txt"), "{found:?}");
    assert!(found[2][0].ends_with("added/deeper/n.rs"), "{found:?}");
    assert!(found[3].is_empty(), "{found:?}");
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_index_in_any_bad_state_is_rebuilt_never_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let mut t = Restart::new();
    let (first, built) = t.start().await;
    assert_eq!(built.phase, crate::index::Phase::Ready);
    first.shutdown().await;
    drop(first);
    let path = t.saved_file();
    let good = std::fs::read(&path).unwrap();
    // a filter word in the middle of the file
    let mid = good.len() / 2;
    type Spoil = Box<dyn Fn(&Path, &[u8])>;
    let states: Vec<(&str, Spoil)> = vec![
        ("missing", Box::new(|p, _| std::fs::remove_file(p).unwrap())),
        ("empty", Box::new(|p, _| std::fs::write(p, b"").unwrap())),
        (
            "truncated",
            Box::new(|p, g| std::fs::write(p, &g[..g.len() / 2]).unwrap()),
        ),
        (
            "cut by one byte",
            Box::new(|p, g| std::fs::write(p, &g[..g.len() - 1]).unwrap()),
        ),
        (
            "corrupted",
            Box::new(move |p, g| {
                let mut b = g.to_vec();
                b[mid] ^= 0x01;
                std::fs::write(p, b).unwrap()
            }),
        ),
        (
            "foreign version",
            Box::new(|p, g| {
                let mut b = g.to_vec();
                b[8..12].copy_from_slice(&(crate::index::persist::FORMAT + 1).to_le_bytes());
                crate::index::persist::reseal(&mut b);
                std::fs::write(p, b).unwrap()
            }),
        ),
        (
            "tampered filters",
            Box::new(|p, g| {
                // every filter word cleared: read as is, it would rule every
                // file out of every search
                let mut b = g.to_vec();
                for w in b[g.len() / 3..g.len() - 64].iter_mut() {
                    *w = 0;
                }
                std::fs::write(p, b).unwrap()
            }),
        ),
        (
            "writable by others",
            Box::new(|p, g| {
                std::fs::write(p, g).unwrap();
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).unwrap();
            }),
        ),
        (
            "a directory",
            Box::new(|p, _| {
                std::fs::remove_file(p).unwrap();
                std::fs::create_dir(p).unwrap();
            }),
        ),
    ];
    for (what, spoil) in &states {
        spoil(&path, &good);
        let (services, status) = t.start().await;
        assert_eq!(status.phase, crate::index::Phase::Ready, "{what}");
        assert_eq!(status.reused, 0, "{what}: nothing of it was trusted");
        t.answers_as_a_scan(&services, &["alpha before", "gamma goes away"])
            .await;
        services.shutdown().await;
        drop(services);
        // rebuilt, and saved again whole (a directory in the way stays)
        if *what == "a directory" {
            std::fs::remove_dir(&path).unwrap();
        } else {
            let again = std::fs::read(&path).unwrap();
            assert!(
                crate::index::persist::decode(&t.root, &again).is_ok(),
                "{what}: saved again"
            );
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{what}");
        }
    }
    // and the good file is trusted
    std::fs::write(&path, &good).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (services, status) = t.start().await;
    assert_eq!(status.reused, built.files, "the good copy is reused whole");
    t.answers_as_a_scan(&services, &["alpha before"]).await;
    services.shutdown().await;
}
