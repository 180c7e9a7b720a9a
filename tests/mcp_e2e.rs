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
