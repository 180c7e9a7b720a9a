//! The handle layer under attack: a thread swaps a directory (or a file)
//! for a symlink to the outside with `RENAME_EXCHANGE` as fast as it can
//! while every path-taking function runs against it. Nothing outside may be
//! read, listed, created, changed, re-moded or deleted.

use crate::fs::testkit::Kit;
use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MARKER: &str = "OUTSIDE-MARKER-7f3a";

/// Every entry under `dir`: relative path → (mode, content or "<dir>").
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, String)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            let body = if md.is_dir() {
                stack.push(e.path());
                "<dir>".to_string()
            } else if md.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(e.path()).unwrap().display())
            } else {
                std::fs::read_to_string(e.path()).unwrap()
            };
            out.insert(rel, (md.mode(), body));
        }
    }
    out
}

struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    /// Asks the thread to stop swapping for a while ([`Swapper::hold`]).
    pause: Arc<AtomicBool>,
    /// The thread's answer: it is not swapping.
    parked: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    /// Exchange `a` and `b` in a loop until dropped.
    fn start(a: PathBuf, b: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let pause = Arc::new(AtomicBool::new(false));
        let parked = Arc::new(AtomicBool::new(false));
        let (s, n, p, k) = (stop.clone(), swaps.clone(), pause.clone(), parked.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                if p.load(Ordering::SeqCst) {
                    k.store(true, Ordering::SeqCst);
                    while p.load(Ordering::SeqCst) && !s.load(Ordering::SeqCst) {
                        std::thread::park();
                    }
                    k.store(false, Ordering::SeqCst);
                    continue;
                }
                if renameat2(AT_FDCWD, &a, AT_FDCWD, &b, RenameFlags::RENAME_EXCHANGE).is_ok() {
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Swapper {
            stop,
            swaps,
            pause,
            parked,
            handle: Some(handle),
        }
    }

    fn swaps(&self) -> u64 {
        self.swaps.load(Ordering::Relaxed)
    }

    /// Stop swapping (a swap under way ends first) until
    /// [`Swapper::release`].
    fn hold(&self) {
        self.pause.store(true, Ordering::SeqCst);
        while !self.parked.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    fn release(&self) {
        self.pause.store(false, Ordering::SeqCst);
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// Remove whatever `path` names, never following it.
fn clear(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_dir() => std::fs::remove_dir_all(path).unwrap(),
        Ok(_) => std::fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

/// The inside tree the functions work on under `dir` (re-created before
/// every call, as calls delete and move it), written while nothing swaps.
fn seed(dir: &Path) {
    // each name first (a swapped-in link is removed, never followed)
    for rel in ["f.txt", "f.py", "sub", "victim.txt"] {
        clear(&dir.join(rel));
    }
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    for (rel, body) in [
        ("f.txt", "inside\n"),
        ("f.py", "def inside():\n    return 1\n"),
        ("sub/g.txt", "inside g\n"),
        ("victim.txt", "inside\n"),
    ] {
        std::fs::write(dir.join(rel), body).unwrap();
    }
}

/// Calls against paths under `d/` (the directory being swapped); `i`
/// makes names unique.
fn calls(d: &str, i: u64) -> Vec<(&'static str, Value)> {
    vec![
        (
            "coder::read-file",
            json!({"paths": [format!("{d}/f.txt"), format!("{d}/sub/g.txt"), format!("{d}/f.txt")]}),
        ),
        ("coder::read-file", json!({"path": format!("{d}/f.txt")})),
        (
            "coder::create-file",
            json!({"files": [{"path": format!("{d}/new-{i}.txt"), "content": "new"},
                             {"path": format!("{d}/f.txt"), "content": "over", "overwrite": true}]}),
        ),
        (
            "coder::update-file",
            json!({"files": [{"path": format!("{d}/f.txt"),
                              "ops": [{"op": "insert", "at_line": 1, "content": "x"}]}]}),
        ),
        (
            "coder::delete-file",
            json!({"paths": [format!("{d}/victim.txt"), format!("{d}/sub")], "recursive": true}),
        ),
        (
            "coder::move",
            json!({"files": [{"from": format!("{d}/f.txt"), "to": format!("{d}/moved-{i}.txt")}]}),
        ),
        (
            "coder::symbols",
            json!({"path": format!("{d}/f.py"), "include_body": true}),
        ),
        ("coder::symbols", json!({"path": d, "include_body": true})),
        (
            "coder::find-symbol",
            json!({"name_path": "inside", "path": d, "include_body": true}),
        ),
        ("coder::references", json!({"symbol": "inside", "path": d})),
        (
            "coder::definition",
            json!({"path": format!("{d}/f.py"), "line": 1, "column": 5}),
        ),
        ("coder::map", json!({"path": d})),
        (
            "coder::update-file",
            json!({"files": [{"path": format!("{d}/f.py"), "ops": [
                {"op": "replace_symbol", "name_path": "inside", "body": "def inside():\n    return 2\n"},
                {"op": "insert_after_symbol", "name_path": "inside", "content": "def more():\n    pass\n"}]}]}),
        ),
        ("coder::list-folder", json!({"path": d})),
        ("coder::tree", json!({"path": d})),
        (
            "coder::search",
            json!({"path": d, "query": "MARKER", "include_hidden": true, "respect_gitignore": false}),
        ),
        ("shell::fs::ls", json!({"path": d})),
        ("shell::fs::stat", json!({"path": format!("{d}/f.txt")})),
        (
            "shell::fs::write",
            json!({"path": format!("{d}/w-{i}.txt"), "content": "w"}),
        ),
        (
            "shell::fs::mkdir",
            json!({"path": format!("{d}/m-{i}/n"), "parents": true}),
        ),
        (
            "shell::fs::rm",
            json!({"path": format!("{d}/sub"), "recursive": true}),
        ),
        (
            "shell::fs::chmod",
            json!({"path": d, "mode": "0700", "recursive": true}),
        ),
        (
            "shell::fs::chmod",
            json!({"path": format!("{d}/f.txt"), "mode": "0600"}),
        ),
        (
            "shell::fs::mv",
            json!({"src": format!("{d}/victim.txt"), "dst": format!("{d}/v-{i}.txt")}),
        ),
        ("shell::fs::grep", json!({"path": d, "pattern": "MARKER"})),
        (
            "shell::fs::sed",
            json!({"path": d, "pattern": "MARKER", "replacement": "GONE"}),
        ),
        (
            "shell::exec",
            json!({"command": "cat", "args": ["f.txt", "sub/g.txt"], "cwd": d}),
        ),
        (
            "shell::exec",
            json!({"command": "sh", "args": ["-c", "echo hacked > exec-made.txt; chmod 777 f.txt"], "cwd": d}),
        ),
    ]
}

/// Whether an answer did the call's work: an answer (not an error) in which
/// at least one entry of a batch succeeded (a batch whose every entry
/// failed did nothing).
fn succeeded(answer: &Result<Value, crate::error::WireError>) -> bool {
    fn flags(v: &Value, out: &mut Vec<bool>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Bool(b)) = m.get("success") {
                    out.push(*b);
                }
                m.values().for_each(|v| flags(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| flags(v, out)),
            _ => {}
        }
    }
    let Ok(v) = answer else {
        return false;
    };
    let mut all = Vec::new();
    flags(v, &mut all);
    all.is_empty() || all.contains(&true)
}

/// How much of the attack each function must meet: calls under attack,
/// successful ones among them (the call got through and did its work while
/// the swappers ran), and swaps made meanwhile.
const CALLS: u64 = 50;
const SUCCESSES: u64 = 3;
const SWAPS: u64 = 200;
/// A function that has not met the counts after this many calls (or, as a
/// hang guard only, this long) fails the test, saying what it lacked.
const MAX_CALLS: u64 = 5_000;
const HANG: Duration = Duration::from_secs(120);

/// The swapping under attack: its swappers, and how to put the tree back
/// (while they hold) before each call.
struct Attack<'a> {
    swappers: &'a [Swapper],
    reset: &'a dyn Fn(),
}

impl Attack<'_> {
    fn swaps(&self) -> u64 {
        self.swappers.iter().map(Swapper::swaps).sum()
    }

    fn reset(&self) {
        self.swappers.iter().for_each(Swapper::hold);
        (self.reset)();
        self.swappers.iter().for_each(Swapper::release);
    }
}

/// Hammer every function but those in `except` while the swappers run,
/// each until it met [`CALLS`], [`SUCCESSES`] and [`SWAPS`].
async fn hammer(k: &Kit, dir: &str, attack: &Attack<'_>, except: &[&str]) {
    let ids: Vec<&str> = calls(dir, 0).iter().map(|(id, _)| *id).collect();
    for (n, id) in ids.iter().enumerate() {
        if except.contains(id) {
            continue;
        }
        let hang = Instant::now() + HANG;
        let swaps_before = attack.swaps();
        let (mut i, mut ok) = (0u64, 0u64);
        while i < CALLS || ok < SUCCESSES || attack.swaps() - swaps_before < SWAPS {
            assert!(
                i < MAX_CALLS && Instant::now() < hang,
                "{id}: {ok} successful answers in {i} calls and {} swaps",
                attack.swaps() - swaps_before
            );
            i += 1;
            attack.reset();
            let (_, payload) = calls(dir, i).swap_remove(n);
            let answer = k.call(id, payload).await;
            let text = match &answer {
                Ok(v) => v.to_string(),
                Err(e) => e.message.clone(),
            };
            assert!(
                !text.contains(MARKER),
                "{id} reached outside the jail: {text}"
            );
            if succeeded(&answer) {
                ok += 1;
            }
        }
    }
}

fn outside_tree(k: &Kit) -> PathBuf {
    let out = k.outside.path().canonicalize().unwrap();
    std::fs::create_dir_all(out.join("sub")).unwrap();
    for rel in ["f.txt", "sub/g.txt", "victim.txt"] {
        std::fs::write(out.join(rel), format!("{MARKER}\n")).unwrap();
    }
    // a source file whose symbols, bodies and signatures name the marker
    std::fs::write(
        out.join("f.py"),
        format!("def inside():  # {MARKER}\n    return '{MARKER}'\n"),
    )
    .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_an_outside_link_is_never_followed() {
    let k = Kit::jailed();
    let out = outside_tree(&k);
    let (a, b) = (k.root.join("a"), k.root.join("b"));
    std::fs::create_dir(&a).unwrap();
    symlink(&out, &b).unwrap();
    let before = snapshot(&out);
    let swappers = [Swapper::start(a.clone(), b.clone())];
    let reset = || {
        // `a` the directory again, `b` the link
        if std::fs::symlink_metadata(&a).unwrap().is_symlink() {
            renameat2(AT_FDCWD, &a, AT_FDCWD, &b, RenameFlags::RENAME_EXCHANGE).unwrap();
        }
        seed(&a);
    };
    hammer(
        &k,
        "a",
        &Attack {
            swappers: &swappers,
            reset: &reset,
        },
        &[],
    )
    .await;
    drop(swappers);
    assert_eq!(snapshot(&out), before, "the outside tree changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_component_swapped_for_an_outside_link_is_never_followed() {
    let k = Kit::jailed();
    let out = outside_tree(&k);
    let a = k.root.join("a");
    // Swap each name the calls use with a link to its outside twin.
    let names = ["f.txt", "f.py", "sub", "victim.txt"];
    let link = |rel: &str| a.join(format!("{rel}.lnk"));
    let reset = || {
        // the real names inside, each `.lnk` the link to its outside twin
        seed(&a);
        for rel in names {
            clear(&link(rel));
            symlink(out.join(rel), link(rel)).unwrap();
        }
    };
    std::fs::create_dir(&a).unwrap();
    reset();
    let before = snapshot(&out);
    let swappers: Vec<Swapper> = names
        .iter()
        .map(|rel| Swapper::start(a.join(rel), link(rel)))
        .collect();
    hammer(
        &k,
        "a",
        &Attack {
            swappers: &swappers,
            reset: &reset,
        },
        // A command is jailed by its cwd only (`exec_confinement`): `cat
        // f.txt` reads whatever the name is at that moment. Its cwd being
        // swapped is the directory test above.
        &["shell::exec"],
    )
    .await;
    drop(swappers);
    assert_eq!(snapshot(&out), before, "the outside tree changed");
}

#[test]
fn staging_names_are_hidden_from_listings_and_swept() {
    let d = tempfile::TempDir::new().unwrap();
    let root = d.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("x")).unwrap();
    let stale = root
        .join("x")
        .join(format!("{}0123", super::STAGING_PREFIX));
    std::fs::write(&stale, "half").unwrap();
    std::fs::write(root.join("x/kept"), "k").unwrap();
    let anchor = super::Anchor::open(&root).unwrap();
    let dir = anchor.locate(&root.join("x")).unwrap().open_dir().unwrap();
    let names: Vec<_> = super::dir::read(std::os::fd::AsFd::as_fd(&dir))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("kept")]);
    let at = anchor.locate(&root).unwrap();
    // too young to sweep, then old enough
    assert_eq!(
        crate::jail::atomic::sweep(&at, Duration::from_secs(3600)),
        0
    );
    assert_eq!(crate::jail::atomic::sweep(&at, Duration::ZERO), 1);
    assert!(!stale.exists());
    assert!(root.join("x/kept").exists());
}

#[test]
fn a_write_uses_no_visible_temporary_name() {
    // O_TMPFILE: while a stage is open, the directory shows nothing new.
    let d = tempfile::TempDir::new().unwrap();
    let root = d.path().canonicalize().unwrap();
    std::fs::write(root.join("f"), "old").unwrap();
    let anchor = super::Anchor::open(&root).unwrap();
    let at = anchor.locate(&root.join("f")).unwrap();
    let mut stage = crate::jail::atomic::Staged::new(&at, &None).unwrap();
    stage.write_all(b"new").unwrap();
    let listed: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(listed, vec![std::ffi::OsString::from("f")]);
    stage.commit(0o640, None).unwrap();
    assert_eq!(std::fs::read(root.join("f")).unwrap(), b"new");
    let listed: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(listed, vec![std::ffi::OsString::from("f")]);
}

/// A directory that is or holds a denylisted path is refused for a
/// recursive delete or a move whether or not the hidden entry exists: the
/// refusal reveals nothing. Protected globs (listed anyway) still decide by
/// what is there.
#[tokio::test]
async fn parent_move_and_delete_decide_by_the_denylist_not_by_existence() {
    let k = Kit::jailed(); // denylists <root>/blocked
    k.dir("blocked");
    k.file("blocked/secret", "s");
    // a parent of the denylisted path, with and without the hidden entry
    let with = k
        .call("shell::fs::rm", json!({"path": ".", "recursive": true}))
        .await;
    assert!(with.is_err());
    let k2 = Kit::jailed();
    let without = k2
        .call("shell::fs::rm", json!({"path": ".", "recursive": true}))
        .await;
    assert_eq!(
        with.unwrap_err().code,
        without.unwrap_err().code,
        "the root refusal is the same either way"
    );
    // The same for a subdirectory holding the denylisted path: build one.
    let k3 = Kit::build(|cfg, root| {
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![root.to_path_buf()];
        cfg.fs.denylist_paths = vec![root.join("d/hidden")];
    });
    k3.file("d/f", "x");
    let k4 = Kit::build(|cfg, root| {
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![root.to_path_buf()];
        cfg.fs.denylist_paths = vec![root.join("d/hidden")];
    });
    k4.file("d/f", "x");
    k4.file("d/hidden", "secret");
    for (id, payload) in [
        ("shell::fs::rm", json!({"path": "d", "recursive": true})),
        ("shell::fs::mv", json!({"src": "d", "dst": "e"})),
        (
            "coder::delete-file",
            json!({"paths": ["d"], "recursive": true}),
        ),
        ("coder::move", json!({"files": [{"from": "d", "to": "e"}]})),
    ] {
        let a = k3.call(id, payload.clone()).await;
        let b = k4.call(id, payload).await;
        let show = |r: Result<Value, crate::error::WireError>| match r {
            Ok(v) => v.to_string(),
            Err(e) => format!("{}: {}", e.code, e.message),
        };
        let (a, b) = (show(a), show(b));
        assert_eq!(
            a.replace(&k3.root.display().to_string(), "<root>"),
            b.replace(&k4.root.display().to_string(), "<root>"),
            "{id}"
        );
        assert!(a.contains("denylist"), "{id}: {a}");
    }
    assert!(k3.root.join("d/f").exists() && k4.root.join("d/hidden").exists());
}

#[tokio::test]
async fn chmod_refuses_hard_linked_files_and_a_recursive_symlink_root() {
    let k = Kit::jailed();
    k.file("one", "x");
    std::fs::hard_link(k.root.join("one"), k.outside.path().join("other")).unwrap();
    let e = k
        .call("shell::fs::chmod", json!({"path": "one", "mode": "0600"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "S210", "{}", e.message);
    assert!(e.message.contains("hard link"), "{}", e.message);
    k.dir("tree");
    std::fs::hard_link(k.root.join("one"), k.root.join("tree/twin")).unwrap();
    let e = k
        .call(
            "shell::fs::chmod",
            json!({"path": "tree", "mode": "0700", "recursive": true}),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("hard link"), "{}", e.message);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o7777;
    assert_eq!(mode(&k.outside.path().join("other")), 0o644);
    assert_ne!(mode(&k.root.join("tree")), 0o700, "nothing changed");
    // a recursive chmod never follows a symlink root
    k.dir("real");
    symlink(k.root.join("real"), k.root.join("alias")).unwrap();
    let e = k
        .call(
            "shell::fs::chmod",
            json!({"path": "alias", "mode": "0700", "recursive": true}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "S212", "{}", e.message);
    assert_ne!(mode(&k.root.join("real")), 0o700);
}

#[tokio::test]
async fn a_jailed_command_without_cwd_starts_in_the_primary_root() {
    let k = Kit::jailed();
    let v = k
        .call("shell::exec", json!({"command": "pwd"}))
        .await
        .unwrap();
    assert_eq!(
        v["stdout"].as_str().unwrap().trim_end(),
        k.root.display().to_string()
    );
}

/// A symlink to a denylisted or glob-protected target answers exactly like
/// a symlink to a missing target and like a missing path, on every
/// function that follows a link, jailed and unjailed.
#[tokio::test]
async fn links_to_denied_targets_read_like_missing_paths_on_every_function() {
    fn payloads(p: &str) -> Vec<(&'static str, Value)> {
        vec![
            ("shell::fs::ls", json!({"path": p})),
            ("shell::fs::read", json!({"path": p})),
            ("shell::fs::write", json!({"path": p, "content": "x"})),
            ("shell::fs::chmod", json!({"path": p, "mode": "0600"})),
            ("shell::fs::grep", json!({"path": p, "pattern": "x"})),
            (
                "shell::fs::sed",
                json!({"files": [p], "pattern": "x", "replacement": "y"}),
            ),
            ("shell::exec", json!({"command": "true", "cwd": p})),
            ("coder::read-file", json!({"path": p})),
            ("coder::list-folder", json!({"path": p})),
            ("coder::tree", json!({"path": p})),
            ("coder::search", json!({"path": p, "query": "x"})),
        ]
    }
    for k in [Kit::jailed(), Kit::unjailed()] {
        k.file("blocked/f.txt", "denied"); // denylisted
        k.file(".env", "SECRET=1"); // protected glob
        let links = [
            ("l-denied", k.root.join("blocked/f.txt")),
            ("l-denied-dir", k.root.join("blocked")),
            ("l-glob", k.root.join(".env")),
            ("l-denied-missing", k.root.join("blocked/none")),
            ("l-missing", k.root.join("nowhere")),
        ];
        for (name, target) in &links {
            symlink(target, k.root.join(name)).unwrap();
        }
        let missing = k.p("never-there");
        for (i, (id, _)) in payloads("x").iter().enumerate() {
            let answer = |raw: String| {
                let payload = payloads(&raw).swap_remove(i).1;
                let k = &k;
                async move {
                    let r = k.call(id, payload).await;
                    let text = match r {
                        Ok(v) => {
                            // batch functions carry the error per entry
                            let e = v["results"][0]["error"].clone();
                            assert!(!e.is_null(), "{id} {raw}: succeeded: {v}");
                            match e.as_str() {
                                Some(text) => text.to_string(), // sed: "S211: ..."
                                None => format!("{}: {}", e["code"], e["message"]),
                            }
                        }
                        Err(e) => format!("{}: {}", e.code, e.message),
                    };
                    text.replace(&raw, "<P>")
                }
            };
            let want = answer(k.p("l-missing")).await;
            assert!(want.contains("211"), "{id}: {want}");
            for (name, _) in &links {
                assert_eq!(answer(k.p(name)).await, want, "{id} through {name}");
            }
            // A write to a missing path simply creates it; everywhere else a
            // missing path reads exactly like the links.
            if *id != "shell::fs::write" {
                assert_eq!(answer(missing.clone()).await, want, "{id}: missing path");
            }
        }
    }
}
