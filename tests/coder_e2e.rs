//! End to end: every coder function through the engine (stand-in or real) and the
//! real `ide` binary, including the engine-stamped `_caller_worker_id` and
//! the top-level C-coded error envelope.

mod support;

use serde_json::json;
use std::time::Duration;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(15);

struct Setup {
    engine: Engine,
    _ide: IdeProcess,
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

async fn setup() -> Setup {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("proj");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn one() -> u32 {\n    1\n}\n").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    let seed = dir.path().join("seed.yaml");
    std::fs::write(&seed, format!("fs:\n  host_roots: [{}]\n", root.display())).unwrap();
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    );
    assert!(ide.wait_for_log("ide serving", T).await, "{}", ide.logs());
    assert!(engine.wait_for_ide(T).await);
    Setup {
        engine,
        _ide: ide,
        _dir: dir,
        root,
    }
}

#[tokio::test]
async fn every_coder_function_round_trips_through_the_engine() {
    let s = setup().await;
    let e = &s.engine;

    let info = e.call("coder::info", json!({})).await.unwrap();
    assert_eq!(info["mode"], "jailed");

    let read = e
        .call("coder::read-file", json!({"path": "src/lib.rs"}))
        .await
        .unwrap();
    assert_eq!(read["total_lines"], 3);
    let revision = read["revision"].clone();

    let list = e.call("coder::list-folder", json!({})).await.unwrap();
    let names: Vec<&str> = list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [".env", "src"]);
    assert_eq!(list["entries"][0]["non_accessible"], true);

    let found = e
        .call("coder::search", json!({"query": "fn one", "path": "."}))
        .await
        .unwrap();
    let hits = found.to_string();
    assert!(hits.contains("lib.rs"), "{hits}");
    assert!(
        !hits.contains("SECRET"),
        "protected files never appear: {hits}"
    );

    let tree = e.call("coder::tree", json!({})).await.unwrap();
    assert_eq!(tree["path"], s.root.display().to_string());

    let upd = e
        .call(
            "coder::update-file",
            json!({"files": [{"path": "src/lib.rs", "expected_revision": revision,
                "ops": [{"op": "edit", "old_text": "    1\n", "new_text": "    2\n"}]}]}),
        )
        .await
        .unwrap();
    assert_eq!(upd["results"][0]["success"], true, "{upd}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/lib.rs")).unwrap(),
        "pub fn one() -> u32 {\n    2\n}\n"
    );

    let created = e
        .call(
            "coder::create-file",
            json!({"files": [{"path": "src/new.rs", "content": "// new\n"}]}),
        )
        .await
        .unwrap();
    assert_eq!(created["results"][0]["bytes_written"], 7);

    let moved = e
        .call(
            "coder::move",
            json!({"files": [{"from": "src/new.rs", "to": "src/renamed.rs"}]}),
        )
        .await
        .unwrap();
    assert_eq!(moved["results"][0]["moved"], true);

    let deleted = e
        .call("coder::delete-file", json!({"paths": ["src/renamed.rs"]}))
        .await
        .unwrap();
    assert_eq!(deleted["results"][0]["removed"], true);
    assert!(!s.root.join("src/renamed.rs").exists());
}

#[tokio::test]
async fn errors_arrive_as_top_level_c_codes_and_redaction_holds_on_the_wire() {
    let s = setup().await;
    let denied = s
        .engine
        .call("coder::read-file", json!({"path": ".env"}))
        .await
        .unwrap_err();
    // a missing path spelled the same way reads the same (the glob that
    // protects the spelling is named either way)
    let missing = s
        .engine
        .call("coder::read-file", json!({"path": "nope/.env"}))
        .await
        .unwrap_err();
    assert_eq!(denied.code, "C211");
    assert_eq!(denied.code, missing.code);
    assert_eq!(
        denied.message.replace("\".env\"", "P"),
        missing.message.replace("\"nope/.env\"", "P")
    );
    assert!(denied.message.contains("`**/.env`"), "{}", denied.message);
    let escape = s
        .engine
        .call("coder::read-file", json!({"path": "../../etc/hostname"}))
        .await
        .unwrap_err();
    assert_eq!(escape.code, "C215");
    let bad = s
        .engine
        .call("coder::read-file", json!({"path": "a", "paths": ["b"]}))
        .await
        .unwrap_err();
    assert_eq!(bad.code, "C210");
}
