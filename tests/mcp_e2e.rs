//! `ide mcp` driven by the Python MCP client (PyPI `mcp`, pinned in
//! `.ci/run`) as an agent's host runs it: the client starts the real `ide`
//! binary as a subprocess over stdio (no engine), lists the tools, calls
//! every family, reads errors, makes 100 concurrent calls, drives a
//! terminal, cancels a long command, and leaves with a terminal and a job
//! still running. This test checks its report and that nothing ide started
//! is left afterwards.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

fn alive(pid: i64) -> bool {
    // a zombie is not running
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

fn wait_gone(pids: &[i64], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|p| alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "{what} {pids:?} outlived the MCP server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_python_mcp_client_uses_ide_mcp_end_to_end() {
    let probe = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .expect("python3 runs (the MCP e2e test needs it)");
    assert!(
        probe.status.success(),
        "the Python MCP client is missing: pip install mcp==1.26.0 ({})",
        String::from_utf8_lossy(&probe.stderr)
    );
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap().join("root");
    std::fs::create_dir_all(root.join("denied")).unwrap();
    std::fs::write(root.join("denied/secret.txt"), "s").unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "fs:\n  allow_unjailed: false\n  host_roots: [{root}]\n  denylist_paths: [{root}/denied]\n\
             turns:\n  data_dir: {state}\n",
            root = root.display(),
            state = state.display()
        ),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mcp_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_ide"))
        .arg(&config)
        .arg(&root)
        .env("HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .output()
        .expect("the client runs");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}",
        support::output_text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no report ({e}):\n{}", support::output_text(&out)));
    eprintln!(
        "mcp report: protocol {}, {} tools, tools/list {} bytes, {} progress notes",
        report["protocol"],
        report["tools"].as_array().unwrap().len(),
        report["list_bytes"],
        report["progress_notes"]
    );
    assert_eq!(report["server"], "ide");
    assert_eq!(report["mode"], "jailed");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let catalog = ide::catalog::Catalog::standard();
    for d in catalog
        .agent_functions()
        .filter(|d| d.id != "shell::fs::read")
    {
        assert!(
            tools.contains(&ide::mcp::tool_name(d.id).as_str()),
            "{} is not a tool",
            d.id
        );
    }
    assert_eq!(report["denied"], report["missing"]);
    assert!(
        report["denied"].as_str().unwrap().starts_with("C211: "),
        "{}",
        report["denied"]
    );
    assert_eq!(report["concurrent_ok"], 100);
    assert!(report["progress_notes"].as_u64().unwrap() >= 1);
    let cancelled: Vec<i64> = report["cancelled_pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_i64().unwrap())
        .collect();
    assert_eq!(cancelled.len(), 2, "{report}");
    wait_gone(&cancelled, "the cancelled command's processes");
    // the client left with a terminal and a job running: both are gone
    wait_gone(
        &[report["left_pid"].as_i64().unwrap()],
        "the terminal's shell",
    );
    let leftovers = Command::new("pgrep")
        .args(["-f", "^sleep 300$"])
        .output()
        .unwrap();
    let ours: Vec<i64> = String::from_utf8_lossy(&leftovers.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .map(|e| {
                    String::from_utf8_lossy(&e).contains(&root.display().to_string())
                        || std::fs::read_link(format!("/proc/{p}/cwd"))
                            .is_ok_and(|c| c.starts_with(&root))
                })
                .unwrap_or(false)
        })
        .collect();
    wait_gone(&ours, "the background job");
    // and nothing of the server's was written outside its state directory
    // and the root
    let stray: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !["root", "state", "config.yaml"].contains(&n.as_str()))
        .collect();
    assert!(stray.is_empty(), "left in the test's directory: {stray:?}");
}

/// A second client, the Node MCP SDK (`tests/clients`, pinned), lists the
/// tools and uses the read and edit tools.
#[test]
fn the_node_mcp_client_lists_reads_and_edits() {
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        clients
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir(),
        "the Node MCP client is missing: (cd tests/clients && npm ci)"
    );
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "fs:\n  allow_unjailed: false\n  host_roots: [{}]\nturns:\n  data_dir: {}\n",
            root.display(),
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    let out = Command::new("node")
        .arg(clients.join("mcp_client.mjs"))
        .arg(env!("CARGO_BIN_EXE_ide"))
        .arg(&config)
        .arg(&root)
        .env("HOME", dir.path())
        .output()
        .expect("node runs (the MCP e2e test needs it)");
    assert!(
        out.status.success(),
        "the Node MCP client failed:\n{}",
        support::output_text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no report ({e}):\n{}", support::output_text(&out)));
    let tools = ide::catalog::Catalog::standard().agent_functions().count() - 1;
    assert_eq!(report["tools"], tools);
    assert_eq!(report["content"], "1→alpha\n2→gamma\n");
    assert_eq!(report["stale"], "C221:");
    assert_eq!(report["stale_is_error"], true);
    assert_eq!(report["found"], 1);
    assert_eq!(
        std::fs::read_to_string(root.join("n.txt")).unwrap(),
        "alpha\ngamma\n"
    );
}

/// `ide mcp --url`: the same tools, each call answered by the ide worker
/// serving on the engine (the stand-in, or a real one with
/// `IDE_TEST_ENGINE`) — files the MCP server's own machine never touches.
#[tokio::test]
async fn through_an_engine_the_tools_reach_the_served_worker() {
    use support::harness::Engine;
    use support::ide_process::IdeProcess;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap().join("served");
    std::fs::create_dir_all(root.join("denied")).unwrap();
    std::fs::write(root.join("denied/secret.txt"), "s").unwrap();
    let seed = dir.path().join("seed.yaml");
    std::fs::write(
        &seed,
        format!(
            "fs:\n  allow_unjailed: false\n  host_roots: [{r}]\n  denylist_paths: [{r}/denied]\n",
            r = root.display()
        ),
    )
    .unwrap();
    let served = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    );
    assert!(
        engine.wait_for_ide(Duration::from_secs(30)).await,
        "ide did not register:\n{}",
        served.logs()
    );
    let mut mcp = tokio::process::Command::new(env!("CARGO_BIN_EXE_ide"))
        .args(["--url", &engine.url(), "mcp"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut to = mcp.stdin.take().unwrap();
    let mut from = BufReader::new(mcp.stdout.take().unwrap()).lines();
    let mut next = 0;
    let mut ask = async |method: &str, params: Value| -> Value {
        next += 1;
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": next, "method": method, "params": params});
        to.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        loop {
            let text = tokio::time::timeout(Duration::from_secs(60), from.next_line())
                .await
                .expect("ide mcp answers")
                .unwrap()
                .expect("ide mcp is running");
            let m: Value = serde_json::from_str(&text).unwrap();
            if m["id"] == next {
                return m;
            }
        }
    };
    let init = ask(
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
    )
    .await;
    assert_eq!(init["result"]["serverInfo"]["name"], "ide");
    let made = ask(
        "tools/call",
        serde_json::json!({"name": "coder_create-file", "arguments":
            {"files": [{"path": "remote.txt", "content": "over the bus\n"}]}}),
    )
    .await;
    assert_eq!(made["result"]["isError"], false, "{made}");
    assert_eq!(
        std::fs::read_to_string(root.join("remote.txt")).unwrap(),
        "over the bus\n"
    );
    let info = ask(
        "tools/call",
        serde_json::json!({"name": "coder_info", "arguments": {}}),
    )
    .await;
    assert_eq!(
        info["result"]["structuredContent"]["primary_root"],
        root.display().to_string()
    );
    let denied = ask(
        "tools/call",
        serde_json::json!({"name": "coder_read-file", "arguments": {"path": "denied/secret.txt"}}),
    )
    .await;
    let missing = ask(
        "tools/call",
        serde_json::json!({"name": "coder_read-file", "arguments": {"path": "denied/absent.txt"}}),
    )
    .await;
    assert_eq!(denied["result"]["isError"], true);
    let text = |m: &Value| {
        m["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(text(&denied).starts_with("C211: "), "{denied}");
    assert_eq!(
        text(&denied).replace("secret.txt", "<P>"),
        text(&missing).replace("absent.txt", "<P>")
    );
    // closing its stdin is the client going away
    drop(to);
    let status = tokio::time::timeout(Duration::from_secs(30), mcp.wait())
        .await
        .expect("ide mcp ends when its client goes")
        .unwrap();
    assert!(status.success(), "{status:?}");
    drop(served);
    engine.stop().await;
}
