//! The command line without an engine: `--version`, `ide call`, `ide functions`.

use nix::sys::signal::{SigHandler, Signal};
use serde_json::Value;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

fn ide(args: &[&str], stdin: Option<&str>) -> Output {
    ide_with(args, stdin, &[])
}

/// [`ide`], started with `ignored` signals ignored (as `nohup` or a
/// script's `cmd &` starts a process).
fn ide_with(args: &[&str], stdin: Option<&str>, ignored: &'static [Signal]) -> Output {
    // A scratch working directory: the default turns.data_dir is relative.
    let cwd = tempfile::TempDir::new().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ide"));
    // SAFETY: in the forked child before exec; setting SIG_IGN is
    // async-signal-safe and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            for s in ignored {
                nix::sys::signal::signal(*s, SigHandler::SigIgn).map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    let mut child = command
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
    // a batch with a failed entry answers, and exits 3
    std::fs::write(root.join("there.txt"), "x\n").unwrap();
    let o = ide(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "call",
            "coder::read-file",
            r#"{"paths": ["there.txt", "nope"]}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(json(&o)["failed"], 1);
    // and `ide call --help` says what each exit status means
    let help = ide(&["call", "--help"], None);
    let help = String::from_utf8_lossy(&help.stdout);
    for status in [
        "0 the function answered",
        "1 it failed",
        "2 bad usage",
        "3 a batch answered",
    ] {
        assert!(help.contains(status), "{status}: {help}");
    }
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
    assert!(v.get("response_schema").is_none(), "{v}");
    let with = json(&ide(&["functions", "shell::pty::send", "--response"], None));
    assert!(with["response_schema"]["properties"].is_object(), "{with}");
    let unknown = ide(&["functions", "coder::nope"], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--brief"));
}

/// A worker started with signals ignored (`nohup ide … &` from a script)
/// does not hand that on: the commands it runs start with every signal at
/// its default, so an interrupt or a hang-up reaches them.
#[test]
fn commands_start_with_default_signals_whatever_the_worker_inherited() {
    const IGNORED: [Signal; 4] = [
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGHUP,
        Signal::SIGTERM,
    ];
    let o = ide_with(
        &[
            "call",
            "shell::exec",
            r#"{"command": "grep", "args": ["-E", "^Sig(Ign|Blk)", "/proc/self/status"]}"#,
        ],
        None,
        &IGNORED,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = json(&o);
    let stdout = out["stdout"].as_str().unwrap();
    let mask = |name: &str| {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {stdout:?}"));
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    for s in IGNORED {
        let bit = 1u64 << (s as i32 - 1);
        assert_eq!(mask("SigIgn:") & bit, 0, "{s} is still ignored: {stdout}");
        assert_eq!(mask("SigBlk:") & bit, 0, "{s} is blocked: {stdout}");
    }
}
