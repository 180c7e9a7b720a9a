//! How a PTY master is waited on, alone: the same `cat` of a 50 MB file
//! read by a blocking `read(2)` loop (the throughput baseline of
//! `benches/pty.rs`), by an edge-triggered `epoll` loop, and by a tokio
//! `AsyncFd` loop (what a session's reader does, without its ring, emulator
//! or delivery) on a current-thread runtime, on its own thread (one runtime
//! for every reader), and on the multi-thread runtime the worker runs.
//! Rounds alternate the variants; medians of 7 are printed, with each
//! variant's ratio to the blocking loop.
//!
//! Run: `cargo bench --bench pty_reader`.

#[path = "common/cat_pty.rs"]
mod cat_pty;

use cat_pty::spawn_cat;
use nix::libc;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Instant;

const MB: usize = 50;
const ROUNDS: usize = 7;

/// What one variant read: (seconds, bytes, reads that returned data).
type Run = (f64, usize, usize);

fn blocking(fd: &OwnedFd) -> Run {
    let mut buf = vec![0u8; 65536];
    let (mut total, mut reads) = (0, 0);
    let t = Instant::now();
    while let Ok(n @ 1..) = nix::unistd::read(fd, &mut buf) {
        total += n;
        reads += 1;
    }
    (t.elapsed().as_secs_f64(), total, reads)
}

fn epoll(fd: &OwnedFd) -> Run {
    // SAFETY: plain epoll syscalls on descriptors this function owns or
    // borrows for its whole run; the epoll descriptor is closed at the end.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(ep >= 0, "epoll_create1");
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLET) as u32,
        u64: 1,
    };
    // SAFETY: see above.
    assert_eq!(
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev) },
        0
    );
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
    let mut buf = vec![0u8; 65536];
    let (mut total, mut reads) = (0, 0);
    let t = Instant::now();
    'run: loop {
        loop {
            match nix::unistd::read(fd, &mut buf) {
                Ok(0) => break 'run,
                Ok(n) => {
                    total += n;
                    reads += 1;
                }
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => break 'run,
            }
        }
        // SAFETY: see above.
        unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1) };
    }
    let took = t.elapsed().as_secs_f64();
    // SAFETY: `ep` is this function's and closed once.
    unsafe { libc::close(ep) };
    (took, total, reads)
}

/// An `AsyncFd` read loop on whatever runtime polls it; spawns its `cat`
/// there too.
async fn async_fd(file: PathBuf, dir: PathBuf) -> Run {
    let mut sp = spawn_cat(&file, &dir, false);
    let fd = sp.master.try_clone().expect("dup master");
    // SAFETY: `fd` is an owned descriptor moved into the AsyncFd for its
    // whole life.
    let fd = unsafe { tokio::io::unix::AsyncFd::register(fd) }.expect("register");
    let mut buf = vec![0u8; 65536];
    let (mut total, mut reads) = (0, 0);
    let t = Instant::now();
    'run: loop {
        let mut ready = fd.readable().await.expect("readable");
        loop {
            match ready.try_io(|f| nix::unistd::read(f.get_ref(), &mut buf).map_err(Into::into)) {
                Ok(Ok(0)) | Ok(Err(_)) => break 'run,
                Ok(Ok(n)) => {
                    total += n;
                    reads += 1;
                }
                Err(_would_block) => break,
            }
        }
    }
    let took = t.elapsed().as_secs_f64();
    let _ = sp.child.wait().await;
    (took, total, reads)
}

fn main() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let file = dir.path().join("big.txt");
    let line = b"the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVW\n";
    std::fs::write(&file, line.repeat(MB * 1_000_000 / line.len())).expect("write file");
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let multi = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let own_thread = {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let handle = rt.handle().clone();
        std::thread::spawn(move || rt.block_on(std::future::pending::<()>()));
        handle
    };
    let names = [
        "blocking read(2) loop (baseline)",
        "epoll, edge-triggered",
        "AsyncFd, current-thread runtime",
        "AsyncFd, a reader thread's runtime",
        "AsyncFd, multi-thread runtime",
    ];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); names.len()];
    let (f, d) = (file.clone(), dir.path().to_path_buf());
    for _ in 0..ROUNDS {
        // the child processes are spawned (and reaped) within a runtime
        let _ctx = multi.enter();
        for (i, out) in runs.iter_mut().enumerate() {
            let run = match i {
                0 | 1 => {
                    let mut sp = spawn_cat(&f, &d, i == 0);
                    let run = if i == 0 {
                        blocking(&sp.master)
                    } else {
                        epoll(&sp.master)
                    };
                    multi.block_on(async {
                        let _ = sp.child.wait().await;
                    });
                    run
                }
                2 => current.block_on(async_fd(f.clone(), d.clone())),
                3 => multi
                    .block_on(own_thread.spawn(async_fd(f.clone(), d.clone())))
                    .expect("reader thread"),
                _ => multi
                    .block_on(multi.spawn(async_fd(f.clone(), d.clone())))
                    .expect("reader task"),
            };
            out.push(run);
        }
    }
    let median = |runs: &[Run]| {
        let mut secs: Vec<f64> = runs.iter().map(|r| r.0).collect();
        secs.sort_by(f64::total_cmp);
        secs[secs.len() / 2]
    };
    let base = median(&runs[0]);
    println!(
        "cat of a {MB} MB file on a PTY, {ROUNDS} alternating rounds, medians (bytes read: {}):",
        runs[0][0].1
    );
    for (name, r) in names.iter().zip(&runs) {
        let m = median(r);
        let per_read = r[0].1 as f64 / r[0].2.max(1) as f64 / 1024.0;
        println!(
            "  {name:<38} {:>6.1} MiB/s  ({:.0} ms, {per_read:.1} KiB per read)  {:.2}x the blocking loop",
            r[0].1 as f64 / 1048576.0 / m,
            m * 1e3,
            base / m
        );
    }
}
