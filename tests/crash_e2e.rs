//! kill -9 in the middle of large writes: the real `ide` binary (one-shot
//! `ide call`, no engine needed) is killed at points picked by what it is
//! doing, not by the clock: while it writes the new version (a file it holds
//! open in the target's directory has bytes, the target is still the old
//! file), and after the new version took the target's name but before it
//! exited. It is stopped (SIGSTOP) when the point is seen, where it is is
//! checked while it cannot move, and then it is killed (SIGKILL), so each
//! kill is known to have landed where it was meant to, and attempts go on
//! until each point was hit. Afterwards the file holds exactly the old bytes
//! (a kill mid-write) or exactly the new ones (after the rename) — never a
//! mix, never a truncated file — and the directory shows no temporary name.
//! The change journal opens and lists after every kill, and never names a
//! change that did not happen: a kill that left the old bytes added no
//! record, one that left the new bytes added at most one, whose
//! after-revision is the new bytes'.

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Size of each version.
const SIZE: usize = 8 << 20;
/// Kills that must land at each point, per function.
const HITS: u32 = 2;
/// Attempts per function to get them (an attempt misses when the child
/// passes the point between two looks and exits first).
const ATTEMPTS: u32 = 60;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    cfg: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    let cfg = dir.path().join("ide.yaml");
    std::fs::write(
        &cfg,
        format!(
            "fs:\n  host_roots: [{}]\n  max_read_bytes: 0\n  max_write_bytes: 0\nturns:\n  data_dir: {}\n",
            root.display(),
            dir.path().join("turns").display()
        ),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        root,
        cfg,
    }
}

/// One line repeated to `SIZE` bytes: version `tag` of the file.
fn version(tag: char) -> String {
    let line: String = std::iter::repeat_n(tag, 63).chain(['\n']).collect();
    line.repeat(SIZE / 64)
}

/// Start `ide call <id> -` with `payload` on stdin (written from a thread so
/// the kill can land while it is still being read, too).
fn start(f: &Fixture, id: &str, payload: String) -> Child {
    // A scratch working and state directory (the journal is configured).
    let cwd = tempfile::TempDir::new().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(cwd.path())
        .env("XDG_STATE_HOME", cwd.path())
        .args(["--config", f.cfg.to_str().unwrap(), "call", id, "-"])
        .env_remove("III_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ide");
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = stdin.write_all(payload.as_bytes());
    });
    child
}

fn payload(id: &str, path: &str, new: &str) -> String {
    match id {
        "coder::create-file" => serde_json::json!({"files": [
            {"path": path, "content": new, "overwrite": true}
        ]}),
        "shell::fs::write" => serde_json::json!({"path": path, "content": new}),
        // every line of the old version becomes a line of the new one
        "coder::update-file" => serde_json::json!({"files": [{"path": path, "ops": [
            {"op": "replace", "pattern": "a".repeat(63), "replacement": "b".repeat(63)}
        ]}]}),
        _ => unreachable!(),
    }
    .to_string()
}

/// Every change the journal lists, newest first: `(change_id,
/// after_revision)`. Opening the journal after a kill cuts a torn last line.
fn journaled(f: &Fixture) -> Vec<(String, Option<String>)> {
    let cwd = tempfile::TempDir::new().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(cwd.path())
        .env("XDG_STATE_HOME", cwd.path())
        .args([
            "--config",
            f.cfg.to_str().unwrap(),
            "call",
            "shell::turns::list",
        ])
        .arg(r#"{"limit": 100}"#)
        .env_remove("III_URL")
        .output()
        .expect("run ide call");
    assert!(
        out.status.success(),
        "the journal does not list after a kill: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON answer");
    v["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .flat_map(|t| t["changes"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["change_id"].as_str().unwrap().to_string(),
                c["after_revision"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The names a listing shows. The worker's staging names (`.ide-stage-…`,
/// left only by a kill in the instant between linking a finished version
/// and renaming it over the target) are hidden from every listing and
/// swept at start-up, so they do not count.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".ide-stage-"))
        .collect();
    v.sort();
    v
}

/// Where a kill is meant to land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    /// The new version is being written: a file the child holds open in the
    /// target's directory (its unnamed `O_TMPFILE`, or a staging name) has
    /// bytes, and the target is still the old file.
    MidWrite,
    /// The new version has taken the target's name (another inode is
    /// there), and the child has not exited yet.
    Renamed,
}

/// Bytes in the files `pid` holds open in `dir`, other than `target` and
/// `dir` itself: the version being written.
fn staged_bytes(pid: Pid, dir: &Path, target: &Path) -> u64 {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|to| to.starts_with(dir) && to != dir && to != target)
        })
        .filter_map(|fd| std::fs::metadata(fd.path()).ok())
        .filter(std::fs::Metadata::is_file)
        .map(|md| md.len())
        .sum()
}

/// Where a stopped child is, by `Point`'s definitions; `None` for neither
/// (still reading its request, or between the two).
fn where_is(pid: Pid, dir: &Path, target: &Path, old_ino: u64) -> Option<Point> {
    let ino = std::fs::metadata(target).map(|md| md.ino()).ok()?;
    if ino != old_ino {
        Some(Point::Renamed)
    } else if staged_bytes(pid, dir, target) > 0 {
        Some(Point::MidWrite)
    } else {
        None
    }
}

/// Run `id` and stop it at `point`. `Some(landed)` when it was stopped
/// (and then killed): where it was while stopped. `None` when it exited
/// before the point was seen (a miss: the write completed).
fn kill_at(f: &Fixture, id: &str, new: &str, point: Point, old_ino: u64) -> Option<Option<Point>> {
    let file = f.root.join("big.txt");
    let child: Child = start(f, id, payload(id, "big.txt", new));
    let pid = Pid::from_raw(child.id() as i32);
    // reaped with waitpid below, never through `child`
    drop(child);
    let hang = Instant::now() + Duration::from_secs(120);
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)).expect("waitpid") {
            WaitStatus::StillAlive => {}
            WaitStatus::Exited(_, code) => {
                assert_eq!(code, 0, "{id} failed");
                return None;
            }
            other => panic!("{id}: unexpected {other:?}"),
        }
        let reached = match point {
            Point::MidWrite => staged_bytes(pid, &f.root, &file) > 0,
            Point::Renamed => std::fs::metadata(&file).is_ok_and(|md| md.ino() != old_ino),
        };
        if reached {
            break;
        }
        assert!(Instant::now() < hang, "{id}: never reached {point:?}");
        std::thread::yield_now();
    }
    kill(pid, Signal::SIGSTOP).expect("SIGSTOP");
    match waitpid(pid, Some(WaitPidFlag::WUNTRACED)).expect("waitpid") {
        WaitStatus::Stopped(..) => {}
        WaitStatus::Exited(_, code) => {
            assert_eq!(code, 0, "{id} failed");
            return None;
        }
        other => panic!("{id}: unexpected {other:?}"),
    }
    // it cannot move now: see where it is, then kill it there
    let landed = where_is(pid, &f.root, &file, old_ino);
    kill(pid, Signal::SIGKILL).expect("SIGKILL");
    // (a stopped process dies of SIGKILL without being continued)
    match waitpid(pid, None).expect("waitpid") {
        WaitStatus::Signaled(_, Signal::SIGKILL, _) => {}
        other => panic!("{id}: not killed: {other:?}"),
    }
    Some(landed)
}

fn crash_points(id: &str) {
    let f = fixture();
    let (old, new) = (version('a'), version('b'));
    let file = f.root.join("big.txt");
    std::fs::write(&file, &old).unwrap();
    let status = start(&f, id, payload(id, "big.txt", &new)).wait().unwrap();
    assert!(status.success(), "{id} failed uninterrupted");
    assert!(std::fs::read(&file).unwrap() == new.as_bytes());
    let new_revision = sha256_hex(new.as_bytes());
    let mut changes = journaled(&f).len();
    assert_eq!(changes, 1, "{id}: the uninterrupted write is journaled");
    let (mut mid, mut renamed, mut missed) = (0, 0, 0);
    for attempt in 0..ATTEMPTS {
        if mid >= HITS && renamed >= HITS {
            break;
        }
        let point = if mid < HITS && (renamed >= HITS || attempt % 2 == 0) {
            Point::MidWrite
        } else {
            Point::Renamed
        };
        std::fs::write(&file, &old).unwrap();
        let old_ino = std::fs::metadata(&file).unwrap().ino();
        let landed = kill_at(&f, id, &new, point, old_ino);
        let body = std::fs::read(&file).unwrap();
        let listed = journaled(&f);
        let added = listed.len() - changes;
        changes = listed.len();
        if body == old.as_bytes() {
            assert_eq!(added, 0, "{id}: a record of a write a kill stopped");
        } else if body == new.as_bytes() {
            assert!(added <= 1, "{id}: {added} records of one write");
            if added == 1 {
                assert_eq!(
                    listed[0].1.as_deref(),
                    Some(new_revision.as_str()),
                    "{id}: the record names other bytes"
                );
            }
        } else {
            panic!(
                "{id}: torn file after a kill at {landed:?}: {} bytes",
                body.len()
            );
        }
        match landed {
            None => missed += 1,
            Some(Some(Point::MidWrite)) => {
                mid += 1;
                assert!(
                    body == old.as_bytes(),
                    "{id}: a kill mid-write left new bytes"
                );
            }
            Some(Some(Point::Renamed)) => {
                renamed += 1;
                assert!(
                    body == new.as_bytes(),
                    "{id}: a kill after the rename lost it"
                );
            }
            Some(None) => {}
        }
        assert_eq!(
            names(&f.root),
            vec!["big.txt".to_string()],
            "{id}: a name other than the file is visible after a kill at {landed:?}"
        );
    }
    println!("{id}: {mid} kills mid-write, {renamed} after the rename, {missed} missed");
    assert!(
        mid >= HITS && renamed >= HITS,
        "{id}: in {ATTEMPTS} attempts {mid} kills landed mid-write and {renamed} after the \
         rename ({missed} writes completed first); {HITS} of each are needed"
    );
}

#[test]
fn create_file_overwrite_is_old_or_new_after_kill_9() {
    crash_points("coder::create-file");
}

#[test]
fn update_file_is_old_or_new_after_kill_9() {
    crash_points("coder::update-file");
}

#[test]
fn fs_write_is_old_or_new_after_kill_9() {
    crash_points("shell::fs::write");
}
