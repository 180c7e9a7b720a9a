//! End to end: the real `ide` binary serves its console page through
//! `ide::ui-content` and binds it as `console:script` / `console:style`, at
//! boot and again after a reconnect (no console needed: the engine holds the
//! bindings for one to arrive).

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const WAIT: Duration = Duration::from_secs(20);

async fn start() -> (Engine, IdeProcess, tempfile::TempDir) {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut cfg = ide::config::Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![dir.path().canonicalize().expect("canonical")];
    let config_path = dir.path().join("config.yaml");
    let engine = Engine::start().await;
    let ide = IdeProcess::serve(&engine.url(), &cfg, &config_path);
    assert!(
        engine
            .wait_for_function("ide::ui-content", WAIT)
            .await
            .is_some(),
        "no ide::ui-content:\n{}",
        ide.logs()
    );
    (engine, ide, dir)
}

#[tokio::test(flavor = "multi_thread")]
async fn ui_content_serves_the_committed_bundle_and_refuses_other_paths() {
    let (engine, ide, _dir) = start().await;
    let js = engine
        .call("ide::ui-content", json!({"path": "ide/page.js"}))
        .await
        .expect("page.js");
    assert_eq!(js["content_type"], "text/javascript");
    let committed = include_str!("../ui/dist/page.js");
    assert_eq!(js["content"].as_str(), Some(committed));
    let css = engine
        .call("ide::ui-content", json!({"path": "ide/styles.css"}))
        .await
        .expect("styles.css");
    assert_eq!(css["content_type"], "text/css");
    assert_eq!(
        css["content"].as_str(),
        Some(include_str!("../ui/dist/styles.css"))
    );
    let err = engine
        .call("ide::ui-content", json!({"path": "ide/missing.js"}))
        .await
        .expect_err("an unknown asset");
    assert!(
        err.message.contains("ide/page.js") && err.message.contains("ide/styles.css"),
        "{err:?}\n{}",
        ide.logs()
    );
    assert!(
        format!("{}{}", err.code, err.message).contains("S210"),
        "{err:?}"
    );
}

/// Stand-in only: the binding list is read through the stand-in's accessors,
/// and cutting one worker's connection is something only it can stage.
#[tokio::test(flavor = "multi_thread")]
async fn console_bindings_are_made_at_boot_and_again_after_a_reconnect() {
    let (engine, ide, _dir) = start().await;
    let Some(lo) = engine.loopback() else {
        eprintln!("stand-in only (see ENGINE-FACTS.md); the content test runs on both");
        return;
    };
    let ours = |ts: &[support::engine::RegisteredTrigger]| -> Vec<(String, String, String)> {
        let mut v: Vec<_> = ts
            .iter()
            .filter(|t| t.trigger_type.starts_with("console:"))
            .map(|t| {
                (
                    t.trigger_type.clone(),
                    t.config["path"].as_str().unwrap_or_default().to_string(),
                    t.id.clone(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let shape = |v: &[(String, String, String)]| -> Vec<(String, String)> {
        v.iter().map(|(t, p, _)| (t.clone(), p.clone())).collect()
    };
    let want = vec![
        ("console:script".to_string(), "ide/page.js".to_string()),
        ("console:style".to_string(), "ide/styles.css".to_string()),
    ];
    assert!(
        lo.wait_for_triggers(|ts| shape(&ours(ts)) == want, WAIT)
            .await,
        "boot bindings: {:?}\n{}",
        ours(&lo.triggers()),
        ide.logs()
    );
    for t in lo
        .triggers()
        .iter()
        .filter(|t| t.trigger_type.starts_with("console:"))
    {
        assert_eq!(t.function_id, "ide::ui-content");
        assert_eq!(t.registered_by.as_deref(), Some("ide"));
        assert!(
            !t.active,
            "no console provides the type: the engine holds it"
        );
    }
    let first: HashSet<String> = ours(&lo.triggers())
        .into_iter()
        .map(|(_, _, id)| id)
        .collect();

    let from = ide.log_len();
    assert!(lo.disconnect_worker("ide"));
    assert!(
        ide.wait_for_log_from(from, "console page published", WAIT)
            .await,
        "no re-publish after the reconnect:\n{}",
        ide.logs()
    );
    // one binding per asset again, both made after the reconnect
    assert!(
        lo.wait_for_triggers(
            |ts| {
                let v = ours(ts);
                shape(&v) == want && v.iter().all(|(_, _, id)| !first.contains(id))
            },
            WAIT
        )
        .await,
        "after the reconnect: {:?}\n{}",
        ours(&lo.triggers()),
        ide.logs()
    );
}
