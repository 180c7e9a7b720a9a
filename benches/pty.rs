//! Terminal sessions through the loopback engine against the release `ide`
//! binary (plain timing loops, ratios printed; BENCHMARKS.md records them).
//!
//! Run: `cargo bench --bench pty` (add `-- quick` for a 50 MB file and 200
//! keystrokes). With `IDE_TEST_ENGINE` naming a real iii engine's binary,
//! the same rows run through that engine instead of the loopback stand-in.
//!
//! - throughput: `cat` of a large file in a session, every frame delivered
//!   to an output function on another connection, against a raw read loop of
//!   a PTY master running the same `cat` in this process (target ≥ 0.8×);
//! - keystroke → echo: `shell::pty::write` of one byte until the frame with
//!   its echo reached the output function, p50/p99 (target p50 ≤ 2 ms);
//! - worker RSS with 16 idle sessions whose rings are full (target ≤
//!   16 × 2 MiB + 20 MB) and under `yes` with a slow output function.

#[path = "common/cat_pty.rs"]
mod cat_pty;
#[path = "../tests/support/mod.rs"]
mod support;

use base64::Engine as _;
use cat_pty::spawn_cat;
use ide::config::Config;
use iii_sdk::{Error as SdkError, RegisterFunction};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::engine::{connect_worker, unique_name};
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(120);

/// CPU seconds (user + system) a process has used so far.
fn cpu_secs(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // after the parenthesised name: state, ppid, …; utime and stime are
    // fields 14 and 15 of the line, 11 and 12 here
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf reads a constant of the running system.
    let ticks = unsafe { nix::libc::sysconf(nix::libc::_SC_CLK_TCK) }.max(1) as f64;
    f.iter().sum::<u64>() as f64 / ticks
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `n` one-byte writes (`write` gets the base64 data), each timed until a
/// frame holding its echo arrived on `rx`: (p50, p99) in ms.
async fn echo_latency<F, Fut>(
    n: usize,
    rx: &mut mpsc::UnboundedReceiver<(u64, usize, Vec<u8>, bool)>,
    mut write: F,
) -> (f64, f64)
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let c = [b'a' + (i % 26) as u8];
        let t = Instant::now();
        write(base64::engine::general_purpose::STANDARD.encode(c)).await;
        loop {
            let (_, _, head, _) = tokio::time::timeout(WAIT, rx.recv())
                .await
                .unwrap()
                .unwrap();
            if head.contains(&c[0]) {
                break;
            }
        }
        lat.push(t.elapsed());
    }
    lat.sort();
    let pct =
        |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
    (pct(0.5), pct(0.99))
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(in_process(quick));
    rt.block_on(run(quick));
}

/// The console as an in-process `Outbound`: what the worker itself costs,
/// without the engine's transport.
struct Sink(mpsc::UnboundedSender<(u64, usize, Vec<u8>, bool)>);

#[async_trait::async_trait]
impl ide::ports::Outbound for Sink {
    async fn call(
        &self,
        _id: &str,
        input: Value,
        _t: Option<u64>,
    ) -> Result<Value, ide::error::WireError> {
        let data = input["data"]
            .as_str()
            .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
            .unwrap_or_default();
        let head = data[..data.len().min(8)].to_vec();
        let _ = self.0.send((
            input["sequence"].as_u64().unwrap_or(0),
            data.len(),
            head,
            input["eof"] == json!(true),
        ));
        Ok(json!({}))
    }
    fn fire(&self, _: &ide::ports::Binding, _: Value) {}
}

async fn in_process(quick: bool) {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(dir.path().to_path_buf());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let outbound: Arc<dyn ide::ports::Outbound> = Arc::new(Sink(tx));
    let services = Arc::new(ide::services::Services::new(
        ide::runtime::Runtime::build(cfg).unwrap(),
        None,
        Some(outbound.clone()),
    ));
    let catalog = ide::catalog::Catalog::standard();
    let target = "iii::bench-ui::pty-output::console-inproc";
    let n = if quick { 200 } else { 1000 };
    let o = catalog
        .call(
            &services,
            "shell::pty::open",
            json!({"cwd": dir.path(), "cols": 120, "rows": 40, "output_function_id": target,
                   "program": "cat"}),
        )
        .await
        .expect("open");
    let (p50, p99) = echo_latency(n, &mut rx, |data| {
        let (catalog, services) = (&catalog, &services);
        let payload =
            json!({"session_id": o["session_id"], "access_key": o["access_key"], "data": data});
        async move {
            catalog
                .call(services, "shell::pty::write", payload)
                .await
                .expect("write");
        }
    })
    .await;
    println!(
        "in-process keystroke → echo frame delivered (worker alone, no transport), {n} keystrokes: p50 {p50:.3} ms  p99 {p99:.3} ms"
    );
    services.shutdown().await;
}

/// Frames the output function received until the one with `eof`, put back
/// in `sequence` order as a console page does (deliveries overtake each
/// other in the engine): `(bytes, frames)`.
async fn receive_all(
    rx: &mut mpsc::UnboundedReceiver<(u64, usize, Vec<u8>, bool)>,
) -> (usize, u64) {
    let (mut got, mut frames, mut next) = (0usize, 0u64, 1u64);
    let mut early = std::collections::BTreeMap::new();
    let mut ended = false;
    while !ended {
        let (seq, n, _, eof) = tokio::time::timeout(WAIT, rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            seq >= next && early.insert(seq, (n, eof)).is_none(),
            "frame {seq} twice"
        );
        while let Some((n, eof)) = early.remove(&next) {
            next += 1;
            got += n;
            frames += 1;
            ended |= eof;
        }
    }
    (got, frames)
}

/// `median x (min, max)` of the rounds' ratios.
fn spread(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    format!(
        "{:.2}x (min {:.2}, max {:.2})",
        v[v.len() / 2],
        v[0],
        v[v.len() - 1]
    )
}

/// The floor of any worker over this transport: the raw read loop of a PTY
/// master running `cat file`, each 64 KiB it reads (or what it has at the
/// end) sent on as a frame event — base64 in JSON, the shape a session's
/// frames have — to `function_id` by an SDK client of the same engine, at
/// most four undelivered (the reader stops while four are out and its own
/// buffer is full, as a session's does). No ring, no emulator, no session: only what the
/// contract's delivery costs. Returns the time until the output function
/// had every frame.
async fn transport_floor(
    client: &iii_sdk::IIIClient,
    function_id: &str,
    file: &std::path::Path,
    dir: &std::path::Path,
    rx: &mut mpsc::UnboundedReceiver<(u64, usize, Vec<u8>, bool)>,
) -> (Duration, usize, u64) {
    use iii_sdk::protocol::TriggerRequest;
    while rx.try_recv().is_ok() {}
    let t = Instant::now();
    let mut sp = spawn_cat(file, dir, true);
    let fd = sp.master;
    // the window, as a session keeps it: with four frames undelivered the
    // reader stops once its own buffer is full
    let window = Arc::new(tokio::sync::Semaphore::new(4));
    let (tx, mut chunks) = mpsc::unbounded_channel::<(Vec<u8>, bool, _)>();
    let runtime = tokio::runtime::Handle::current();
    let reader = tokio::task::spawn_blocking(move || {
        let slot = || runtime.block_on(window.clone().acquire_owned()).unwrap();
        let mut buf = Vec::with_capacity(65536);
        let mut chunk = [0u8; 65536];
        loop {
            let room = 65536 - buf.len();
            match nix::unistd::read(&fd, &mut chunk[..room]) {
                Ok(0) | Err(nix::errno::Errno::EIO) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() == 65536 {
                        let permit = slot();
                        let full = std::mem::replace(&mut buf, Vec::with_capacity(65536));
                        if tx.send((full, false, permit)).is_err() {
                            return;
                        }
                    }
                }
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send((buf, true, slot()));
    });
    let mut seq = 0u64;
    let mut sends = tokio::task::JoinSet::new();
    while let Some((data, eof, permit)) = chunks.recv().await {
        seq += 1;
        let payload = json!({"session_id": "floor", "sequence": seq,
            "data": base64::engine::general_purpose::STANDARD.encode(&data),
            "eof": eof, "exit_code": if eof { json!(0) } else { Value::Null },
            "signal": null, "error": null});
        let (client, function_id) = (client.clone(), function_id.to_string());
        sends.spawn(async move {
            client
                .trigger(TriggerRequest::new(function_id, payload))
                .await
                .expect("floor delivery");
            drop(permit);
        });
        if eof {
            break;
        }
    }
    let (got, frames) = receive_all(rx).await;
    let took = t.elapsed();
    reader.await.unwrap();
    while sends.join_next().await.is_some() {}
    let _ = sp.child.wait().await;
    drop(sp.owned);
    (took, got, frames)
}

/// One throughput round: each side's time, bytes (and frames), and the CPU
/// seconds it cost.
struct Round {
    raw: (Duration, usize),
    raw_cpu: f64,
    /// `(time, bytes, frames)` delivered to the output function.
    ide: (Duration, usize, u64),
    /// `(worker, this process: engine + output function)`.
    ide_cpu: (f64, f64),
    detached: Duration,
    /// `(worker, this process: engine + polling)`.
    detached_cpu: (f64, f64),
    floor: (Duration, usize, u64),
    floor_cpu: f64,
}

impl Round {
    /// A side's throughput (`bytes` in `took`) over the raw loop's.
    fn ratio(&self, took: Duration, bytes: usize) -> f64 {
        let (raw_time, raw_bytes) = self.raw;
        raw_time.as_secs_f64() / took.as_secs_f64() * bytes as f64 / raw_bytes.max(1) as f64
    }
}

async fn run(quick: bool) {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut cfg = Config::zero_config();
    cfg.working_dir = Some(dir.path().to_path_buf());
    let seed = dir.path().join("seed.yaml");
    std::fs::write(&seed, cfg.to_value().to_string()).expect("seed");
    // the loopback stand-in, or the real iii engine when IDE_TEST_ENGINE
    // names its binary
    let engine = Engine::start().await;
    let url = engine.url();
    let mut ide = IdeProcess::spawn(
        &["--url", &url, "--config", &seed.display().to_string()],
        &[],
    );
    assert!(
        engine
            .wait_for_function("shell::pty::open", WAIT)
            .await
            .is_some(),
        "ide did not start:\n{}",
        ide.logs()
    );
    let ide_pid = ide.pid().expect("ide runs");

    // the output function: forwards (sequence, data bytes, eof)
    let function_id = format!(
        "iii::bench-ui::pty-output::console-{}",
        uuid::Uuid::new_v4()
    );
    let (tx, mut rx) = mpsc::unbounded_channel::<(u64, usize, Vec<u8>, bool)>();
    let delay = Arc::new(AtomicU64::new(0));
    let client = connect_worker(&url, &unique_name("bench-console"));
    {
        let delay = delay.clone();
        client.register_function(
            &function_id,
            RegisterFunction::new_async(move |input: Value| {
                let tx = tx.clone();
                let delay = delay.clone();
                async move {
                    let d = delay.load(Ordering::SeqCst);
                    if d > 0 {
                        tokio::time::sleep(Duration::from_millis(d)).await;
                    }
                    let data = input["data"]
                        .as_str()
                        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
                        .unwrap_or_default();
                    let head = data[..data.len().min(8)].to_vec();
                    let _ = tx.send((
                        input["sequence"].as_u64().unwrap_or(0),
                        data.len(),
                        head,
                        input["eof"] == json!(true),
                    ));
                    Ok::<Value, SdkError>(json!({}))
                }
            }),
        );
    }
    assert!(engine.wait_for_function(&function_id, WAIT).await.is_some());
    // the transport floor's sender: a second worker connection, like ide's
    let floor_client = connect_worker(&url, &unique_name("bench-floor"));
    floor_client
        .trigger(iii_sdk::protocol::TriggerRequest::new(
            function_id.clone(),
            json!({"session_id": "floor", "sequence": 0, "data": null, "eof": false}),
        ))
        .await
        .expect("the floor's sender reaches the output function");
    // The console this function stands for is a browser, which sends with
    // Nagle's algorithm off: so does this client (as the worker does).
    let nodelay = ide::bus::nodelay::apply(&ide::bus::nodelay::resolve("127.0.0.1", engine.port()));
    println!("output function's connections given TCP_NODELAY: {nodelay}");

    // ---- RSS: 16 idle sessions with full rings ----
    let idle = rss_kib(ide_pid);
    let mut agents = Vec::new();
    for _ in 0..16 {
        let o = engine
            .call(
                "shell::pty::start",
                json!({"cwd": dir.path(), "program": "/bin/sh",
                  "args": ["-c", "head -c 3000000 /dev/urandom | base64; sleep 600"]}),
            )
            .await
            .expect("start");
        agents.push(o);
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let list = engine
            .call("shell::pty::sessions", json!({}))
            .await
            .unwrap();
        let full = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["frame_bytes"].as_u64().unwrap_or(0) > 2 * 1024 * 1024 - 70_000)
            .count();
        if full >= 16 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let full = rss_kib(ide_pid);
    println!(
        "RSS: idle {idle} KiB; with 16 idle sessions, full 2 MiB rings: {full} KiB (+{} KiB; budget 16 × 2 MiB + 20 MB = {} KiB)",
        full.saturating_sub(idle),
        16 * 2048 + 20_000
    );
    for o in &agents {
        let _ = engine
            .call(
                "shell::pty::close",
                json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
            )
            .await;
    }

    // ---- throughput ----
    let mb: usize = if quick { 50 } else { 200 };
    let file = dir.path().join("big.txt");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        let line =
            b"the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVW\n";
        let mut written = 0;
        while written < mb * 1_000_000 {
            f.write_all(line).unwrap();
            written += line.len();
        }
    }
    let size = std::fs::metadata(&file).unwrap().len() as usize;
    // Rounds alternate the raw loop and the session (the machine's noise
    // hits both alike); the ratio is the median of the rounds' ratios.
    let rounds = if quick { 3 } else { 5 };
    let mut results = Vec::new();
    for _ in 0..rounds {
        // raw: a PTY master read loop in this process, same `cat`
        let raw_cpu_before = cpu_secs(std::process::id());
        let raw = {
            let t = Instant::now();
            // a plain blocking read loop is the baseline
            let mut sp = spawn_cat(&file, dir.path(), true);
            let fd = sp.master;
            let total = tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; 65536];
                let mut total = 0usize;
                loop {
                    match nix::unistd::read(&fd, &mut buf) {
                        Ok(0) => break,
                        Ok(n) => total += n,
                        Err(nix::errno::Errno::EAGAIN) => continue,
                        Err(_) => break,
                    }
                }
                total
            })
            .await
            .unwrap();
            let _ = sp.child.wait().await;
            drop(sp.owned);
            (t.elapsed(), total)
        };
        let raw_cpu = cpu_secs(std::process::id()) - raw_cpu_before;
        // the floor: the raw loop plus the contract's delivery, no worker
        let floor_cpu_before = cpu_secs(std::process::id());
        let floor = transport_floor(&floor_client, &function_id, &file, dir.path(), &mut rx).await;
        let floor_cpu = cpu_secs(std::process::id()) - floor_cpu_before;
        // ide: open a session running cat, count delivered bytes until eof
        while rx.try_recv().is_ok() {}
        let cpu_before = (cpu_secs(ide_pid), cpu_secs(std::process::id()));
        let t = Instant::now();
        let o = engine
            .call(
                "shell::pty::open",
                json!({"cwd": dir.path(), "cols": 120, "rows": 40, "output_function_id": function_id,
                       "program": "cat", "args": [file.display().to_string()]}),
            )
            .await
            .expect("open");
        let (got, frames) = receive_all(&mut rx).await;
        let ide_time = t.elapsed();
        let cpu = (
            cpu_secs(ide_pid) - cpu_before.0,
            cpu_secs(std::process::id()) - cpu_before.1,
        );
        let _ = engine
            .call(
                "shell::pty::close",
                json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
            )
            .await;
        // the same session with nobody attached: read into the ring (and
        // the emulator) only, until the program's exit is noticed
        let detached_cpu_before = (cpu_secs(ide_pid), cpu_secs(std::process::id()));
        let t = Instant::now();
        let o = engine
            .call(
                "shell::pty::start",
                json!({"cwd": dir.path(), "cols": 120, "rows": 40,
                       "program": "cat", "args": [file.display().to_string()]}),
            )
            .await
            .expect("start");
        loop {
            let list = engine
                .call("shell::pty::sessions", json!({}))
                .await
                .unwrap();
            let exited =
                list["sessions"].as_array().unwrap().iter().any(|s| {
                    s["session_id"] == o["session_id"] && s["status"].get("exited").is_some()
                });
            if exited {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let detached = t.elapsed();
        let detached_cpu = (
            cpu_secs(ide_pid) - detached_cpu_before.0,
            cpu_secs(std::process::id()) - detached_cpu_before.1,
        );
        let _ = engine
            .call(
                "shell::pty::close",
                json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
            )
            .await;
        results.push(Round {
            raw,
            raw_cpu,
            ide: (ide_time, got, frames),
            ide_cpu: cpu,
            detached,
            detached_cpu,
            floor,
            floor_cpu,
        });
    }
    let mib = |bytes: usize, d: Duration| bytes as f64 / 1048576.0 / d.as_secs_f64();
    println!(
        "throughput: cat of a {:.0} MB file ({size} bytes; the PTY turns \\n into \\r\\n), {rounds} rounds, raw and ide alternating",
        size as f64 / 1e6
    );
    let (mut ratios, mut floors) = (Vec::new(), Vec::new());
    for r in &results {
        let ((raw_time, raw_got), (ide_time, got, frames)) = (r.raw, r.ide);
        let (floor_time, floor_got, floor_frames) = r.floor;
        let ratio = r.ratio(ide_time, got);
        let floor_ratio = r.ratio(floor_time, floor_got);
        ratios.push(ratio);
        floors.push(floor_ratio);
        println!(
            "  raw {:>6.1} MiB/s ({:.0} ms, reader CPU {:.2} s)   ide → engine → output function {:>6.1} MiB/s ({:.0} ms, {frames} frames, {:.1} KiB/frame; CPU worker {:.2} s, engine + output function {:.2} s)   ratio {ratio:.2}x",
            mib(raw_got, raw_time),
            raw_time.as_secs_f64() * 1e3,
            r.raw_cpu,
            mib(got, ide_time),
            ide_time.as_secs_f64() * 1e3,
            got as f64 / frames as f64 / 1024.0,
            r.ide_cpu.0,
            r.ide_cpu.1,
        );
        println!(
            "      the same session detached (ring and emulator only, no delivery): {:>6.1} MiB/s ({:.0} ms; CPU worker {:.2} s, engine + polling {:.2} s), {:.2}x raw",
            mib(raw_got, r.detached),
            r.detached.as_secs_f64() * 1e3,
            r.detached_cpu.0,
            r.detached_cpu.1,
            r.ratio(r.detached, raw_got)
        );
        println!(
            "      the floor (the raw loop, each 64 KiB sent on as a frame event by an SDK client, 4 undelivered at most; no worker): {:>6.1} MiB/s ({:.0} ms, {floor_frames} frames; CPU this process {:.2} s), {floor_ratio:.2}x raw",
            mib(floor_got, floor_time),
            floor_time.as_secs_f64() * 1e3,
            r.floor_cpu,
        );
    }
    println!("  floor / raw, median of {rounds}: {}", spread(floors));
    println!(
        "  ratio (ide throughput / raw), median of {rounds}: {}",
        spread(ratios)
    );

    // ---- keystroke → echo ----
    let n = if quick { 200 } else { 1000 };
    let o = engine
        .call(
            "shell::pty::open",
            json!({"cwd": dir.path(), "cols": 120, "rows": 40, "output_function_id": function_id,
                   "program": "cat"}),
        )
        .await
        .expect("open cat");
    while rx.try_recv().is_ok() {}
    let (p50, p99) = echo_latency(n, &mut rx, |data| {
        let engine = &engine;
        let payload =
            json!({"session_id": o["session_id"], "access_key": o["access_key"], "data": data});
        async move {
            engine
                .call("shell::pty::write", payload)
                .await
                .expect("write");
        }
    })
    .await;
    println!("keystroke → echo frame received, {n} keystrokes: p50 {p50:.2} ms  p99 {p99:.2} ms");
    let _ = engine
        .call(
            "shell::pty::close",
            json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
        )
        .await;

    // ---- RSS under `yes` with a slow output function ----
    delay.store(20, Ordering::SeqCst);
    let o = engine
        .call(
            "shell::pty::open",
            json!({"cwd": dir.path(), "cols": 120, "rows": 40, "output_function_id": function_id,
                   "program": "yes"}),
        )
        .await
        .expect("open yes");
    let mut samples = Vec::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(if quick { 3 } else { 10 }) {
        while rx.try_recv().is_ok() {}
        samples.push(rss_kib(ide_pid));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("RSS under `yes` with a 20 ms output function, every 0.5 s (KiB): {samples:?}");
    let _ = engine
        .call(
            "shell::pty::close",
            json!({"session_id": o["session_id"], "access_key": o["access_key"]}),
        )
        .await;
    ide.signal_term();
    let _ = ide.wait_exit(Duration::from_secs(20)).await;
    engine.stop().await;
}
