//! End to end (stand-in or real engine): a turn of changes through the
//! engine, its byte-exact diffs after a worker restart, a conflicting and
//! then a clean revert, and the workspace picker.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(15);

/// A project root `proj` in `dir` and a seed jailing ide to it (the
/// journal's `data_dir` left at its relative default): (root, seed path).
fn project(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = dir.join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let seed = dir.join("seed.yaml");
    std::fs::write(&seed, format!("fs:\n  host_roots: [{}]\n", root.display())).unwrap();
    (root, seed)
}

/// Serve `seed` from `cwd`, with `state` as the state home.
fn start(
    engine: &Engine,
    seed: &std::path::Path,
    cwd: &std::path::Path,
    state: &std::path::Path,
) -> IdeProcess {
    IdeProcess::spawn_in(
        Some(cwd),
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    )
}

/// `ide --config <seed> call <id> <payload>` run from `cwd`, state home
/// `state`: its JSON answer.
async fn cli_call(
    seed: &std::path::Path,
    cwd: &std::path::Path,
    state: &std::path::Path,
    id: &str,
    payload: Value,
) -> Value {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(cwd)
        .env("XDG_STATE_HOME", state)
        .env_remove("III_URL")
        .args(["--config", seed.to_str().unwrap(), "call", id])
        .arg(payload.to_string())
        .output()
        .await
        .expect("run ide call");
    assert!(
        out.status.success(),
        "ide call {id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ide call answers JSON")
}

async fn ok(e: &Engine, id: &str, payload: Value) -> Value {
    e.call(id, payload.clone())
        .await
        .unwrap_or_else(|err| panic!("{id} {payload}: {err:?}"))
}

#[tokio::test]
async fn a_turn_survives_a_restart_and_reverts_all_or_nothing() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    // turns.data_dir stays relative: it is anchored at the state home,
    // never at the worker's cwd (here the project itself)
    let (root, seed) = project(dir.path());
    let cwd = root.clone();
    let state = dir.path().join("state");
    let mut ide = start(&engine, &seed, &cwd, &state);
    assert!(ide.wait_for_log("ide serving", T).await, "{}", ide.logs());
    assert!(engine.wait_for_ide(T).await);

    let turn = json!({"turn_id": "t-e2e", "session_id": "console-1"});
    let with_turn = |mut v: Value| {
        v.as_object_mut()
            .unwrap()
            .extend(turn.as_object().unwrap().clone());
        v
    };
    let c = ok(
        &engine,
        "coder::create-file",
        with_turn(json!({"files": [{"path": "a.txt", "content": "one\ntwo\n"}]})),
    )
    .await;
    let created = c["results"][0]["change_id"].as_str().unwrap().to_string();
    let u = ok(&engine, "coder::update-file", with_turn(json!({"files": [{"path": "a.txt", "ops": [{"op": "replace", "pattern": "two", "replacement": "2"}]}]}))).await;
    let updated = u["results"][0]["change_id"].as_str().unwrap().to_string();
    let w = ok(
        &engine,
        "shell::fs::write",
        with_turn(json!({"path": "b.txt", "content": "bee"})),
    )
    .await;
    assert!(w["change_id"].is_string(), "{w}");
    assert!(
        state.join("ide/data/shell/turns/journal.log").exists(),
        "a relative data_dir lands under the state home"
    );
    assert!(!cwd.join("data").exists(), "nothing lands in the cwd");
    let status = ok(&engine, "shell::config-status", json!({})).await;
    assert_eq!(
        status["turns_dir"],
        state.join("ide/data/shell/turns").display().to_string()
    );

    // the journal is on disk: a restarted worker still answers
    ide.signal_term();
    ide.wait_exit(T).await.expect("ide exits on TERM");
    let ide2 = start(&engine, &seed, &cwd, &state);
    assert!(ide2.wait_for_log("ide serving", T).await, "{}", ide2.logs());
    let d = ok(&engine, "coder::change-diff", json!({"change_id": updated})).await;
    assert_eq!(d["old_contents"], "one\ntwo\n");
    assert_eq!(d["new_contents"], "one\n2\n");
    let list = ok(
        &engine,
        "shell::turns::list",
        json!({"session_id": "console-1"}),
    )
    .await;
    assert_eq!(list["turns"][0]["turn_id"], "t-e2e");
    assert_eq!(list["turns"][0]["changes"].as_array().unwrap().len(), 3);
    assert_eq!(
        list["turns"][0]["changes"][0]["change_id"],
        created.as_str()
    );

    // a hand edit blocks the revert; nothing is written
    std::fs::write(root.join("b.txt"), "edited by hand").unwrap();
    let r = ok(&engine, "shell::turns::revert", json!({"turn_id": "t-e2e"})).await;
    assert_eq!(r["reverted"], false);
    assert_eq!(
        r["conflicts"][0]["path"],
        root.join("b.txt").display().to_string()
    );
    assert!(root.join("a.txt").exists());
    // put b back as the turn left it, then revert cleanly
    std::fs::write(root.join("b.txt"), "bee").unwrap();
    let r = ok(&engine, "shell::turns::revert", json!({"turn_id": "t-e2e"})).await;
    assert_eq!(r["reverted"], true, "{r}");
    assert!(!root.join("a.txt").exists() && !root.join("b.txt").exists());

    // the workspace picker, through the same policy
    let roots = ok(&engine, "shell::workspace::roots", json!({})).await;
    assert_eq!(roots["roots"], json!([root.display().to_string()]));
    let e = engine
        .call("shell::workspace::validate", json!({"path": "/"}))
        .await
        .unwrap_err();
    assert!(format!("{e:?}").contains("S215"), "{e:?}");
    drop(ide2);
}

/// change-diff and revert answer the revisions they speak of, and the next
/// guarded edit takes them as they are: no read between.
#[tokio::test]
async fn change_diff_and_revert_carry_revisions_the_next_guarded_edit_accepts() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let (root, seed) = project(dir.path());
    let ide = start(&engine, &seed, &root, &dir.path().join("state"));
    assert!(ide.wait_for_log("ide serving", T).await, "{}", ide.logs());
    assert!(engine.wait_for_ide(T).await);
    let edit = |turn: &str, rev: &Value, from: &str, to: &str| {
        json!({"turn_id": turn, "files": [{"path": "f.txt", "expected_revision": rev,
               "ops": [{"op": "replace", "pattern": from, "replacement": to}]}]})
    };
    let c = ok(
        &engine,
        "coder::create-file",
        json!({"turn_id": "t1", "files": [{"path": "f.txt", "content": "v1\n"}]}),
    )
    .await;
    let created_rev = c["results"][0]["revision"].clone();
    assert!(created_rev.is_string(), "{c}");
    let u = ok(
        &engine,
        "coder::update-file",
        edit("t2", &created_rev, "v1", "v2"),
    )
    .await;
    let change = u["results"][0]["change_id"].as_str().unwrap().to_string();
    let d = ok(
        &engine,
        "coder::change-diff",
        json!({"change_id": change, "format": "unified"}),
    )
    .await;
    assert_eq!(d["old_revision"], created_rev, "{d}");
    assert_eq!(d["new_revision"], u["results"][0]["revision"], "{d}");
    // the diff's new_revision guards the next edit as it is
    let u3 = ok(
        &engine,
        "coder::update-file",
        edit("t3", &d["new_revision"], "v2", "v3"),
    )
    .await;
    assert!(u3["results"][0]["change_id"].is_string(), "{u3}");
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v3\n");
    // a revert's step says what the file is after it; that guards the next edit
    let r = ok(&engine, "shell::turns::revert", json!({"turn_id": "t3"})).await;
    assert_eq!(r["reverted"], true, "{r}");
    assert_eq!(r["steps"][0]["action"], "restore", "{r}");
    assert_eq!(r["steps"][0]["revision"], d["new_revision"], "{r}");
    let u4 = ok(
        &engine,
        "coder::update-file",
        edit("t4", &r["steps"][0]["revision"], "v2", "v4"),
    )
    .await;
    assert!(u4["results"][0]["change_id"].is_string(), "{u4}");
    // a created file's revert leaves nothing there, and says so by omission
    let r = ok(
        &engine,
        "shell::turns::revert",
        json!({"turn_id": "t1", "dry_run": true}),
    )
    .await;
    assert_eq!(r["steps"][0]["action"], "remove", "{r}");
    assert!(r["steps"][0].get("revision").is_none(), "{r}");
    drop(ide);
}

#[tokio::test]
async fn ide_call_beside_the_served_worker_shares_one_journal() {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let (root, seed) = project(dir.path());
    let worker = dir.path().join("worker");
    std::fs::create_dir(&worker).unwrap();
    let state = dir.path().join("state");
    let ide = start(&engine, &seed, &worker, &state);
    assert!(ide.wait_for_log("ide serving", T).await, "{}", ide.logs());
    assert!(engine.wait_for_ide(T).await);

    // Both processes append at once: `ide call` run from the project root
    // (as an agent does) and the served worker through the engine.
    const EACH: usize = 6;
    let by_cli = (0..EACH).map(|i| {
        let (seed, root, state) = (seed.clone(), root.clone(), state.clone());
        async move {
            let payload = json!({"files": [{"path": format!("cli-{i}.txt"), "content": format!("cli {i}\n")}], "session_id": "agent"});
            cli_call(&seed, &root, &state, "coder::create-file", payload).await
        }
    });
    let by_engine = (0..EACH).map(|i| {
        let engine = &engine;
        async move {
            let payload = json!({"files": [{"path": format!("bus-{i}.txt"), "content": format!("bus {i}\n")}], "session_id": "agent"});
            ok(engine, "coder::create-file", payload).await
        }
    });
    let (cli, bus) = tokio::join!(
        futures_util::future::join_all(by_cli),
        futures_util::future::join_all(by_engine)
    );
    let mut ids: Vec<String> = cli
        .iter()
        .chain(bus.iter())
        .map(|a| {
            a["results"][0]["change_id"]
                .as_str()
                .expect("change_id")
                .to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 2 * EACH, "every change has its own id: {ids:?}");
    assert!(!root.join("data").exists(), "no journal in the project");

    // The served worker lists every change, each with its own sequence.
    let list = ok(
        &engine,
        "shell::turns::list",
        json!({"session_id": "agent"}),
    )
    .await;
    let mut listed: Vec<String> = list["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["changes"].as_array().unwrap().iter())
        .map(|c| c["change_id"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    assert_eq!(listed, ids, "{list}");

    // A change made with `ide call` is diffed and reverted through the engine.
    let first = cli[0]["results"][0]["change_id"].as_str().unwrap();
    let d = ok(&engine, "coder::change-diff", json!({"change_id": first})).await;
    assert_eq!(d["new_contents"], "cli 0\n", "{d}");
    let turn = list["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["change_id"] == first)
        })
        .expect("the cli change's turn")["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = ok(&engine, "shell::turns::revert", json!({"turn_id": turn})).await;
    assert_eq!(r["reverted"], true, "{r}");
    assert!(!root.join("cli-0.txt").exists());
    // and `ide call` reads what the served worker journaled
    let by_bus = bus[0]["results"][0]["change_id"].as_str().unwrap();
    let d = cli_call(
        &seed,
        &worker,
        &state,
        "coder::change-diff",
        json!({"change_id": by_bus}),
    )
    .await;
    assert_eq!(d["new_contents"], "bus 0\n", "{d}");
    drop(ide);
}
