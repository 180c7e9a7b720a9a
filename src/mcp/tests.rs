use super::*;
use crate::testkit::Jail;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// A client of an in-process server over a pipe pair.
struct Client {
    to: DuplexStream,
    from: BufReader<DuplexStream>,
    server: tokio::task::JoinHandle<Result<(), String>>,
    next: u64,
}

impl Client {
    fn start(jail: &Jail, options: Options) -> Client {
        let (to, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, from) = tokio::io::duplex(1 << 20);
        let backend: Arc<dyn Backend> = Arc::new(InProcess(jail.services.clone()));
        let server = tokio::spawn(async move {
            serve(
                server_in,
                server_out,
                backend,
                &options,
                std::future::pending(),
            )
            .await
        });
        Client {
            to,
            from: BufReader::new(from),
            server,
            next: 1,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.to.write_all(line.as_bytes()).await.unwrap();
    }

    /// The next message from the server.
    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(30), self.from.read_line(&mut line))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(n > 0, "the server closed its output");
        serde_json::from_str(&line).unwrap()
    }

    /// Send a request; its id.
    async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// A request and its answer (notifications before it are skipped).
    async fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        loop {
            let m = self.recv().await;
            if m["id"] == id {
                return m;
            }
        }
    }

    async fn initialize(&mut self) -> Value {
        let r = self
            .ask(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        r
    }

    async fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let r = self
            .ask("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        r["result"].clone()
    }

    /// Close the client's side; the server's result.
    async fn close(self) -> Result<(), String> {
        drop(self.to);
        tokio::time::timeout(Duration::from_secs(30), self.server)
            .await
            .expect("the server stops when the client goes")
            .unwrap()
    }
}

#[test]
fn every_agent_function_is_classified_and_every_name_is_valid_and_unique() {
    let catalog = Catalog::standard();
    let mut names = std::collections::HashSet::new();
    for d in catalog.agent_functions() {
        assert!(hints(d.id).is_some(), "{} has no tool hints", d.id);
        let name = tool_name(d.id);
        assert!(
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
        assert!(names.insert(name.clone()), "{name} twice");
    }
    for d in catalog.iter().filter(|d| d.metadata["internal"] == true) {
        assert!(hints(d.id).is_none(), "{} is internal, not a tool", d.id);
    }
    // the read-only ones really only read: nothing that writes is among them
    for id in [
        "coder::create-file",
        "coder::update-file",
        "shell::exec",
        "shell::fs::rm",
    ] {
        assert!(!hints(id).unwrap().read_only, "{id}");
    }
}

#[test]
fn the_tool_list_is_measured_and_selectable() {
    let catalog = Catalog::standard();
    let all = tools_list(&catalog, &Options::default()).unwrap();
    let tools = all["tools"].as_array().unwrap();
    assert_eq!(
        tools.len(),
        catalog.agent_functions().count() - NEEDS_AN_ENGINE.len()
    );
    for t in tools {
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert_eq!(schema["additionalProperties"], false, "{}", t["name"]);
        assert!(schema.get("$schema").is_none());
        jsonschema::draft202012::meta::validate(schema).unwrap();
        assert!(t.get("outputSchema").is_none());
    }
    let with_output = tools_list(
        &catalog,
        &Options {
            output_schemas: true,
            ..Options::default()
        },
    )
    .unwrap();
    let read_only = tools_list(
        &catalog,
        &Options {
            read_only: true,
            ..Options::default()
        },
    )
    .unwrap();
    for t in read_only["tools"].as_array().unwrap() {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    let names: Vec<&str> = read_only["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"coder_read-file") && !names.contains(&"coder_update-file"));
    let picked = tools_list(
        &catalog,
        &Options {
            tools: vec!["coder::search".into(), "coder_read-file".into()],
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(picked["tools"].as_array().unwrap().len(), 2);
    let wrong = tools_list(
        &catalog,
        &Options {
            read_only: true,
            tools: vec!["shell::exec".into()],
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(
        wrong.contains("shell::exec") && wrong.contains("--read-only"),
        "{wrong}"
    );
    println!(
        "mcp tools/list: {} tools, {} bytes; with output schemas {} bytes; read-only {} tools, {} bytes",
        tools.len(),
        all.to_string().len(),
        with_output.to_string().len(),
        names.len(),
        read_only.to_string().len()
    );
}

#[tokio::test]
async fn a_client_initializes_lists_calls_and_reads_errors() {
    let jail = Jail::new();
    jail.write("src/a.txt", "one\ntwo\n");
    let mut c = Client::start(&jail, Options::default());
    let init = c.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "ide");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    // an older client gets its own version; an unknown one ours
    let old = c
        .ask(
            "initialize",
            json!({"protocolVersion": "2024-11-05", "capabilities": {}}),
        )
        .await;
    assert_eq!(old["result"]["protocolVersion"], "2024-11-05");
    let odd = c
        .ask(
            "initialize",
            json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
        )
        .await;
    assert_eq!(odd["result"]["protocolVersion"], PROTOCOL_VERSIONS[0]);
    assert_eq!(c.ask("ping", json!({})).await["result"], json!({}));
    let list = c.ask("tools/list", json!({})).await;
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "coder_read-file")
    );
    let read = c
        .tool("coder_read-file", json!({"path": "src/a.txt"}))
        .await;
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(read["structuredContent"]["content"], "one\ntwo\n");
    let text: Value = serde_json::from_str(read["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, read["structuredContent"]);
    // a denied path reads exactly like a missing one
    jail.write("denied/secret.txt", "s");
    let denied = c
        .tool("coder_read-file", json!({"path": "denied/secret.txt"}))
        .await;
    let missing = c
        .tool("coder_read-file", json!({"path": "denied/absent.txt"}))
        .await;
    assert_eq!(denied["isError"], true);
    let (d, m) = (
        denied["content"][0]["text"].as_str().unwrap(),
        missing["content"][0]["text"].as_str().unwrap(),
    );
    assert!(d.starts_with("C211: "), "{d}");
    assert_eq!(
        d.replace("secret.txt", "<P>"),
        m.replace("absent.txt", "<P>"),
        "denied and missing differ"
    );
    // an argument the function does not take is its 210
    let bad = c.tool("coder_info", json!({"bogus": 1})).await;
    assert_eq!(bad["isError"], true);
    assert!(
        bad["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("C210: ")
    );
    // protocol errors are JSON-RPC errors
    let unknown = c
        .ask("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    let method = c.ask("resources/list", json!({})).await;
    assert_eq!(method["error"]["code"], -32601);
    c.send(json!("not an object")).await;
    assert_eq!(c.recv().await["error"]["code"], -32600);
    c.to.write_all(b"{not json\n").await.unwrap();
    assert_eq!(c.recv().await["error"]["code"], -32700);
    c.close().await.unwrap();
}

#[tokio::test]
async fn calls_run_concurrently_and_a_cancelled_command_dies_with_its_tree() {
    let jail = Jail::new();
    let mut c = Client::start(&jail, Options::default());
    c.initialize().await;
    // a command that starts a grandchild and waits forever
    let pidfile = jail.path("pids");
    let slow = c
        .request(
            "tools/call",
            json!({"name": "shell_exec", "_meta": {}, "arguments": {
                "command": "sh",
                "args": ["-c", format!("sleep 300 & echo $$ $! > {}; wait", pidfile.display())],
                "timeout_ms": 120000}}),
        )
        .await;
    // while it runs, other calls answer
    let pids = loop {
        let r = c.tool("coder_info", json!({})).await;
        assert_eq!(r["isError"], false);
        if let Ok(text) = std::fs::read_to_string(&pidfile)
            && text.ends_with('\n')
        {
            break text
                .split_whitespace()
                .map(|p| p.parse::<i32>().unwrap())
                .collect::<Vec<_>>();
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(pids.len(), 2);
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": slow, "reason": "the user stopped it"}}),
    )
    .await;
    // both processes end; the cancelled request gets no answer
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|p| crate::testkit::pid_alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "{pids:?} outlived the cancelled call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = c.ask("ping", json!({})).await;
    assert_eq!(after["result"], json!({}));
    c.close().await.unwrap();
}

#[tokio::test]
async fn a_long_call_reports_progress_and_the_client_leaving_ends_everything() {
    let jail = Jail::new();
    let mut c = Client::start(&jail, Options::default());
    c.initialize().await;
    let pidfile = jail.path("pid");
    c.request(
        "tools/call",
        json!({"name": "shell_exec", "_meta": {"progressToken": "p-1"},
               "arguments": {"command": "sh", "timeout_ms": 120000,
                             "args": ["-c", format!("echo $$ > {}; exec sleep 300", pidfile.display())]}}),
    )
    .await;
    let note = c.recv().await;
    assert_eq!(note["method"], "notifications/progress", "{note}");
    assert_eq!(note["params"]["progressToken"], "p-1");
    assert!(note["params"]["progress"].as_u64().unwrap() >= PROGRESS_EVERY.as_secs());
    // a terminal session started through the server
    let started = c
        .tool(
            "shell_pty_start",
            json!({"cwd": jail.root, "program": "/bin/sh"}),
        )
        .await;
    assert_eq!(started["isError"], false, "{started}");
    let session = jail
        .services
        .pty
        .get(started["structuredContent"]["session_id"].as_str().unwrap())
        .unwrap();
    let shell_pid = session.summary().pid as i32;
    let sleeper: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(crate::testkit::pid_alive(sleeper) && crate::testkit::pid_alive(shell_pid));
    c.close().await.unwrap();
    assert!(
        !crate::testkit::pid_alive(shell_pid),
        "the session's shell outlived the server"
    );
    assert!(
        !crate::testkit::pid_alive(sleeper),
        "the command outlived the server"
    );
}

#[tokio::test]
async fn a_call_waiting_on_a_busy_language_server_says_what_it_waits_for() {
    let pids = tempfile::TempDir::new().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp/fake_server.py");
    let jail = Jail::with(|c| {
        c.code.language_servers.insert(
            "fake".into(),
            Some(crate::config::LanguageServerConfig {
                command: "python3".into(),
                args: vec![
                    script.display().to_string(),
                    "progress".into(),
                    pids.path().join("pid").display().to_string(),
                ],
                extensions: vec!["txt".into()],
                initialization_options: Value::Null,
                settings: Value::Null,
                idle_timeout_ms: 600_000,
                memory_limit_bytes: 2 << 30,
                request_timeout_ms: 30_000,
                open_related: false,
            }),
        );
    });
    jail.write("a.txt", "word\n");
    let mut c = Client::start(&jail, Options::default());
    c.initialize().await;
    c.request(
        "tools/call",
        json!({"name": "coder_hover", "_meta": {"progressToken": "h-1"},
               "arguments": {"path": "a.txt", "line": 1, "column": 1}}),
    )
    .await;
    let note = c.recv().await;
    assert_eq!(note["method"], "notifications/progress", "{note}");
    let message = note["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("language server fake is busy: Indexing (40%)"),
        "{message}"
    );
    let answer = c.recv().await;
    assert_eq!(
        answer["result"]["structuredContent"]["contents"], "fake hover",
        "{answer}"
    );
    c.close().await.unwrap();
    jail.services.shutdown().await;
}
