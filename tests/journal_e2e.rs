//! End to end (stand-in or real engine): a turn of changes through the
//! engine, its byte-exact diffs after a worker restart, a conflicting and
//! then a clean revert, and the workspace picker.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(15);

fn start(engine: &Engine, seed: &std::path::Path, cwd: &std::path::Path) -> IdeProcess {
    IdeProcess::spawn_in(
        Some(cwd),
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    )
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
    let root = dir.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let seed = dir.path().join("seed.yaml");
    // turns.data_dir stays relative: it resolves against the worker's cwd
    std::fs::write(&seed, format!("fs:\n  host_roots: [{}]\n", root.display())).unwrap();
    let cwd = dir.path().join("worker");
    std::fs::create_dir(&cwd).unwrap();
    let mut ide = start(&engine, &seed, &cwd);
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
        cwd.join("data/shell/turns/journal.log").exists(),
        "relative data_dir"
    );

    // the journal is on disk: a restarted worker still answers
    ide.signal_term();
    ide.wait_exit(T).await.expect("ide exits on TERM");
    let ide2 = start(&engine, &seed, &cwd);
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
