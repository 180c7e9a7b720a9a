//! The console page (`ui/`): its model unit tests, the committed bundle
//! against a fresh build, and the page in headless Chromium against the real
//! `ide` binary behind the engine (the loopback stand-in, or a real iii
//! engine with `IDE_TEST_ENGINE`).
//!
//! These need node with `ui/node_modules` (`npm ci` in `ui/`) and, for the
//! browser, Debian's `chromium`. Without them a test says so and passes,
//! unless `IDE_UI_TESTS=required` (set by `.ci/run`), where a missing tool
//! fails loudly: CI always runs them.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use ide::config::Config;
use support::harness::{Engine, Store};
use support::ide_process::IdeProcess;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(20);
const NODE_TIMEOUT: Duration = Duration::from_secs(600);

fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ui")
}

fn required() -> bool {
    std::env::var("IDE_UI_TESTS").is_ok_and(|v| v == "required")
}

/// Skip (or, when required, fail) for a missing tool.
fn missing(what: &str) -> Option<()> {
    assert!(
        !required(),
        "IDE_UI_TESTS=required but {what}; run `npm ci` in ui/ and `apt-get install -y chromium`"
    );
    eprintln!("skipped: {what} (set IDE_UI_TESTS=required to make this a failure)");
    None
}

fn node_ready() -> Option<()> {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        return missing("node is not installed");
    }
    if !ui_dir().join("node_modules/esbuild").exists() {
        return missing("ui/node_modules is missing");
    }
    Some(())
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IDE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Run node in `ui/` with `args`; panic with its output unless it succeeds.
async fn node(args: &[&str], envs: &[(&str, String)], context: impl Fn() -> String) {
    let mut cmd = tokio::process::Command::new("node");
    cmd.current_dir(ui_dir())
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(NODE_TIMEOUT, cmd.output())
        .await
        .expect("node timed out")
        .expect("spawn node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "node {args:?} failed ({}):\n{stdout}\n{stderr}\n{}",
        out.status,
        context()
    );
}

#[tokio::test]
async fn page_models_pass_their_unit_tests() {
    if node_ready().is_none() {
        return;
    }
    node(&["--test", "test/unit/"], &[], String::new).await;
}

#[tokio::test]
async fn committed_bundle_matches_a_fresh_build() {
    if node_ready().is_none() {
        return;
    }
    node(&["build.mjs", "--check"], &[], String::new).await;
}

/// A small PNG (8×8), for the image preview.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAbElEQVR4nA3JQQEAMAgDMaRUClIqpVKQwvNkIGXLN1WFii5cpJhiiyuqhEQLi4gRK04/GjXduEkzzTbXP4xMG5uYMWvOP4JCB4eECRsuPwYNPXjIMMMONz8WLb14yTLLLrc/Dh19+Mgxxx53PLzkagFHPAwGAAAAAElFTkSuQmCC";

/// The tree the page browses.
fn fixture(root: &Path) {
    let w = |rel: &str, body: &[u8]| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write fixture");
    };
    w(
        "src/main.rs",
        b"fn main() {\n    println!(\"hello from the fixture\");\n}\n",
    );
    w(
        "src/util/strings.rs",
        b"pub fn shout(s: &str) -> String {\n    s.to_uppercase()\n}\n",
    );
    w(
        "README.md",
        b"# Fixture\n\nA tree for the console page tests.\n",
    );
    w("run.sh", b"#!/bin/sh\r\necho crlf\r\n");
    std::fs::set_permissions(
        root.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    // a folder of 10 000 entries: virtualized, paged in as it scrolls
    std::fs::create_dir_all(root.join("many")).expect("mkdir many");
    for i in 0..10_000 {
        std::fs::write(root.join(format!("many/entry{i:05}.txt")), b"needle\n").expect("write");
    }
    let line = "a line of a big file that opens read-only in the page ..........\n";
    w("big.txt", line.repeat((3 << 20) / line.len()).as_bytes());
    w("secret.key", b"not for the page\n");
    w("target/debug/app.d", b"noise\n");
    w("data.bin", &[0u8, 1, 2, 3, 255, 254, 0, 7, 8, 9]);
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG_B64)
        .expect("png");
    w("logo.png", &png);
}

struct World {
    engine: Engine,
    ide: IdeProcess,
    root: PathBuf,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

/// `ide` jailed to a fresh temp dir holding `populate`'s tree.
async fn start(populate: impl FnOnce(&Path)) -> World {
    start_over(&Store::new(), populate).await
}

/// [`start`] with the engine over `store` (so it can be restarted).
async fn start_over(store: &Store, populate: impl FnOnce(&Path)) -> World {
    start_configured(store, populate, |_, _| {}, &[]).await
}

/// [`start_over`] with `configure` changing the worker's config (it gets
/// the root and the temp dir) and `envs` set for the worker process.
async fn start_configured(
    store: &Store,
    populate: impl FnOnce(&Path),
    configure: impl FnOnce(&mut Config, &Path),
    envs: &[(&str, String)],
) -> World {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical").join("repo");
    std::fs::create_dir(&root).expect("mkdir repo");
    populate(&root);
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.working_dir = Some(root.clone());
    configure(&mut cfg, dir.path());
    let config_path = dir.path().join("config.yaml");
    let engine = Engine::start_with(0, store).await;
    let ide = IdeProcess::serve_with(&engine.url(), &cfg, &config_path, envs);
    assert!(
        engine
            .wait_for_function("ide::ui-content", WAIT)
            .await
            .is_some(),
        "ide did not register ide::ui-content:\n{}",
        ide.logs()
    );
    assert!(
        engine.wait_for_trigger_type("shell::changed", WAIT).await,
        "ide did not register shell::changed:\n{}",
        ide.logs()
    );
    World {
        engine,
        ide,
        root,
        config: config_path,
        _dir: dir,
    }
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}

async fn run_browser_suite(file: &str, populate: impl FnOnce(&Path), extra: &[(&str, String)]) {
    run_configured_suite(file, populate, |_, _| {}, &[], extra).await;
}

/// [`run_browser_suite`] with the worker's config changed by `configure`
/// and `worker_envs` set for the worker process.
async fn run_configured_suite(
    file: &str,
    populate: impl FnOnce(&Path),
    configure: impl FnOnce(&mut Config, &Path),
    worker_envs: &[(&str, String)],
    extra: &[(&str, String)],
) {
    if node_ready().is_none() {
        return;
    }
    let Some(chromium) = chromium() else {
        missing("chromium is not installed");
        return;
    };
    if !ui_dir().join("node_modules/playwright-core").exists() {
        missing("ui/node_modules/playwright-core is missing");
        return;
    }
    let world = start_configured(&Store::new(), populate, configure, worker_envs).await;
    let mut envs = vec![
        ("IDE_ENGINE_URL", world.engine.url()),
        ("IDE_TEST_ROOT", world.root.display().to_string()),
        ("IDE_CHROMIUM", chromium.display().to_string()),
        ("IDE_ARTIFACTS", artifacts().display().to_string()),
    ];
    envs.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
    node(&["--test", "--test-concurrency=1", file], &envs, || {
        format!("ide logs:\n{}", world.ide.logs())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn console_page_in_chromium_against_the_real_binary() {
    run_browser_suite("test/browser/page.test.mjs", fixture, &[]).await;
}

/// The terminal panes: a login shell in the root, typing, `stty size` after
/// a resize, a reload mid-output, exit status, a lost lease, an orphan adopted.
#[tokio::test(flavor = "multi_thread")]
async fn terminal_panes_in_chromium_against_the_real_binary() {
    run_browser_suite(
        "test/browser/terminal.test.mjs",
        |root| std::fs::write(root.join("README.md"), b"# Terminals\n").expect("write fixture"),
        &[],
    )
    .await;
}

/// The jobs, history and source-control panes: a job finishing live and one
/// killed, two changes of one turn in the timeline (paged), a revert refused
/// for a conflict and then done (bytes checked on disk), stage and commit in a
/// fresh git repository made in the root.
#[tokio::test(flavor = "multi_thread")]
async fn jobs_history_and_source_control_panes_in_chromium() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        missing("git is not installed");
        return;
    }
    run_browser_suite(
        "test/browser/ops.test.mjs",
        |root| {
            std::fs::create_dir_all(root.join("src")).expect("mkdir src");
            std::fs::write(
                root.join("README.md"),
                b"# Fixture\n\nA tree for the console page tests.\n",
            )
            .expect("write fixture");
            std::fs::write(root.join("src/main.rs"), b"fn main() {}\n").expect("write fixture");
        },
        &[],
    )
    .await;
}

/// The tree the chat cards' calls work on.
fn cards_fixture(root: &Path) {
    let w = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write fixture");
    };
    w(
        "README.md",
        "# Cards\n\nA tree the chat cards' calls work on.\n",
    );
    w(
        "src/lib.rs",
        "/// Adds two numbers.\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n\
         /// The answer.\npub fn answer() -> u32 {\n    add(40, 2)\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn answer_is_42() {\n        \
         assert_eq!(super::answer(), 42);\n    }\n}\n",
    );
    w(
        "src/table.rs",
        "pub fn table() -> Vec<Row> {\n    vec![\n        row(0),\n        row(1),\n    ]\n}\n",
    );
}

/// Re-records `ui/test/fixtures/cards/` from the real binary (commit what
/// changes): `cargo test --test ui_browser record_card_fixtures -- --ignored`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "writes the chat cards' fixtures into ui/test/fixtures/cards/"]
async fn record_card_fixtures() {
    run_browser_suite("test/browser/cards-record.mjs", cards_fixture, &[]).await;
}

/// The chat cards: every recorded call rendered through the registered
/// renderer (light and dark screenshots), live calls of the binary against
/// the card models, a background job followed to its end, and the fallbacks.
#[tokio::test(flavor = "multi_thread")]
async fn chat_cards_in_chromium_against_the_real_binary() {
    run_browser_suite("test/browser/cards.test.mjs", cards_fixture, &[]).await;
}

/// The BENCHMARKS.md terminal numbers: keystroke → glyph in the pane over
/// 200 keystrokes, and a 50 MB `cat` stopped by Ctrl+C.
/// `cargo test --release --test ui_browser -- --ignored`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: writes a 50 MB file and floods a terminal pane"]
async fn bench_terminal_keystrokes_and_cat() {
    run_browser_suite(
        "test/browser/terminal-bench.test.mjs",
        |root| {
            let line = "a line of the 50 MB file the terminal pane cats ................\n";
            let body = line.repeat((50 << 20) / line.len() + 1);
            std::fs::write(root.join("big50.txt"), body).expect("big file");
        },
        &[],
    )
    .await;
}

/// The BENCHMARKS.md numbers: first tree paint on a 100 000-file tree and
/// opening a 5 MB file. `cargo test --release --test ui_browser -- --ignored`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: builds a 100 000-file tree"]
async fn bench_page_load_and_big_file() {
    run_browser_suite(
        "test/browser/bench.test.mjs",
        |root| {
            for d in 0..100 {
                let dir = root.join(format!("pkg{d:03}"));
                std::fs::create_dir_all(&dir).expect("mkdir");
                for f in 0..1000 {
                    std::fs::write(dir.join(format!("file{f:04}.rs")), b"// x\n").expect("write");
                }
            }
            let line = "let value = 42; // a line of a big file for the benchmark ......\n";
            let body = line.repeat((5 << 20) / line.len() + 1);
            std::fs::write(root.join("big.rs"), body).expect("big file");
        },
        &[],
    )
    .await;
}

/// The page across an engine restart: the browser suite asks for the stop and
/// the start over stdio (`IDE-CONTROL …` lines), this side does them on the
/// same port and store and answers.
#[tokio::test(flavor = "multi_thread")]
async fn console_page_survives_an_engine_restart() {
    run_restart_suite("test/browser/restart.test.mjs", fixture).await;
}

/// A terminal pane across an engine restart (it re-attaches and goes on) and
/// across a crash of the worker (the session is gone: the pane says so).
#[tokio::test(flavor = "multi_thread")]
async fn terminal_pane_across_engine_and_worker_restarts() {
    run_restart_suite("test/browser/terminal-restart.test.mjs", |root| {
        std::fs::write(root.join("README.md"), b"# Terminals\n").expect("write fixture")
    })
    .await;
}

/// Run `file` under plain node, doing what it asks for on stdout:
/// `IDE-CONTROL stop-engine` / `start-engine` (same port and store) and
/// `restart-ide` (SIGKILL the worker, start a new one against the engine).
async fn run_restart_suite(file: &str, populate: impl FnOnce(&Path)) {
    if node_ready().is_none() {
        return;
    }
    let Some(chromium) = chromium() else {
        missing("chromium is not installed");
        return;
    };
    let store = Store::new();
    let mut world = start_over(&store, populate).await;
    let port = world.engine.port();
    let url = world.engine.url();
    let mut engine = Some(world.engine);
    let mut child = tokio::process::Command::new("node")
        .current_dir(ui_dir())
        .arg(file)
        .env("IDE_ENGINE_URL", format!("ws://127.0.0.1:{port}"))
        .env("IDE_TEST_ROOT", world.root.display().to_string())
        .env("IDE_CHROMIUM", chromium.display().to_string())
        .env("IDE_ARTIFACTS", artifacts().display().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut output = String::new();
    let run = async {
        while let Some(line) = lines.next_line().await.expect("read node") {
            output.push_str(&line);
            output.push('\n');
            let answer = match line.trim() {
                "IDE-CONTROL stop-engine" => {
                    if let Some(e) = engine.take() {
                        e.stop().await;
                    }
                    "stopped\n"
                }
                "IDE-CONTROL start-engine" => {
                    engine = Some(Engine::start_with(port, &store).await);
                    "started\n"
                }
                "IDE-CONTROL restart-ide" => {
                    world.ide.signal(nix::sys::signal::Signal::SIGKILL);
                    world
                        .ide
                        .wait_exit(WAIT)
                        .await
                        .expect("ide exits on SIGKILL");
                    world.ide = IdeProcess::spawn(
                        &[
                            "--url",
                            &url,
                            "--config",
                            &world.config.display().to_string(),
                        ],
                        &[("RUST_LOG", "info")],
                    );
                    let e = engine.as_ref().expect("the engine runs");
                    assert!(
                        e.wait_for_function("ide::ui-content", WAIT).await.is_some(),
                        "the new ide did not register:\n{}",
                        world.ide.logs()
                    );
                    "restarted\n"
                }
                _ => continue,
            };
            stdin
                .write_all(answer.as_bytes())
                .await
                .expect("answer node");
            stdin.flush().await.expect("flush");
        }
        child.wait().await.expect("node exit")
    };
    let status = tokio::time::timeout(NODE_TIMEOUT, run)
        .await
        .expect("node timed out");
    eprintln!("{output}");
    assert!(
        status.success(),
        "{file} failed ({status}):\n{output}\nide logs:\n{}",
        world.ide.logs()
    );
}

/// One page, two hosts: ide A in the engine's default namespace (the one
/// whose page the console loads) and ide B in its own namespace, on one
/// real engine. The picker lists both; a workspace, its live changes and a
/// terminal follow the chosen one.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "real engine only: IDE_TEST_ENGINE=/path/to/iii cargo test --test ui_browser -- --ignored"]
async fn one_page_reaches_two_hosts_by_namespace_in_chromium() {
    assert!(
        support::harness::real_engine_binary().is_some(),
        "two hosts in one page needs the real engine: set IDE_TEST_ENGINE to its binary"
    );
    if node_ready().is_none() {
        return;
    }
    let Some(chromium) = chromium() else {
        missing("chromium is not installed");
        return;
    };
    let world =
        start(|root| std::fs::write(root.join("README.md"), b"# host A\n").expect("write fixture"))
            .await;
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root_b = dir.path().canonicalize().expect("canonical").join("repo-b");
    std::fs::create_dir(&root_b).expect("mkdir repo-b");
    std::fs::write(root_b.join("only-on-b.txt"), b"b\n").expect("write fixture");
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root_b.clone()];
    cfg.working_dir = Some(root_b.clone());
    cfg.turns.data_dir = dir.path().join("turns-b");
    let seed = dir.path().join("config-b.yaml");
    std::fs::write(&seed, cfg.to_value().to_string()).expect("write seed");
    let ns_b = support::engine::unique_name("host-b");
    let entry = format!("{ns_b}-ide");
    let ide_b = IdeProcess::spawn(
        &[
            "--url",
            &world.engine.url(),
            "--config",
            seed.to_str().unwrap(),
        ],
        &[
            ("RUST_LOG", "info"),
            ("III_NAMESPACE", ns_b.as_str()),
            ("III_WORKER_NAME", "ide-b"),
            ("III_CONFIG_NAME", entry.as_str()),
        ],
    );
    assert!(
        ide_b.wait_for_log("ide serving", WAIT).await,
        "{}",
        ide_b.logs()
    );
    let envs = vec![
        ("IDE_ENGINE_URL", world.engine.url()),
        ("IDE_TEST_ROOT", world.root.display().to_string()),
        ("IDE_HOST_B_ROOT", root_b.display().to_string()),
        ("IDE_HOST_B_NS", ns_b.clone()),
        ("IDE_CHROMIUM", chromium.display().to_string()),
        ("IDE_ARTIFACTS", artifacts().display().to_string()),
    ];
    node(
        &[
            "--test",
            "--test-concurrency=1",
            "test/browser/hosts.test.mjs",
        ],
        &envs,
        || {
            format!(
                "ide A logs:\n{}\nide B logs:\n{}",
                world.ide.logs(),
                ide_b.logs()
            )
        },
    )
    .await;
}

// ---- code intelligence in the page ----------------------------------------

/// The language servers of the code suite (`tests/lsp/node_modules`, as
/// `tests/lsp_e2e.rs` uses them), or None: a skip, unless the UI or the
/// language-server tests are required.
fn code_servers() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let lsp = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp/node_modules");
    let pyright = lsp.join(".bin/pyright-langserver");
    let tls = lsp.join(".bin/typescript-language-server");
    let tsserver = lsp.join("typescript/lib/tsserver.js");
    if pyright.exists() && tls.exists() && tsserver.exists() {
        return Some((pyright, tls, tsserver));
    }
    let lsp_required = std::env::var("IDE_LSP_TESTS").is_ok_and(|v| v == "required");
    assert!(
        !required() && !lsp_required,
        "the page's code suite needs pyright and typescript-language-server: run `npm ci` in tests/lsp"
    );
    eprintln!("skipped: tests/lsp/node_modules is missing (npm ci in tests/lsp)");
    None
}

/// A folder holding only what the worker may run here (node for the npm
/// servers' `#!/usr/bin/env node`, sh, git): no other language server is on
/// its PATH, so a Go or Rust file has none, whatever this machine has.
fn worker_path(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    for tool in ["node", "sh", "git", "env"] {
        let found = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(tool))
                .find(|c| c.exists())
        });
        if let Some(found) = found {
            std::os::unix::fs::symlink(found, bin.join(tool)).expect("symlink tool");
        }
    }
    bin.display().to_string()
}

/// The Python and TypeScript projects of the code journey (and a Go file
/// no server serves).
fn code_fixture(root: &Path) {
    let w = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write fixture");
    };
    w(
        "py/calc.py",
        "\"\"\"A tiny expression parser.\"\"\"\n\n\nclass Parser:\n    \"\"\"Parses sums.\"\"\"\n\n    \
         def __init__(self, text: str) -> None:\n        self.text = text\n\n    \
         def parse_expr(self, depth: int) -> int:\n        \"\"\"The value of the sum, at most depth terms.\"\"\"\n        \
         return sum(int(t) for t in self.text.split(\"+\")[:depth])\n\n    \
         def parse_term(self) -> str:\n        return self.text.strip()\n\n\n\
         class Other:\n    def parse_expr(self, depth: int) -> int:\n        return depth\n",
    );
    w(
        "py/main.py",
        "from calc import Parser\n\n\ndef run(text: str) -> int:\n    p = Parser(text)\n    \
         first = p.parse_expr(1)\n    return first + p.parse_expr(2)\n",
    );
    w(
        "py/report.py",
        "from calc import Other, Parser\n\n\ndef report(text: str) -> str:\n    \
         value = Parser(text).parse_expr(3)\n    return f\"{value} {Other().parse_expr(1)}\"\n\n\n\
         def helper_total(values: list[int]) -> int:\n    return sum(values)\n",
    );
    w(
        "ts/tsconfig.json",
        "{\"compilerOptions\": {\"strict\": true}}\n",
    );
    w(
        "ts/shapes.ts",
        "export class Box {\n  constructor(private side: number) {}\n\n  area(): number {\n    \
         return this.side * this.side;\n  }\n}\n\nexport function describe(b: Box): string {\n  \
         return `box of ${b.area()}`;\n}\n",
    );
    w(
        "ts/main.ts",
        "import { Box, describe } from \"./shapes\";\n\nconst b = new Box(3);\n\
         const total: number = b.area() + new Box(4).area();\nconsole.log(total, describe(b));\n",
    );
    w(
        "go/main.go",
        "package main\n\nfunc helper() int { return 1 }\n\nfunc main() { _ = helper() }\n",
    );
}

/// The worker serving `code_fixture` with pyright and
/// typescript-language-server from tests/lsp, and nothing else on its PATH.
async fn run_code_suite(file: &str, populate: impl FnOnce(&Path)) {
    let Some((pyright, tls, tsserver)) = code_servers() else {
        return;
    };
    let bin = tempfile::TempDir::new().expect("bin dir");
    let path = worker_path(bin.path());
    let configure = |cfg: &mut Config, _: &Path| {
        let entry = |v: serde_json::Value| {
            Some(serde_json::from_value(v).expect("a language server entry"))
        };
        cfg.code.language_servers.insert(
            "python".into(),
            entry(serde_json::json!({
                "command": pyright, "args": ["--stdio"], "extensions": ["py"],
                "request_timeout_ms": 60000,
            })),
        );
        cfg.code.language_servers.insert(
            "typescript".into(),
            entry(serde_json::json!({
                "command": tls, "args": ["--stdio"], "extensions": ["ts", "tsx"],
                "request_timeout_ms": 60000,
                "initialization_options": {"tsserver": {"path": tsserver}},
            })),
        );
    };
    let worker_envs = [
        ("PATH", path),
        ("RUST_LOG", "info,ide::lsp=debug".to_string()),
    ];
    run_configured_suite(file, populate, configure, &worker_envs, &[]).await;
}

/// The page as an IDE, on a Python and a TypeScript project: the outline
/// and breadcrumbs, Ctrl+T, F12, Shift+F12, F2 with its preview and the
/// History panel's undo (every byte back), a type error's squiggle and
/// Problems entry after a save and gone after the fix, hover, and the note
/// for a file no language server serves. Screenshots in `ui-artifacts/`.
#[tokio::test(flavor = "multi_thread")]
async fn code_intelligence_in_the_page_on_python_and_typescript() {
    run_code_suite("test/browser/code.test.mjs", code_fixture).await;
}

/// The BENCHMARKS.md numbers of the page's code intelligence: the outline of
/// a 5 000-line file after opening it, and F12 from its end to its top,
/// semantic (pyright) and structural (Go, no server).
/// `cargo test --release --test ui_browser -- --ignored bench_code`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: repeated rounds on 5 000-line files"]
async fn bench_code_intelligence_in_the_page() {
    run_code_suite("test/browser/code-bench.test.mjs", |root| {
        let mut py = String::new();
        for i in 0..230 {
            py.push_str(&format!("class C{i}:\n"));
            for j in 0..5 {
                py.push_str(&format!(
                    "    def method_{i}_{j}(self) -> int:\n        value = {j}\n        return value + {i}\n\n"
                ));
            }
            py.push('\n');
        }
        py.push_str("def main() -> int:\n    return C0().method_0_1()\n");
        std::fs::write(root.join("big.py"), py).expect("big.py");
        let mut go = String::from("package main\n\n");
        for i in 0..1000 {
            go.push_str(&format!("func f{i:04}() int {{\n\tv := {i}\n\treturn v\n}}\n\n"));
        }
        go.push_str("func main() { _ = f0000() }\n");
        std::fs::write(root.join("big.go"), go).expect("big.go");
    })
    .await;
}
