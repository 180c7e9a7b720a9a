//! The saved search index through the real `ide` binary: `ide mcp` (a
//! long-lived process, like the worker) builds and saves the index of its
//! root, a later `ide mcp` on the same configuration resumes it, and
//! `kill -9` in the middle of a save loses nothing but that save.
//!
//! The kill lands where it is meant to, found by what the process does,
//! not by the clock: the process is watched until it holds open a file
//! with bytes in the state directory's `search-index/` (the unnamed
//! temporary inode a save writes before linking it over the old file); it
//! is then stopped (SIGSTOP), the open file checked while it cannot move,
//! and killed (SIGKILL). Afterwards the saved file is exactly the old one,
//! or (a kill after the rename) a whole new one; the next process trusts
//! it, and its answers equal a scan's (`ide call`, which never uses an
//! index).

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Attempts to land the kills; each builds and saves the index again.
const ATTEMPTS: u32 = 40;
/// Kills that must land inside a save.
const HITS: u32 = 2;
/// The longest wait for what a process does: index builds and saves run
/// at idle priority, which on a machine kept busy is very little CPU.
const WAIT: Duration = Duration::from_secs(300);

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
    cfg: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::TempDir::new().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    // a few hundred files: the build runs at idle priority, and on a
    // machine kept busy it gets only what the busy loops leave
    for d in 0..20 {
        let sub = root.join(format!("pkg{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..30 {
            let body: String = (0..40)
                .map(|l| {
                    format!(
                        "fn item_{d}_{f}_{l}(x: u{}) -> Value {{ x * {l} }}\n",
                        8 << (l % 4)
                    )
                })
                .collect();
            std::fs::write(sub.join(format!("m{f}.rs")), body).unwrap();
        }
    }
    std::fs::write(root.join("pkg0/m0.rs"), "fn needle_one() {}\n").unwrap();
    // a save leaves out files changed within its window before the build
    std::thread::sleep(ide::index::persist::RACY + Duration::from_millis(200));
    let state = base.join("state");
    let cfg = base.join("ide.yaml");
    std::fs::write(
        &cfg,
        format!(
            "fs:\n  host_roots: [{}]\nturns:\n  data_dir: {}\n",
            root.display(),
            state.display()
        ),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        root,
        state,
        cfg,
    }
}

impl Fixture {
    fn saved_dir(&self) -> PathBuf {
        self.state.join("search-index")
    }

    fn saved_file(&self) -> PathBuf {
        self.saved_dir()
            .join(ide::index::persist::file_name(&self.root))
    }
}

/// A running `ide mcp`: its stdin, its answers by id, its log lines.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    answers: mpsc::Receiver<Value>,
    log: mpsc::Receiver<String>,
    next: u64,
}

impl Mcp {
    fn start(f: &Fixture) -> Mcp {
        let cwd = f._dir.path().join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_ide"))
            .current_dir(&cwd)
            .env("XDG_STATE_HOME", &cwd)
            .env("RUST_LOG", "ide=debug")
            .env_remove("III_URL")
            .args(["--config", f.cfg.to_str().unwrap(), "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ide mcp");
        let stdin = child.stdin.take().unwrap();
        let (tx, answers) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        let (ltx, log) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = ltx.send(line);
            }
        });
        let mut m = Mcp {
            child,
            stdin,
            answers,
            log,
            next: 1,
        };
        m.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "index-e2e", "version": "1"}}),
        );
        m.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let v = self
                .answers
                .recv_timeout(WAIT)
                .expect("an answer from ide mcp");
            if v["id"] == id {
                return v;
            }
        }
    }

    /// `coder::search` for `query`: its content matches.
    fn search(&mut self, query: &str) -> Value {
        let v = self.request(
            "tools/call",
            json!({"name": "coder_search",
                   "arguments": {"query": query, "search_paths": false, "max_matches": 100000}}),
        );
        assert_ne!(v["result"]["isError"], true, "{v}");
        v["result"]["structuredContent"]["content_matches"].clone()
    }

    /// Wait for a log line with `needle`; the lines before it are dropped.
    fn wait_log(&mut self, needle: &str) -> String {
        let end = Instant::now() + WAIT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let line = self
                .log
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no log line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// The same search answered by `ide call` (one shot: it never builds or
/// reads an index, it scans).
fn scan(f: &Fixture, query: &str) -> Value {
    let cwd = f._dir.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(&cwd)
        .env("XDG_STATE_HOME", &cwd)
        .env_remove("III_URL")
        .args(["--config", f.cfg.to_str().unwrap(), "call", "coder::search"])
        .arg(json!({"query": query, "search_paths": false, "max_matches": 100000}).to_string())
        .output()
        .expect("ide call");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["content_matches"].clone()
}

/// The number after `key=` in a log line.
fn field(line: &str, key: &str) -> u64 {
    let at = line
        .find(&format!("{key}="))
        .unwrap_or_else(|| panic!("{key} in {line}"));
    line[at + key.len() + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// What tells one saved index file from the next: a save renames a new
/// inode over the old name.
fn file_id(path: &Path) -> Option<(u64, u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.ino(), m.len(), m.modified().ok()?))
}

/// Whether `pid` holds open, in `dir`, a file with bytes that is not the
/// saved index itself (read at start): the unnamed inode of a save under
/// way (`#… (deleted)`) or a staging name.
/// `old`: the inode of the index saved before this process started — once
/// a new save replaced it, a descriptor the process still holds on it reads
/// `(deleted)` too, and is no save under way.
fn saving(pid: u32, dir: &Path, old: Option<u64>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|t| {
            let name = t.file_name().map(|n| n.to_string_lossy().into_owned());
            t.starts_with(dir)
                && name.is_some_and(|n| n.ends_with("(deleted)") || n.starts_with(".ide-stage-"))
        }) && std::fs::metadata(fd.path())
            .is_ok_and(|m| m.is_file() && m.len() > 0 && Some(m.ino()) != old)
    })
}

const QUERIES: [&str; 4] = ["needle_one", "item_3_7_", "x * 79", "no_such_text_anywhere"];

#[test]
fn ide_mcp_saves_and_resumes_the_index_and_a_kill_during_a_save_loses_only_the_save() {
    let f = fixture();
    // first run: built from the disk, saved
    let mut m = Mcp::start(&f);
    m.search("needle_one");
    let built = m.wait_log("search index built");
    assert_eq!(field(&built, "reused"), 0, "{built}");
    let files = field(&built, "files");
    assert!(files >= 600, "{built}");
    m.wait_log("search index saved");
    m.stop();
    let old = std::fs::read(f.saved_file()).expect("saved");
    assert!(ide::index::persist::decode(&f.root, &old).is_ok());

    // a second `ide mcp` resumes it as it starts, before any search
    let mut m = Mcp::start(&f);
    let resumed = m.wait_log("search index built");
    assert_eq!(field(&resumed, "reused"), files, "{resumed}");
    for q in QUERIES {
        assert_eq!(m.search(q), scan(&f, q), "{q}");
    }
    m.stop();

    // kill -9 inside saves: each attempt makes the next build read files
    // again (a changed file), so it saves a new index over the old one
    let mut hits = 0;
    let mut attempt = 0;
    while hits < HITS {
        attempt += 1;
        assert!(
            attempt <= ATTEMPTS,
            "{hits} of {HITS} kills landed in {ATTEMPTS} attempts"
        );
        std::fs::write(
            f.root.join("pkg1/m1.rs"),
            format!("fn changed_{attempt}() {{}}\n"),
        )
        .unwrap();
        let before = std::fs::read(f.saved_file()).unwrap();
        let before_id = file_id(&f.saved_file());
        let m = Mcp::start(&f);
        let pid = m.child.id();
        let end = Instant::now() + WAIT;
        let mut landed = false;
        while Instant::now() < end {
            let old = before_id.map(|(ino, _, _)| ino);
            if saving(pid, &f.saved_dir(), old) {
                kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).unwrap();
                // still inside the save while it cannot move
                landed = saving(pid, &f.saved_dir(), old) && file_id(&f.saved_file()) == before_id;
                break;
            }
            // the save went by between two looks: this attempt missed it
            // (the next one tries again at once, instead of waiting out WAIT
            // beside a worker with nothing left to save)
            if file_id(&f.saved_file()) != before_id || m.child.try_wait_ref() {
                break;
            }
        }
        kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
        let mut child = m.child;
        let _ = child.wait();
        let after = std::fs::read(f.saved_file()).expect("a saved index is always there");
        // exactly the old file, or a whole new one
        if after != before {
            assert!(
                ide::index::persist::decode(&f.root, &after).is_ok(),
                "attempt {attempt}: a torn save"
            );
        }
        if landed {
            hits += 1;
            assert_eq!(
                after, before,
                "attempt {attempt}: killed mid-save, the old file stays"
            );
        }
        // no temporary name is left to be mistaken for the index
        let names: Vec<String> = std::fs::read_dir(f.saved_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with(".ide-stage-"))
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    eprintln!("{hits} kills landed inside a save in {attempt} attempts");
    // the next process trusts what the kills left, reads what changed, and
    // answers as a scan does
    let mut m = Mcp::start(&f);
    let resumed = m.wait_log("search index built");
    assert!(field(&resumed, "reused") >= files - 1, "{resumed}");
    for q in QUERIES
        .iter()
        .copied()
        .chain([format!("changed_{attempt}").as_str()])
    {
        assert_eq!(m.search(q), scan(&f, q), "{q}");
    }
    assert_eq!(
        m.search(&format!("changed_{attempt}"))
            .as_array()
            .unwrap()
            .len(),
        1
    );
    m.stop();
}

trait TryWaitRef {
    fn try_wait_ref(&self) -> bool;
}

impl TryWaitRef for Child {
    /// Whether the process is gone (a zombie counts), without reaping it.
    fn try_wait_ref(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.id()))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true)
    }
}
