//! Language servers through ide against the same server driven directly,
//! side by side in one run, on one project:
//!
//! - **edit → diagnostics**: pyright. Direct: a minimal client sends
//!   `didChange` (the whole text) and waits for `publishDiagnostics` of
//!   that version. Through ide: `coder::update-file {diagnostics: true}`
//!   through the loopback engine to a served release `ide` (which also
//!   reads, writes atomically and journals the file). Each round breaks or
//!   fixes a type annotation, so every round has new diagnostics.
//! - **rename of a symbol used in 50 files**: the server's
//!   `textDocument/rename` alone, against `coder::rename` (the same request
//!   plus reading, checking, writing and journaling 51 files), then one
//!   `shell::turns::revert`.
//! - **an idle managed server's memory**, as `coder::info` reports it.
//!
//! Needs `tests/lsp/node_modules` (`cd tests/lsp && npm ci`). Run:
//! `cargo bench --bench lsp`. `IDE_BENCH_REPS` rounds (default 21).

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::harness::Engine;
use support::ide_process::IdeProcess;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const T: Duration = Duration::from_secs(120);
const USERS: usize = 50;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn pyright() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp/node_modules/.bin/pyright-langserver")
}

/// The project: util.py defines Parser.parse; 50 modules call it.
fn project(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("util.py"),
        "class Parser:\n    def parse(self, text: str) -> int:\n        return len(text)\n",
    )
    .unwrap();
    for i in 0..USERS {
        std::fs::write(
            root.join(format!("m{i}.py")),
            format!("from util import Parser\n\n\ndef run{i}() -> int:\n    n: int = Parser().parse(\"x\")\n    return n\n"),
        )
        .unwrap();
    }
}

fn text_of(round: usize) -> String {
    let ty = if round % 2 == 0 { "str" } else { "int" };
    format!(
        "from util import Parser\n\n\ndef run0() -> int:\n    n: {ty} = Parser().parse(\"x\")\n    return 0\n"
    )
}

/// A minimal LSP client over a child's pipes.
struct Direct {
    child: tokio::process::Child,
    to: tokio::process::ChildStdin,
    from: BufReader<tokio::process::ChildStdout>,
    id: i64,
}

impl Direct {
    async fn start(root: &Path) -> Direct {
        let mut child = tokio::process::Command::new(pyright())
            .arg("--stdio")
            .current_dir(root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("pyright");
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap());
        let mut d = Direct {
            child,
            to,
            from,
            id: 0,
        };
        let uri = format!("file://{}", root.display());
        d.request(
            "initialize",
            json!({"processId": std::process::id(), "rootUri": uri,
                   "workspaceFolders": [{"uri": uri, "name": "p"}],
                   "capabilities": {"workspace": {"configuration": true},
                                    "textDocument": {"publishDiagnostics": {"versionSupport": true}}}}),
        )
        .await;
        d.notify("initialized", json!({})).await;
        d
    }

    async fn send(&mut self, m: Value) {
        let b = m.to_string();
        self.to
            .write_all(format!("Content-Length: {}\r\n\r\n{b}", b.len()).as_bytes())
            .await
            .unwrap();
        self.to.flush().await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let mut n = 0usize;
        loop {
            let mut line = String::new();
            self.from.read_line(&mut line).await.unwrap();
            let l = line.trim();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("Content-Length:") {
                n = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; n];
        self.from.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Read until `f` takes a message, answering the server's requests.
    async fn until(&mut self, f: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self.read().await;
            if m.get("method").is_some() && m.get("id").is_some() {
                let id = m["id"].clone();
                let result = if m["method"] == "workspace/configuration" {
                    Value::Array(vec![
                        Value::Null;
                        m["params"]["items"].as_array().map_or(0, Vec::len)
                    ])
                } else {
                    Value::Null
                };
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
                    .await;
                continue;
            }
            if f(&m) {
                return m;
            }
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.until(|m| m["id"] == id && m.get("method").is_none())
            .await
    }

    async fn diagnostics_after(&mut self, uri: &str, version: i64) -> Value {
        let u = uri.to_string();
        self.until(move |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == u.as_str()
                && m["params"]["version"].as_i64() == Some(version)
        })
        .await
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

async fn bench() {
    if !pyright().exists() {
        eprintln!("tests/lsp/node_modules is missing: cd tests/lsp && npm ci");
        return;
    }
    let reps: usize = std::env::var("IDE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21);
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("proj");
    project(&root);
    let root = root.canonicalize().unwrap();
    println!("project: util.py + {USERS} modules calling Parser.parse; pyright; {reps} rounds");

    // ---- direct
    let mut d = Direct::start(&root).await;
    let m0 = root.join("m0.py");
    let uri0 = format!("file://{}", m0.display());
    d.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri0, "languageId": "python", "version": 1,
               "text": std::fs::read_to_string(&m0).unwrap()}}),
    )
    .await;
    d.diagnostics_after(&uri0, 1).await;
    let mut direct = Vec::new();
    for r in 0..reps {
        let v = r as i64 + 2;
        let t = Instant::now();
        d.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri0, "version": v},
                   "contentChanges": [{"text": text_of(r)}]}),
        )
        .await;
        d.diagnostics_after(&uri0, v).await;
        direct.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    // rename, the server alone (the workspace edit, not applied)
    let util_uri = format!("file://{}", root.join("util.py").display());
    let mut direct_rename = Vec::new();
    let mut rename_files = 0;
    for _ in 0..reps.min(7) {
        let t = Instant::now();
        let edit = d
            .request(
                "textDocument/rename",
                json!({"textDocument": {"uri": util_uri}, "position": {"line": 1, "character": 8},
                       "newName": "parse_text"}),
            )
            .await;
        direct_rename.push(t.elapsed().as_secs_f64() * 1000.0);
        rename_files = edit["result"]["documentChanges"]
            .as_array()
            .map(Vec::len)
            .or_else(|| edit["result"]["changes"].as_object().map(|c| c.len()))
            .unwrap_or(0);
    }
    let _ = d.child.kill().await;
    // put m0 back
    std::fs::write(&m0, text_of(1)).unwrap();

    // ---- through ide
    let engine = Engine::start().await;
    let seed = dir.path().join("seed.yaml");
    std::fs::write(
        &seed,
        format!(
            "fs:\n  host_roots: [{}]\ncode:\n  language_servers:\n    python:\n      command: {}\n      args: [--stdio]\n      extensions: [py]\n      request_timeout_ms: 60000\n",
            root.display(),
            pyright().display()
        ),
    )
    .unwrap();
    let log = if std::env::var_os("IDE_BENCH_DEBUG").is_some() {
        "info,ide::lsp=debug"
    } else {
        "info"
    };
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[("RUST_LOG", log)],
    );
    assert!(ide.wait_for_log("ide serving", T).await);
    assert!(engine.wait_for_ide(T).await);
    let call = |id: &'static str, p: Value| {
        let e = &engine;
        async move { e.call_with_timeout(id, p, T).await.expect(id) }
    };
    call("coder::diagnostics", json!({"path": "m0.py"})).await;
    let mut through = Vec::new();
    for r in 0..reps {
        let current = std::fs::read_to_string(&m0).unwrap();
        let t = Instant::now();
        let out = call(
            "coder::update-file",
            json!({"files": [{"path": "m0.py", "ops": [{"op": "update_lines", "from_line": 1,
                "to_line": 6, "content": text_of(r).trim_end()}]}], "diagnostics": true}),
        )
        .await;
        through.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(out["diagnostics"][0]["stale"], false, "{out}");
        assert_ne!(current, std::fs::read_to_string(&m0).unwrap());
    }
    // the same edits without diagnostics: what the write itself costs
    let mut write_only = Vec::new();
    for r in 0..reps {
        let t = Instant::now();
        call(
            "coder::update-file",
            json!({"files": [{"path": "m0.py", "ops": [{"op": "update_lines", "from_line": 1,
                "to_line": 6, "content": text_of(r + 1).trim_end()}]}]}),
        )
        .await;
        write_only.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let mut through_rename = Vec::new();
    let mut renamed = 0;
    let mut revert = Vec::new();
    for _ in 0..reps.min(7) {
        let t = Instant::now();
        let out = call(
            "coder::rename",
            json!({"path": "util.py", "line": 2, "column": 9, "new_name": "parse_text"}),
        )
        .await;
        through_rename.push(t.elapsed().as_secs_f64() * 1000.0);
        renamed = out["files"].as_array().unwrap().len();
        let t = Instant::now();
        call("shell::turns::revert", json!({"turn_id": out["turn_id"]})).await;
        revert.push(t.elapsed().as_secs_f64() * 1000.0);
        // the server sees the revert before the next round
        call("coder::diagnostics", json!({"path": "util.py"})).await;
    }
    let info = call("coder::info", json!({})).await;
    let rss = info["code"]["language_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| s["rss_bytes"].as_u64())
        .unwrap_or(0);

    let (dm, tm) = (median(&mut direct), median(&mut through));
    println!(
        "edit -> diagnostics   direct p50 {dm:8.1} ms   through ide p50 {tm:8.1} ms   difference {:+.1} ms (target <= +50)",
        tm - dm
    );
    let wm = median(&mut write_only);
    println!(
        "  of which the edit itself (coder::update-file without diagnostics: read, atomic durable write, journal) p50 {wm:.1} ms; the language-server path adds {:+.1} ms",
        tm - dm - wm
    );
    let (dr, tr) = (median(&mut direct_rename), median(&mut through_rename));
    println!(
        "rename ({renamed} files; server's edit names {rename_files})   server alone p50 {dr:8.1} ms   coder::rename p50 {tr:8.1} ms   ratio {:.2}   revert p50 {:.1} ms",
        tr / dr,
        median(&mut revert)
    );
    println!(
        "idle managed pyright: {:.1} MB resident (its whole tree)",
        rss as f64 / 1e6
    );
    if std::env::var_os("IDE_BENCH_DEBUG").is_some() {
        eprintln!("{}", ide.logs());
    }
    drop(ide);
}
