//! The engine an end-to-end test runs against: the loopback stand-in, or a
//! real iii engine when `IDE_TEST_ENGINE` names its binary.
//!
//! [`Engine`] offers what both can do, each through its own means (the
//! stand-in's introspection, the real engine's public functions). What only
//! the stand-in can do (take the configuration worker away, cut one
//! worker's connection, count open channels) is reached through
//! [`Engine::loopback`]; a test that needs it says so and runs its stand-in
//! part only there (see `ENGINE-FACTS.md`).

use std::path::PathBuf;
use std::time::Duration;

use iii_sdk::protocol::ErrorBody;
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What a [`Engine::subscriber`] was called with: `(input, metadata)`.
pub type Deliveries = mpsc::UnboundedReceiver<(Value, Option<Value>)>;

use super::engine::{
    ConfigStore, DEFAULT_CALL_TIMEOUT, LoopbackEngine, RegisteredFunction, RegisteredTriggerType,
    connect_worker, unique_name,
};
use super::real_engine::{DataDir, RealEngine, engine_binary};

/// Poll interval for conditions the real engine only reports when asked.
const POLL: Duration = Duration::from_millis(50);

/// Stored configuration values that outlive an engine instance: pass the
/// same store to [`Engine::start_with`] to model a restart.
#[derive(Clone, Default)]
pub struct Store {
    mem: ConfigStore,
    dir: Option<DataDir>,
}

impl Store {
    /// A fresh, empty store for whichever engine the run uses.
    pub fn new() -> Store {
        Store {
            mem: ConfigStore::new(),
            dir: engine_binary().map(|_| DataDir::new()),
        }
    }

    /// Store a value as if it was there before any engine started.
    pub fn preload(&self, id: &str, value: Value) {
        match &self.dir {
            Some(dir) => dir.write_value(id, &value),
            None => self.mem.preload(id, value),
        }
    }
}

/// Which engine this run uses.
pub fn real_engine_binary() -> Option<PathBuf> {
    engine_binary()
}

pub enum Engine {
    Loopback(LoopbackEngine),
    Real(RealEngine),
}

impl Engine {
    /// An engine on a free port with an empty store.
    pub async fn start() -> Engine {
        Self::start_with(0, &Store::new()).await
    }

    /// An engine on `port` (0: any free port) over `store`.
    pub async fn start_with(port: u16, store: &Store) -> Engine {
        match (engine_binary(), &store.dir) {
            (Some(bin), Some(dir)) => {
                Engine::Real(RealEngine::start(&bin, port, dir.clone()).await)
            }
            (Some(_), None) => panic!("a store made without IDE_TEST_ENGINE used with it"),
            (None, _) => {
                Engine::Loopback(LoopbackEngine::start_with(port, store.mem.clone()).await)
            }
        }
    }

    pub fn is_real(&self) -> bool {
        matches!(self, Engine::Real(_))
    }

    /// The stand-in, for what only it can do.
    pub fn loopback(&self) -> Option<&LoopbackEngine> {
        match self {
            Engine::Loopback(e) => Some(e),
            Engine::Real(_) => None,
        }
    }

    pub fn real(&self) -> Option<&RealEngine> {
        match self {
            Engine::Real(e) => Some(e),
            Engine::Loopback(_) => None,
        }
    }

    pub fn url(&self) -> String {
        match self {
            Engine::Loopback(e) => e.url(),
            Engine::Real(e) => e.url(),
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            Engine::Loopback(e) => e.port(),
            Engine::Real(e) => e.port(),
        }
    }

    /// Stop the engine and wait until its port is free.
    pub async fn stop(&self) {
        match self {
            Engine::Loopback(e) => e.stop().await,
            Engine::Real(e) => e.stop().await,
        }
    }

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
        match self {
            Engine::Loopback(e) => e.call_with_timeout(function_id, payload, timeout).await,
            Engine::Real(e) => e.call(function_id, payload, timeout).await,
        }
    }

    /// Functions registered by workers (not the engine's own nor the test
    /// caller's), sorted by id.
    pub async fn functions(&self) -> Vec<RegisteredFunction> {
        match self {
            Engine::Loopback(e) => e.functions(),
            Engine::Real(e) => e.functions().await,
        }
    }

    pub async fn function(&self, id: &str) -> Option<RegisteredFunction> {
        match self {
            Engine::Loopback(e) => e.function(id),
            Engine::Real(e) => e.function(id).await,
        }
    }

    /// Wait until a worker has registered function `id`.
    pub async fn wait_for_function(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Option<RegisteredFunction> {
        match self {
            Engine::Loopback(e) => e.wait_for_function(id, timeout).await,
            Engine::Real(e) => e.poll(timeout, || e.function(id)).await,
        }
    }

    /// Wait until every function of ide's catalog is registered: they are
    /// registered one by one, so one of them being there says nothing
    /// about the rest.
    /// A worker of its own that registers `function_id`, answers `{}` and
    /// hands every delivery `(input, metadata)` to the receiver; returned
    /// once the engine lists the function.
    pub async fn subscriber(
        &self,
        function_id: &str,
        timeout: Duration,
    ) -> (IIIClient, Deliveries) {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = connect_worker(&self.url(), &unique_name("subscriber"));
        client.register_function(
            function_id,
            RegisterFunction::new_async(move |input: Value, metadata: Option<Value>| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send((input, metadata));
                    Ok::<Value, SdkError>(json!({}))
                }
            }),
        );
        assert!(
            self.wait_for_function(function_id, timeout).await.is_some(),
            "{function_id} was never listed"
        );
        (client, rx)
    }

    pub async fn wait_for_ide(&self, timeout: Duration) -> bool {
        let want: Vec<String> = ide::catalog::Catalog::standard()
            .iter()
            .map(|d| d.id.to_string())
            .collect();
        self.wait_for_functions(
            |fs| want.iter().all(|id| fs.iter().any(|f| &f.id == id)),
            timeout,
        )
        .await
    }

    /// Wait until `pred` holds for [`functions`](Self::functions).
    pub async fn wait_for_functions(
        &self,
        pred: impl Fn(&[RegisteredFunction]) -> bool,
        timeout: Duration,
    ) -> bool {
        match self {
            Engine::Loopback(e) => e.wait_for_functions(pred, timeout).await,
            Engine::Real(e) => e
                .poll(timeout, || async {
                    let fs = e.functions().await;
                    pred(&fs).then_some(())
                })
                .await
                .is_some(),
        }
    }

    pub async fn trigger_type(&self, id: &str) -> Option<RegisteredTriggerType> {
        match self {
            Engine::Loopback(e) => e.trigger_types().into_iter().find(|t| t.id == id),
            Engine::Real(e) => e.trigger_type(id).await,
        }
    }

    /// Wait until trigger type `id` has a provider.
    pub async fn wait_for_trigger_type(&self, id: &str, timeout: Duration) -> bool {
        match self {
            Engine::Loopback(e) => e.wait_for_trigger_type(id, timeout).await,
            Engine::Real(e) => e.poll(timeout, || e.trigger_type(id)).await.is_some(),
        }
    }

    /// Bind `function_id` to `trigger_type` with `engine::register_trigger`,
    /// as another worker or the CLI would. Returns the binding id. The
    /// provider may not hold the binding yet when this returns.
    pub async fn register_trigger(
        &self,
        trigger_type: &str,
        function_id: &str,
        config: Value,
        metadata: Option<Value>,
    ) -> String {
        let mut payload = json!({
            "trigger_type": trigger_type,
            "function_id": function_id,
            "config": config,
        });
        if let Some(m) = metadata {
            payload["metadata"] = m;
        }
        let v = self
            .call("engine::register_trigger", payload)
            .await
            .unwrap_or_else(|e| panic!("engine::register_trigger failed: {e:?}"));
        v["id"].as_str().expect("a binding id").to_string()
    }

    /// Names of the live, registered workers, sorted.
    pub async fn workers(&self) -> Vec<String> {
        match self {
            Engine::Loopback(e) => e.workers(),
            Engine::Real(e) => e.workers().await,
        }
    }

    /// Wait until no live worker is called `name`.
    pub async fn wait_for_worker_gone(&self, name: &str, timeout: Duration) -> bool {
        match self {
            Engine::Loopback(e) => e.wait_for_worker_gone(name, timeout).await,
            Engine::Real(_) => {
                let deadline = Instant::now() + timeout;
                loop {
                    if !self.workers().await.iter().any(|w| w == name) {
                        return true;
                    }
                    if Instant::now() >= deadline {
                        return false;
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    /// The stored configuration value of `id`, verbatim.
    pub async fn stored_value(&self, id: &str) -> Option<Value> {
        match self {
            Engine::Loopback(e) => e.store().value(id),
            Engine::Real(e) => e.stored_value(id).await,
        }
    }

    /// Edit a stored value by hand under the running engine (the engine's
    /// file on the real one), as an operator would. Both validate it
    /// against the registered schema and keep the old value when it fails;
    /// the stand-in reports that as `Err`, the real engine only logs it.
    pub fn hand_edit(&self, id: &str, value: Value) -> Result<(), String> {
        match self {
            Engine::Loopback(e) => e.hand_edit(id, value),
            Engine::Real(e) => {
                e.data().write_value(id, &value);
                Ok(())
            }
        }
    }

    /// What the engine printed, for failure messages (empty for the stand-in).
    pub fn log_text(&self) -> String {
        match self {
            Engine::Loopback(_) => String::new(),
            Engine::Real(e) => e.log_text(),
        }
    }
}
