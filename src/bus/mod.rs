//! The engine connection: boot, configuration sync, registration, serving.
//!
//! This is the only module that knows about iii. It turns the catalog into
//! SDK registrations, keeps the runtime in sync with the configuration worker,
//! and hands every invocation to the catalog handler on the worker's own
//! multi-threaded runtime (the SDK runs its connection loop on a private
//! single-threaded runtime, which must never carry handler work).
//!
//! Boot is fail-closed: no function is registered until the authoritative
//! configuration has been fetched from the configuration worker and built
//! into a runtime.

pub mod answer_hold;
mod channels;
mod config_sync;
pub mod nodelay;
mod ownership;
pub mod telemetry;
mod ui;

use crate::catalog::Catalog;

use crate::function::TriggerProvider;

use crate::ports::{Binding, ConfigSource, Outbound};

use crate::error::WireError;
use crate::runtime::Runtime;
use crate::services::Services;
use crate::stream::{ByteSink, ByteSource, ContentRef, StreamError};
use iii_sdk::protocol::{
    RegisterTriggerInput, TriggerAction, TriggerRequest, TriggerRequestWithMetadata,
};
use iii_sdk::runtime::{IIIConnectionState, WorkerMetadata};
use iii_sdk::trigger::{TriggerConfig, TriggerHandler};
use iii_sdk::{IIIClient, InitOptions, RegisterFunction, RegisterTriggerType};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub use config_sync::{CONFIG_ID, ConfigHome, LEGACY_CONFIG_ID};

/// How `ide` was asked to serve.
pub struct ServeOptions {
    pub url: String,
    /// The `--config` seed (or the built-in default), already parsed.
    pub seed: Value,
    /// Where the configuration lives (`III_CONFIG_NAME`, `III_CONFIG`).
    pub home: ConfigHome,
}

/// Remove staging names a killed worker left under the roots (older than
/// a minute, so a concurrent worker's write in flight is never touched), in
/// the background. Unjailed, only the working directory is swept.
fn sweep_staging(services: &Arc<Services>) {
    let rt = services.live.snapshot();
    tokio::task::spawn_blocking(move || {
        let roots: Vec<std::path::PathBuf> = match rt.policy.jail_roots() {
            [] => vec![rt.working_dir.clone()],
            roots => roots.to_vec(),
        };
        for root in roots {
            if let Some(at) = rt.policy.locate(&root) {
                let n = crate::jail::atomic::sweep(at.loc(), std::time::Duration::from_secs(60));
                if n > 0 {
                    tracing::info!(root = %root.display(), removed = n, "swept stale staging files");
                }
            }
        }
    });
}

/// Why serving stopped.
#[derive(Debug)]
pub enum ServeError {
    /// The authoritative configuration cannot be enforced (fail closed).
    Config(String),
    /// The engine refused this worker (e.g. another live `ide` holds the name).
    Rejected(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Config(m) | ServeError::Rejected(m) => f.write_str(m),
        }
    }
}

/// Connect, confirm the configuration, register the catalog and serve until
/// `shutdown` resolves.
pub async fn serve(
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    probe_engine(&opts.url);
    let metadata = WorkerMetadata {
        name: "ide".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        description: Some(
            "Commands, files, code edits, terminals and change feeds under one policy".to_string(),
        ),
        ..WorkerMetadata::default()
    };
    let (otel, exporting) = telemetry::config();
    if exporting {
        tracing::info!(
            "telemetry export on ({}); the 0.23 engine can drop answers to a busy worker that \
             exports spans (ENGINE-FACTS.md)",
            telemetry::SWITCH
        );
    } else {
        tracing::info!(
            "telemetry export off; {}=true exports spans, logs and metrics to the engine",
            telemetry::SWITCH
        );
    }
    let iii = iii_sdk::register_worker(
        &opts.url,
        InitOptions {
            metadata: Some(metadata),
            otel: Some(otel),
            ..InitOptions::default()
        },
    );
    tokio::pin!(shutdown);
    let sockets = nodelay::EngineSockets::default();
    let started = tokio::select! {
        r = start(&iii, opts.seed, &opts.home, &sockets) => r,
        _ = &mut shutdown => {
            iii.shutdown_async().await;
            return Ok(());
        }
    };
    let services = match started {
        Ok(s) => s,
        Err(e) => {
            iii.shutdown_async().await;
            return Err(e);
        }
    };
    let ui = ui::UiBindings::default();
    ui.publish(&iii);
    let outcome = tokio::select! {
        stop = watch_reconnects(&iii, &opts.url, &opts.home, &services, &ui, &sockets) => Err(stop),
        _ = &mut shutdown => Ok(()),
    };
    services.shutdown().await;
    iii.shutdown_async().await;
    outcome
}

async fn start(
    iii: &IIIClient,
    seed: Value,
    home: &ConfigHome,
    sockets: &nodelay::EngineSockets,
) -> Result<Arc<Services>, ServeError> {
    wait_registered(iii).await?;
    let value = match home {
        ConfigHome::Entry { id, legacy } => config_sync::confirm(iii, id, *legacy, &seed).await?,
        // the file is the configuration: it was read (and checked) as the seed
        ConfigHome::File(_) => seed,
    };
    let runtime = Runtime::from_value(&value).map_err(|e| {
        ServeError::Config(format!(
            "stored configuration 'ide' cannot be enforced, refusing to start (no functions \
             registered): {e}"
        ))
    })?;
    tracing::info!(
        mode = ?runtime.policy.mode(),
        roots = ?runtime.policy.jail_roots(),
        from = %home,
        "configuration confirmed"
    );
    let source: Arc<dyn ConfigSource> = match home {
        ConfigHome::Entry { id, .. } => Arc::new(config_sync::BusConfigSource {
            iii: iii.clone(),
            id: id.clone(),
        }),
        ConfigHome::File(path) => Arc::new(config_sync::FileConfigSource { path: path.clone() }),
    };
    let outbound: Arc<dyn Outbound> = Arc::new(SdkOutbound {
        iii: iii.clone(),
        main: tokio::runtime::Handle::current(),
        instance: draw_instance(),
        sockets: sockets.clone(),
    });
    let services = Arc::new(Services::new(runtime, Some(source), Some(outbound)));
    let catalog = Arc::new(Catalog::standard());
    register_catalog(iii, &catalog, &services);
    register_trigger_types(iii, &catalog, &services);
    // Registrations are handled in order on this connection: the engine
    // answers this question after it took (or refused) every one of them.
    if let Err(stop) = ownership::check(iii, &catalog_ids(&catalog)).await {
        services.shutdown().await;
        return Err(stop);
    }
    match home.entry_id() {
        Some(id) => bind_config_trigger(iii, id),
        None => tracing::info!(
            "{home} is this worker's configuration (no configuration entry is claimed); edit it \
             and call shell::on-config-change to reload, or declare config_name in compose"
        ),
    }
    // The engine handles one connection's frames in order, so once this
    // re-fetch is answered the binding is live: a change made before it is
    // seen here, one made after it fires the trigger. Nothing is missed.
    let ctx = crate::function::Ctx::new(services.clone());
    if let Err(e) = crate::control::on_config_change::reload(&ctx).await {
        tracing::error!(error = %e, "configuration re-fetch after binding the trigger failed");
    }
    tracing::info!(functions = catalog.iter().count(), "ide serving");
    sweep_staging(&services);
    // the search indexes saved by the last run come back in the background
    services.resume_indexes();
    Ok(services)
}

/// Wait for the engine to accept this worker; retries are the SDK's (every 2 s).
async fn wait_registered(iii: &IIIClient) -> Result<(), ServeError> {
    loop {
        match iii.wait_until_registered(Duration::from_secs(3600)).await {
            Ok(()) => return Ok(()),
            Err(iii_sdk::Error::Timeout) => continue,
            Err(e @ iii_sdk::Error::RegistrationRejected { .. }) => {
                return Err(ServeError::Rejected(format!(
                    "the engine rejected this worker: {e}; is another ide already connected? \
                     Set III_WORKER_NAME to run a second one"
                )));
            }
            Err(e) => {
                tracing::debug!(error = %e, "not registered yet");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Every function id the catalog registers.
fn catalog_ids(catalog: &Catalog) -> Vec<String> {
    catalog.iter().map(|d| d.id.to_string()).collect()
}

fn register_catalog(iii: &IIIClient, catalog: &Arc<Catalog>, services: &Arc<Services>) {
    let main = tokio::runtime::Handle::current();
    let base = answer_hold::configured();
    tracing::info!(
        hold_us = base.as_micros() as u64,
        "answers are sent no sooner than this after their call arrived ({}), plus how late \
         this process gets the CPU right now",
        answer_hold::KNOB
    );
    let hold = answer_hold::Hold::new(base);
    for def in catalog.iter() {
        let id = def.id;
        let handler = def.handler.clone();
        let services = services.clone();
        let main = main.clone();
        let hold = hold.clone();
        let registration = RegisterFunction::new_async(move |payload: Value| {
            let arrived = std::time::Instant::now();
            let hold = hold.clone();
            let holding = hold.now();
            let handler = handler.clone();
            let ctx = crate::function::Ctx::new(services.clone());
            let task = main.spawn(async move {
                let out = handler(ctx, payload)
                    .await
                    .and_then(|v| engine_decodable(id, v));
                hold.wait(arrived, holding).await;
                out
            });
            async move {
                match task.await {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(wire)) => Err(iii_sdk::Error::Remote {
                        code: wire.code,
                        message: wire.message,
                        stacktrace: None,
                    }),
                    Err(join) => Err(iii_sdk::Error::Remote {
                        code: "S216".to_string(),
                        message: format!("handler task failed: {join}"),
                        stacktrace: None,
                    }),
                }
            }
        })
        .description(def.description)
        .metadata(def.metadata.clone())
        .request_format(def.request_schema.clone())
        .response_format(def.response_schema.clone());
        iii.register_function(def.id, registration);
    }
}

/// The deepest an answer's `result` may nest. The engine decodes every frame
/// with serde_json's recursion limit (128 levels, the frame's own object and
/// its `result` among them) and drops a frame past it unanswered: the caller
/// waits out its whole timeout (ENGINE-FACTS.md, "other silent drops").
const MAX_ANSWER_NESTING: usize = 126;

/// How deeply `v` nests (a scalar 0, `[]` 1, `[[1]]` 2), counted without
/// recursion and only as far as just past `limit`.
fn nesting(v: &Value, limit: usize) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, above)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let depth = above + 1;
        deepest = deepest.max(depth);
        if deepest > limit {
            break;
        }
        stack.extend(children.map(|c| (c, depth)));
    }
    deepest
}

/// `v`, or a 218 instead of an answer the engine would drop unseen.
fn engine_decodable(function_id: &str, v: Value) -> Result<Value, crate::error::WireError> {
    if nesting(&v, MAX_ANSWER_NESTING) <= MAX_ANSWER_NESTING {
        return Ok(v);
    }
    let failure = crate::error::Failure::new(
        crate::error::Class::TooLarge,
        format!(
            "the answer of {function_id} nests more than {MAX_ANSWER_NESTING} levels deep, and \
             the engine drops such an answer without telling the caller; ask for less depth \
             (coder::tree: a smaller max_depth, then descend from a deeper path)"
        ),
    );
    Err(failure.to_wire(crate::error::Surface::of(function_id)))
}

/// The core's view of the engine, over the SDK.
struct SdkOutbound {
    iii: IIIClient,
    main: tokio::runtime::Handle,
    /// This process's `(instance, started_ms)`, drawn once when it started
    /// serving (see [`crate::ports::HostIdentity`]).
    instance: (String, u64),
    /// This connection's sockets, acknowledged at once after each answer
    /// ([`nodelay`]).
    sockets: nodelay::EngineSockets,
}

/// A fresh `(instance, started_ms)` for this process.
fn draw_instance() -> (String, u64) {
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    // unguessable is not needed, distinct is: fall back to pid and time
    let id = crate::pty::creds::fresh()
        .map(|t| t[..16].to_string())
        .unwrap_or_else(|_| format!("{:08x}{:08x}", std::process::id(), started_ms as u32));
    (id, started_ms)
}

/// A call of `function_id` that waits at most `timeout_ms` (None: the SDK's).
fn request(function_id: &str, payload: Value, timeout_ms: Option<u64>) -> TriggerRequest {
    let mut req = TriggerRequest::new(function_id, payload);
    req.timeout_ms = timeout_ms;
    req
}

impl SdkOutbound {
    /// Send a call and keep the remote `{code, message}` of a failure.
    async fn send(
        &self,
        req: impl Into<TriggerRequestWithMetadata>,
        function_id: &str,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        let answer = self.iii.trigger(req).await;
        // the answer has been read off the socket: acknowledge it now, or the
        // engine holds the next call for us until our delayed ACK (Nagle)
        self.sockets.quickack();
        answer.map_err(|e| match e {
            iii_sdk::Error::Remote { code, message, .. } => WireError { code, message },
            iii_sdk::Error::Timeout => WireError {
                code: crate::ports::CALL_TIMED_OUT.to_string(),
                message: format!(
                    "no answer from {function_id} within {} ms",
                    timeout_ms.unwrap_or(30_000)
                ),
            },
            other => WireError {
                code: "S216".to_string(),
                message: format!("engine call {function_id} failed: {other}"),
            },
        })
    }
}

#[async_trait::async_trait]
impl Outbound for SdkOutbound {
    async fn call(
        &self,
        function_id: &str,
        payload: Value,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        let req = request(function_id, payload, timeout_ms);
        self.send(req, function_id, timeout_ms).await
    }

    fn host(&self) -> Option<crate::ports::HostIdentity> {
        Some(crate::ports::HostIdentity {
            namespace: self
                .iii
                .namespace()
                .unwrap_or_else(|| crate::ports::DEFAULT_NAMESPACE.to_string()),
            worker_name: ownership::own_name(),
            instance: self.instance.0.clone(),
            started_ms: self.instance.1,
        })
    }

    async fn call_in(
        &self,
        namespace: &str,
        function_id: &str,
        payload: Value,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        let req = request(function_id, payload, timeout_ms).namespace(namespace);
        self.send(req, function_id, timeout_ms).await
    }

    fn fire(&self, binding: &Binding, payload: Value) {
        let mut req = TriggerRequest::new(binding.function_id.clone(), payload);
        req.action = Some(TriggerAction::Void);
        let mut req = TriggerRequestWithMetadata::from(req);
        if let Some(m) = &binding.metadata {
            req = req.metadata(m.clone());
        }
        // A binding that named no namespace targets the engine's default
        // one (absent is `default` to the engine, whatever the binder's
        // namespace); unset here, the SDK would send the call to this
        // worker's own namespace instead.
        req = req.namespace(
            binding
                .namespace
                .clone()
                .unwrap_or_else(|| crate::ports::DEFAULT_NAMESPACE.to_string()),
        );
        let iii = self.iii.clone();
        let function_id = binding.function_id.clone();
        self.main.spawn(async move {
            if let Err(e) = iii.trigger(req).await {
                tracing::debug!(function_id = %function_id, error = %e, "trigger delivery failed");
            }
        });
    }

    async fn create_outgoing_stream(&self) -> Result<(ContentRef, Box<dyn ByteSink>), StreamError> {
        channels::create_outgoing(&self.iii).await
    }

    async fn open_incoming_stream(
        &self,
        channel: &ContentRef,
    ) -> Result<Box<dyn ByteSource>, StreamError> {
        Ok(channels::open_incoming(&self.iii, channel))
    }
}

/// Adapts a core [`TriggerProvider`] to the SDK's trigger handler, moving
/// the work onto the worker's runtime.
struct ProviderHandler {
    provider: Arc<dyn TriggerProvider>,
    services: Arc<Services>,
    main: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl TriggerHandler for ProviderHandler {
    async fn register_trigger(&self, config: TriggerConfig) -> Result<(), iii_sdk::Error> {
        let provider = self.provider.clone();
        let services = self.services.clone();
        let (binding_id, function_id) = (config.id.clone(), config.function_id.clone());
        let binding = Binding {
            id: config.id,
            function_id: config.function_id,
            config: config.config,
            metadata: config.metadata,
            namespace: config.namespace,
        };
        let task = self
            .main
            .spawn(async move { provider.register(&services, binding).await });
        match task.await {
            Ok(Ok(())) => {
                // operators (and tests) see which bindings this worker holds
                tracing::info!("trigger binding held: {binding_id} -> {function_id}");
                Ok(())
            }
            Ok(Err(f)) => {
                let wire = f.to_wire(crate::error::Surface::Shell);
                Err(iii_sdk::Error::Remote {
                    code: wire.code,
                    message: wire.message,
                    stacktrace: None,
                })
            }
            Err(e) => Err(iii_sdk::Error::Runtime(e.to_string())),
        }
    }

    async fn unregister_trigger(&self, config: TriggerConfig) -> Result<(), iii_sdk::Error> {
        let provider = self.provider.clone();
        let services = self.services.clone();
        let id = config.id;
        let _ = self
            .main
            .spawn(async move { provider.unregister(&services, &id).await })
            .await;
        Ok(())
    }
}

/// Register every trigger type of the catalog. The SDK takes the binding
/// config and payload schemas as types, so each type is listed here once.
#[allow(deprecated)]
fn register_trigger_types(iii: &IIIClient, catalog: &Catalog, services: &Arc<Services>) {
    for t in catalog.trigger_types() {
        let handler = ProviderHandler {
            provider: t.provider.clone(),
            services: services.clone(),
            main: tokio::runtime::Handle::current(),
        };
        let reg = RegisterTriggerType::new(t.id, t.description, handler);
        match t.id {
            crate::exec::job_finished::ID => {
                use crate::exec::job_finished::{JobFinishedConfig, JobFinishedEvent};
                let reg = reg
                    .trigger_request_format::<JobFinishedConfig>()
                    .call_request_format::<JobFinishedEvent>();
                let _ = iii.register_trigger_type(reg);
            }
            crate::watch::ID => {
                use crate::watch::{ChangedConfig, ChangedEvent};
                let reg = reg
                    .trigger_request_format::<ChangedConfig>()
                    .call_request_format::<ChangedEvent>();
                let _ = iii.register_trigger_type(reg);
            }
            _ => {
                let _ = iii.register_trigger_type(reg);
            }
        }
    }
}

fn bind_config_trigger(iii: &IIIClient, id: &str) {
    let mut input = RegisterTriggerInput::new(
        "configuration".to_string(),
        "shell::on-config-change".to_string(),
        serde_json::json!({ "configuration_id": id }),
    );
    input.metadata = None;
    #[allow(deprecated)]
    if let Err(e) = iii.register_trigger(input) {
        tracing::error!(error = %e, "cannot bind the configuration trigger; hot reload is off");
    }
}

/// After the engine restarts it has lost our configuration schema (values
/// survive, schemas do not) and we may have missed updates: re-register the
/// schema and re-apply the authoritative value on every reconnect.
///
/// It also keeps `TCP_NODELAY` on the engine connections ([`nodelay`]):
/// after every (re)connect, and every few seconds in between in case a
/// reconnect fell between two looks.
///
/// It returns only to stop the worker: the engine refused it for good (a
/// worker-name conflict), or after a reconnect another worker serves its
/// functions in its namespace.
async fn watch_reconnects(
    iii: &IIIClient,
    url: &str,
    home: &ConfigHome,
    services: &Arc<Services>,
    ui: &ui::UiBindings,
    sockets: &nodelay::EngineSockets,
) -> ServeError {
    let ids = catalog_ids(&Catalog::standard());
    let mut was_connected = true;
    let mut engine = Vec::new();
    let mut tick = 0u64;
    loop {
        let connected = iii.get_connection_state() == IIIConnectionState::Connected;
        if connected && (tick % 20 == 0 || !was_connected) {
            if engine.is_empty() {
                if let Some((host, port)) = host_port(url) {
                    engine = tokio::task::spawn_blocking(move || nodelay::resolve(&host, port))
                        .await
                        .unwrap_or_default();
                }
            }
            let peers = engine.clone();
            let sockets = sockets.clone();
            if let Ok(n) = tokio::task::spawn_blocking(move || sockets.refresh(&peers)).await {
                if n > 0 {
                    tracing::debug!(sockets = n, "TCP_NODELAY set on the engine connection");
                }
            }
        }
        tick += 1;
        if let Some(stop) = ownership::fatal(iii) {
            return stop;
        }
        if connected && !was_connected {
            if let Err(stop) = ownership::check(iii, &ids).await {
                return stop;
            }
            tracing::info!("reconnected to the engine; re-confirming configuration");
            if let Some(id) = home.entry_id() {
                config_sync::reregister(iii, id).await;
            }
            ui.publish(iii);
            let ctx = crate::function::Ctx::new(services.clone());
            match crate::control::on_config_change::reload(&ctx).await {
                Ok(_) => tracing::info!("configuration re-confirmed after reconnect"),
                Err(e) => {
                    tracing::error!(error = %e, "re-confirming configuration after reconnect failed")
                }
            }
        }
        was_connected = connected;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Log ONE loud error when the engine is not reachable at boot. Detached:
/// it never delays startup; the SDK keeps retrying every 2 s.
fn probe_engine(url: &str) {
    let target = host_port(url);
    tokio::spawn(async move {
        let Some((host, port)) = target else {
            return;
        };
        let addr = format!("{host}:{port}");
        let ok = tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect(addr.clone()),
        )
        .await
        .map(|r| r.is_ok())
        .unwrap_or(false);
        if !ok {
            tracing::error!(
                "engine unreachable at {addr} — is the iii engine running? Start it, or set --url \
                 or the III_URL env var to where it listens; retrying every 2s"
            );
        }
    });
}

/// The host and port a WebSocket URL resolves to (default ports per scheme).
pub fn host_port(raw: &str) -> Option<(String, u16)> {
    let u = url::Url::parse(raw).ok()?;
    let host = u.host_str()?.to_string();
    let port = u.port_or_known_default()?;
    Some((host, port))
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_port_resolves_defaults() {
        assert_eq!(
            super::host_port("ws://127.0.0.1:49134"),
            Some(("127.0.0.1".into(), 49134))
        );
        assert_eq!(super::host_port("ws://engine"), Some(("engine".into(), 80)));
        assert_eq!(
            super::host_port("wss://engine/x"),
            Some(("engine".into(), 443))
        );
        assert_eq!(super::host_port("not a url"), None);
    }

    /// `[[...]]`, `levels` deep.
    fn nested(levels: usize) -> serde_json::Value {
        let mut v = serde_json::json!(1);
        for _ in 0..levels {
            v = serde_json::json!([v]);
        }
        v
    }

    #[test]
    fn an_answer_the_engine_could_not_decode_becomes_a_218() {
        use iii_sdk::protocol::Message;
        assert_eq!(super::nesting(&serde_json::json!("x"), 10), 0);
        assert_eq!(
            super::nesting(&serde_json::json!({"a": [1, {"b": []}]}), 10),
            4
        );
        assert_eq!(
            super::nesting(&nested(500), 10),
            11,
            "stops just past the limit"
        );
        // the engine decodes the frame an answer travels in as this does
        let frame = |v: serde_json::Value| {
            serde_json::json!({"type": "invocationresult",
                "invocation_id": "9f4c8f8e-54d4-4b8e-9c1e-1b7a3e6f0d2a",
                "function_id": "coder::tree", "result": v})
            .to_string()
        };
        let at_limit = nested(super::MAX_ANSWER_NESTING);
        assert!(serde_json::from_str::<Message>(&frame(at_limit.clone())).is_ok());
        assert_eq!(
            super::engine_decodable("coder::tree", at_limit.clone()),
            Ok(at_limit)
        );
        let past = nested(super::MAX_ANSWER_NESTING + 1);
        assert!(serde_json::from_str::<Message>(&frame(past.clone())).is_err());
        let refused = super::engine_decodable("coder::tree", past).unwrap_err();
        assert_eq!(refused.code, "C218", "{refused:?}");
        assert!(refused.message.contains("max_depth"), "{refused:?}");
        let refused = super::engine_decodable("shell::fs::ls", nested(200)).unwrap_err();
        assert_eq!(refused.code, "S218", "{refused:?}");
    }
}
