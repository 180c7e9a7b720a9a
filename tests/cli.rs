//! The command line without an engine: `--version`, `ide call`, `ide functions`.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn ide(args: &[&str], stdin: Option<&str>) -> Output {
    // A scratch working directory: the default turns.data_dir is relative.
    let cwd = tempfile::TempDir::new().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(cwd.path())
        .env("XDG_STATE_HOME", cwd.path())
        .args(args)
        .env_remove("III_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ide");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

#[test]
fn version_prints_the_crate_version() {
    let o = ide(&["--version"], None);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("ide {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn call_runs_a_handler_in_process_with_the_builtin_default() {
    let dir = tempfile::TempDir::new().unwrap();
    let missing = dir.path().join("none.yaml");
    let o = ide(
        &[
            "--config",
            missing.to_str().unwrap(),
            "call",
            "coder::info",
            "{}",
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["mode"], "unjailed");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn call_uses_the_config_file_directly_and_reads_stdin() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hi\n").unwrap();
    let cfg = root.join("c.yaml");
    std::fs::write(&cfg, format!("fs:\n  host_roots: [{}]\n", root.display())).unwrap();
    let o = ide(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "call",
            "coder::read-file",
            "-",
        ],
        Some(r#"{"path": "hello.txt"}"#),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["content"], "hi\n");
}

#[test]
fn a_function_error_prints_the_envelope_and_exits_1() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let cfg = root.join("c.yaml");
    std::fs::write(&cfg, format!("fs:\n  host_roots: [{}]\n", root.display())).unwrap();
    let o = ide(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "call",
            "coder::read-file",
            r#"{"path": "nope"}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["code"], "C211");
    assert!(v["message"].as_str().unwrap().contains("nope"));
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(
        ide(&["call", "coder::nope", "{}"], None).status.code(),
        Some(2)
    );
    assert_eq!(
        ide(&["call", "coder::info", "{not json"], None)
            .status
            .code(),
        Some(2)
    );
    assert_eq!(ide(&["call"], None).status.code(), Some(2));
    let dir = tempfile::TempDir::new().unwrap();
    let cfg = dir.path().join("bad.yaml");
    std::fs::write(&cfg, "allowlist: []\n").unwrap();
    let o = ide(
        &["--config", cfg.to_str().unwrap(), "call", "coder::info"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("removed in 0.8.0"));
}

#[test]
fn functions_prints_the_catalog_with_schemas() {
    let o = ide(&["functions"], None);
    assert!(o.status.success());
    let v = json(&o);
    let fs = v["functions"].as_array().unwrap();
    let info = fs.iter().find(|f| f["id"] == "coder::info").unwrap();
    assert_eq!(info["request_schema"]["title"], "InfoInput");
    assert_eq!(info["response_schema"]["title"], "InfoOutput");
    assert!(
        fs.iter()
            .all(|f| f["description"].as_str().is_some_and(|d| !d.is_empty()))
    );
    let status = fs
        .iter()
        .find(|f| f["id"] == "shell::config-status")
        .unwrap();
    assert_eq!(status["metadata"]["internal"], true);
}

#[test]
fn functions_brief_lists_every_id_in_a_few_kilobytes_and_an_id_prints_one() {
    let o = ide(&["functions", "--brief"], None);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.len() < 10 * 1024, "{} bytes", text.len());
    let all = json(&ide(&["functions"], None));
    for f in all["functions"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(id)),
            "{id} is not listed:\n{text}"
        );
    }
    let one = ide(&["functions", "shell::pty::send"], None);
    assert!(one.status.success());
    let v = json(&one);
    assert_eq!(v["id"], "shell::pty::send");
    assert!(v["request_schema"]["properties"].is_object(), "{v}");
    let unknown = ide(&["functions", "coder::nope"], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--brief"));
}
