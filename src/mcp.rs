//! `ide mcp`: ide's agent surface as an MCP server over stdio.
//!
//! The Model Context Protocol's stdio transport is JSON-RPC 2.0, one message
//! per line, the client writing the server's stdin and reading its stdout.
//! A server that offers tools needs little of it: `initialize` (version
//! negotiation), `ping`, `tools/list`, `tools/call`, and the client's
//! `notifications/cancelled`; it may send `notifications/progress` for a
//! call whose request carried a progress token. That is written here
//! directly over the catalog rather than through an SDK, so that a tool is
//! exactly a catalog function: its handler, its policy, its journal, its
//! schemas.
//!
//! - **Tools**: the catalog's non-internal functions ([`Catalog::agent_functions`]),
//!   but `shell::fs::read`, which answers a channel that only an engine
//!   carries (`coder::read-file` reads, `encoding: "base64"` for bytes).
//!   A tool's name is its function id with `::` as `_` ([`tool_name`]:
//!   `coder::read-file` → `coder_read-file`), valid under the model APIs'
//!   `^[a-zA-Z0-9_-]{1,64}$`. Input schema: the function's strict 2020-12
//!   request schema; output schema: its response schema, on request
//!   (`--output-schemas`; it triples the list). `annotations` say truthfully
//!   which tools only read, which may destroy, which are idempotent
//!   ([`hints`]). `--read-only` serves only the tools that only read;
//!   `--tools` names the ones to serve.
//! - **Calls** run concurrently, each in its own task, under the same
//!   configuration, policy, journal and limits as every other entry point.
//!   A success is the answer as `structuredContent` and as compact JSON
//!   text; a failure is `isError: true` with `CODE: message` as text. A
//!   client's cancellation drops the call's task: a command it started is
//!   killed with its process tree ([`crate::exec::foreground`]). With a
//!   progress token, the call reports how long it has been running every
//!   [`PROGRESS_EVERY`] until it answers.
//! - **Lifetime**: terminal sessions, background jobs and watchers live as
//!   long as the server. When the client closes stdin (or the process is
//!   signalled), calls in flight are dropped and [`Services::shutdown`]
//!   kills every process tree ide started.
//! - **Through an engine** (`ide mcp --url`, [`ThroughEngine`]): the same
//!   tools, each call invoked on the bus and answered by the ide worker
//!   serving there (in a chosen namespace: another host's files). There,
//!   what a call starts belongs to that worker: a cancelled call stops
//!   waiting, but the worker finishes it (the engine carries no
//!   cancellation); `shell::exec`'s own deadline still bounds it.

use crate::catalog::Catalog;
use crate::function::{Ctx, FunctionDef};
use crate::services::Services;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Protocol versions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// How often a call with a progress token reports that it is still running.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// The longest message read from the client (a line); a longer one is
/// answered with a parse error and skipped, so memory stays bounded.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Functions that are not tools here: they answer an engine channel.
const NEEDS_AN_ENGINE: [&str; 1] = ["shell::fs::read"];

/// What `ide mcp` serves.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only the tools that only read ([`Hints::read_only`]).
    pub read_only: bool,
    /// Only these tools (function ids or tool names); empty: all.
    pub tools: Vec<String>,
    /// Declare each tool's output schema (the function's response schema).
    pub output_schemas: bool,
}

/// The MCP tool name of a function id: `::` becomes `_`
/// (`shell::fs::grep` → `shell_fs_grep`, `coder::read-file` →
/// `coder_read-file`). Ids use only letters, digits, `_`, `-` and `::`, so
/// the name is valid for every model API; names are unique (a test checks)
/// and the server maps each back to its function by table.
pub fn tool_name(id: &str) -> String {
    id.replace("::", "_")
}

/// What a tool's `annotations` say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// It changes nothing (files, processes, sessions, history).
    pub read_only: bool,
    /// It may destroy or overwrite what was there (meaningful when it is
    /// not read-only).
    pub destructive: bool,
    /// The same call twice has the effect of one.
    pub idempotent: bool,
}

/// The hints of an agent function; `None` for one nobody classified (a
/// test makes sure there is none).
pub fn hints(id: &str) -> Option<Hints> {
    const READ: Hints = Hints {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    const ADDS: Hints = Hints {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    const ADDS_ONCE: Hints = Hints {
        read_only: false,
        destructive: false,
        idempotent: true,
    };
    const DESTROYS: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
    };
    const DESTROYS_ONCE: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: true,
    };
    Some(match id {
        "coder::info"
        | "coder::read-file"
        | "coder::list-folder"
        | "coder::tree"
        | "coder::search"
        | "coder::symbols"
        | "coder::find-symbol"
        | "coder::references"
        | "coder::definition"
        | "coder::map"
        | "coder::hover"
        | "coder::diagnostics"
        | "coder::change-diff"
        | "shell::turns::list"
        | "shell::status"
        | "shell::list"
        | "shell::fs::ls"
        | "shell::fs::stat"
        | "shell::fs::read"
        | "shell::fs::grep"
        | "shell::workspace::roots"
        | "shell::workspace::list"
        | "shell::workspace::validate"
        | "shell::pty::sessions"
        | "shell::pty::screen" => READ,
        // reading a terminal consumes nothing, but waits on a live program
        "shell::pty::read" => READ,
        // writes that can replace what is there
        "coder::create-file" | "coder::update-file" | "shell::fs::write" | "shell::fs::sed" => {
            DESTROYS
        }
        // rewrites every file the language server names
        "coder::rename" => DESTROYS,
        "coder::delete-file" | "shell::fs::rm" | "shell::fs::chmod" => DESTROYS_ONCE,
        "coder::move" | "shell::fs::mv" | "shell::turns::revert" => DESTROYS,
        "shell::fs::mkdir" => ADDS_ONCE,
        // a command can do anything
        "shell::exec" | "shell::exec_bg" => DESTROYS,
        "shell::kill" | "shell::pty::stop" => DESTROYS_ONCE,
        "shell::pty::start" | "shell::pty::send" => ADDS,
        _ => return None,
    })
}

/// One served tool.
struct Tool {
    name: String,
    def: FunctionDef,
}

/// The tools `options` select, in catalog order.
fn select(catalog: &Catalog, options: &Options) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    for def in catalog.agent_functions() {
        if NEEDS_AN_ENGINE.contains(&def.id) {
            continue;
        }
        let name = tool_name(def.id);
        if !options.tools.is_empty() && !options.tools.iter().any(|t| t == def.id || *t == name) {
            continue;
        }
        let h = hints(def.id).ok_or_else(|| format!("{} has no tool hints", def.id))?;
        if options.read_only && !h.read_only {
            continue;
        }
        tools.push(Tool {
            name,
            def: def.clone(),
        });
    }
    for wanted in &options.tools {
        if !tools
            .iter()
            .any(|t| &t.name == wanted || t.def.id == wanted)
        {
            let known: Vec<String> = catalog
                .agent_functions()
                .filter(|d| !NEEDS_AN_ENGINE.contains(&d.id))
                .map(|d| tool_name(d.id))
                .collect();
            return Err(format!(
                "--tools names {wanted:?}, which is not a tool{}; tools: {}",
                if options.read_only {
                    " that only reads (--read-only)"
                } else {
                    ""
                },
                known.join(", ")
            ));
        }
    }
    Ok(tools)
}

/// A schema as a tool declares it: the registered one without `$schema`
/// (MCP's default dialect is 2020-12, which it is) and `title`.
fn tool_schema(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Value::Object(m) = &mut s {
        m.remove("$schema");
        m.remove("title");
    }
    s
}

/// The `tools/list` entry of a tool.
fn tool_entry(tool: &Tool, output_schemas: bool) -> Value {
    let h = hints(tool.def.id).expect("selected tools are classified");
    let mut annotations = json!({
        "title": tool.def.id,
        "readOnlyHint": h.read_only,
        "openWorldHint": false,
    });
    if !h.read_only {
        annotations["destructiveHint"] = json!(h.destructive);
        annotations["idempotentHint"] = json!(h.idempotent);
    } else {
        annotations["idempotentHint"] = json!(true);
    }
    let mut entry = json!({
        "name": tool.name,
        "description": tool.def.description,
        "inputSchema": tool_schema(&tool.def.request_schema),
        "annotations": annotations,
    });
    if output_schemas && tool.def.response_schema["type"] == "object" {
        entry["outputSchema"] = tool_schema(&tool.def.response_schema);
    }
    entry
}

/// The whole `tools/list` answer (also measured by the tests).
pub fn tools_list(catalog: &Catalog, options: &Options) -> Result<Value, String> {
    let tools = select(catalog, options)?;
    Ok(json!({
        "tools": tools.iter().map(|t| tool_entry(t, options.output_schemas)).collect::<Vec<_>>()
    }))
}

/// A JSON-RPC error object.
fn rpc_error(code: i64, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

/// Where a tool call runs.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Run `def` with `arguments`.
    async fn call(
        &self,
        def: &FunctionDef,
        arguments: Value,
    ) -> Result<Value, crate::error::WireError>;
    /// The client is gone: end what the calls started.
    async fn shutdown(&self);
    /// What the worker is busy with that a waiting call may be waiting
    /// for (language servers loading a project), for progress messages.
    fn activity(&self) -> Option<String> {
        None
    }
}

/// In this process, over the worker's own services (`ide mcp`).
pub struct InProcess(pub Arc<Services>);

#[async_trait::async_trait]
impl Backend for InProcess {
    async fn call(
        &self,
        def: &FunctionDef,
        arguments: Value,
    ) -> Result<Value, crate::error::WireError> {
        (def.handler)(Ctx::new(self.0.clone()), arguments).await
    }

    async fn shutdown(&self) {
        self.0.shutdown().await;
    }

    fn activity(&self) -> Option<String> {
        let busy: Vec<String> = self
            .0
            .servers
            .describe()
            .into_iter()
            .filter(|d| !d.progress.is_empty())
            .map(|d| {
                let work: Vec<String> = d
                    .progress
                    .iter()
                    .map(crate::lsp::server::Progress::describe)
                    .collect();
                format!("language server {} is busy: {}", d.name, work.join("; "))
            })
            .collect();
        (!busy.is_empty()).then(|| busy.join(". "))
    }
}

/// Through an engine, to the ide worker serving there (`ide mcp --url`):
/// each call is invoked on the bus, in `namespace` when one is given (the
/// host whose files the agent works on).
pub struct ThroughEngine {
    pub client: iii_sdk::IIIClient,
    pub namespace: Option<String>,
    /// How long a call may take before the engine gives up on it.
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl Backend for ThroughEngine {
    async fn call(
        &self,
        def: &FunctionDef,
        arguments: Value,
    ) -> Result<Value, crate::error::WireError> {
        let mut request = iii_sdk::protocol::TriggerRequest::new(def.id, arguments);
        request.timeout_ms = Some(self.timeout.as_millis() as u64);
        let mut request = iii_sdk::protocol::TriggerRequestWithMetadata::from(request);
        if let Some(ns) = &self.namespace {
            request = request.namespace(ns.clone());
        }
        self.client.trigger(request).await.map_err(|e| match e {
            iii_sdk::Error::Remote { code, message, .. } => {
                crate::error::WireError { code, message }
            }
            other => crate::error::WireError {
                code: "engine_error".into(),
                message: format!(
                    "{} did not answer through the engine: {other}; check that the ide worker \
                     is connected (iii trigger engine::functions::list) and retry",
                    def.id
                ),
            },
        })
    }

    async fn shutdown(&self) {
        self.client.shutdown_async().await;
    }
}

/// The server's state shared by its tasks.
struct Server {
    backend: Arc<dyn Backend>,
    tools: HashMap<String, Tool>,
    list: Value,
    out: mpsc::UnboundedSender<Value>,
    /// Calls in flight, by request id (as JSON text), for cancellation.
    calls: Mutex<HashMap<String, AbortHandle>>,
}

impl Server {
    fn send(&self, message: Value) {
        let _ = self.out.send(message);
    }

    fn answer(&self, id: &Value, result: Result<Value, Value>) {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        m.insert("id".into(), id.clone());
        match result {
            Ok(r) => m.insert("result".into(), r),
            Err(e) => m.insert("error".into(), e),
        };
        self.send(Value::Object(m));
    }

    /// One message from the client.
    fn handle(self: &Arc<Self>, message: Value) {
        let Value::Object(m) = message else {
            self.answer(
                &Value::Null,
                Err(rpc_error(-32600, "a message must be a JSON-RPC object")),
            );
            return;
        };
        let method = m.get("method").and_then(Value::as_str);
        let id = m.get("id").cloned();
        let params = m.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            (Some(method), Some(id)) => self.request(method, id, params),
            (Some(method), None) => self.notification(method, &params),
            // a response to a request of ours: we send none
            (None, _) => {}
        }
    }

    fn request(self: &Arc<Self>, method: &str, id: Value, params: Value) {
        match method {
            "initialize" => {
                let asked = params["protocolVersion"].as_str().unwrap_or_default();
                let version = if PROTOCOL_VERSIONS.contains(&asked) {
                    asked
                } else {
                    PROTOCOL_VERSIONS[0]
                };
                self.answer(
                    &id,
                    Ok(json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": false}},
                        "serverInfo": {"name": "ide", "version": env!("CARGO_PKG_VERSION")},
                        "instructions": INSTRUCTIONS,
                    })),
                );
            }
            "ping" => self.answer(&id, Ok(json!({}))),
            "tools/list" => self.answer(&id, Ok(self.list.clone())),
            "tools/call" => self.call(id, params),
            "logging/setLevel" => self.answer(&id, Ok(json!({}))),
            other => self.answer(
                &id,
                Err(rpc_error(
                    -32601,
                    format!(
                        "method {other:?} not found: ide serves tools (tools/list, tools/call)"
                    ),
                )),
            ),
        }
    }

    fn notification(&self, method: &str, params: &Value) {
        if method == "notifications/cancelled"
            && let Some(request) = params.get("requestId")
        {
            let key = request.to_string();
            let handle = self
                .calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            if let Some(h) = handle {
                tracing::debug!(request = %key, "call cancelled by the client");
                h.abort();
            }
        }
        // notifications/initialized and others need nothing
    }

    fn call(self: &Arc<Self>, id: Value, params: Value) {
        let name = params["name"].as_str().unwrap_or_default().to_string();
        let Some(tool) = self.tools.get(&name) else {
            let mut known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            known.sort_unstable();
            self.answer(
                &id,
                Err(rpc_error(
                    -32602,
                    format!("unknown tool {name:?}; tools: {}", known.join(", ")),
                )),
            );
            return;
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(a) => a.clone(),
        };
        let def = tool.def.clone();
        let progress = params
            .pointer("/_meta/progressToken")
            .filter(|t| t.is_string() || t.is_number())
            .cloned();
        let key = id.to_string();
        let me = self.clone();
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            let backend = me.backend.clone();
            let run = backend.call(&def, arguments);
            let answer = match progress {
                None => run.await,
                Some(token) => me.with_progress(run, token).await,
            };
            me.calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&task_key);
            me.answer(&id, Ok(call_result(answer)));
        });
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, task.abort_handle());
    }

    /// Run `call`, telling the client every [`PROGRESS_EVERY`] that it is
    /// still running.
    async fn with_progress<F: std::future::Future>(&self, call: F, token: Value) -> F::Output {
        let started = Instant::now();
        tokio::pin!(call);
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        loop {
            tokio::select! {
                out = &mut call => return out,
                _ = tick.tick() => {
                    let secs = started.elapsed().as_secs();
                    let message = match self.backend.activity() {
                        Some(busy) => format!("running for {secs} s; {busy}"),
                        None => format!("running for {secs} s"),
                    };
                    self.send(json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": token,
                            "progress": secs,
                            "message": message,
                        },
                    }));
                }
            }
        }
    }
}

/// A function's answer as a `tools/call` result.
fn call_result(answer: Result<Value, crate::error::WireError>) -> Value {
    match answer {
        Ok(v) => {
            let text = v.to_string();
            let mut r = json!({"content": [{"type": "text", "text": text}], "isError": false});
            if v.is_object() {
                r["structuredContent"] = v;
            }
            r
        }
        Err(e) => json!({
            "content": [{"type": "text", "text": format!("{}: {}", e.code, e.message)}],
            "isError": true,
        }),
    }
}

/// What the server tells the client's model at `initialize`.
const INSTRUCTIONS: &str = "ide: read, search and edit code, run commands and drive terminals on \
this machine, under one policy. Start with coder_info (roots, limits, conventions: line numbers \
are 1-based, pass a read's revision as expected_revision to edit safely). Errors are \
`CODE: message`; the message names the next call that works.";

/// Serve MCP on `input`/`output` until the client closes `input` or
/// `stop` resolves; then drop the calls in flight and shut the backend
/// down (in process: every process ide started is killed).
pub async fn serve<R, W>(
    input: R,
    output: W,
    backend: Arc<dyn Backend>,
    options: &Options,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let catalog = Catalog::standard();
    let list = tools_list(&catalog, options)?;
    let tools = select(&catalog, options)?
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect();
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(message) = rx.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let server = Arc::new(Server {
        backend: backend.clone(),
        tools,
        list,
        out: tx,
        calls: Mutex::new(HashMap::new()),
    });
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    tokio::pin!(stop);
    loop {
        line.clear();
        let read = tokio::select! {
            r = read_message(&mut reader, &mut line) => r,
            () = &mut stop => break,
        };
        match read {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "reading from the client failed");
                break;
            }
        }
        if line.len() > MAX_MESSAGE_BYTES {
            server.answer(
                &Value::Null,
                Err(rpc_error(
                    -32700,
                    format!("a message of more than {MAX_MESSAGE_BYTES} bytes was skipped"),
                )),
            );
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(message) => server.handle(message),
            Err(e) => server.answer(
                &Value::Null,
                Err(rpc_error(-32700, format!("not JSON: {e}"))),
            ),
        }
    }
    // The client is gone (or we were told to stop): nothing in flight has
    // anyone to answer to, and nothing ide started may outlive the server.
    let in_flight: Vec<AbortHandle> = server
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .map(|(_, h)| h)
        .collect();
    for h in in_flight {
        h.abort();
    }
    backend.shutdown().await;
    drop(server);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    Ok(())
}

/// Read one line into `buf` (without its newline), reading past and
/// dropping the rest of a line longer than [`MAX_MESSAGE_BYTES`] (`buf`
/// then holds one byte more than the cap). `Ok(0)` at end of input.
async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (MAX_MESSAGE_BYTES + 1).saturating_sub(buf.len());
        let keep = take.min(room);
        buf.extend_from_slice(&chunk[..keep]);
        reader.consume(take);
        total += take;
        if done {
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests;
