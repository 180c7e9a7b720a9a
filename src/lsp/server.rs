//! One running language server: its process, the conversation with it,
//! the documents it has open, and what it published.
//!
//! Requests run concurrently (each waits on its own reply; one reader task
//! routes replies by id, one writer task owns stdin), never through a
//! serialized queue. A request past its deadline is cancelled
//! (`$/cancelRequest`); a server that does not answer the cancellation
//! within [`CANCEL_GRACE`] is hung, and the caller ([`super::Servers`])
//! kills it. The connection is *dead* once the server's output ends, it
//! writes something that is not LSP, or it is killed: every waiting request
//! then fails at once with the reason.

use super::text::{self, Encoding};
use super::wire;
use crate::exec::process::{Pipes, Process};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Notify, mpsc, oneshot, watch};

/// How long a cancelled request may take to answer before its server is
/// taken for hung.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// Documents a server keeps open (each is held in memory here and
/// there); the least recently used is closed past it.
const MAX_OPEN: usize = 64;
/// How long a server that publishes diagnostics without a version must
/// stay quiet after publishing before its last publication is taken as the
/// one for the current text.
pub const QUIET_AFTER_PUBLISH: Duration = Duration::from_millis(500);
/// How long a versioned server must publish nothing more, after it
/// published for the version waited for, when other documents changed
/// lately (see [`Conn::diagnostics`]).
pub const SETTLE: Duration = Duration::from_millis(150);
/// How long a change of another document counts as recent.
const RECENT_CHANGE: Duration = Duration::from_secs(5);
/// Diagnostics kept per document.
const MAX_DIAGNOSTICS: usize = 1000;

/// Why a request got no answer.
#[derive(Debug, Clone)]
pub enum RpcError {
    /// The server answered with an error.
    Remote { code: i64, message: String },
    /// No answer in time; `cancelled`: it acknowledged the cancellation
    /// (else it is hung).
    Timeout { cancelled: bool },
    /// The connection ended (the reason).
    Dead(String),
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RpcError::Remote { code, message } => write!(f, "it answered error {code}: {message}"),
            RpcError::Timeout { cancelled: true } => {
                write!(f, "it did not answer in time (the request was cancelled)")
            }
            RpcError::Timeout { cancelled: false } => write!(
                f,
                "it did not answer in time, nor acknowledge the cancellation (it was killed as hung)"
            ),
            RpcError::Dead(why) => write!(f, "it stopped: {why}"),
        }
    }
}

/// What a server published for one document.
#[derive(Debug, Clone)]
pub struct Published {
    /// The document version they are for, when the server says.
    pub version: Option<i64>,
    /// Raw LSP diagnostics.
    pub items: Vec<Value>,
    /// Order of publication (per connection).
    pub seq: u64,
}

/// A `$/progress` in flight.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub title: String,
    pub message: Option<String>,
    pub percentage: Option<u64>,
    pub since: Option<Instant>,
}

impl Progress {
    /// As people read it: `Indexing: src (40%), 3 s so far`.
    pub fn describe(&self) -> String {
        let mut s = self.title.clone();
        if let Some(m) = &self.message {
            s.push_str(&format!(": {m}"));
        }
        if let Some(pc) = self.percentage {
            s.push_str(&format!(" ({pc}%)"));
        }
        if let Some(t) = self.since {
            s.push_str(&format!(", {} s so far", t.elapsed().as_secs()));
        }
        s
    }
}

/// What a file's metadata says of its content (inode, size, mtime and
/// ctime in ns): a different stamp means the file may have changed.
pub type Stamp = (u64, u64, i128, i128);

/// The stamp of a file's metadata.
pub fn stamp_of(md: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    (
        md.ino(),
        md.size(),
        md.mtime() as i128 * 1_000_000_000 + md.mtime_nsec() as i128,
        md.ctime() as i128 * 1_000_000_000 + md.ctime_nsec() as i128,
    )
}

struct Doc {
    version: i64,
    text: Arc<Vec<u8>>,
    /// The file's stamp when `text` was read from it.
    stamp: Option<Stamp>,
    /// The publication counter when this version was sent.
    sent_at_seq: u64,
}

/// A live connection.
pub struct Conn {
    pub name: String,
    pub root: PathBuf,
    pub process: Arc<Process>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>,
    published: Mutex<HashMap<String, Published>>,
    publish_seq: AtomicU64,
    publishes: Notify,
    progress: Mutex<BTreeMap<String, Progress>>,
    /// When each document last changed in the server (sent or on disk),
    /// the last few seconds only.
    changed_at: Mutex<HashMap<String, Instant>>,
    /// The URIs open in the server (mirrors `docs`, readable without
    /// awaiting: the change feed's thread asks it).
    open_uris: Mutex<std::collections::HashSet<String>>,
    /// Progress reports begun so far, and a wake-up when none is left.
    progress_epoch: AtomicU64,
    progress_idle: Notify,
    docs: tokio::sync::Mutex<Docs>,
    dead: watch::Sender<Option<String>>,
    /// What it answered `initialize` with.
    pub capabilities: Mutex<Value>,
    pub encoding: Mutex<Encoding>,
    settings: Value,
    /// Requests answered, for `coder::info`.
    pub answered: AtomicU64,
}

#[derive(Default)]
struct Docs {
    open: HashMap<String, Doc>,
    /// Least recently used first.
    order: VecDeque<String>,
}

/// The LSP `languageId` of a file.
pub fn language_id(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        "go" => "go",
        "rs" => "rust",
        "java" => "java",
        _ => "plaintext",
    }
}

impl Conn {
    /// Take over a started server's pipes: start the reader and the
    /// writer. Nothing is sent yet ([`Conn::initialize`] does).
    pub fn start(
        name: String,
        root: PathBuf,
        process: Arc<Process>,
        pipes: Pipes,
        settings: Value,
    ) -> Arc<Conn> {
        let (out, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let (dead, _) = watch::channel(None);
        let conn = Arc::new(Conn {
            name,
            root,
            process,
            out,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            published: Mutex::new(HashMap::new()),
            publish_seq: AtomicU64::new(0),
            publishes: Notify::new(),
            progress: Mutex::new(BTreeMap::new()),
            changed_at: Mutex::new(HashMap::new()),
            open_uris: Mutex::new(std::collections::HashSet::new()),
            progress_epoch: AtomicU64::new(0),
            progress_idle: Notify::new(),
            docs: tokio::sync::Mutex::new(Docs::default()),
            dead,
            capabilities: Mutex::new(Value::Null),
            encoding: Mutex::new(Encoding::Utf16),
            settings,
            answered: AtomicU64::new(0),
        });
        let Pipes { mut stdin, stdout } = pipes;
        let writer = Arc::downgrade(&conn);
        tokio::spawn(async move {
            while let Some(bytes) = rx.recv().await {
                if let Err(e) = stdin.write_all(&bytes).await {
                    if let Some(c) = writer.upgrade() {
                        c.die(format!("writing to it failed: {e}"));
                    }
                    return;
                }
                let _ = stdin.flush().await;
            }
        });
        let reader = Arc::downgrade(&conn);
        tokio::spawn(async move {
            let mut r = tokio::io::BufReader::with_capacity(64 << 10, stdout);
            loop {
                let msg = wire::read(&mut r).await;
                let Some(conn) = reader.upgrade() else { return };
                match msg {
                    Ok(Some(m)) => conn.dispatch(m),
                    Ok(None) => {
                        conn.die("its output ended (it exited)".into());
                        return;
                    }
                    Err(e) => {
                        let garbage = matches!(e, wire::WireError::Garbage(_));
                        conn.die(e.to_string());
                        if garbage {
                            // no way back into the stream: end it
                            let p = conn.process.clone();
                            tokio::spawn(async move {
                                p.terminate(crate::exec::process::KILL_GRACE).await;
                            });
                        }
                        return;
                    }
                }
            }
        });
        conn
    }

    /// Why the connection ended, if it did.
    pub fn dead(&self) -> Option<String> {
        self.dead.borrow().clone()
    }

    /// End the connection: every waiting request fails with `why`.
    pub fn die(&self, why: String) {
        self.dead.send_if_modified(|d| {
            if d.is_none() {
                *d = Some(why.clone());
                true
            } else {
                false
            }
        });
        let waiting: Vec<_> = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        let why = self.dead().unwrap_or(why);
        for (_, tx) in waiting {
            let _ = tx.send(Err(RpcError::Dead(why.clone())));
        }
        self.publishes.notify_waiters();
        self.progress_idle.notify_waiters();
    }

    fn send(&self, msg: &Value) {
        let _ = self.out.send(wire::frame(msg));
    }

    fn note_change(&self, uri: &str) {
        let mut m = self.changed_at.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|_, t| t.elapsed() < RECENT_CHANGE);
        m.insert(uri.to_string(), Instant::now());
    }

    /// Whether a document other than `uri` changed in the server lately.
    fn others_changed(&self, uri: &str) -> bool {
        let m = self.changed_at.lock().unwrap_or_else(|e| e.into_inner());
        let others: Vec<&String> = m
            .iter()
            .filter(|(u, t)| *u != uri && t.elapsed() < RECENT_CHANGE)
            .map(|(u, _)| u)
            .collect();
        if !others.is_empty() {
            tracing::debug!(server = %self.name, uri, ?others, "other documents changed lately: diagnostics settle");
        }
        !others.is_empty()
    }

    /// Send a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Send a request and wait for its answer, at most `timeout` (then it
    /// is cancelled; see [`RpcError::Timeout`]).
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        if let Some(why) = self.dead() {
            return Err(RpcError::Dead(why));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, mut rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = match tokio::time::timeout(timeout, &mut rx).await {
            Ok(a) => a,
            Err(_) => {
                self.notify("$/cancelRequest", json!({"id": id}));
                match tokio::time::timeout(CANCEL_GRACE, &mut rx).await {
                    // answered after all, or acknowledged: either way it is alive
                    Ok(Ok(_)) => return Err(RpcError::Timeout { cancelled: true }),
                    _ => {
                        self.pending
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&id);
                        return Err(RpcError::Timeout { cancelled: false });
                    }
                }
            }
        };
        match answer {
            Ok(r) => {
                self.answered.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(server = %self.name, method, answer = ?r, "language server answered");
                r
            }
            Err(_) => Err(RpcError::Dead(
                self.dead()
                    .unwrap_or_else(|| "the connection closed".into()),
            )),
        }
    }

    fn dispatch(&self, m: Value) {
        let method = m["method"].as_str().map(str::to_string);
        let id = m.get("id").cloned().filter(|i| !i.is_null());
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                let tx = self
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                if let Some(tx) = tx {
                    let r = match m.get("error") {
                        Some(e) if !e.is_null() => Err(RpcError::Remote {
                            code: e["code"].as_i64().unwrap_or(0),
                            message: e["message"].as_str().unwrap_or("").to_string(),
                        }),
                        _ => Ok(m.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = tx.send(r);
                }
            }
            (Some(method), Some(id)) => {
                let reply = self.answer_server_request(&method, &m["params"]);
                let msg = match reply {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, message)) => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": code, "message": message}}),
                };
                self.send(&msg);
            }
            (Some(method), None) => self.on_notification(&method, &m["params"]),
            (None, None) => {}
        }
    }

    fn answer_server_request(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/configuration" => {
                let items = params["items"].as_array().cloned().unwrap_or_default();
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|it| match it["section"].as_str() {
                            Some(section) => section
                                .split('.')
                                .try_fold(&self.settings, |v, k| v.get(k))
                                .cloned()
                                .unwrap_or(Value::Null),
                            None => self.settings.clone(),
                        })
                        .collect(),
                ))
            }
            "workspace/workspaceFolders" => Ok(json!([{
                "uri": text::uri_of(&self.root),
                "name": self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            }])),
            "window/workDoneProgress/create"
            | "client/registerCapability"
            | "client/unregisterCapability"
            | "window/showMessageRequest"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/codeLens/refresh" => Ok(Value::Null),
            // ide applies edits itself, as guarded turns; never on a server's word
            "workspace/applyEdit" => Ok(json!({"applied": false,
                "failureReason": "ide applies edits only through coder::rename and coder::update-file"})),
            _ => Err((-32601, format!("ide does not handle {method}"))),
        }
    }

    fn on_notification(&self, method: &str, params: &Value) {
        match method {
            "textDocument/publishDiagnostics" => {
                let Some(uri) = params["uri"].as_str() else {
                    return;
                };
                let mut items = params["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                items.truncate(MAX_DIAGNOSTICS);
                let seq = self.publish_seq.fetch_add(1, Ordering::AcqRel) + 1;
                tracing::debug!(server = %self.name, uri, version = ?params["version"].as_i64(), count = items.len(), seq, "diagnostics published");
                self.published
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        uri.to_string(),
                        Published {
                            version: params["version"].as_i64(),
                            items,
                            seq,
                        },
                    );
                self.publishes.notify_waiters();
            }
            "$/progress" => {
                let token = match &params["token"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let v = &params["value"];
                let mut all = self.progress.lock().unwrap_or_else(|e| e.into_inner());
                match v["kind"].as_str() {
                    Some("begin") => {
                        self.progress_epoch.fetch_add(1, Ordering::AcqRel);
                        all.insert(
                            token,
                            Progress {
                                title: v["title"].as_str().unwrap_or("").to_string(),
                                message: v["message"].as_str().map(str::to_string),
                                percentage: v["percentage"].as_u64(),
                                since: Some(Instant::now()),
                            },
                        );
                    }
                    Some("report") => {
                        if let Some(p) = all.get_mut(&token) {
                            if let Some(m) = v["message"].as_str() {
                                p.message = Some(m.to_string());
                            }
                            if let Some(pc) = v["percentage"].as_u64() {
                                p.percentage = Some(pc);
                            }
                        }
                    }
                    Some("end") => {
                        all.remove(&token);
                        if all.is_empty() {
                            self.progress_idle.notify_waiters();
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// How many progress reports have begun (to tell whether one began
    /// while a request was pending).
    pub fn progress_epoch(&self) -> u64 {
        self.progress_epoch.load(Ordering::Acquire)
    }

    /// Wait until the server reports no work in progress (at most
    /// `timeout`); whether it is idle.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let idle = self.progress_idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty()
            {
                return true;
            }
            if self.dead().is_some() || tokio::time::timeout_at(deadline, idle).await.is_err() {
                return false;
            }
        }
    }

    /// The work the server reports in progress.
    pub fn progress(&self) -> Vec<Progress> {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// `initialize` + `initialized`, with `root` as the one workspace
    /// folder. Remembers the capabilities and the position encoding.
    pub async fn initialize(&self, options: &Value, timeout: Duration) -> Result<(), RpcError> {
        let root_uri = text::uri_of(&self.root);
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "ide", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": self.root,
            "workspaceFolders": [{"uri": root_uri,
                "name": self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
            "initializationOptions": options,
            "capabilities": {
                "general": {"positionEncodings": ["utf-8", "utf-16"]},
                "window": {"workDoneProgress": true},
                "workspace": {
                    "configuration": true,
                    "workspaceFolders": true,
                    "didChangeWatchedFiles": {"dynamicRegistration": true},
                    "workspaceEdit": {"documentChanges": true},
                },
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
                    "diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": false},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "definition": {"linkSupport": true},
                    "references": {},
                    "rename": {"prepareSupport": false},
                },
            },
        });
        let answer = self.request("initialize", params, timeout).await?;
        let caps = answer["capabilities"].clone();
        *self.encoding.lock().unwrap_or_else(|e| e.into_inner()) = Encoding::of(&caps);
        *self.capabilities.lock().unwrap_or_else(|e| e.into_inner()) = caps;
        self.notify("initialized", json!({}));
        if !self.settings.is_null() {
            self.notify(
                "workspace/didChangeConfiguration",
                json!({"settings": self.settings}),
            );
        }
        Ok(())
    }

    /// Make the server's copy of `path` equal `text`: open it (version 1)
    /// or send the whole new text (the next version) when it differs.
    /// Returns the version the server now has, and the publication counter
    /// at that moment (publications after it are for this text or later).
    pub async fn sync(&self, path: &Path, text: Arc<Vec<u8>>, stamp: Option<Stamp>) -> (i64, u64) {
        let uri = text::uri_of(path);
        let mut docs = self.docs.lock().await;
        let seq = self.publish_seq.load(Ordering::Acquire);
        docs.order.retain(|u| u != &uri);
        docs.order.push_back(uri.clone());
        if let Some(d) = docs.open.get_mut(&uri) {
            d.stamp = stamp;
            if d.text == text {
                return (d.version, d.sent_at_seq);
            }
            d.version += 1;
            d.text = text.clone();
            d.sent_at_seq = seq;
            let v = d.version;
            self.note_change(&uri);
            tracing::debug!(server = %self.name, uri, version = v, seq, bytes = text.len(), "didChange");
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": v},
                       "contentChanges": [{"text": String::from_utf8_lossy(&text)}]}),
            );
            return (v, seq);
        }
        while docs.open.len() >= MAX_OPEN {
            let Some(old) = docs.order.pop_front() else {
                break;
            };
            if docs.open.remove(&old).is_some() {
                self.notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": old}}),
                );
            }
        }
        self.note_change(&uri);
        tracing::debug!(server = %self.name, uri, seq, bytes = text.len(), "didOpen");
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": language_id(path),
                   "version": 1, "text": String::from_utf8_lossy(&text)}}),
        );
        self.open_uris
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uri.clone());
        docs.open.insert(
            uri,
            Doc {
                version: 1,
                text,
                stamp,
                sent_at_seq: seq,
            },
        );
        (1, seq)
    }

    /// Tell the server a file was saved (after [`Conn::sync`] gave it the
    /// saved text).
    pub fn saved(&self, path: &Path) {
        self.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": text::uri_of(path)}}),
        );
    }

    /// The open documents: path and the stamp their text was read at.
    pub async fn open_docs(&self) -> Vec<(PathBuf, Option<Stamp>)> {
        let docs = self.docs.lock().await;
        docs.open
            .iter()
            .filter_map(|(u, d)| Some((text::path_of(u)?, d.stamp)))
            .collect()
    }

    /// Whether `path` is open in the server.
    pub async fn is_open(&self, path: &Path) -> bool {
        self.docs
            .lock()
            .await
            .open
            .contains_key(&text::uri_of(path))
    }

    /// Forget an open document whose file is gone.
    pub async fn close(&self, path: &Path) {
        let uri = text::uri_of(path);
        let mut docs = self.docs.lock().await;
        if docs.open.remove(&uri).is_some() {
            tracing::debug!(server = %self.name, uri, "didClose");
            self.open_uris
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&uri);
            docs.order.retain(|u| u != &uri);
            self.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            );
        }
    }

    /// Tell the server files changed on disk (`kind`: 1 created, 2
    /// changed, 3 deleted). Documents it holds open are left out: it reads
    /// those only from what it was sent (kept up to the disk before each
    /// request), and news of their files on disk makes some servers
    /// (pyright) start their analysis over.
    pub fn files_changed(&self, changes: &[(PathBuf, u8)]) {
        let open = self
            .open_uris
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let list: Vec<Value> = changes
            .iter()
            .map(|(p, k)| json!({"uri": text::uri_of(p), "type": k}))
            .filter(|c| c["uri"].as_str().is_some_and(|u| !open.contains(u)))
            .collect();
        if list.is_empty() {
            return;
        }
        for c in &list {
            if let Some(u) = c["uri"].as_str() {
                self.note_change(u);
            }
        }
        self.notify("workspace/didChangeWatchedFiles", json!({"changes": list}));
    }

    /// The diagnostics published for `path` after publication `after`
    /// (for version `version` when the server names versions), waiting up
    /// to `wait` for them. `None`: nothing fresh was published in time
    /// (the last ones, if any, come with it as stale).
    pub async fn diagnostics(
        &self,
        path: &Path,
        version: i64,
        after: u64,
        wait: Duration,
    ) -> (Option<Published>, bool) {
        let uri = text::uri_of(path);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.publishes.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let now = self
                .published
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&uri)
                .cloned();
            if let Some(p) = &now {
                match p.version {
                    // Other documents changed lately: a server that checks
                    // incrementally (pyright) may publish for this version
                    // before it has seen what the others now define, then
                    // again; the last one within SETTLE of quiet counts.
                    Some(v) if v >= version && self.others_changed(&uri) => {
                        let next = self.publishes.notified();
                        tokio::pin!(next);
                        next.as_mut().enable();
                        if self.published_seq(&uri) == Some(p.seq)
                            && tokio::time::timeout_at(
                                (tokio::time::Instant::now() + SETTLE).min(deadline),
                                next,
                            )
                            .await
                            .is_err()
                        {
                            return (self.published_now(&uri).or(now), true);
                        }
                        continue;
                    }
                    Some(v) if v >= version => return (now, true),
                    Some(_) => {}
                    // A server that does not say which version its
                    // diagnostics are for (typescript-language-server
                    // publishes each kind — syntax, semantic — as it
                    // comes) is taken at its word once it has published
                    // after the sync and then stayed quiet for
                    // QUIET_AFTER_PUBLISH.
                    None if p.seq > after => {
                        let quiet = tokio::time::Instant::now() + QUIET_AFTER_PUBLISH;
                        let next = self.publishes.notified();
                        tokio::pin!(next);
                        next.as_mut().enable();
                        let more = self.published_seq(&uri) != Some(p.seq);
                        if !more
                            && tokio::time::timeout_at(quiet.min(deadline), next)
                                .await
                                .is_err()
                        {
                            let last = self.published_now(&uri);
                            return (last.or(now), true);
                        }
                        continue;
                    }
                    None => {}
                }
            }
            if self.dead().is_some() {
                return (now, false);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return (now, false);
            }
        }
    }

    fn published_now(&self, uri: &str) -> Option<Published> {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uri)
            .cloned()
    }

    fn published_seq(&self, uri: &str) -> Option<u64> {
        self.published_now(uri).map(|p| p.seq)
    }

    /// `shutdown` then `exit`, politely (bounded); the caller kills what is
    /// left.
    pub async fn shutdown(&self) {
        if self.dead().is_none()
            && self
                .request("shutdown", Value::Null, Duration::from_secs(2))
                .await
                .is_ok()
        {
            self.notify("exit", Value::Null);
        }
    }
}
