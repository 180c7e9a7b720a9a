//! A loopback stand-in for the iii engine.
//!
//! It speaks the engine's WebSocket protocol (every frame is an
//! [`iii_sdk::protocol::Message`]) on `127.0.0.1`, so real SDK clients, and the
//! `ide` binary itself, can connect to it. It models the parts of the engine
//! that this crate relies on, and behaves like a real engine (0.23) on each
//! point that was observed there:
//!
//! * the handshake: `WorkerRegistered` on connect (no protocol features, like
//!   an engine that predates observe), `engine::workers::register`, unique
//!   worker names per namespace (`RegistrationRejected`), `Reattach`;
//! * function routing between connections, with `_caller_worker_id` added to
//!   every object payload, and the engine's error shapes
//!   (`function_not_found`, `invocation_stopped`);
//! * trigger types provided by workers, bindings forwarded to their provider
//!   (held until a provider exists), `engine::register_trigger` /
//!   `engine::unregister_trigger`;
//! * the built-in configuration worker (`configuration::*` and the
//!   `configuration` trigger type), backed by a [`ConfigStore`] whose values
//!   outlive an engine instance while the schemas do not.
//!
//! * data channels: `engine::channels::create` and the channel sockets at
//!   `/ws/channels/{id}?key=..&dir=..` (see [`super::channels`]).
//!
//! Namespaces are not modelled beyond their names: everything lives in
//! `default`. Queues (`enqueue`) are not provided.
//!
//! By default the stand-in is well-behaved where the real engine is not: it
//! files a call as pending before it forwards it, delivers in order, sets
//! `TCP_NODELAY`, and answers a frame it cannot decode with an error. The
//! real engine's failures are [`Faults`], off unless asked for (the
//! `IDE_TEST_ENGINE_FAULTS` variable, or [`LoopbackEngine::start_faulted`]):
//! unordered fire-and-forget deliveries, undecodable frames dropped
//! unanswered, the window in which an answer finds no pending call and is
//! dropped, and Nagle on the engine's sockets.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use iii_sdk::protocol::{
    ErrorBody, FUNCTION_NAMESPACE_CONFLICT, Message, TriggerAction, WORKER_NAMESPACE_CONFLICT,
};
use iii_sdk::runtime::WorkerMetadata;
use iii_sdk::{IIIClient, InitOptions, WorkerIdentityMode};

use super::channels::{Channels, query_params};
use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use uuid::Uuid;

/// The only namespace the stand-in knows.
pub const NAMESPACE: &str = "default";
/// The field the engine adds to every object payload it forwards.
pub const CALLER_FIELD: &str = "_caller_worker_id";
/// The engine-provided trigger type of the configuration worker.
pub const CONFIGURATION_TRIGGER: &str = "configuration";
/// Timeout of [`LoopbackEngine::call`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long registrations sent before `engine::workers::register` are held
/// before the engine files them under `default` anyway.
const REGISTRATION_HOLD: Duration = Duration::from_secs(2);
/// Largest JSON message, as on the engine and the SDK.
const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// Bound on the goodbye (close frame) sent to each peer on stop.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

// ───────────────────────────── faults ──────────────────────────────────────

/// The variable that turns faults on for every stand-in a test run starts
/// ([`Faults::parse`] reads it; unset or empty: none).
pub const FAULTS_VAR: &str = "IDE_TEST_ENGINE_FAULTS";

/// The ways a real iii engine (0.23) fails that the stand-in reproduces on
/// demand (`ENGINE-FACTS.md` beside this file).
/// Every draw (a delivery's delay, whether a call's answer window is open)
/// comes from one generator seeded with [`seed`](Self::seed), so a run can be
/// told again.
///
/// As a spec (`IDE_TEST_ENGINE_FAULTS`, [`Faults::parse`], `Display`): a
/// comma-separated list of `all`, `unordered[=MAX_US]`, `undecodable`,
/// `answer-window[=WIDTH_US]`, `answer-window-share=PERCENT`, `nagle`,
/// `seed=N`; later items override earlier ones (`all,answer-window=5000`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Every fire-and-forget delivery is sent from a task of its own
    /// after a delay drawn from `0..=max`, so a burst arrives out of order.
    pub unordered: Option<Duration>,
    /// A frame that does not decode (nested deeper than serde_json's
    /// limit, a lone surrogate escape such as `"\ud800"`, an invocation
    /// without `data`) is logged as a `json decode error` and dropped: its
    /// caller waits its whole timeout. Off, the stand-in answers the call it
    /// can find in such a frame with `invocation_failed`.
    pub undecodable: bool,
    /// The engine forwards a call first and files it as pending only
    /// afterwards; an answer that comes back inside that window finds no
    /// pending call and is dropped (the caller waits its whole timeout).
    pub answer_window: Option<AnswerWindow>,
    /// No `TCP_NODELAY` on the sockets the engine accepts: a small frame
    /// written right behind another waits for the peer's delayed ACK.
    pub nagle: bool,
    /// Seed of the draws.
    pub seed: u64,
}

/// The answer window fault.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnswerWindow {
    /// How long after a call is handed to its worker's connection the engine
    /// files it; an answer read before then is dropped.
    pub width: Duration,
    /// The share of routed calls (percent, drawn per call) whose window is
    /// open; the others are filed before they are forwarded.
    pub share_percent: u8,
}

impl Faults {
    /// Largest delay of a fire-and-forget delivery under `unordered`.
    pub const UNORDERED_MAX: Duration = Duration::from_micros(5_000);
    /// The answer window's width: ide's default answer hold. ide counts its
    /// hold from its receipt of the call, after the window opened, so it
    /// must keep every one of its answers out of it.
    pub const ANSWER_WINDOW: Duration = Duration::from_micros(1_000);
    /// The share of calls whose window is open. Not every one: a worker
    /// without a hold (a console page, a test's own worker) would lose every
    /// answer, where the real engine's window opens under load only.
    pub const ANSWER_WINDOW_SHARE: u8 = 25;
    pub const SEED: u64 = 11;

    /// No fault: the well-behaved stand-in.
    pub fn none() -> Faults {
        Faults {
            seed: Self::SEED,
            ..Faults::default()
        }
    }

    /// Every fault, at its default strength.
    pub fn all() -> Faults {
        Faults::none()
            .unordered(Self::UNORDERED_MAX)
            .undecodable()
            .answer_window(Self::ANSWER_WINDOW, Self::ANSWER_WINDOW_SHARE)
            .nagle()
    }

    pub fn unordered(mut self, max: Duration) -> Faults {
        self.unordered = Some(max);
        self
    }

    pub fn undecodable(mut self) -> Faults {
        self.undecodable = true;
        self
    }

    /// Open the window on `share_percent` of the calls (100: every call).
    pub fn answer_window(mut self, width: Duration, share_percent: u8) -> Faults {
        self.answer_window = Some(AnswerWindow {
            width,
            share_percent: share_percent.min(100),
        });
        self
    }

    pub fn nagle(mut self) -> Faults {
        self.nagle = true;
        self
    }

    pub fn seed(mut self, seed: u64) -> Faults {
        self.seed = seed;
        self
    }

    pub fn any(&self) -> bool {
        self.unordered.is_some() || self.undecodable || self.answer_window.is_some() || self.nagle
    }

    /// The faults a spec names (see [`Faults`]).
    pub fn parse(spec: &str) -> Result<Faults, String> {
        let mut f = Faults::none();
        for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            let number = |what: &str| -> Result<Option<u64>, String> {
                value
                    .map(|v| {
                        v.parse::<u64>()
                            .map_err(|_| format!("{FAULTS_VAR}: {name}={v:?}: {what} expected"))
                    })
                    .transpose()
            };
            let micros = |default: Duration| -> Result<Duration, String> {
                Ok(number("microseconds")?
                    .map(Duration::from_micros)
                    .unwrap_or(default))
            };
            match name {
                "all" => {
                    let seed = f.seed;
                    f = Faults::all().seed(seed);
                }
                "none" | "off" => {
                    let seed = f.seed;
                    f = Faults::none().seed(seed);
                }
                "unordered" => f.unordered = Some(micros(Self::UNORDERED_MAX)?),
                "undecodable" => f.undecodable = true,
                "answer-window" => {
                    let share = f
                        .answer_window
                        .map_or(Self::ANSWER_WINDOW_SHARE, |w| w.share_percent);
                    f = f.answer_window(micros(Self::ANSWER_WINDOW)?, share);
                }
                "answer-window-share" => {
                    let share = number("a percentage")?
                        .ok_or_else(|| format!("{FAULTS_VAR}: {name} needs =PERCENT"))?;
                    let width = f.answer_window.map_or(Self::ANSWER_WINDOW, |w| w.width);
                    f = f.answer_window(width, share.min(100) as u8);
                }
                "nagle" => f.nagle = true,
                "seed" => {
                    f.seed = number("a number")?
                        .ok_or_else(|| format!("{FAULTS_VAR}: seed needs =N"))?;
                }
                other => {
                    return Err(format!(
                        "{FAULTS_VAR}: unknown fault {other:?} (all, unordered[=MAX_US], \
                         undecodable, answer-window[=WIDTH_US], answer-window-share=PERCENT, \
                         nagle, seed=N)"
                    ));
                }
            }
        }
        Ok(f)
    }

    /// The faults `IDE_TEST_ENGINE_FAULTS` asks for; a spec that does not
    /// parse stops the test (a run meant to be faulted must not pass plain).
    pub fn from_env() -> Faults {
        match std::env::var(FAULTS_VAR) {
            Ok(spec) => Faults::parse(&spec).unwrap_or_else(|e| panic!("{e}")),
            Err(_) => Faults::none(),
        }
    }
}

impl std::fmt::Display for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut items = Vec::new();
        if let Some(max) = self.unordered {
            items.push(format!("unordered={}", max.as_micros()));
        }
        if self.undecodable {
            items.push("undecodable".to_string());
        }
        if let Some(w) = self.answer_window {
            items.push(format!("answer-window={}", w.width.as_micros()));
            items.push(format!("answer-window-share={}", w.share_percent));
        }
        if self.nagle {
            items.push("nagle".to_string());
        }
        if items.is_empty() {
            items.push("none".to_string());
        }
        items.push(format!("seed={}", self.seed));
        f.write_str(&items.join(","))
    }
}

/// What the faults did so far ([`LoopbackEngine::fault_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Fire-and-forget deliveries sent from a task of their own, after a
    /// drawn delay (`unordered`).
    pub deliveries_delayed: u64,
    /// Frames that did not decode and were dropped unanswered (`undecodable`).
    pub undecodable_dropped: u64,
    /// Frames that did not decode, whose call the well-behaved stand-in
    /// answered with `invocation_failed` instead.
    pub undecodable_answered: u64,
    /// Routed calls forwarded with their answer window open (`answer-window`).
    pub windows_opened: u64,
    /// Answers read inside their call's window, dropped.
    pub answers_dropped: u64,
    /// Answers to calls forwarded with an open window that came after it
    /// and were delivered.
    pub answers_after_window: u64,
}

/// splitmix64: small, seedable, good enough to draw delays and shares.
fn draw(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// ───────────────────────────── public data ─────────────────────────────────

/// The configuration values, as the engine's `fs` adapter keeps them on disk.
///
/// Cheap to clone (shared inside). Pass the same store to
/// [`LoopbackEngine::start_with`] to model an engine restart: values survive,
/// schemas (kept by the engine instance) do not.
#[derive(Clone, Debug, Default)]
pub struct ConfigStore {
    values: Arc<Mutex<HashMap<String, Value>>>,
}

impl ConfigStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The stored value of `id`, verbatim (no `${VAR}` expansion).
    pub fn value(&self, id: &str) -> Option<Value> {
        self.lock().get(id).cloned()
    }

    /// Store a value as if it had been on disk before any engine started
    /// (for instance a value written by an older version of a worker). No
    /// validation and no event: to edit the store under a running engine, use
    /// [`LoopbackEngine::hand_edit`].
    pub fn preload(&self, id: &str, value: Value) {
        self.lock().insert(id.to_string(), value);
    }

    /// Every stored id, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    fn set(&self, id: &str, value: Value) -> Option<Value> {
        self.lock().insert(id.to_string(), value)
    }

    fn remove(&self, id: &str) -> Option<Value> {
        self.lock().remove(id)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Value>> {
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A function registered by a worker connection.
#[derive(Clone, Debug, PartialEq)]
pub struct RegisteredFunction {
    pub id: String,
    pub description: Option<String>,
    pub request_format: Option<Value>,
    pub response_format: Option<Value>,
    pub metadata: Option<Value>,
    /// Name the owning worker gave in `engine::workers::register`.
    pub worker_name: Option<String>,
    pub worker_id: String,
}

/// A trigger type, provided by a worker or by the engine itself.
#[derive(Clone, Debug, PartialEq)]
pub struct RegisteredTriggerType {
    pub id: String,
    pub description: String,
    pub trigger_request_format: Option<Value>,
    pub call_request_format: Option<Value>,
    /// Name of the providing worker; `None` for a type the engine provides.
    pub provided_by: Option<String>,
    pub builtin: bool,
}

/// A trigger binding as the engine keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct RegisteredTrigger {
    pub id: String,
    pub trigger_type: String,
    pub function_id: String,
    pub config: Value,
    pub metadata: Option<Value>,
    /// Name of the worker whose connection registered it; `None` when it was
    /// made through `engine::register_trigger` (or [`LoopbackEngine::register_trigger`]).
    pub registered_by: Option<String>,
    /// The binding reached its provider (a live worker, or the engine for a
    /// built-in type). `false` while it is held for a provider to appear.
    pub active: bool,
    /// The error of the provider's `TriggerRegistrationResult`, if it sent one.
    pub provider_error: Option<ErrorBody>,
    /// The provider answered the registration without an error: it holds
    /// the binding now.
    pub acknowledged: bool,
}

/// One invocation the engine routed: a call of an engine function, a call
/// forwarded to a worker, or a trigger firing.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub function_id: String,
    /// The payload as delivered, `_caller_worker_id` included.
    pub payload: Value,
    pub metadata: Option<Value>,
    pub caller_worker_id: String,
    /// Fire-and-forget (`void`): no result goes back.
    pub void: bool,
}

// ───────────────────────────── engine state ────────────────────────────────

type ConnId = u64;

enum Outbound {
    Frame(Box<Message>),
    /// Send a close frame and drop the connection.
    Close,
}

struct Conn {
    worker_id: String,
    reattach_token: String,
    tx: mpsc::UnboundedSender<Outbound>,
    name: Option<String>,
    namespace: Option<String>,
    /// `engine::workers::register` was handled (or the hold expired).
    registered: bool,
    /// Refused (`WORKER_NAMESPACE_CONFLICT`); only waits to be closed.
    rejected: bool,
    /// Registration frames received before `engine::workers::register`.
    held: Vec<Message>,
}

impl Conn {
    fn live(&self) -> bool {
        !self.rejected
    }
}

struct FunctionRec {
    description: Option<String>,
    request_format: Option<Value>,
    response_format: Option<Value>,
    metadata: Option<Value>,
    owner: ConnId,
    /// The two formats compiled, for checking every call this function
    /// answers without error ([`schema_violation`]).
    checks: Arc<FormatChecks>,
}

/// A registered function's formats as validators (JSON Schema 2020-12, or
/// the dialect a format declares). The real engine does not check formats;
/// the stand-in does, so that no function of ide can drift from what it
/// registers: a call answered without error whose request or answer its own
/// schema rejects comes back to the caller as an error saying so.
struct FormatChecks {
    request: Result<Option<jsonschema::Validator>, String>,
    response: Result<Option<jsonschema::Validator>, String>,
}

impl FormatChecks {
    fn compile(request: &Option<Value>, response: &Option<Value>) -> FormatChecks {
        let one = |format: &Option<Value>| match format {
            Some(schema @ Value::Object(_)) => jsonschema::options()
                .build(schema)
                .map(Some)
                .map_err(|e| format!("the format does not compile: {e}")),
            _ => Ok(None),
        };
        FormatChecks {
            request: one(request),
            response: one(response),
        }
    }
}

/// Why an answer without error does not match its function's registered
/// formats, if it does not: the request as the function saw it (the
/// engine's `_` sidecar fields dropped, as functions drop them) against the
/// request format, the result against the response format.
fn schema_violation(checks: &FormatChecks, request: &Value, result: &Value) -> Option<String> {
    let request = ide::function::as_seen(request);
    for (side, check, value) in [
        ("request", &checks.request, &request),
        ("answer", &checks.response, result),
    ] {
        match check {
            Err(e) => return Some(format!("its {side} {e}")),
            Ok(Some(v)) => {
                let errors: Vec<String> = v
                    .iter_errors(value)
                    .take(3)
                    .map(|e| format!("{} at {}", e, e.instance_path()))
                    .collect();
                if !errors.is_empty() {
                    let shown = value.to_string();
                    let shown: String = shown.chars().take(400).collect();
                    return Some(format!(
                        "the {side} does not match its registered schema: {}; {side}: {shown}",
                        errors.join("; ")
                    ));
                }
            }
            Ok(None) => {}
        }
    }
    None
}

struct TriggerTypeRec {
    description: String,
    trigger_request_format: Option<Value>,
    call_request_format: Option<Value>,
    /// `None`: provided by the engine itself.
    provider: Option<ConnId>,
}

struct TriggerRec {
    seq: u64,
    trigger_type: String,
    function_id: String,
    config: Value,
    metadata: Option<Value>,
    /// Connection that registered it; `None` for engine-owned bindings.
    registrant: Option<ConnId>,
    registrant_name: Option<String>,
    /// Where the binding was delivered: `Some(Some(conn))` a worker provider,
    /// `Some(None)` the engine, `None` nowhere yet (held).
    delivered: Option<Option<ConnId>>,
    provider_error: Option<ErrorBody>,
    /// A `TriggerRegistrationResult` without error came back.
    acknowledged: bool,
}

enum ReplyTo {
    Conn { conn: ConnId, invocation_id: Uuid },
    Local(oneshot::Sender<Result<Value, ErrorBody>>),
}

struct Pending {
    owner: ConnId,
    function_id: String,
    reply: ReplyTo,
    /// The payload as forwarded and the function's formats, checked when
    /// the answer comes back without error.
    request: Value,
    checks: Arc<FormatChecks>,
    /// Under [`Faults::answer_window`], when the call was handed to its
    /// worker's connection and until when the engine had not filed it yet.
    window: Option<(Instant, Instant)>,
}

struct ConfigEntry {
    name: String,
    description: String,
    schema: Value,
    metadata: Option<Value>,
}

/// Who is calling: a worker connection, or the engine's own caller (the CLI
/// stand-in, or the engine firing a trigger).
struct CallerRef {
    conn: Option<ConnId>,
    worker_id: String,
}

struct State {
    /// Identity of the engine's own invocations (trigger fires).
    engine_worker_id: String,
    /// Data channels (shared with the channel sockets).
    channels: Channels,
    next_conn: ConnId,
    next_seq: u64,
    conns: HashMap<ConnId, Conn>,
    functions: HashMap<String, FunctionRec>,
    trigger_types: HashMap<String, TriggerTypeRec>,
    triggers: HashMap<String, TriggerRec>,
    pending: HashMap<Uuid, Pending>,
    config: HashMap<String, ConfigEntry>,
    rejections: Vec<String>,
    /// The most recent [`CALL_LOG`] invocations, oldest first.
    calls: VecDeque<CallRecord>,
    /// False: the configuration worker is absent (its functions are not found).
    configuration_available: bool,
    faults: Faults,
    /// State of the faults' draws ([`draw`]).
    rng: u64,
    counts: FaultCounts,
    /// Answers turned into errors because a schema rejected the call.
    schema_violations: u64,
}

struct Shared {
    state: Mutex<State>,
    store: ConfigStore,
    changed: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wake everything waiting for a change of state.
    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Run `f` on the state, then wake the waiters.
    fn with<R>(&self, f: impl FnOnce(&mut State, &ConfigStore) -> R) -> R {
        let out = {
            let mut st = self.lock();
            f(&mut st, &self.store)
        };
        self.bump();
        out
    }
}

// ───────────────────────────── the engine ──────────────────────────────────

/// The loopback engine. Dropping it stops it without waiting; call
/// [`stop`](Self::stop) to wait until the port is free again.
pub struct LoopbackEngine {
    shared: Arc<Shared>,
    port: u16,
    shutdown: watch::Sender<bool>,
    accept_task: Mutex<Option<JoinHandle<()>>>,
}

impl LoopbackEngine {
    /// An engine on a free port, with an empty configuration store.
    pub async fn start() -> Self {
        Self::start_with(0, ConfigStore::new()).await
    }

    /// An engine on `port` (0: any free port) with the values of `store`,
    /// and the faults `IDE_TEST_ENGINE_FAULTS` names (none when unset).
    pub async fn start_with(port: u16, store: ConfigStore) -> Self {
        Self::start_faulted(port, store, Faults::from_env()).await
    }

    /// [`start_with`](Self::start_with) with the given faults, whatever the
    /// environment says.
    pub async fn start_faulted(port: u16, store: ConfigStore, faults: Faults) -> Self {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener =
            bind(addr).unwrap_or_else(|e| panic!("loopback engine: cannot listen on {addr}: {e}"));
        let port = listener.local_addr().expect("listener address").port();
        if faults.any() {
            eprintln!("loopback engine on port {port}: faults {faults}");
        }

        let mut state = State {
            engine_worker_id: Uuid::new_v4().to_string(),
            channels: Channels::default(),
            next_conn: 1,
            next_seq: 1,
            conns: HashMap::new(),
            functions: HashMap::new(),
            trigger_types: HashMap::new(),
            triggers: HashMap::new(),
            pending: HashMap::new(),
            config: HashMap::new(),
            rejections: Vec::new(),
            calls: VecDeque::new(),
            configuration_available: true,
            rng: faults.seed,
            faults,
            counts: FaultCounts::default(),
            schema_violations: 0,
        };
        state.trigger_types.insert(
            CONFIGURATION_TRIGGER.to_string(),
            TriggerTypeRec {
                description: "Fires when a configuration entry is registered, updated, or deleted"
                    .to_string(),
                trigger_request_format: None,
                call_request_format: None,
                provider: None,
            },
        );
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            store,
            changed: watch::channel(0).0,
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        let accept_task = tokio::spawn(accept_loop(listener, shared.clone(), shutdown_rx));
        Self {
            shared,
            port,
            shutdown,
            accept_task: Mutex::new(Some(accept_task)),
        }
    }

    /// `ws://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The configuration store (shared, not copied).
    pub fn store(&self) -> ConfigStore {
        self.shared.store.clone()
    }

    /// The worker id the engine uses for its own invocations (trigger fires),
    /// as seen in their `_caller_worker_id`.
    pub fn engine_worker_id(&self) -> String {
        self.shared.lock().engine_worker_id.clone()
    }

    /// Close every connection and the listener, and wait until the port can
    /// be bound again. In-flight calls are answered with an error.
    pub async fn stop(&self) {
        let _ = self.shutdown.send(true);
        let task = self
            .accept_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.shared.with(|st, _| {
            for (_, pending) in st.pending.drain() {
                if let ReplyTo::Local(tx) = pending.reply {
                    let _ = tx.send(Err(ErrorBody::new(
                        "invocation_stopped",
                        "the engine stopped while the call was in flight",
                    )));
                }
            }
        });
        wait_port_free(self.port).await;
    }

    /// Call a function like the iii CLI does: as a caller with a worker id of
    /// its own, which the payload carries as `_caller_worker_id`.
    pub async fn call(&self, function_id: &str, payload: Value) -> Result<Value, ErrorBody> {
        self.call_with_timeout(function_id, payload, DEFAULT_CALL_TIMEOUT)
            .await
    }

    pub async fn call_with_timeout(
        &self,
        function_id: &str,
        payload: Value,
        timeout: Duration,
    ) -> Result<Value, ErrorBody> {
        let (tx, rx) = oneshot::channel();
        self.shared.with(|st, store| {
            let caller = CallerRef {
                conn: None,
                worker_id: Uuid::new_v4().to_string(),
            };
            invoke(
                st,
                store,
                &caller,
                Invocation {
                    function_id: function_id.to_string(),
                    data: payload,
                    metadata: None,
                    traceparent: None,
                    baggage: None,
                },
                Some(ReplyTo::Local(tx)),
            );
        });
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(ErrorBody::new(
                "invocation_stopped",
                "the engine dropped the call",
            )),
            Err(_) => Err(ErrorBody::new(
                "TIMEOUT",
                format!("no answer from {function_id} within {timeout:?}"),
            )),
        }
    }

    /// Functions registered by workers (not the engine's own), sorted by id.
    pub fn functions(&self) -> Vec<RegisteredFunction> {
        functions_of(&self.shared.lock())
    }

    pub fn function(&self, id: &str) -> Option<RegisteredFunction> {
        function_of(&self.shared.lock(), id)
    }

    /// Wait until `pred` holds for [`functions`](Self::functions).
    pub async fn wait_for_functions(
        &self,
        pred: impl Fn(&[RegisteredFunction]) -> bool,
        timeout: Duration,
    ) -> bool {
        self.wait_until(timeout, |st| pred(&functions_of(st)).then_some(()))
            .await
            .is_some()
    }

    /// Wait until a worker has registered function `id`.
    pub async fn wait_for_function(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Option<RegisteredFunction> {
        self.wait_until(timeout, |st| function_of(st, id)).await
    }

    /// Wait until no worker provides function `id`.
    pub async fn wait_for_function_gone(&self, id: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| (!st.functions.contains_key(id)).then_some(()))
            .await
            .is_some()
    }

    /// Trigger types, the engine's built-in `configuration` included, sorted.
    pub fn trigger_types(&self) -> Vec<RegisteredTriggerType> {
        let st = self.shared.lock();
        let mut out: Vec<RegisteredTriggerType> = st
            .trigger_types
            .iter()
            .map(|(id, t)| RegisteredTriggerType {
                id: id.clone(),
                description: t.description.clone(),
                trigger_request_format: t.trigger_request_format.clone(),
                call_request_format: t.call_request_format.clone(),
                provided_by: t
                    .provider
                    .and_then(|c| st.conns.get(&c))
                    .and_then(|c| c.name.clone()),
                builtin: t.provider.is_none(),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// Wait until trigger type `id` has a provider.
    pub async fn wait_for_trigger_type(&self, id: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| {
            st.trigger_types.contains_key(id).then_some(())
        })
        .await
        .is_some()
    }

    /// Trigger bindings, in registration order.
    pub fn triggers(&self) -> Vec<RegisteredTrigger> {
        triggers_of(&self.shared.lock())
    }

    /// Wait until `pred` holds for [`triggers`](Self::triggers).
    pub async fn wait_for_triggers(
        &self,
        pred: impl Fn(&[RegisteredTrigger]) -> bool,
        timeout: Duration,
    ) -> bool {
        self.wait_until(timeout, |st| pred(&triggers_of(st)).then_some(()))
            .await
            .is_some()
    }

    /// Names of the live, registered workers, sorted.
    pub fn workers(&self) -> Vec<String> {
        let st = self.shared.lock();
        let mut names: Vec<String> = st
            .conns
            .values()
            .filter(|c| c.live() && c.registered)
            .filter_map(|c| c.name.clone())
            .collect();
        names.sort();
        names
    }

    /// The worker id of the live worker called `name`.
    pub fn worker_id(&self, name: &str) -> Option<String> {
        worker_id_of(&self.shared.lock(), name)
    }

    /// Wait until a live worker called `name` has registered.
    pub async fn wait_for_worker(&self, name: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| worker_id_of(st, name))
            .await
            .is_some()
    }

    /// Wait until no live worker is called `name`.
    pub async fn wait_for_worker_gone(&self, name: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| worker_id_of(st, name).is_none().then_some(()))
            .await
            .is_some()
    }

    /// Close the connection of the live worker called `name`, as a network
    /// failure would; the worker's registrations go with it. Returns whether
    /// there was such a worker.
    pub fn disconnect_worker(&self, name: &str) -> bool {
        self.shared.with(|st, _| {
            let found = st
                .conns
                .iter()
                .find(|(_, c)| c.live() && c.registered && c.name.as_deref() == Some(name))
                .map(|(id, c)| (*id, c.tx.clone()));
            match found {
                Some((id, tx)) => {
                    let _ = tx.send(Outbound::Close);
                    close_connection(st, id);
                    true
                }
                None => false,
            }
        })
    }

    /// Data channels created whose two ends have not both connected yet.
    pub fn open_channels(&self) -> usize {
        self.shared.lock().channels.open()
    }

    /// Take the configuration worker away (its functions answer
    /// `function_not_found`) or bring it back.
    pub fn set_configuration_available(&self, available: bool) {
        self.shared.lock().configuration_available = available;
        self.shared.bump();
    }

    /// Worker names refused with `WORKER_NAMESPACE_CONFLICT`, in order.
    pub fn rejections(&self) -> Vec<String> {
        self.shared.lock().rejections.clone()
    }

    /// Wait until a connection calling itself `name` has been refused.
    pub async fn wait_for_rejection(&self, name: &str, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| {
            st.rejections.iter().any(|n| n == name).then_some(())
        })
        .await
        .is_some()
    }

    /// Register a trigger binding owned by the engine, like a call of
    /// `engine::register_trigger`. Returns its id.
    pub fn register_trigger(
        &self,
        trigger_type: &str,
        function_id: &str,
        config: Value,
        metadata: Option<Value>,
    ) -> String {
        let id = Uuid::new_v4().to_string();
        self.shared.with(|st, _| {
            add_trigger(
                st,
                id.clone(),
                trigger_type.to_string(),
                function_id.to_string(),
                config,
                metadata,
                None,
            )
        });
        id
    }

    /// Remove a trigger binding, like `engine::unregister_trigger`. Returns
    /// whether it existed.
    pub fn unregister_trigger(&self, id: &str) -> bool {
        self.shared.with(|st, _| remove_trigger(st, id))
    }

    /// Edit a stored configuration value by hand, like editing the `fs`
    /// adapter's file under a running engine: the change is announced to the
    /// `configuration` bindings (`configuration:registered` when the id had no
    /// value, `configuration:updated` otherwise).
    ///
    /// As on the real adapter, when this engine knows the id's schema a value
    /// that fails it (after `${VAR}` expansion) is refused: the previous value
    /// is kept, nothing fires, and the violations come back as `Err`. Without
    /// a known schema (nobody registered the id since the engine started) any
    /// value, `null` included, is taken.
    pub fn hand_edit(&self, id: &str, value: Value) -> Result<(), String> {
        self.shared.with(|st, store| {
            if let Some(entry) = st.config.get(id) {
                validate(id, &entry.schema, &expand_value(&value))?;
            }
            hand_write(st, store, id, value);
            Ok(())
        })
    }

    /// [`hand_edit`](Self::hand_edit) without the schema check, for a value
    /// the real adapter would refuse. Fires the same event.
    pub fn hand_edit_unchecked(&self, id: &str, value: Value) {
        self.shared
            .with(|st, store| hand_write(st, store, id, value));
    }

    /// Remove a stored value by hand (deleting the adapter's file): fires
    /// `configuration:deleted`. Returns whether there was a value.
    pub fn hand_delete(&self, id: &str) -> bool {
        self.shared.with(|st, store| {
            let Some(old) = store.remove(id) else {
                return false;
            };
            let engine_id = st.engine_worker_id.clone();
            fire_configuration(
                st,
                "configuration:deleted",
                id,
                old,
                Value::Null,
                &engine_id,
            );
            true
        })
    }

    /// The most recent invocations routed (at most [`CALL_LOG`]), in order.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.shared.lock().calls.iter().cloned().collect()
    }

    /// Wait for a routed invocation matching `pred` (past ones count, as
    /// far back as the last [`CALL_LOG`]).
    pub async fn wait_for_call(
        &self,
        pred: impl Fn(&CallRecord) -> bool,
        timeout: Duration,
    ) -> Option<CallRecord> {
        self.wait_until(timeout, |st| st.calls.iter().find(|c| pred(c)).cloned())
            .await
    }

    /// The faults this engine runs with.
    pub fn faults(&self) -> Faults {
        self.shared.lock().faults.clone()
    }

    /// How many answers without error the stand-in turned into errors
    /// because the function's own registered schema rejected the request
    /// or the answer.
    pub fn schema_violations(&self) -> u64 {
        self.shared.lock().schema_violations
    }

    /// What the faults did so far.
    pub fn fault_counts(&self) -> FaultCounts {
        self.shared.lock().counts
    }

    /// Wait until `pred` holds for [`fault_counts`](Self::fault_counts); the
    /// counts at that point, or `None` on timeout.
    pub async fn wait_for_fault_counts(
        &self,
        pred: impl Fn(&FaultCounts) -> bool,
        timeout: Duration,
    ) -> Option<FaultCounts> {
        self.wait_until(timeout, |st| pred(&st.counts).then_some(st.counts))
            .await
    }

    /// Wait until `probe` returns `Some`, re-checking on every change.
    async fn wait_until<T>(
        &self,
        timeout: Duration,
        probe: impl Fn(&State) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut rx = self.shared.changed.subscribe();
        loop {
            rx.mark_unchanged();
            if let Some(found) = probe(&self.shared.lock()) {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return probe(&self.shared.lock()),
            }
        }
    }
}

impl Drop for LoopbackEngine {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// Connect a real SDK worker to `url` under `name`, ignoring the process-wide
/// identity variables. Names must be unique among live workers.
pub fn connect_worker(url: &str, name: &str) -> IIIClient {
    iii_sdk::register_worker(
        url,
        InitOptions {
            metadata: Some(WorkerMetadata {
                name: name.to_string(),
                ..Default::default()
            }),
            identity: WorkerIdentityMode::Explicit,
            // A test client is not the product: no spans or metrics to
            // export (a console page, the real consumer of what the worker
            // sends, exports none either), so what a test or a benchmark
            // measures is the worker and the engine.
            otel: Some(iii_helpers::observability::OtelConfig {
                enabled: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
}

/// `prefix` plus a random suffix, for worker names and ids that must not
/// collide between tests.
pub fn unique_name(prefix: &str) -> String {
    let suffix = Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &suffix[..12])
}

// ───────────────────────────── listener and connections ────────────────────

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Port release is not an event one can await: try to bind it, briefly.
async fn wait_port_free(port: u16) {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match bind(addr) {
            Ok(listener) => {
                drop(listener);
                return;
            }
            Err(e) if Instant::now() >= deadline => {
                panic!("loopback engine: port {port} still busy after stop: {e}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(serve(stream, shared.clone(), shutdown.clone()));
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// What a WebSocket request path asks for.
enum Endpoint<'a> {
    /// The SDK worker connection (`/`).
    Worker,
    /// A data channel (`/ws/channels/{id}?key=..&dir=..`).
    Channel(&'a str),
    Unknown,
}

fn endpoint(path: &str) -> Endpoint<'_> {
    if path.is_empty() || path == "/" {
        Endpoint::Worker
    } else if let Some(id) = path.strip_prefix("/ws/channels/") {
        Endpoint::Channel(id)
    } else {
        Endpoint::Unknown
    }
}

// The handshake callback's error type is tungstenite's, not ours.
#[allow(clippy::result_large_err)]
async fn serve(stream: TcpStream, shared: Arc<Shared>, shutdown: watch::Receiver<bool>) {
    // the real engine leaves Nagle on (fault `nagle`)
    if !shared.lock().faults.nagle {
        let _ = stream.set_nodelay(true);
    }
    let mut path = String::new();
    let mut query = String::new();
    let channels = shared.lock().channels.clone();
    let config = WebSocketConfig::default()
        .max_frame_size(Some(MAX_MESSAGE_BYTES))
        .max_message_size(Some(MAX_MESSAGE_BYTES));
    let accepted = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        |request: &Request, response: Response| {
            path = request.uri().path().to_string();
            query = request.uri().query().unwrap_or_default().to_string();
            if let Endpoint::Channel(id) = endpoint(&path) {
                // Like the engine: an unknown channel or a wrong key is
                // refused before the upgrade.
                if !channels.knows(id, &query_params(&query).0) {
                    let mut refused = ErrorResponse::new(Some("Channel not found".to_string()));
                    *refused.status_mut() = StatusCode::NOT_FOUND;
                    return Err(refused);
                }
            }
            Ok(response)
        },
        Some(config),
    )
    .await;
    let Ok(ws) = accepted else {
        return;
    };
    match endpoint(&path) {
        Endpoint::Worker => serve_worker(ws, shared, shutdown).await,
        Endpoint::Channel(id) => {
            let dir = query_params(&query).1;
            super::channels::serve(ws, channels, id, &dir, shutdown).await
        }
        Endpoint::Unknown => {
            let mut ws = ws;
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, ws.close(None)).await;
        }
    }
}

type WsSink = SplitSink<WebSocketStream<TcpStream>, WsMessage>;
type WsSource = SplitStream<WebSocketStream<TcpStream>>;

async fn send_frame(sink: &mut WsSink, message: &Message) -> Result<(), ()> {
    let text = serde_json::to_string(message).map_err(|_| ())?;
    sink.send(WsMessage::Text(text.into()))
        .await
        .map_err(|_| ())
}

/// A data frame's message, or why it does not decode (with its text);
/// `None` for a control frame.
fn parse_frame(frame: &WsMessage) -> Option<Result<Message, (String, String)>> {
    let parsed = match frame {
        WsMessage::Text(text) => serde_json::from_str(text.as_str())
            .map_err(|e| (e.to_string(), text.as_str().to_string())),
        WsMessage::Binary(bytes) => serde_json::from_slice(bytes)
            .map_err(|e| (e.to_string(), String::from_utf8_lossy(bytes).into_owned())),
        _ => return None,
    };
    Some(parsed)
}

async fn serve_worker(
    ws: WebSocketStream<TcpStream>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let (mut sink, mut source): (WsSink, WsSource) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (conn_id, hello) = shared.with(|st, _| open_connection(st, tx));
    if *shutdown.borrow_and_update() || send_frame(&mut sink, &hello).await.is_err() {
        shared.with(|st, _| close_connection(st, conn_id));
        return;
    }

    let hold_until = Instant::now() + REGISTRATION_HOLD;
    let mut holding = true;
    loop {
        tokio::select! {
            biased;
            _ = shutdown.changed() => {
                let _ = tokio::time::timeout(CLOSE_TIMEOUT, sink.close()).await;
                break;
            }
            out = rx.recv() => match out {
                Some(Outbound::Frame(message)) => {
                    if send_frame(&mut sink, &message).await.is_err() {
                        break;
                    }
                }
                Some(Outbound::Close) | None => {
                    let _ = tokio::time::timeout(CLOSE_TIMEOUT, sink.close()).await;
                    break;
                }
            },
            incoming = source.next() => match incoming {
                Some(Ok(WsMessage::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(frame)) => match parse_frame(&frame) {
                    Some(Ok(message)) => {
                        shared.with(|st, store| handle_frame(st, store, conn_id, message));
                    }
                    Some(Err((error, text))) => {
                        shared.with(|st, _| undecodable(st, conn_id, &error, &text));
                    }
                    None => {}
                },
            },
            _ = tokio::time::sleep_until(hold_until), if holding => {
                holding = false;
                shared.with(|st, _| release_held(st, conn_id));
            }
        }
    }
    shared.with(|st, _| close_connection(st, conn_id));
}

// ───────────────────────────── protocol handling ───────────────────────────

/// Invocations the engine remembers for [`Engine::calls`]: a long run (a
/// terminal flood routes thousands of 64 KiB frames) must not grow the
/// stand-in without bound.
pub const CALL_LOG: usize = 1024;

fn log_call(st: &mut State, call: CallRecord) {
    if st.calls.len() >= CALL_LOG {
        st.calls.pop_front();
    }
    st.calls.push_back(call);
}

fn send(st: &State, conn: ConnId, message: Message) {
    if let Some(c) = st.conns.get(&conn) {
        let _ = c.tx.send(Outbound::Frame(Box::new(message)));
    }
}

fn open_connection(st: &mut State, tx: mpsc::UnboundedSender<Outbound>) -> (ConnId, Message) {
    let id = st.next_conn;
    st.next_conn += 1;
    let worker_id = Uuid::new_v4().to_string();
    let reattach_token = Uuid::new_v4().to_string();
    st.conns.insert(
        id,
        Conn {
            worker_id: worker_id.clone(),
            reattach_token: reattach_token.clone(),
            tx,
            name: None,
            namespace: None,
            registered: false,
            rejected: false,
            held: Vec::new(),
        },
    );
    let hello = Message::WorkerRegistered {
        worker_id,
        reattach_token: Some(reattach_token),
        features: Vec::new(),
    };
    (id, hello)
}

/// Forget a connection and everything it owned.
fn close_connection(st: &mut State, conn_id: ConnId) {
    let Some(conn) = st.conns.remove(&conn_id) else {
        return;
    };
    st.functions.retain(|_, f| f.owner != conn_id);
    st.trigger_types.retain(|_, t| t.provider != Some(conn_id));
    for trigger in st.triggers.values_mut() {
        if trigger.delivered == Some(Some(conn_id)) {
            trigger.delivered = None;
        }
    }
    let registered_here: Vec<String> = ordered_triggers(st)
        .into_iter()
        .filter(|(_, t)| t.registrant == Some(conn_id))
        .map(|(id, _)| id.clone())
        .collect();
    for id in registered_here {
        remove_trigger(st, &id);
    }
    let stopped: Vec<Uuid> = st
        .pending
        .iter()
        .filter(|(_, p)| p.owner == conn_id)
        .map(|(id, _)| *id)
        .collect();
    for id in stopped {
        if let Some(p) = st.pending.remove(&id) {
            let error = ErrorBody::new(
                "invocation_stopped",
                format!(
                    "Worker {} disconnected while invoking function {}.",
                    conn.name.as_deref().unwrap_or(&conn.worker_id),
                    p.function_id
                ),
            );
            deliver(st, Some(p.reply), &p.function_id, Err(error), None, None);
        }
    }
}

fn is_registration(message: &Message) -> bool {
    matches!(
        message,
        Message::RegisterFunction { .. }
            | Message::UnregisterFunction { .. }
            | Message::RegisterTrigger { .. }
            | Message::UnregisterTrigger { .. }
            | Message::RegisterTriggerType { .. }
            | Message::UnregisterTriggerType { .. }
    )
}

fn handle_frame(st: &mut State, store: &ConfigStore, conn_id: ConnId, message: Message) {
    let (registered, worker_id) = match st.conns.get(&conn_id) {
        Some(conn) if !conn.rejected => (conn.registered, conn.worker_id.clone()),
        _ => return,
    };
    if is_registration(&message) {
        if registered {
            apply_registration(st, conn_id, message);
        } else if let Some(conn) = st.conns.get_mut(&conn_id) {
            conn.held.push(message);
        }
        return;
    }
    match message {
        Message::Ping => send(st, conn_id, Message::Pong),
        Message::Reattach {
            previous_worker_id,
            reattach_token,
        } => retire(st, conn_id, &previous_worker_id, reattach_token),
        Message::InvokeFunction {
            invocation_id,
            function_id,
            data,
            traceparent,
            baggage,
            action,
            metadata,
            ..
        } => {
            let caller = CallerRef {
                conn: Some(conn_id),
                worker_id,
            };
            let call = Invocation {
                function_id,
                data,
                metadata,
                traceparent,
                baggage,
            };
            match (invocation_id, action) {
                (_, Some(TriggerAction::Enqueue { queue })) => {
                    if let Some(invocation_id) = invocation_id {
                        let error = ErrorBody::new(
                            "invocation_failed",
                            format!(
                                "queue '{queue}' is not available: the loopback engine runs no queue worker"
                            ),
                        );
                        let reply = ReplyTo::Conn {
                            conn: conn_id,
                            invocation_id,
                        };
                        deliver(st, Some(reply), &call.function_id, Err(error), None, None);
                    }
                }
                (Some(invocation_id), None) => {
                    let reply = ReplyTo::Conn {
                        conn: conn_id,
                        invocation_id,
                    };
                    invoke(st, store, &caller, call, Some(reply));
                }
                _ => invoke(st, store, &caller, call, None),
            }
        }
        Message::InvocationResult {
            invocation_id,
            function_id,
            result,
            error,
            traceparent,
            baggage,
        } => {
            let window = match st.pending.get(&invocation_id) {
                Some(p) if p.owner == conn_id => p.window,
                _ => return,
            };
            if let Some((forwarded, filed)) = window {
                let now = Instant::now();
                if now < filed {
                    // not filed yet, so not found; the call stays
                    // pending, unanswered, until its caller gives up
                    st.counts.answers_dropped += 1;
                    eprintln!(
                        "loopback engine: the answer of {function_id} ({invocation_id}) came \
                         {:?} after its call was forwarded, before the engine filed the call \
                         ({:?}): dropped (fault answer-window)",
                        now - forwarded,
                        filed - forwarded
                    );
                    return;
                }
                st.counts.answers_after_window += 1;
            }
            if let Some(p) = st.pending.remove(&invocation_id) {
                let outcome = match error {
                    Some(error) => Err(error),
                    None => {
                        let result = result.unwrap_or(Value::Null);
                        match schema_violation(&p.checks, &p.request, &result) {
                            None => Ok(result),
                            Some(why) => {
                                st.schema_violations += 1;
                                eprintln!("loopback engine: {function_id}: {why}");
                                Err(ErrorBody::new(
                                    "invocation_failed",
                                    format!("loopback engine: {function_id} answered, but {why}"),
                                ))
                            }
                        }
                    }
                };
                deliver(
                    st,
                    Some(p.reply),
                    &function_id,
                    outcome,
                    traceparent,
                    baggage,
                );
            }
        }
        Message::TriggerRegistrationResult {
            id,
            trigger_type,
            function_id,
            error,
        } => {
            let Some(trigger) = st.triggers.get_mut(&id) else {
                return;
            };
            trigger.provider_error = error.clone();
            trigger.acknowledged = error.is_none();
            let registrant = trigger.registrant;
            if let Some(registrant) = registrant.filter(|r| *r != conn_id) {
                send(
                    st,
                    registrant,
                    Message::TriggerRegistrationResult {
                        id,
                        trigger_type,
                        function_id,
                        error,
                    },
                );
            }
        }
        // Observe frames are only sent to engines that advertise `observe.v1`,
        // which this one (like 0.23) does not; everything else is engine → worker.
        _ => {}
    }
}

/// `Reattach`: retire the previous connection of this worker, so that its
/// replay lands on a clean slate instead of colliding with itself.
fn retire(
    st: &mut State,
    conn_id: ConnId,
    previous_worker_id: &str,
    reattach_token: Option<String>,
) {
    let previous = st.conns.iter().find_map(|(id, c)| {
        (*id != conn_id
            && c.worker_id == previous_worker_id
            && reattach_token.as_deref() == Some(c.reattach_token.as_str()))
        .then_some(*id)
    });
    if let Some(previous) = previous {
        if let Some(c) = st.conns.get(&previous) {
            let _ = c.tx.send(Outbound::Close);
        }
        close_connection(st, previous);
    }
}

fn release_held(st: &mut State, conn_id: ConnId) {
    let Some(conn) = st.conns.get_mut(&conn_id) else {
        return;
    };
    if conn.registered || conn.rejected {
        return;
    }
    conn.registered = true;
    let held = std::mem::take(&mut conn.held);
    for message in held {
        apply_registration(st, conn_id, message);
    }
}

fn is_engine_function(id: &str) -> bool {
    id.starts_with("engine::") || id.starts_with("configuration::")
}

fn apply_registration(st: &mut State, conn_id: ConnId, message: Message) {
    match message {
        Message::RegisterFunction {
            id,
            description,
            request_format,
            response_format,
            metadata,
            ..
        } => {
            let holder = if is_engine_function(&id) {
                Some(st.engine_worker_id.clone())
            } else {
                st.functions
                    .get(&id)
                    .filter(|f| f.owner != conn_id)
                    .and_then(|f| st.conns.get(&f.owner))
                    .map(|c| c.worker_id.clone())
            };
            if let Some(owner_worker_id) = holder {
                let namespace = namespace_of(st, conn_id);
                send(
                    st,
                    conn_id,
                    Message::RegistrationRejected {
                        code: FUNCTION_NAMESPACE_CONFLICT.to_string(),
                        namespace,
                        worker_name: None,
                        function_id: Some(id),
                        owner_worker_id,
                    },
                );
                return;
            }
            let checks = Arc::new(FormatChecks::compile(&request_format, &response_format));
            st.functions.insert(
                id,
                FunctionRec {
                    description,
                    request_format,
                    response_format,
                    metadata,
                    owner: conn_id,
                    checks,
                },
            );
        }
        Message::UnregisterFunction { id }
            if st.functions.get(&id).is_some_and(|f| f.owner == conn_id) =>
        {
            st.functions.remove(&id);
        }
        Message::RegisterTriggerType {
            id,
            description,
            trigger_request_format,
            call_request_format,
            ..
        } => {
            if st
                .trigger_types
                .get(&id)
                .is_some_and(|t| t.provider.is_none())
            {
                // the engine's own type stays the engine's
                return;
            }
            st.trigger_types.insert(
                id.clone(),
                TriggerTypeRec {
                    description,
                    trigger_request_format,
                    call_request_format,
                    provider: Some(conn_id),
                },
            );
            let bindings: Vec<String> = ordered_triggers(st)
                .into_iter()
                .filter(|(_, t)| t.trigger_type == id)
                .map(|(id, _)| id.clone())
                .collect();
            for trigger_id in bindings {
                deliver_trigger(st, &trigger_id);
            }
        }
        Message::UnregisterTriggerType { id, .. }
            if st
                .trigger_types
                .get(&id)
                .is_some_and(|t| t.provider == Some(conn_id)) =>
        {
            st.trigger_types.remove(&id);
            for trigger in st.triggers.values_mut() {
                if trigger.trigger_type == id {
                    trigger.delivered = None;
                }
            }
        }
        Message::RegisterTrigger {
            id,
            trigger_type,
            function_id,
            config,
            metadata,
            ..
        } => add_trigger(
            st,
            id,
            trigger_type,
            function_id,
            config,
            metadata,
            Some(conn_id),
        ),
        Message::UnregisterTrigger { id, .. } => {
            remove_trigger(st, &id);
        }
        _ => {}
    }
}

fn namespace_of(st: &State, conn_id: ConnId) -> String {
    st.conns
        .get(&conn_id)
        .and_then(|c| c.namespace.clone())
        .unwrap_or_else(|| NAMESPACE.to_string())
}

// ───────────────────────────── triggers ────────────────────────────────────

fn ordered_triggers(st: &State) -> Vec<(&String, &TriggerRec)> {
    let mut all: Vec<(&String, &TriggerRec)> = st.triggers.iter().collect();
    all.sort_by_key(|(_, t)| t.seq);
    all
}

fn add_trigger(
    st: &mut State,
    id: String,
    trigger_type: String,
    function_id: String,
    config: Value,
    metadata: Option<Value>,
    registrant: Option<ConnId>,
) {
    let seq = match st.triggers.get(&id) {
        Some(existing) => existing.seq,
        None => {
            st.next_seq += 1;
            st.next_seq
        }
    };
    let registrant_name = registrant
        .and_then(|c| st.conns.get(&c))
        .and_then(|c| c.name.clone());
    st.triggers.insert(
        id.clone(),
        TriggerRec {
            seq,
            trigger_type,
            function_id,
            config,
            metadata,
            registrant,
            registrant_name,
            delivered: None,
            provider_error: None,
            acknowledged: false,
        },
    );
    deliver_trigger(st, &id);
}

/// Hand a binding to its provider, if there is one yet.
fn deliver_trigger(st: &mut State, id: &str) {
    let Some(trigger) = st.triggers.get(id) else {
        return;
    };
    let Some(provider) = st
        .trigger_types
        .get(&trigger.trigger_type)
        .map(|t| t.provider)
    else {
        return;
    };
    match provider {
        None => {
            // the engine's own type: accepted on the spot
            let registrant = trigger.registrant;
            let result = Message::TriggerRegistrationResult {
                id: id.to_string(),
                trigger_type: trigger.trigger_type.clone(),
                function_id: trigger.function_id.clone(),
                error: None,
            };
            if let Some(registrant) = registrant {
                send(st, registrant, result);
            }
        }
        Some(provider) => {
            let message = Message::RegisterTrigger {
                id: id.to_string(),
                trigger_type: trigger.trigger_type.clone(),
                function_id: trigger.function_id.clone(),
                config: trigger.config.clone(),
                metadata: trigger.metadata.clone(),
                namespace: Some(NAMESPACE.to_string()),
                trigger_namespace: None,
            };
            send(st, provider, message);
        }
    }
    if let Some(trigger) = st.triggers.get_mut(id) {
        trigger.delivered = Some(provider);
        // the engine accepts its own types on the spot; a worker answers later
        trigger.acknowledged = provider.is_none();
    }
}

fn remove_trigger(st: &mut State, id: &str) -> bool {
    let Some(trigger) = st.triggers.remove(id) else {
        return false;
    };
    if let Some(Some(provider)) = trigger.delivered {
        send(
            st,
            provider,
            Message::UnregisterTrigger {
                id: id.to_string(),
                trigger_type: trigger.trigger_type,
            },
        );
    }
    true
}

fn triggers_of(st: &State) -> Vec<RegisteredTrigger> {
    ordered_triggers(st)
        .into_iter()
        .map(|(id, t)| RegisteredTrigger {
            id: id.clone(),
            trigger_type: t.trigger_type.clone(),
            function_id: t.function_id.clone(),
            config: t.config.clone(),
            metadata: t.metadata.clone(),
            registered_by: t.registrant_name.clone(),
            active: t.delivered.is_some(),
            provider_error: t.provider_error.clone(),
            acknowledged: t.acknowledged,
        })
        .collect()
}

fn function_of(st: &State, id: &str) -> Option<RegisteredFunction> {
    let f = st.functions.get(id)?;
    let owner = st.conns.get(&f.owner);
    Some(RegisteredFunction {
        id: id.to_string(),
        description: f.description.clone(),
        request_format: f.request_format.clone(),
        response_format: f.response_format.clone(),
        metadata: f.metadata.clone(),
        worker_name: owner.and_then(|c| c.name.clone()),
        worker_id: owner.map(|c| c.worker_id.clone()).unwrap_or_default(),
    })
}

fn functions_of(st: &State) -> Vec<RegisteredFunction> {
    let mut ids: Vec<&String> = st.functions.keys().collect();
    ids.sort();
    ids.into_iter()
        .filter_map(|id| function_of(st, id))
        .collect()
}

fn worker_id_of(st: &State, name: &str) -> Option<String> {
    st.conns
        .values()
        .find(|c| c.live() && c.registered && c.name.as_deref() == Some(name))
        .map(|c| c.worker_id.clone())
}

// ───────────────────────────── invocation routing ──────────────────────────

struct Invocation {
    function_id: String,
    data: Value,
    metadata: Option<Value>,
    traceparent: Option<String>,
    baggage: Option<String>,
}

/// The payload as the engine delivers it: `_caller_worker_id` added to an
/// object, anything else untouched.
fn with_caller(data: Value, caller_worker_id: &str) -> Value {
    match data {
        Value::Object(mut map) => {
            map.insert(
                CALLER_FIELD.to_string(),
                Value::String(caller_worker_id.to_string()),
            );
            Value::Object(map)
        }
        other => other,
    }
}

fn function_not_found(function_id: &str) -> ErrorBody {
    ErrorBody::new(
        "function_not_found",
        format!("Function {function_id} not found in namespace {NAMESPACE}."),
    )
}

/// Route one call. `reply` is `None` for a fire-and-forget call.
fn invoke(
    st: &mut State,
    store: &ConfigStore,
    caller: &CallerRef,
    call: Invocation,
    reply: Option<ReplyTo>,
) {
    let data = with_caller(call.data, &caller.worker_id);
    log_call(
        st,
        CallRecord {
            function_id: call.function_id.clone(),
            payload: data.clone(),
            metadata: call.metadata.clone(),
            caller_worker_id: caller.worker_id.clone(),
            void: reply.is_none(),
        },
    );

    if let Some(outcome) = engine_function(st, store, caller, &call.function_id, &data) {
        deliver(st, reply, &call.function_id, outcome, None, None);
        return;
    }
    let Some((owner, checks)) = st
        .functions
        .get(&call.function_id)
        .map(|f| (f.owner, f.checks.clone()))
    else {
        let error = function_not_found(&call.function_id);
        deliver(st, reply, &call.function_id, Err(error), None, None);
        return;
    };
    let (invocation_id, action) = match reply {
        Some(reply) => {
            let id = Uuid::new_v4();
            let window = open_window(st);
            st.pending.insert(
                id,
                Pending {
                    owner,
                    function_id: call.function_id.clone(),
                    reply,
                    window,
                    request: data.clone(),
                    checks,
                },
            );
            (Some(id), None)
        }
        None => (None, Some(TriggerAction::Void)),
    };
    let unordered = st.faults.unordered.filter(|_| invocation_id.is_none());
    let message = Message::InvokeFunction {
        invocation_id,
        function_id: call.function_id,
        data,
        traceparent: call.traceparent,
        baggage: call.baggage,
        action,
        metadata: call.metadata,
        namespace: None,
        caller: None,
        observe_depth: None,
        activation: None,
    };
    match unordered {
        Some(max) => send_later(st, owner, message, max),
        None => send(st, owner, message),
    }
}

/// `answer-window`: whether this call's answer window is open (a draw against the
/// share); when it is, from now until when the call is not filed yet. "Now"
/// is before the frame is even queued, so the window never reaches past the
/// worker's receipt of the call plus its width.
fn open_window(st: &mut State) -> Option<(Instant, Instant)> {
    let window = st.faults.answer_window?;
    if draw(&mut st.rng) % 100 >= u64::from(window.share_percent) {
        return None;
    }
    st.counts.windows_opened += 1;
    let now = Instant::now();
    Some((now, now + window.width))
}

/// `unordered`: a fire-and-forget delivery sent from a task of its own after a delay
/// drawn from `0..=max`, as the engine runs each one as its own task.
fn send_later(st: &mut State, conn: ConnId, message: Message, max: Duration) {
    let Some(tx) = st.conns.get(&conn).map(|c| c.tx.clone()) else {
        return;
    };
    let delay = Duration::from_micros(draw(&mut st.rng) % (max.as_micros() as u64 + 1));
    let frame = Outbound::Frame(Box::new(message));
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            st.counts.deliveries_delayed += 1;
            rt.spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = tx.send(frame);
            });
        }
        Err(_) => {
            let _ = tx.send(frame);
        }
    }
}

/// A frame that did not decode. The real engine logs it and drops it: the
/// caller waits its whole timeout ([`Faults::undecodable`]). The
/// well-behaved stand-in answers the call it can find in the frame (an
/// invocation, or the pending call an answer was for) with
/// `invocation_failed`, so a test sees the cause at once.
fn undecodable(st: &mut State, conn_id: ConnId, error: &str, text: &str) {
    let Some(conn) = st.conns.get(&conn_id).filter(|c| c.live()) else {
        return;
    };
    let who = conn.name.clone().unwrap_or_else(|| conn.worker_id.clone());
    let dropping = st.faults.undecodable;
    eprintln!(
        "WARN loopback engine: json decode error: {error} ({} bytes from {who}){}",
        text.len(),
        if dropping {
            "; dropped unanswered (fault undecodable)"
        } else {
            ""
        }
    );
    let invocation_id = json_string_field(text, "invocation_id").and_then(|v| v.parse().ok());
    let problem = |function_id: &str| {
        ErrorBody::new(
            "invocation_failed",
            format!(
                "json decode error: {error} (a real engine drops this frame and the caller of \
                 {function_id} waits its whole timeout)"
            ),
        )
    };
    match (json_string_field(text, "type").as_deref(), invocation_id) {
        _ if dropping => st.counts.undecodable_dropped += 1,
        (Some("invokefunction"), Some(invocation_id)) => {
            let function_id = json_string_field(text, "function_id").unwrap_or_default();
            let reply = ReplyTo::Conn {
                conn: conn_id,
                invocation_id,
            };
            let error = problem(&function_id);
            deliver(st, Some(reply), &function_id, Err(error), None, None);
            st.counts.undecodable_answered += 1;
        }
        (Some("invocationresult"), Some(invocation_id))
            if st
                .pending
                .get(&invocation_id)
                .is_some_and(|p| p.owner == conn_id) =>
        {
            if let Some(p) = st.pending.remove(&invocation_id) {
                let error = problem(&p.function_id);
                deliver(st, Some(p.reply), &p.function_id, Err(error), None, None);
                st.counts.undecodable_answered += 1;
            }
        }
        _ => st.counts.undecodable_dropped += 1,
    }
}

/// The string value of the first `"key": "value"` in a JSON text that does
/// not decode as a whole (escapes in the value are not handled: ids, types
/// and function ids have none).
fn json_string_field(text: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{key}\"");
    let mut rest = text;
    while let Some(at) = rest.find(&quoted) {
        rest = &rest[at + quoted.len()..];
        let Some(after_colon) = rest.trim_start().strip_prefix(':') else {
            continue;
        };
        let Some(value) = after_colon.trim_start().strip_prefix('"') else {
            continue;
        };
        return value.find('"').map(|end| value[..end].to_string());
    }
    None
}

fn deliver(
    st: &mut State,
    reply: Option<ReplyTo>,
    function_id: &str,
    outcome: Result<Value, ErrorBody>,
    traceparent: Option<String>,
    baggage: Option<String>,
) {
    match reply {
        None => {}
        Some(ReplyTo::Local(tx)) => {
            let _ = tx.send(outcome);
        }
        Some(ReplyTo::Conn {
            conn,
            invocation_id,
        }) => {
            let (result, error) = match outcome {
                Ok(value) => (Some(value), None),
                Err(error) => (None, Some(error)),
            };
            send(
                st,
                conn,
                Message::InvocationResult {
                    invocation_id,
                    function_id: function_id.to_string(),
                    result,
                    error,
                    traceparent,
                    baggage,
                },
            );
        }
    }
}

// ───────────────────────────── engine-hosted functions ─────────────────────

/// The outcome of an engine-hosted function, or `None` when `function_id` is
/// not one of them.
fn engine_function(
    st: &mut State,
    store: &ConfigStore,
    caller: &CallerRef,
    function_id: &str,
    data: &Value,
) -> Option<Result<Value, ErrorBody>> {
    if function_id.starts_with("configuration::") && !st.configuration_available {
        return None;
    }
    let outcome = match function_id {
        "engine::workers::register" => register_worker(st, caller, data),
        "engine::register_trigger" => engine_register_trigger(st, data),
        "engine::unregister_trigger" => {
            str_field(data, "id").map(|id| json!({ "removed": remove_trigger(st, id) }))
        }
        "configuration::register" => config_register(st, store, caller, data),
        "configuration::get" => config_get(st, store, data),
        "configuration::set" => config_set(st, store, caller, data),
        "configuration::list" => Ok(config_list(st)),
        "configuration::schema" => config_schema(st, data),
        "engine::channels::create" => st.channels.create(data),
        _ => return None,
    };
    Some(outcome)
}

fn bad_input(message: impl std::fmt::Display) -> ErrorBody {
    ErrorBody::new(
        "invocation_failed",
        format!("serialization error: {message}"),
    )
}

fn object(data: &Value) -> Result<&Map<String, Value>, ErrorBody> {
    data.as_object()
        .ok_or_else(|| bad_input("invalid type: expected a map"))
}

fn str_field<'a>(data: &'a Value, key: &str) -> Result<&'a str, ErrorBody> {
    match object(data)?.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(bad_input(format!(
            "invalid type for field `{key}`: expected a string"
        ))),
        None => Err(bad_input(format!("missing field `{key}`"))),
    }
}

/// An optional field; `null` reads as absent.
fn opt_field(data: &Value, key: &str) -> Option<Value> {
    data.get(key).filter(|v| !v.is_null()).cloned()
}

fn register_worker(st: &mut State, caller: &CallerRef, data: &Value) -> Result<Value, ErrorBody> {
    let Some(conn_id) = caller.conn else {
        return Err(ErrorBody::new(
            "invocation_failed",
            "engine::workers::register registers the calling worker connection",
        ));
    };
    let name = data.get("name").and_then(Value::as_str).map(str::to_string);
    let namespace = data
        .get("namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    let holder = name.as_ref().and_then(|name| {
        st.conns
            .iter()
            .find(|(id, c)| {
                **id != conn_id
                    && c.live()
                    && c.registered
                    && c.name.as_ref() == Some(name)
                    && c.namespace == namespace
            })
            .map(|(_, c)| c.worker_id.clone())
    });
    if let (Some(owner_worker_id), Some(name)) = (holder, name.clone()) {
        let rejection = Message::RegistrationRejected {
            code: WORKER_NAMESPACE_CONFLICT.to_string(),
            namespace: namespace.clone().unwrap_or_else(|| NAMESPACE.to_string()),
            worker_name: Some(name.clone()),
            function_id: None,
            owner_worker_id,
        };
        send(st, conn_id, rejection);
        if let Some(conn) = st.conns.get_mut(&conn_id) {
            conn.rejected = true;
            conn.held.clear();
            let _ = conn.tx.send(Outbound::Close);
        }
        st.rejections.push(name);
        return Ok(Value::Null);
    }
    let Some(conn) = st.conns.get_mut(&conn_id) else {
        return Ok(Value::Null);
    };
    conn.name = name;
    conn.namespace = namespace;
    conn.registered = true;
    let held = std::mem::take(&mut conn.held);
    for message in held {
        apply_registration(st, conn_id, message);
    }
    Ok(Value::Null)
}

fn engine_register_trigger(st: &mut State, data: &Value) -> Result<Value, ErrorBody> {
    let trigger_type = str_field(data, "trigger_type")?.to_string();
    let function_id = str_field(data, "function_id")?.to_string();
    let config = data.get("config").cloned().unwrap_or(Value::Null);
    let metadata = opt_field(data, "metadata");
    let id = Uuid::new_v4().to_string();
    add_trigger(
        st,
        id.clone(),
        trigger_type,
        function_id,
        config,
        metadata,
        None,
    );
    Ok(json!({ "id": id }))
}

// ───────────────────────────── configuration worker ────────────────────────

fn config_error(code: &str, message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(code, message)
}

fn valid_config_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Check `value` against `schema` with a full JSON Schema validator; the
/// violations, joined with `; `, on failure.
fn validate(id: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the schema of configuration '{id}' is not valid: {e}"))?;
    let violations: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            format!("at {at}: {e}")
        })
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "value does not satisfy the schema of configuration '{id}': {}",
            violations.join("; ")
        ))
    }
}

fn config_register(
    st: &mut State,
    store: &ConfigStore,
    caller: &CallerRef,
    data: &Value,
) -> Result<Value, ErrorBody> {
    let id = str_field(data, "id")?.to_string();
    let name = str_field(data, "name")?.to_string();
    let description = str_field(data, "description")?.to_string();
    let schema = object(data)?
        .get("schema")
        .cloned()
        .ok_or_else(|| bad_input("missing field `schema`"))?;
    let initial_value = opt_field(data, "initial_value");
    let metadata = opt_field(data, "metadata");
    if !valid_config_id(&id) {
        return Err(config_error(
            "INVALID_ID",
            format!("configuration id '{id}' must match [a-z0-9_-]{{1,64}}"),
        ));
    }
    if let Err(e) = jsonschema::validator_for(&schema) {
        return Err(config_error(
            "SCHEMA_INVALID",
            format!("the schema of configuration '{id}' is not valid: {e}"),
        ));
    }
    if let Some(initial) = &initial_value {
        validate(&id, &schema, initial).map_err(|m| config_error("SCHEMA_INVALID", m))?;
    }

    let first = !st.config.contains_key(&id);
    let old_value = store.value(&id).unwrap_or(Value::Null);
    if let Some(initial) = initial_value {
        store.set(&id, initial);
    }
    st.config.insert(
        id.clone(),
        ConfigEntry {
            name: name.clone(),
            description: description.clone(),
            schema: schema.clone(),
            metadata: metadata.clone(),
        },
    );
    let value = store.value(&id).unwrap_or(Value::Null);
    let (event, old_value) = if first {
        ("configuration:registered", Value::Null)
    } else {
        ("configuration:updated", old_value)
    };
    fire_configuration(st, event, &id, old_value, value.clone(), &caller.worker_id);
    Ok(json!({
        "id": id,
        "name": name,
        "description": description,
        "schema": schema,
        "value": value,
        "metadata": metadata,
    }))
}

fn not_found(id: &str) -> ErrorBody {
    config_error("NOT_FOUND", format!("configuration '{id}' not found"))
}

fn config_get(st: &State, store: &ConfigStore, data: &Value) -> Result<Value, ErrorBody> {
    let id = str_field(data, "id")?;
    let raw = data.get("raw").and_then(Value::as_bool).unwrap_or(false);
    if !st.config.contains_key(id) && !store.contains(id) {
        return Err(not_found(id));
    }
    let value = store.value(id).unwrap_or(Value::Null);
    let value = if raw { value } else { expand_value(&value) };
    Ok(json!({ "id": id, "value": value }))
}

fn config_set(
    st: &mut State,
    store: &ConfigStore,
    caller: &CallerRef,
    data: &Value,
) -> Result<Value, ErrorBody> {
    let id = str_field(data, "id")?.to_string();
    let value = object(data)?
        .get("value")
        .cloned()
        .ok_or_else(|| bad_input("missing field `value`"))?;
    let Some(entry) = st.config.get(&id) else {
        return Err(if store.contains(&id) {
            config_error(
                "SCHEMA_UNAVAILABLE",
                format!(
                    "the schema of configuration '{id}' is not known yet: its worker has not registered it since the engine started"
                ),
            )
        } else {
            config_error(
                "NOT_REGISTERED",
                format!("configuration '{id}' is not registered"),
            )
        });
    };
    validate(&id, &entry.schema, &value).map_err(|m| config_error("SCHEMA_INVALID", m))?;
    let old_value = store.set(&id, value.clone()).unwrap_or(Value::Null);
    fire_configuration(
        st,
        "configuration:updated",
        &id,
        old_value.clone(),
        value.clone(),
        &caller.worker_id,
    );
    Ok(json!({ "old_value": old_value, "new_value": value }))
}

fn entry_view(id: &str, entry: &ConfigEntry) -> Value {
    let mut view = json!({
        "id": id,
        "name": entry.name,
        "description": entry.description,
        "schema": entry.schema,
    });
    if let (Some(metadata), Some(map)) = (&entry.metadata, view.as_object_mut()) {
        map.insert("metadata".to_string(), metadata.clone());
    }
    view
}

fn config_list(st: &State) -> Value {
    let mut ids: Vec<&String> = st.config.keys().collect();
    ids.sort();
    let configurations: Vec<Value> = ids
        .into_iter()
        .map(|id| entry_view(id, &st.config[id]))
        .collect();
    json!({ "configurations": configurations })
}

fn config_schema(st: &State, data: &Value) -> Result<Value, ErrorBody> {
    let id = str_field(data, "id")?;
    st.config
        .get(id)
        .map(|entry| entry_view(id, entry))
        .ok_or_else(|| not_found(id))
}

/// A hand edit of the store: no validation here, the event follows.
fn hand_write(st: &mut State, store: &ConfigStore, id: &str, value: Value) {
    let old = store.set(id, value.clone());
    let event = if old.is_some() {
        "configuration:updated"
    } else {
        "configuration:registered"
    };
    let engine_id = st.engine_worker_id.clone();
    fire_configuration(st, event, id, old.unwrap_or(Value::Null), value, &engine_id);
}

/// Fire the `configuration` bindings that select this id and event, without
/// waiting for their answers.
fn fire_configuration(
    st: &mut State,
    event_type: &str,
    id: &str,
    old_value: Value,
    new_value: Value,
    caller_worker_id: &str,
) {
    let (name, description, schema, metadata) = match st.config.get(id) {
        Some(e) => (
            e.name.clone(),
            e.description.clone(),
            e.schema.clone(),
            e.metadata.clone(),
        ),
        None => (String::new(), String::new(), Value::Null, None),
    };
    let mut payload = json!({
        "type": CONFIGURATION_TRIGGER,
        "event_type": event_type,
        "id": id,
        "name": name,
        "description": description,
        "schema": schema,
        "old_value": expand_value(&old_value),
        "new_value": expand_value(&new_value),
    });
    if let (Some(metadata), Some(map)) = (metadata, payload.as_object_mut()) {
        map.insert("metadata".to_string(), metadata);
    }
    let payload = with_caller(payload, caller_worker_id);

    let bindings: Vec<(String, Option<Value>)> = ordered_triggers(st)
        .into_iter()
        .filter(|(_, t)| t.trigger_type == CONFIGURATION_TRIGGER)
        .filter(|(_, t)| binding_selects(&t.config, id, event_type))
        .map(|(_, t)| (t.function_id.clone(), t.metadata.clone()))
        .collect();
    for (function_id, metadata) in bindings {
        let Some(owner) = st.functions.get(&function_id).map(|f| f.owner) else {
            continue;
        };
        log_call(
            st,
            CallRecord {
                function_id: function_id.clone(),
                payload: payload.clone(),
                metadata: metadata.clone(),
                caller_worker_id: caller_worker_id.to_string(),
                void: false,
            },
        );
        send(
            st,
            owner,
            Message::InvokeFunction {
                // answered, but nobody waits for the answer
                invocation_id: Some(Uuid::new_v4()),
                function_id,
                data: payload.clone(),
                traceparent: None,
                baggage: None,
                action: None,
                metadata,
                namespace: None,
                caller: None,
                observe_depth: None,
                activation: None,
            },
        );
    }
}

/// The `configuration` trigger config: `configuration_id` and `event_types`
/// narrow what fires; absent, everything does. (`condition_function_id` is
/// not supported.)
fn binding_selects(config: &Value, id: &str, event_type: &str) -> bool {
    let id_ok = match config.get("configuration_id").and_then(Value::as_str) {
        Some(wanted) => wanted == id,
        None => true,
    };
    let event_ok = match config.get("event_types").and_then(Value::as_array) {
        Some(types) => types.iter().any(|t| t.as_str() == Some(event_type)),
        None => true,
    };
    id_ok && event_ok
}

/// `${VAR}` / `${VAR:default}` placeholders inside strings, expanded against
/// the process environment as the configuration worker does on reads. An
/// unset variable without a default is left as written.
fn expand_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(expand_str(s)),
        Value::Array(items) => Value::Array(items.iter().map(expand_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), expand_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn expand_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(':') {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let is_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match (is_name, std::env::var(name).ok(), default) {
            (true, Some(value), _) => out.push_str(&value),
            (true, None, Some(default)) => out.push_str(default),
            _ => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}
