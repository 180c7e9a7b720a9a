//! The server manager on the fake server (`tests/lsp/fake_server.py`):
//! reloads stop what they no longer serve, and the functions' core paths.

use crate::config::{Config, LanguageServerConfig};
use crate::runtime::Runtime;
use crate::testkit::{Jail, pid_alive};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fake(pidfile: &Path) -> LanguageServerConfig {
    LanguageServerConfig {
        command: "python3".into(),
        args: vec![
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/lsp/fake_server.py")
                .display()
                .to_string(),
            "ok".into(),
            pidfile.display().to_string(),
        ],
        extensions: vec!["txt".into()],
        initialization_options: serde_json::Value::Null,
        settings: serde_json::Value::Null,
        idle_timeout_ms: 600_000,
        memory_limit_bytes: 2 << 30,
        request_timeout_ms: 5_000,
        open_related: false,
    }
}

fn pid_of(pidfile: &Path) -> i32 {
    std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn with_server(cfg: &mut Config, pidfile: &Path) {
    cfg.code
        .language_servers
        .insert("fake".into(), Some(fake(pidfile)));
}

async fn start(j: &Jail, rel: &str) {
    let out = j
        .call("coder::diagnostics", json!({"path": rel}))
        .await
        .unwrap();
    assert_eq!(out["files"][0]["language_server"], "fake", "{out}");
}

async fn dead_soon(pid: i32) -> bool {
    for _ in 0..500 {
        if !pid_alive(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_reload_stops_servers_whose_root_went_or_whose_entry_changed() {
    let pids = tempfile::TempDir::new().unwrap();
    let pidfile = pids.path().join("pid");
    let j = Jail::with(|c| with_server(c, &pidfile));
    j.write("a.txt", "hello\n");
    start(&j, "a.txt").await;
    let pid = pid_of(&pidfile);
    assert!(pid_alive(pid));
    // its cache directory is its own, in the state directory
    let cache = std::fs::read_to_string(pids.path().join("pid.cache")).unwrap();
    assert!(
        cache.starts_with(&*j.journal.path().to_string_lossy()),
        "{cache}"
    );
    assert!(cache.contains("language-servers/fake-"), "{cache}");
    assert!(Path::new(&cache).is_dir(), "{cache}");
    // the same configuration again: nothing stops
    let same = j.services.live.snapshot();
    j.services.servers.reconfigure(&same).await;
    assert!(pid_alive(pid));
    assert_eq!(j.services.servers.describe().len(), 1);
    // its entry changed: it stops
    let mut cfg = same.config.clone();
    cfg.code
        .language_servers
        .get_mut("fake")
        .unwrap()
        .as_mut()
        .unwrap()
        .request_timeout_ms = 6_000;
    let changed = Runtime::build(cfg.clone()).unwrap();
    j.services.servers.reconfigure(&changed).await;
    assert!(dead_soon(pid).await, "a reconfigured server lives on");
    assert!(j.services.servers.describe().is_empty());
    // started again, then its root leaves the configuration: it stops
    start(&j, "a.txt").await;
    let pid = pid_of(&pidfile);
    let other = tempfile::TempDir::new().unwrap();
    let mut moved = cfg;
    moved.fs.host_roots = vec![PathBuf::from(other.path()).canonicalize().unwrap()];
    let moved = Runtime::build(moved).unwrap();
    j.services.servers.reconfigure(&moved).await;
    assert!(dead_soon(pid).await, "a server of a removed root lives on");
    j.services.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_every_server_with_its_tree() {
    let pids = tempfile::TempDir::new().unwrap();
    let pidfile = pids.path().join("pid");
    let j = Jail::with(|c| with_server(c, &pidfile));
    j.write("a.txt", "hello\n");
    start(&j, "a.txt").await;
    let pid = pid_of(&pidfile);
    assert_eq!(j.services.servers.processes(), 1);
    j.services.shutdown().await;
    assert!(!pid_alive(pid));
    assert_eq!(j.services.servers.processes(), 0);
}

#[tokio::test]
async fn no_server_configured_falls_back_and_says_nothing_is_installed() {
    let j = Jail::with(|c| {
        c.code.language_servers.insert("python".into(), None);
    });
    j.write("a.py", "def f():\n    return f()\n");
    let d = j
        .call(
            "coder::definition",
            json!({"path": "a.py", "line": 2, "column": 12}),
        )
        .await
        .unwrap();
    assert_eq!(d["precision"], "syntactic", "{d}");
    assert_eq!(d["locations"][0]["line"], 1, "{d}");
    let e = j
        .call(
            "coder::hover",
            json!({"path": "a.py", "line": 2, "column": 12}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.0, "C216", "{e:?}");
    assert!(
        e.1.contains("no language server is configured for .py"),
        "{e:?}"
    );
    let _ = Arc::clone(&j.services);
}
