//! The change journal's cost, side by side in one run:
//!
//! - `coder::update-file` of a 100 KB file, in process, with the journal and
//!   without it (`Ctx::unjournaled`), interleaved;
//! - `shell::turns::list` over a journal of 100 000 changes (opening it —
//!   which rebuilds the index — and then listing pages);
//! - `shell::workspace::read-bytes` of a 1 GiB file in 4 MiB chunks through
//!   the loopback engine against `cat` of the same file.
//!
//! Run: `cargo bench --bench journal` (`-- update-file`: the first rows only). Results are in BENCHMARKS.md.

#[path = "../tests/support/mod.rs"]
mod support;

use ide::catalog::Catalog;

use ide::config::Config;
use ide::journal::{ChangeKind, ChangeRecord, Version};
use ide::runtime::Runtime;
use ide::services::Services;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Medians of both sides, their ratio, and the median of the ratios of
/// the interleaved pairs (call `i` with against call `i` without: the two
/// ran back to back, so the machine's drift over the run cancels out).
fn report(with: Vec<Duration>, without: Vec<Duration>) {
    let mut pairs: Vec<f64> = with
        .iter()
        .zip(&without)
        .map(|(w, wo)| w.as_secs_f64() / wo.as_secs_f64())
        .collect();
    pairs.sort_by(f64::total_cmp);
    let (w, wo) = (median(with), median(without));
    println!(
        "  median with journal {:.3} ms   without {:.3} ms   ratio {:.2}x   median of pair ratios {:.2}x",
        ms(w),
        ms(wo),
        ms(w) / ms(wo),
        pairs[pairs.len() / 2]
    );
}

/// The floor of any durable journal on this machine, without the worker:
/// the syscalls of the baseline's write of a 100 KB file, bare (`O_TMPFILE`,
/// write, `fsync`, link, rename over the target, the directory's `fsync`),
/// against the same plus only what a journal of that write cannot skip —
/// one appended record line made durable, its `fdatasync` here while a kept
/// thread runs the directory's `fsync` — and no blob store, references or
/// index (the body's SHA-256 is not counted: `coder::update-file` takes it
/// for its `revision` with or without a journal). `n` writes each side,
/// interleaved.
fn floor(dir: &std::path::Path, n: usize) {
    use nix::fcntl::{AT_FDCWD, AtFlags, OFlag};
    use std::os::fd::AsFd;
    std::fs::create_dir_all(dir).unwrap();
    let d = std::fs::File::open(dir).unwrap();
    let log = std::sync::Arc::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("journal.log"))
            .unwrap(),
    );
    let (job, jobs) = std::sync::mpsc::channel::<()>();
    let (done, dones) = std::sync::mpsc::channel::<std::io::Result<()>>();
    let helper_dir = d.try_clone().unwrap();
    std::thread::spawn(move || {
        for () in jobs {
            let _ = done.send(helper_dir.sync_all());
        }
    });
    let bodies = [vec![b'a'; 100_005], vec![b'b'; 100_005]];
    let write = |name: &str, body: &[u8], journaled: bool| -> Duration {
        let t = Instant::now();
        let fd = nix::fcntl::openat(
            d.as_fd(),
            ".",
            OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        let mut f = std::fs::File::from(fd);
        f.write_all(body).unwrap();
        f.sync_all().unwrap();
        let proc_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
        nix::unistd::linkat(
            AT_FDCWD,
            proc_path.as_str(),
            d.as_fd(),
            ".stage",
            AtFlags::AT_SYMLINK_FOLLOW,
        )
        .unwrap();
        nix::fcntl::renameat(d.as_fd(), ".stage", d.as_fd(), name).unwrap();
        if journaled {
            let hex = "ab".repeat(32);
            let line = format!(
                "{{\"change_id\":\"floor-{name}\",\"function_id\":\"coder::update-file\",\"path\":\"{}\",\"kind\":\"modified\",\"before\":{{\"revision\":\"{hex}\",\"size\":100005,\"mode\":420}},\"after\":{{\"revision\":\"{hex}\",\"size\":100005,\"mode\":420}}}}\n",
                dir.join(name).display()
            );
            (&*log).write_all(line.as_bytes()).unwrap();
            job.send(()).unwrap();
            log.sync_data().unwrap();
            dones.recv().unwrap().unwrap();
        } else {
            d.sync_all().unwrap();
        }
        t.elapsed()
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..n {
        let body = &bodies[i % 2];
        for journaled in [i % 2 == 0, i % 2 != 0] {
            if journaled {
                with.push(write("journaled", body, true));
            } else {
                without.push(write("plain", body, false));
            }
        }
    }
    println!(
        "the floor: the bare write of a 100 KB file with and without one durable record line, {n} each side, interleaved:"
    );
    report(with, without);
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    let turns = dir.path().join("turns");
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.turns.data_dir = turns.clone();
    let services = Services::standalone(Runtime::build(cfg).expect("runtime"));
    let catalog = Catalog::standard();

    // --- update-file of 100 KB, with and without the journal --------------
    // One timed call, journaled or in an unjournaled `Ctx`.
    let timed = |edit: serde_json::Value, journaled: bool| {
        let ctx = if journaled {
            ide::function::Ctx::new(services.clone())
        } else {
            ide::function::Ctx::unjournaled(services.clone())
        };
        let call = catalog.call_in(ctx, "coder::update-file", edit);
        let t = Instant::now();
        let v = rt.block_on(call);
        let took = t.elapsed();
        let id = &v.unwrap()["results"][0]["change_id"];
        assert_eq!(id.is_string(), journaled);
        took
    };
    // `n` calls each side, interleaved (the two sides alternate which goes
    // first); `edit(journaled)` gives a side's next request. Each side edits
    // its own copy of the file, so each file's history is that side's own
    // (as in use, where every write the worker makes is journaled).
    let n = 200;
    let compare = |what: &str, edit: &mut dyn FnMut(bool) -> serde_json::Value| {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for i in 0..n {
            let journaled_first = i % 2 == 0;
            for journaled in [journaled_first, !journaled_first] {
                let took = timed(edit(journaled), journaled);
                if journaled {
                    with.push(took);
                } else {
                    without.push(took);
                }
            }
        }
        println!("coder::update-file of a 100 KB file, {what}, {n} calls each side, interleaved:");
        report(with, without);
    };
    let line = format!("{}\n", "x".repeat(99));
    let side = |journaled: bool, name: &str| {
        if journaled {
            format!("{name}.txt")
        } else {
            format!("{name}-base.txt")
        }
    };
    // Every call changes the file (flip <-> flop), so every one writes; the
    // store then holds both bodies.
    for j in [true, false] {
        std::fs::write(
            root.join(side(j, "f")),
            format!("flip\n{}", line.repeat(1000)),
        )
        .unwrap();
    }
    compare("the body alternating between two versions", &mut |j| {
        let flip = std::fs::read_to_string(root.join(side(j, "f")))
            .unwrap()
            .starts_with("flip");
        let (a, b) = if flip {
            ("flip", "flop")
        } else {
            ("flop", "flip")
        };
        json!({"files": [{"path": side(j, "f"), "ops": [{"op": "replace", "pattern": a, "replacement": b}]}]})
    });
    // A body never seen before on every call: each journaled call stores a
    // new 100 KB body durably.
    for j in [true, false] {
        std::fs::write(
            root.join(side(j, "g")),
            format!("v0\n{}", line.repeat(1000)),
        )
        .unwrap();
    }
    let mut versions = [0u64; 2];
    compare("a new body every call", &mut |j| {
        let v = &mut versions[usize::from(j)];
        *v += 1;
        json!({"files": [{"path": side(j, "g"), "ops": [{"op": "replace",
            "pattern": format!("v{}\n", *v - 1), "replacement": format!("v{}\n", *v)}]}]})
    });
    // Someone else (an editor, a build) rewrote the file since the worker
    // last wrote it: the journal has to read, hash and store the body being
    // replaced as well as the new one.
    for j in [true, false] {
        std::fs::write(
            root.join(side(j, "h")),
            format!("w0\n{}", line.repeat(1000)),
        )
        .unwrap();
    }
    let mut versions = [0u64; 2];
    compare(
        "the file rewritten by another writer before each call",
        &mut |j| {
            let v = &mut versions[usize::from(j)];
            *v += 1;
            let path = root.join(side(j, "h"));
            let body = std::fs::read_to_string(&path).unwrap();
            std::fs::write(
                &path,
                body.replacen(&format!("w{}\n", *v - 1), &format!("o{}\n", *v), 1),
            )
            .unwrap();
            json!({"files": [{"path": side(j, "h"), "ops": [{"op": "replace",
            "pattern": format!("o{}\n", *v), "replacement": format!("w{}\n", *v)}]}]})
        },
    );

    floor(&dir.path().join("floor"), n);

    if std::env::args().any(|a| a == "update-file") {
        return; // `-- update-file`: only the rows above
    }

    // --- turns::list over 100 000 changes ---------------------------------
    let big = dir.path().join("turns-100k");
    std::fs::create_dir_all(&big).unwrap();
    {
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(big.join("journal.log")).unwrap());
        std::fs::write(big.join("store-id"), "benchstore01").unwrap();
        for seq in 1..=100_000u64 {
            let r = ChangeRecord {
                change_id: format!("benchstore01-{seq}.000000"),
                seq,
                time_ms: 1_700_000_000_000 + seq,
                function_id: "coder::update-file".into(),
                caller: Some("worker-1".into()),
                session_id: Some(format!("s{}", seq % 10)),
                turn_id: format!("turn-{}", seq / 3),
                kind: ChangeKind::Modified,
                path: root
                    .join(format!("src/file{}.rs", seq % 500))
                    .display()
                    .to_string(),
                from_path: None,
                before: Some(Version {
                    revision: "0".repeat(64),
                    size: 10,
                    mode: 0o644,
                    stored: false,
                }),
                after: Some(Version {
                    revision: "1".repeat(64),
                    size: 11,
                    mode: 0o644,
                    stored: false,
                }),
            };
            serde_json::to_writer(&mut f, &r).unwrap();
            f.write_all(b"\n").unwrap();
        }
    }
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.turns.data_dir = big.clone();
    let services = Services::standalone(Runtime::build(cfg).expect("runtime"));
    let t = Instant::now();
    let first = rt
        .block_on(catalog.call(&services, "shell::turns::list", json!({})))
        .unwrap();
    let open = t.elapsed();
    assert_eq!(first["turns"].as_array().unwrap().len(), 20);
    let mut newest = Vec::new();
    let mut filtered = Vec::new();
    let mut deep = Vec::new();
    let mut cursor = first["next_cursor"].clone();
    for i in 0..21 {
        let t = Instant::now();
        rt.block_on(catalog.call(&services, "shell::turns::list", json!({"limit": 20})))
            .unwrap();
        newest.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(catalog.call(
            &services,
            "shell::turns::list",
            json!({"session_id": format!("s{}", i % 10), "limit": 20}),
        ))
        .unwrap();
        filtered.push(t.elapsed());
        let t = Instant::now();
        let page = rt
            .block_on(catalog.call(
                &services,
                "shell::turns::list",
                json!({"cursor": cursor, "limit": 20}),
            ))
            .unwrap();
        deep.push(t.elapsed());
        cursor = page["next_cursor"].clone();
    }
    println!("shell::turns::list over 100 000 changes:");
    println!(
        "  first call (opens the journal, rebuilds the 48-byte-record index): {:.1} ms",
        ms(open)
    );
    println!(
        "  newest page {:.2} ms   session-filtered page {:.2} ms   later pages (cursor) {:.2} ms (medians of 21)",
        ms(median(newest)),
        ms(median(filtered)),
        ms(median(deep))
    );

    // --- read-bytes of 1 GiB through the loopback engine vs cat -----------
    let gib = 1u64 << 30;
    {
        let mut f = std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(root.join("big.bin")).unwrap(),
        );
        let block: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        for _ in 0..(gib >> 20) {
            f.write_all(&block).unwrap();
        }
    }
    rt.block_on(read_bytes_vs_cat(&dir, &root, gib));
}

async fn read_bytes_vs_cat(dir: &tempfile::TempDir, root: &std::path::Path, gib: u64) {
    use support::engine::LoopbackEngine;
    use support::ide_process::IdeProcess;
    let seed = dir.path().join("seed.yaml");
    std::fs::write(
        &seed,
        format!(
            "fs:\n  host_roots: [{}]\nturns:\n  data_dir: {}\n",
            root.display(),
            dir.path().join("t2").display()
        ),
    )
    .unwrap();
    let engine = LoopbackEngine::start().await;
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    );
    assert!(
        engine
            .wait_for_function("shell::workspace::read-bytes", Duration::from_secs(60))
            .await
            .is_some(),
        "{}",
        ide.logs()
    );
    let chunk = 4u64 << 20;
    let mut ide_runs = Vec::new();
    let mut cat_runs = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut offset = 0;
        while offset < gib {
            let r = engine
                .call_with_timeout(
                    "shell::workspace::read-bytes",
                    json!({"path": "big.bin", "offset": offset, "length": chunk}),
                    Duration::from_secs(60),
                )
                .await
                .expect("read-bytes");
            offset += r["length"].as_u64().unwrap();
            if r["eof"] == true {
                break;
            }
        }
        assert_eq!(offset, gib);
        ide_runs.push(t.elapsed());
        let t = Instant::now();
        let out = std::process::Command::new("cat")
            .arg(root.join("big.bin"))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(out.success());
        cat_runs.push(t.elapsed());
    }
    let (i, c) = (median(ide_runs), median(cat_runs));
    let mib = (gib >> 20) as f64;
    println!(
        "shell::workspace::read-bytes of 1 GiB in 4 MiB chunks through the loopback engine vs cat:"
    );
    println!(
        "  ide {:.0} ms ({:.0} MiB/s)   cat {:.0} ms ({:.0} MiB/s)   throughput ratio {:.3}x (medians of 3)",
        ms(i),
        mib / i.as_secs_f64(),
        ms(c),
        mib / c.as_secs_f64(),
        c.as_secs_f64() / i.as_secs_f64()
    );
}
