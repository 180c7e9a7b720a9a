//! End-to-end: `shell::fs::*` served by the real `ide` binary on the engine
//! (the loopback stand-in, or a real iii engine with `IDE_TEST_ENGINE`), called over the bus like any caller would, with files streamed
//! through engine channels and sandbox targets forwarded to a fake sandbox
//! worker. Every test owns its temp directories and touches nothing else.

mod support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iii_sdk::channel::{ChannelReader, ChannelWriter, StreamChannelRef};
use iii_sdk::helpers::{ChannelDirection, create_channel};
use iii_sdk::protocol::ErrorBody;
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction};
use serde_json::{Value, json};
use support::engine::{connect_worker, unique_name};
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tempfile::TempDir;

const WAIT: Duration = Duration::from_secs(20);
const SANDBOX_ID: &str = "8c1c5c63-0a5e-4a5b-9e0e-0d7b0c1f2e3d";
const FS_FUNCTIONS: [&str; 10] = [
    "shell::fs::ls",
    "shell::fs::stat",
    "shell::fs::read",
    "shell::fs::write",
    "shell::fs::mkdir",
    "shell::fs::rm",
    "shell::fs::chmod",
    "shell::fs::mv",
    "shell::fs::grep",
    "shell::fs::sed",
];

/// An engine, an `ide` jailed at a temp dir, and that dir.
struct World {
    engine: Engine,
    _ide: IdeProcess,
    _dir: TempDir,
    _cfg: TempDir,
    root: PathBuf,
}

impl World {
    async fn start(extra_fs: &str) -> World {
        let engine = Engine::start().await;
        let dir = TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let cfg = TempDir::new().unwrap();
        let cfg_path = cfg.path().join("config.yaml");
        std::fs::write(
            &cfg_path,
            format!(
                "fs:\n  host_roots: [{root}]\n  allow_unjailed: false\n  denylist_paths: [{root}/blocked]\n{extra_fs}",
                root = root.display()
            ),
        )
        .unwrap();
        let ide = IdeProcess::spawn(
            &[
                "--url",
                &engine.url(),
                "--config",
                cfg_path.to_str().unwrap(),
            ],
            &[("RUST_LOG", "warn")],
        );
        for id in FS_FUNCTIONS {
            assert!(
                engine.wait_for_function(id, WAIT).await.is_some(),
                "{id} never registered; ide logs:\n{}",
                ide.logs()
            );
        }
        World {
            engine,
            _ide: ide,
            _dir: dir,
            _cfg: cfg,
            root,
        }
    }

    async fn call(&self, id: &str, payload: Value) -> Result<Value, ErrorBody> {
        self.engine.call_with_timeout(id, payload, WAIT).await
    }

    /// A successful answer without its change-history ids (random per
    /// change; `journal_e2e` checks them), so shapes compare exactly.
    async fn ok(&self, id: &str, payload: Value) -> Value {
        let mut v = self
            .call(id, payload.clone())
            .await
            .unwrap_or_else(|e| panic!("{id} {payload}: {e:?}"));
        strip_change_ids(&mut v);
        v
    }

    async fn err(&self, id: &str, payload: Value) -> ErrorBody {
        match self.call(id, payload.clone()).await {
            Ok(v) => panic!("{id} {payload} unexpectedly answered {v}"),
            Err(e) => e,
        }
    }

    fn file(&self, rel: &str, content: &[u8]) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap()
    }
}

fn channel_ref(v: &Value) -> StreamChannelRef {
    StreamChannelRef {
        channel_id: v["channel_id"].as_str().unwrap().to_string(),
        access_key: v["access_key"].as_str().unwrap().to_string(),
        direction: match v["direction"].as_str() {
            Some("write") => ChannelDirection::Write,
            _ => ChannelDirection::Read,
        },
    }
}

#[tokio::test]
async fn every_host_function_over_the_bus() {
    let w = World::start("").await;
    // what the engine registered is the published contract
    let contract: Value =
        serde_json::from_str(include_str!("fixtures/contract-shell-fs.json")).unwrap();
    for f in contract["functions"].as_array().unwrap() {
        let got = w
            .engine
            .function(f["name"].as_str().unwrap())
            .await
            .unwrap();
        // the published description, possibly led by the parameters to send
        let published = f["description"].as_str().unwrap();
        let registered = got.description.unwrap_or_default();
        assert!(
            registered.ends_with(published),
            "{registered:?} does not hold {published:?}"
        );
        let req = got.request_format.unwrap();
        // The published fields, plus the change history's optional ones.
        assert_eq!(
            req["properties"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| !["turn_id", "session_id"].contains(&k.as_str()))
                .collect::<Vec<_>>(),
            f["request_schema"]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>()
        );
    }

    let made = w
        .ok(
            "shell::fs::mkdir",
            json!({"path": "src/app", "parents": true}),
        )
        .await;
    assert_eq!(
        made,
        json!({"created": true, "path": "src/app", "already_existed": false})
    );
    let wrote = w
        .ok(
            "shell::fs::write",
            json!({"path": "src/app/main.rs", "content": "fn main() {}\nfn old() {}\n"}),
        )
        .await;
    assert_eq!(
        wrote,
        json!({"bytes_written": 25, "path": "src/app/main.rs", "files": []})
    );
    let batch = w
        .ok("shell::fs::write", json!({"files": [{"path": "a.txt", "content": "A"}, {"path": "b.txt", "content": "BB", "mode": "0600"}]}))
        .await;
    assert_eq!(batch["bytes_written"], 3);
    assert_eq!(
        batch["files"][1],
        json!({"path": "b.txt", "bytes_written": 2})
    );

    let ls = w
        .ok("shell::fs::ls", json!({"path": ".", "page_size": 2}))
        .await;
    assert_eq!(ls["total"], 3);
    assert_eq!(ls["has_more"], true);
    assert_eq!(ls["entries"][0]["name"], "a.txt");
    let st = w.ok("shell::fs::stat", json!({"path": "b.txt"})).await;
    assert_eq!(st["mode"], "0600");
    assert_eq!(st["size"], 2);

    let ch = w
        .ok(
            "shell::fs::chmod",
            json!({"path": "src", "mode": "0750", "recursive": true}),
        )
        .await;
    assert_eq!(
        ch,
        json!({"entries_changed": 3, "path": "src", "recursive": true})
    );
    assert_eq!(
        w.err("shell::fs::mv", json!({"src": "a.txt", "dst": "b.txt"}))
            .await
            .code,
        "S213"
    );
    let mv = w
        .ok(
            "shell::fs::mv",
            json!({"src": "a.txt", "dst": "b.txt", "overwrite": true}),
        )
        .await;
    assert_eq!(
        mv,
        json!({"moved": true, "src": "a.txt", "dst": "b.txt", "overwrote": true})
    );

    let grep = w
        .ok(
            "shell::fs::grep",
            json!({"path": "src", "pattern": "^fn (\\w+)"}),
        )
        .await;
    assert_eq!(
        grep,
        json!({"matches": [
            {"path": "src/app/main.rs", "line": 1, "content": "fn main() {}"},
            {"path": "src/app/main.rs", "line": 2, "content": "fn old() {}"}], "truncated": false})
    );
    let sed = w
        .ok(
            "shell::fs::sed",
            json!({"path": "src", "pattern": "fn old", "replacement": "fn new"}),
        )
        .await;
    assert_eq!(sed["total_replacements"], 1);
    assert_eq!(w.read("src/app/main.rs"), b"fn main() {}\nfn new() {}\n");

    let rm = w
        .ok("shell::fs::rm", json!({"path": "src", "recursive": true}))
        .await;
    assert_eq!(
        rm,
        json!({"removed": true, "path": "src", "was_present": true})
    );
    assert!(!w.root.join("src").exists());
}

#[tokio::test]
async fn read_streams_a_file_to_a_channel_consumer() {
    let w = World::start("  max_read_bytes: 0\n").await;
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 256) as u8).collect();
    w.file("data/blob.bin", &body);
    let r = w
        .ok("shell::fs::read", json!({"path": "data/blob.bin"}))
        .await;
    assert_eq!(r["size"], body.len());
    assert_eq!(r["content"]["direction"], "read");
    let reader = ChannelReader::new(&w.engine.url(), &channel_ref(&r["content"]));
    let got = tokio::time::timeout(WAIT, reader.read_all())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.len(), body.len());
    assert!(got == body);
    assert_eq!(
        w.err("shell::fs::read", json!({"path": "data"})).await.code,
        "S212"
    );
}

/// An empty file is a stream that carries nothing and still ends: the
/// reader sees the channel closed at once, not a wait for its own timeout.
#[tokio::test]
async fn reading_an_empty_file_ends_with_the_channel_closed() {
    let w = World::start("").await;
    w.file("empty.txt", b"");
    for _ in 0..2 {
        let r = w.ok("shell::fs::read", json!({"path": "empty.txt"})).await;
        assert_eq!(r["size"], 0);
        let reader = ChannelReader::new(&w.engine.url(), &channel_ref(&r["content"]));
        let got = tokio::time::timeout(Duration::from_secs(10), reader.read_all())
            .await
            .expect("the empty stream must end")
            .unwrap();
        assert!(got.is_empty());
    }
}

#[tokio::test]
async fn read_over_the_cap_is_218() {
    let w = World::start("  max_read_bytes: 10\n").await;
    w.file("big", b"0123456789A");
    assert_eq!(
        w.err("shell::fs::read", json!({"path": "big"})).await.code,
        "S218"
    );
}

#[tokio::test]
async fn write_is_fed_through_a_channel_the_caller_opens() {
    let w = World::start("  max_write_bytes: 4000000\n").await;
    let refs = w.ok("engine::channels::create", json!({})).await;
    let writer = ChannelWriter::new(&w.engine.url(), &channel_ref(&refs["writer"]));
    let chunks: Vec<Vec<u8>> = (0..30u8).map(|i| vec![i; 100_000]).collect();
    let want = chunks.concat();
    let feed = tokio::spawn(async move {
        for c in chunks {
            writer.write(&c).await.unwrap();
        }
        writer.close().await.unwrap();
    });
    let r = w
        .ok("shell::fs::write", json!({"path": "up/load.bin", "parents": true, "mode": "0640", "content": refs["reader"]}))
        .await;
    feed.await.unwrap();
    assert_eq!(
        r,
        json!({"bytes_written": want.len(), "path": "up/load.bin", "files": []})
    );
    assert!(w.read("up/load.bin") == want);

    // over fs.max_write_bytes: S218 and the previous file stays
    let refs = w.ok("engine::channels::create", json!({})).await;
    let writer = ChannelWriter::new(&w.engine.url(), &channel_ref(&refs["writer"]));
    let feed = tokio::spawn(async move {
        for _ in 0..50 {
            if writer.write(&[7u8; 100_000]).await.is_err() {
                return;
            }
        }
        let _ = writer.close().await;
    });
    let e = w
        .err(
            "shell::fs::write",
            json!({"path": "up/load.bin", "content": refs["reader"]}),
        )
        .await;
    assert_eq!(e.code, "S218");
    let _ = tokio::time::timeout(WAIT, feed).await;
    assert!(w.read("up/load.bin") == want);
    let names: Vec<_> = std::fs::read_dir(w.root.join("up")).unwrap().collect();
    assert_eq!(names.len(), 1, "no temp file left behind");
}

#[tokio::test]
async fn errors_keep_their_codes_and_denied_reads_like_missing() {
    let w = World::start("").await;
    w.file("blocked/x", b"1");
    w.file(".env", b"SECRET=1");
    w.file("f.txt", b"x");
    for id in [
        "shell::fs::stat",
        "shell::fs::read",
        "shell::fs::ls",
        "shell::fs::rm",
    ] {
        for denied in ["blocked/x", ".env", "blocked"] {
            // a missing path spelled the same way below a missing directory
            let twin = format!("nope/{denied}");
            let missing = w.err(id, json!({"path": twin})).await;
            assert_eq!(missing.code, "S211");
            let e = w.err(id, json!({"path": denied})).await;
            assert_eq!(e.code, "S211", "{id} {denied}");
            assert_eq!(
                e.message.replace(&format!("{denied:?}"), "P"),
                missing.message.replace(&format!("{twin:?}"), "P"),
                "{id} {denied}"
            );
        }
    }
    assert_eq!(
        w.err("shell::fs::stat", json!({"path": "/etc/hostname"}))
            .await
            .code,
        "S215"
    );
    assert_eq!(
        w.err("shell::fs::grep", json!({"path": ".", "pattern": "("}))
            .await
            .code,
        "S217"
    );
    assert_eq!(
        w.err("shell::fs::mkdir", json!({"path": "f.txt"}))
            .await
            .code,
        "S213"
    );
    assert_eq!(
        w.err("shell::fs::ls", json!({"path": "f.txt"})).await.code,
        "S212"
    );
    assert_eq!(
        w.err(
            "shell::fs::write",
            json!({"path": "z", "content": "1", "files": []})
        )
        .await
        .code,
        "S210"
    );
    w.file("full/x", b"1");
    assert_eq!(
        w.err("shell::fs::rm", json!({"path": "full"})).await.code,
        "S214"
    );
    // engine sidecar fields are accepted, unknown fields refused
    assert_eq!(
        w.err("shell::fs::stat", json!({"path": "f.txt", "bogus": 1}))
            .await
            .code,
        "S210"
    );
}

/// A fake iii-sandbox worker: answers `sandbox::fs::*` from a table and
/// records what it was sent; `read` and `write` use real channels.
fn fake_sandbox(client: &IIIClient, seen: Arc<Mutex<Vec<(String, Value)>>>) {
    let answers: Vec<(&str, Value)> = vec![
        (
            "ls",
            json!({"entries": [
            {"name": "b", "is_dir": false, "is_symlink": false, "size": 1, "mode": "0644", "mtime": 1},
            {"name": "a", "is_dir": true, "is_symlink": false, "size": 0, "mode": "0755", "mtime": 2}]}),
        ),
        ("mkdir", json!({"created": true})),
        ("rm", json!({"removed": true})),
        ("chmod", json!({"updated": 2})),
        ("mv", json!({"moved": true})),
        (
            "grep",
            json!({"matches": [{"path": "/w/a", "line_no": 4, "byte_offset": 9, "line": "hit"}], "truncated": false}),
        ),
        (
            "sed",
            json!({"results": [{"path": "/w/a", "replacements": 1, "success": true, "error": null}], "total_replacements": 1}),
        ),
    ];
    for (op, answer) in answers {
        let seen = seen.clone();
        let id = format!("sandbox::fs::{op}");
        let name = id.clone();
        client.register_function(
            &id,
            RegisterFunction::new_async(move |input: Value| {
                let (seen, answer, name) = (seen.clone(), answer.clone(), name.clone());
                async move {
                    seen.lock().unwrap().push((name, input));
                    Ok::<Value, SdkError>(answer)
                }
            }),
        );
    }
    client.register_function(
        "sandbox::fs::stat",
        RegisterFunction::new_async(|input: Value| async move {
            if input["path"] == "/boom" {
                return Err(SdkError::Remote {
                    code: "S300".into(),
                    message: "VM boot failed".into(),
                    stacktrace: None,
                });
            }
            if input["path"] == "/missing" {
                return Err(SdkError::Remote {
                    code: "S211".into(),
                    message: "file not found".into(),
                    stacktrace: None,
                });
            }
            Ok(json!({"name": "x", "is_dir": false, "is_symlink": false, "size": 3, "mode": "0600", "mtime": 9}))
        }),
    );
    let c = client.clone();
    client.register_function(
        "sandbox::fs::read",
        RegisterFunction::new_async(move |_input: Value| {
            let c = c.clone();
            async move {
                let ch = create_channel(&c, None).await?;
                ch.writer.write(b"from the vm").await?;
                ch.writer.close().await?;
                Ok::<Value, SdkError>(json!({"content": ch.reader_ref, "body": "from the vm", "size": 11, "mode": "0644", "mtime": 3}))
            }
        }),
    );
    let c = client.clone();
    client.register_function(
        "sandbox::fs::write",
        RegisterFunction::new_async(move |input: Value| {
            let c = c.clone();
            async move {
                let r: StreamChannelRef = serde_json::from_value(input["content"].clone())
                    .map_err(|e| SdkError::Handler(e.to_string()))?;
                let bytes = ChannelReader::new(c.address(), &r).read_all().await?;
                Ok::<Value, SdkError>(json!({"bytes_written": bytes.len(), "path": input["path"]}))
            }
        }),
    );
}

#[tokio::test]
async fn sandbox_targets_are_forwarded_to_the_sandbox_worker() {
    let w = World::start("").await;
    let sandbox = connect_worker(&w.engine.url(), &unique_name("iii-sandbox"));
    sandbox.wait_until_registered(WAIT).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    fake_sandbox(&sandbox, seen.clone());
    for op in [
        "ls", "stat", "read", "write", "mkdir", "rm", "chmod", "mv", "grep", "sed",
    ] {
        assert!(
            w.engine
                .wait_for_function(&format!("sandbox::fs::{op}"), WAIT)
                .await
                .is_some()
        );
    }
    let t = json!({"kind": "sandbox", "sandbox_id": SANDBOX_ID});

    let ls = w
        .ok("shell::fs::ls", json!({"path": "/w", "target": t}))
        .await;
    assert_eq!(ls["entries"][0]["name"], "a");
    assert_eq!(ls["total"], 2);
    let st = w
        .ok("shell::fs::stat", json!({"path": "/w/x", "target": t}))
        .await;
    assert_eq!(st["mode"], "0600");
    assert_eq!(
        w.ok(
            "shell::fs::mkdir",
            json!({"path": "/w/d", "parents": true, "target": t})
        )
        .await,
        json!({"created": true, "path": "", "already_existed": false})
    );
    assert_eq!(
        w.ok("shell::fs::rm", json!({"path": "/w/d", "target": t}))
            .await,
        json!({"removed": true, "path": "", "was_present": false})
    );
    assert_eq!(
        w.ok(
            "shell::fs::chmod",
            json!({"path": "/w", "mode": "0700", "recursive": true, "target": t})
        )
        .await,
        json!({"entries_changed": 2, "path": "", "recursive": false})
    );
    assert_eq!(
        w.ok(
            "shell::fs::mv",
            json!({"src": "/w/a", "dst": "/w/b", "target": t})
        )
        .await,
        json!({"moved": true, "src": "", "dst": "", "overwrote": false})
    );
    assert_eq!(
        w.ok(
            "shell::fs::grep",
            json!({"path": "/w", "pattern": "hit", "target": t})
        )
        .await,
        json!({"matches": [{"path": "/w/a", "line": 4, "content": "hit"}], "truncated": false})
    );
    assert_eq!(
        w.ok(
            "shell::fs::sed",
            json!({"files": ["/w/a"], "pattern": "x", "replacement": "y", "target": t})
        )
        .await["total_replacements"],
        1
    );
    // read: the sandbox's channel reaches the caller
    let r = w
        .ok("shell::fs::read", json!({"path": "/w/f", "target": t}))
        .await;
    assert!(r.get("body").is_none());
    let got = ChannelReader::new(&w.engine.url(), &channel_ref(&r["content"]))
        .read_all()
        .await
        .unwrap();
    assert_eq!(got, b"from the vm");
    // write: a caller's channel reaches the sandbox
    let refs = w.ok("engine::channels::create", json!({})).await;
    let writer = ChannelWriter::new(&w.engine.url(), &channel_ref(&refs["writer"]));
    writer.write(b"into the vm").await.unwrap();
    writer.close().await.unwrap();
    let wr = w
        .ok(
            "shell::fs::write",
            json!({"path": "/w/in", "content": refs["reader"], "target": t}),
        )
        .await;
    assert_eq!(
        wr,
        json!({"bytes_written": 11, "path": "/w/in", "files": []})
    );
    // inline content is host-only
    assert_eq!(
        w.err(
            "shell::fs::write",
            json!({"path": "/w/in", "content": "x", "target": t})
        )
        .await
        .code,
        "S210"
    );
    // known sandbox codes pass through; others collapse to S216
    assert_eq!(
        w.err("shell::fs::stat", json!({"path": "/boom", "target": t}))
            .await
            .code,
        "S300"
    );
    assert_eq!(
        w.err("shell::fs::stat", json!({"path": "/missing", "target": t}))
            .await
            .code,
        "S216"
    );

    let seen = seen.lock().unwrap().clone();
    let mv = seen.iter().find(|(id, _)| id == "sandbox::fs::mv").unwrap();
    assert_eq!(mv.1["sandbox_id"], SANDBOX_ID);
    assert_eq!(mv.1["src"], "/w/a");
    assert_eq!(mv.1["overwrite"], false);
    sandbox.shutdown_async().await;
}

#[tokio::test]
async fn recursive_chmod_of_a_symlink_root_is_212_and_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::start("").await;
    std::fs::create_dir_all(w.root.join("real/inner")).unwrap();
    std::fs::write(w.root.join("real/inner/f"), "x").unwrap();
    std::os::unix::fs::symlink(w.root.join("real"), w.root.join("alias")).unwrap();
    let mode = |p: &str| {
        std::fs::metadata(w.root.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let before = (mode("real"), mode("real/inner"), mode("real/inner/f"));
    let e = w
        .err(
            "shell::fs::chmod",
            json!({"path": "alias", "mode": "0700", "recursive": true}),
        )
        .await;
    assert!(e.message.contains("S212") || e.code == "S212", "{e:?}");
    assert_eq!(
        (mode("real"), mode("real/inner"), mode("real/inner/f")),
        before
    );
}

fn strip_change_ids(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("change_id");
            m.values_mut().for_each(strip_change_ids);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_change_ids),
        _ => {}
    }
}
