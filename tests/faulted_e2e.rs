//! End to end against a stand-in that fails the way the real engine does
//! ([`Faults`]): fire-and-forget deliveries out of order, frames it
//! cannot decode dropped unanswered, answers dropped when they come back
//! before the engine filed their call, Nagle on its sockets.
//!
//! ide's remedies must carry every call through: answers held past the
//! window, its own `TCP_NODELAY`, feeds that carry a sequence. The last test
//! shows the faults bite: without the answer hold, calls are lost.
//!
//! The soaks run against the faulted stand-in too (`tests/soak_e2e.rs`,
//! `faulted_*`). On a real engine (`IDE_TEST_ENGINE`) these tests say so and
//! pass: its faults are its own, and every other end-to-end suite runs there.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use iii_sdk::protocol::{Message, TriggerAction, TriggerRequest};
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction};
use serde_json::{Value, json};
use support::engine::{ConfigStore, Faults, LoopbackEngine, connect_worker, unique_name};
use support::harness::{Engine, real_engine_binary};
use support::ide_process::IdeProcess;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use uuid::Uuid;

/// Budget of anything that must happen: far above its latency on a busy
/// machine.
const WAIT: Duration = Duration::from_secs(30);
const CHANGED: &str = "shell::changed";

/// The faulted stand-in is the point of these tests; a real engine brings
/// its own faults.
fn on_real_engine() -> bool {
    let real = real_engine_binary().is_some();
    if real {
        eprintln!("skipped: the faults are the loopback stand-in's (IDE_TEST_ENGINE is set)");
    }
    real
}

struct World {
    engine: Engine,
    ide: IdeProcess,
    /// ide's jail root.
    root: PathBuf,
    _dir: tempfile::TempDir,
}

/// A stand-in with `faults`, and ide jailed to a fresh root, serving on it
/// with the extra environment `envs`.
async fn start(faults: Faults, envs: &[(&str, &str)]) -> World {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical").join("w");
    std::fs::create_dir(&root).expect("mkdir w");
    let mut cfg = ide::config::Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.working_dir = Some(root.clone());
    let engine =
        Engine::Loopback(LoopbackEngine::start_faulted(0, ConfigStore::new(), faults).await);
    let seed = dir.path().join("seed.yaml");
    std::fs::write(&seed, cfg.to_value().to_string()).expect("write seed");
    let mut env = vec![("RUST_LOG", "info")];
    env.extend_from_slice(envs);
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &env,
    );
    assert!(
        ide.wait_for_log("ide serving", WAIT).await,
        "ide did not serve:\n{}",
        ide.logs()
    );
    World {
        engine,
        ide,
        root,
        _dir: dir,
    }
}

impl World {
    fn stand_in(&self) -> &LoopbackEngine {
        self.engine.loopback().expect("the stand-in")
    }
}

/// A worker of the test's own, connected.
async fn client(engine: &Engine, prefix: &str) -> IIIClient {
    let c = connect_worker(&engine.url(), &unique_name(prefix));
    let deadline = Instant::now() + WAIT;
    while c.get_connection_state() != iii_sdk::runtime::IIIConnectionState::Connected {
        assert!(Instant::now() < deadline, "{prefix} did not connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c
}

/// Every call of ide gets its answer while the window is open on every call:
/// ide holds each answer longer than the window is wide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_of_ide_is_answered_through_the_answer_window() {
    if on_real_engine() {
        return;
    }
    let faults = Faults::all().answer_window(Faults::ANSWER_WINDOW, 100);
    let w = start(faults, &[]).await;
    std::fs::write(w.root.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let agent = client(&w.engine, "faulted-agent").await;

    let mut sent = 0u64;
    for round in 0..6 {
        let file = format!("made-{round}.txt");
        let calls: Vec<(&str, Value)> = vec![
            ("coder::info", json!({})),
            ("coder::read-file", json!({"path": "notes.txt"})),
            ("coder::search", json!({"query": "beta", "path": "."})),
            ("coder::list-folder", json!({})),
            ("coder::tree", json!({})),
            (
                "coder::create-file",
                json!({"files": [{"path": file, "content": "one\n"}]}),
            ),
            (
                "coder::update-file",
                json!({"files": [{"path": file, "ops": [
                    {"op": "edit", "old_text": "one", "new_text": "two"}]}]}),
            ),
            ("shell::fs::stat", json!({"path": w.root.join("notes.txt")})),
            ("shell::exec", json!({"command": "true", "cwd": w.root})),
            ("shell::list", json!({})),
        ];
        for (i, (function_id, payload)) in calls.into_iter().enumerate() {
            // half through a long-lived SDK client, half as the CLI calls
            let answer = if (round + i) % 2 == 0 {
                let mut req = TriggerRequest::new(function_id, payload.clone());
                req.timeout_ms = Some(WAIT.as_millis() as u64);
                agent.trigger(req).await.map_err(|e| e.to_string())
            } else {
                w.engine
                    .call_with_timeout(function_id, payload.clone(), WAIT)
                    .await
                    .map_err(|e| format!("{}: {}", e.code, e.message))
            };
            sent += 1;
            let v = answer.unwrap_or_else(|e| {
                panic!(
                    "{function_id} {payload}: {e}\n{:?}\n--- ide log ---\n{}",
                    w.stand_in().fault_counts(),
                    w.ide.logs()
                )
            });
            if function_id == "coder::update-file" {
                assert_eq!(v["results"][0]["success"], true, "{v}");
            }
        }
    }
    let counts = w.stand_in().fault_counts();
    eprintln!("faulted calls: {sent} answered; {counts:?}");
    assert_eq!(counts.answers_dropped, 0, "{counts:?}");
    assert!(counts.windows_opened >= sent, "{counts:?}");
    assert!(counts.answers_after_window >= sent, "{counts:?}");
    agent.shutdown_async().await;
    w.engine.stop().await;
}

/// How many items of a sequence of ranks came after one of a higher rank.
fn overtaken<T: Ord + Copy>(ranks: impl Iterator<Item = T>) -> usize {
    let mut highest = None;
    let mut late = 0;
    for r in ranks {
        if highest.is_some_and(|h| r < h) {
            late += 1;
        }
        highest = highest.max(Some(r));
    }
    late
}

/// The stand-in's own `unordered`: a burst of fire-and-forget calls from one worker
/// to another arrives complete, and not in the order it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_fire_and_forget_deliveries_arrives_out_of_order() {
    if on_real_engine() {
        return;
    }
    const BURST: u64 = 200;
    let faults = Faults::none().unordered(Faults::UNORDERED_MAX);
    let engine =
        Engine::Loopback(LoopbackEngine::start_faulted(0, ConfigStore::new(), faults).await);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let receiver = client(&engine, "burst-receiver").await;
    receiver.register_function(
        "e2e::burst",
        RegisterFunction::new_async(move |input: Value| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(input["n"].as_u64().expect("n"));
                Ok::<Value, SdkError>(json!({}))
            }
        }),
    );
    assert!(engine.wait_for_function("e2e::burst", WAIT).await.is_some());
    let sender = client(&engine, "burst-sender").await;
    let fires = (0..BURST).map(|n| {
        let mut req = TriggerRequest::new("e2e::burst", json!({ "n": n }));
        req.action = Some(TriggerAction::Void);
        sender.trigger(req)
    });
    for fired in futures_util::future::join_all(fires).await {
        fired.expect("fired");
    }
    let mut arrived = Vec::new();
    let deadline = Instant::now() + WAIT;
    while (arrived.len() as u64) < BURST {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(n)) => arrived.push(n),
            _ => panic!("{} of {BURST} deliveries arrived", arrived.len()),
        }
    }
    // in the order the engine took them in
    let taken: Vec<u64> = engine
        .loopback()
        .unwrap()
        .calls()
        .iter()
        .filter(|c| c.function_id == "e2e::burst")
        .map(|c| c.payload["n"].as_u64().expect("n"))
        .collect();
    let rank: BTreeMap<u64, usize> = taken.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let overtaken = overtaken(arrived.iter().map(|n| rank[n]));
    eprintln!("burst of {BURST}: {overtaken} deliveries arrived after one taken later");
    let distinct: BTreeSet<u64> = arrived.iter().copied().collect();
    assert_eq!(distinct, (0..BURST).collect(), "each delivery once");
    assert_eq!(taken.len() as u64, BURST);
    assert!(overtaken > 0, "the burst arrived in order: {arrived:?}");
    let counts = engine.loopback().unwrap().fault_counts();
    assert_eq!(counts.deliveries_delayed, BURST, "{counts:?}");
    sender.shutdown_async().await;
    receiver.shutdown_async().await;
    engine.stop().await;
}

/// ide's change feed through every fault: the deliveries overtake each other,
/// the feed's `seq` puts them back in order, with no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_feed_reads_in_order_through_unordered_deliveries() {
    if on_real_engine() {
        return;
    }
    const FILES: usize = 40;
    let w = start(Faults::all(), &[]).await;
    let (_subscriber, mut rx) = w.engine.subscriber("e2e::changed", WAIT).await;
    let from = w.ide.log_len();
    let id = w
        .engine
        .register_trigger(
            CHANGED,
            "e2e::changed",
            json!({"path": w.root.display().to_string()}),
            None,
        )
        .await;
    assert!(
        w.ide
            .wait_for_log_from(from, &format!("trigger binding held: {id}"), WAIT)
            .await,
        "ide did not take binding {id}:\n{}",
        w.ide.logs()
    );
    for i in 0..FILES {
        std::fs::write(w.root.join(format!("f{i:02}")), "x").unwrap();
    }
    std::fs::write(w.root.join("~marker"), "m").unwrap();

    // every event up to the marker's, by seq
    let mut by_seq: BTreeMap<u64, Value> = BTreeMap::new();
    let mut arrival = Vec::new();
    let deadline = Instant::now() + WAIT;
    let complete = |by_seq: &BTreeMap<u64, Value>| {
        by_seq.values().any(|e| e["path"] == "~marker")
            && by_seq.keys().copied().eq(1..=by_seq.len() as u64)
    };
    while !complete(&by_seq) {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((event, _))) => {
                let seq = event["seq"].as_u64().expect("seq");
                arrival.push(seq);
                assert!(by_seq.insert(seq, event).is_none(), "seq {seq} twice");
            }
            _ => panic!(
                "the feed stopped at {:?}\n{}",
                by_seq.keys().collect::<Vec<_>>(),
                w.ide.logs()
            ),
        }
    }
    let paths: BTreeSet<String> = by_seq
        .values()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    for i in 0..FILES {
        assert!(paths.contains(&format!("f{i:02}")), "f{i:02} in {paths:?}");
    }
    let overtaken = overtaken(arrival.iter().copied());
    let counts = w.stand_in().fault_counts();
    eprintln!(
        "change feed: {} events, {overtaken} arrived after a later one; {counts:?}",
        arrival.len()
    );
    assert!(
        counts.deliveries_delayed >= arrival.len() as u64,
        "{counts:?}"
    );
    w.engine.stop().await;
}

/// Send raw frames to the stand-in as a worker of its own, then a good call;
/// the answers read until the good call's and those of `also` came, by
/// invocation id (ide answers concurrent calls in any order).
async fn raw_calls(
    engine: &Engine,
    frames: &[String],
    good: Uuid,
    also: &[Uuid],
) -> BTreeMap<Uuid, Message> {
    let (mut ws, _) = tokio_tungstenite::connect_async(engine.url())
        .await
        .expect("connect");
    for frame in frames {
        ws.send(WsMessage::Text(frame.clone().into()))
            .await
            .expect("send");
    }
    let call = json!({"type": "invokefunction", "invocation_id": good,
                      "function_id": "coder::info", "data": {}});
    ws.send(WsMessage::Text(call.to_string().into()))
        .await
        .expect("send");
    let mut answers = BTreeMap::new();
    let deadline = Instant::now() + WAIT;
    while !std::iter::once(&good)
        .chain(also)
        .all(|id| answers.contains_key(id))
    {
        let frame = tokio::time::timeout_at(deadline, ws.next())
            .await
            .expect("the good calls were answered")
            .expect("open")
            .expect("frame");
        let WsMessage::Text(text) = frame else {
            continue;
        };
        if let Ok(m @ Message::InvocationResult { invocation_id, .. }) =
            serde_json::from_str::<Message>(text.as_str())
        {
            answers.insert(invocation_id, m);
        }
    }
    let _ = ws.close(None).await;
    answers
}

/// The three frames the 0.23 engine cannot decode, each a call of
/// `coder::info`, and one nested as deep as it still decodes.
fn undecodable_frames() -> (Vec<String>, Vec<Uuid>, Uuid) {
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    let head = |id: &Uuid| {
        format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":"coder::info""#)
    };
    let deep = format!(
        r#"{},"data":{}{}}}"#,
        head(&ids[0]),
        "[".repeat(200),
        "]".repeat(200)
    );
    let surrogate = format!(r#"{},"data":{{"note":"\ud800"}}}}"#, head(&ids[1]));
    let no_data = format!("{}}}", head(&ids[2]));
    // nested to just inside the limit: decoded, routed, answered by ide
    let nested_ok = Uuid::new_v4();
    let decodable = format!(
        r#"{},"data":{}{}}}"#,
        head(&nested_ok),
        "[".repeat(100),
        "]".repeat(100)
    );
    (vec![deep, surrogate, no_data, decodable], ids, nested_ok)
}

/// `undecodable` on: the frames the engine cannot decode get no answer at all (the
/// call after them is answered, so they were handled, and dropped); ide
/// serves on. Off: the stand-in answers each with the decode error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_frames_are_dropped_unanswered_and_ide_serves_on() {
    if on_real_engine() {
        return;
    }
    for faulted in [true, false] {
        let faults = if faulted {
            Faults::none().undecodable()
        } else {
            Faults::none()
        };
        let w = start(faults, &[]).await;
        let (frames, bad, nested_ok) = undecodable_frames();
        let good = Uuid::new_v4();
        let answers = raw_calls(&w.engine, &frames, good, &[nested_ok]).await;
        let counts = w.stand_in().fault_counts();
        eprintln!("undecodable, faulted {faulted}: {counts:?}");
        match answers.get(&good) {
            Some(Message::InvocationResult {
                result: Some(v),
                error: None,
                ..
            }) => assert!(v["version"].is_string(), "{v}"),
            other => panic!("coder::info: {other:?}"),
        }
        for id in &bad {
            match (faulted, answers.get(id)) {
                (true, None) => {}
                (
                    false,
                    Some(Message::InvocationResult {
                        error: Some(e),
                        result: None,
                        ..
                    }),
                ) => {
                    assert_eq!(e.code, "invocation_failed", "{e:?}");
                    assert!(e.message.contains("json decode error"), "{e:?}");
                }
                (_, other) => panic!("frame {id}, faulted {faulted}: {other:?}"),
            }
        }
        if faulted {
            assert_eq!(counts.undecodable_dropped, 3, "{counts:?}");
        } else {
            assert_eq!(counts.undecodable_answered, 3, "{counts:?}");
        }
        // ide is unharmed
        let v = w
            .engine
            .call_with_timeout("coder::info", json!({}), WAIT)
            .await
            .expect("coder::info after the bad frames");
        assert!(v["version"].is_string(), "{v}");
        w.engine.stop().await;
    }
}

/// An answer nested deeper than the engine decodes would be dropped on its
/// way back, unseen: ide answers with a 218 instead. A folder chain 70
/// deep, `coder::tree` asked to descend further and further: every call is
/// answered, the shallow ones with the tree, the deep ones with the 218.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_deep_for_the_engine_is_refused_not_lost() {
    if on_real_engine() {
        return;
    }
    let w = start(Faults::none().undecodable(), &[]).await;
    let mut chain = w.root.clone();
    for _ in 0..70 {
        chain = chain.join("d");
    }
    std::fs::create_dir_all(&chain).unwrap();
    let (mut trees, mut refused) = (0, 0);
    for depth in 56..=68 {
        let payload = json!({"path": ".", "max_depth": depth});
        match w
            .engine
            .call_with_timeout("coder::tree", payload, WAIT)
            .await
        {
            Ok(v) => {
                assert_eq!(v["root"]["name"], "w", "{v}");
                trees += 1;
            }
            Err(e) if e.code == "C218" => {
                assert!(e.message.contains("max_depth"), "{e:?}");
                refused += 1;
            }
            Err(e) => panic!(
                "coder::tree max_depth {depth}: {e:?}\n{:?}",
                w.stand_in().fault_counts()
            ),
        }
    }
    let counts = w.stand_in().fault_counts();
    eprintln!("deep trees: {trees} answered, {refused} refused; {counts:?}");
    assert_eq!(counts.undecodable_dropped, 0, "{counts:?}");
    assert!(trees > 0 && refused > 0, "{trees} trees, {refused} refused");
    w.engine.stop().await;
}

/// How many of `n` calls of `coder::info`, one after another, got no answer,
/// on a stand-in whose answer window is open on every call. Each call is
/// made once the previous one's answer reached the stand-in (filed or
/// dropped, whichever), and a lost call is left waiting out `budget` while
/// the next ones go.
async fn lost_calls(w: &World, n: u64, budget: Duration) -> u64 {
    let mut calls = Vec::new();
    let stand_in = w.stand_in();
    for i in 1..=n {
        let mut call = Box::pin(w.engine.call_with_timeout("coder::info", json!({}), budget));
        // drive the call until its answer reached the stand-in
        let came = stand_in
            .wait_for_fault_counts(|c| c.answers_dropped + c.answers_after_window >= i, WAIT);
        tokio::pin!(came);
        let mut result = None;
        loop {
            tokio::select! {
                r = &mut call, if result.is_none() => result = Some(r),
                c = &mut came => {
                    assert!(c.is_some(), "the answer of call {i} never reached the stand-in:\n{}", w.ide.logs());
                    break;
                }
            }
        }
        calls.push((result, call));
    }
    let mut lost = 0;
    for (result, call) in calls {
        let outcome = match result {
            Some(r) => r,
            None => call.await,
        };
        match outcome {
            Ok(v) => assert!(v["version"].is_string(), "{v}"),
            Err(e) if e.code == "TIMEOUT" => lost += 1,
            Err(e) => panic!("coder::info: {e:?}"),
        }
    }
    lost
}

/// The test of the tests: with the window open on every call and wider than
/// ide takes to answer, ide without its answer hold loses calls; with a hold
/// longer than the window, none. Both outcomes are certain, not likely:
/// the window opens before the call is even queued, so an answer held past
/// its width always comes after it, and one not held comes back within
/// ide's own turnaround, far inside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_answer_hold_ide_loses_calls_in_the_window_and_with_it_none() {
    if on_real_engine() {
        return;
    }
    const CALLS: u64 = 20;
    let width = Duration::from_millis(80);
    let budget = Duration::from_secs(3);
    let faults = Faults::none().answer_window(width, 100);
    let hold_max = ide::bus::answer_hold::MAX.as_micros().to_string();
    assert!(ide::bus::answer_hold::MAX > width);

    let off = start(faults.clone(), &[(ide::bus::answer_hold::KNOB, "0")]).await;
    let lost_off = lost_calls(&off, CALLS, budget).await;
    let counts_off = off.stand_in().fault_counts();
    off.engine.stop().await;

    let on = start(faults, &[(ide::bus::answer_hold::KNOB, &hold_max)]).await;
    let lost_on = lost_calls(&on, CALLS, budget).await;
    let counts_on = on.stand_in().fault_counts();
    on.engine.stop().await;

    eprintln!(
        "answer window {width:?} on every call: hold off lost {lost_off} of {CALLS} \
         ({counts_off:?}); hold {hold_max} us lost {lost_on} of {CALLS} ({counts_on:?})"
    );
    assert!(
        lost_off > 0,
        "without the hold no call was lost: {counts_off:?}"
    );
    assert_eq!(lost_off, counts_off.answers_dropped, "{counts_off:?}");
    assert_eq!(lost_on, 0, "{counts_on:?}");
    assert_eq!(counts_on.answers_dropped, 0, "{counts_on:?}");
    assert_eq!(counts_on.answers_after_window, CALLS, "{counts_on:?}");
}

/// `IDE_TEST_ENGINE_FAULTS` specs: later items override earlier ones, and a
/// spec prints back as one that parses to the same faults.
#[test]
fn fault_specs_parse_and_print_back() {
    assert_eq!(Faults::parse("").unwrap(), Faults::none());
    assert_eq!(Faults::parse("all").unwrap(), Faults::all());
    let f = Faults::parse("all, answer-window=5000, answer-window-share=100, seed=7").unwrap();
    assert_eq!(
        f,
        Faults::all()
            .answer_window(Duration::from_millis(5), 100)
            .seed(7)
    );
    assert_eq!(Faults::parse(&f.to_string()).unwrap(), f);
    let f = Faults::parse("unordered=300,nagle").unwrap();
    assert_eq!(f.unordered, Some(Duration::from_micros(300)));
    assert!(f.nagle && !f.undecodable && f.answer_window.is_none());
    assert!(
        Faults::parse("jitter")
            .unwrap_err()
            .contains("unknown fault")
    );
    assert!(Faults::parse("seed=x").is_err());
}
