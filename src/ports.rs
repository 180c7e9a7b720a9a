//! The ports: what the core needs from the world outside the process,
//! as traits the bus implements over the SDK and tests implement with
//! fakes. Nothing here knows about functions or services.

use crate::error::WireError;
use crate::stream::{ByteSink, ByteSource, ContentRef, StreamError};
use serde_json::Value;

/// Where the authoritative configuration lives (the configuration worker
/// when connected). `shell::on-config-change` re-fetches through it.
#[async_trait::async_trait]
pub trait ConfigSource: Send + Sync {
    /// The authoritative stored value.
    async fn fetch(&self) -> Result<Value, String>;
}

/// The code of [`Outbound::call`]'s error when no answer came within the
/// call's timeout (the engine's own code for it). The callee may still have
/// run: an answer can be lost on its way back (ENGINE-FACTS.md).
pub const CALL_TIMED_OUT: &str = "timeout";

/// The engine as the core sees it: calls to other workers' functions
/// (sandbox forwarding), fire-and-forget trigger fan-out and byte channels
/// ([`crate::stream`]). Implemented by the bus over the SDK, and by fakes in
/// tests.
/// The engine's own namespace: where an invocation or a binding that names
/// none resolves.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Which ide answered: the namespace it serves and its worker name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct HostIdentity {
    /// The engine namespace this ide registers its functions in (`default` when none was set).
    pub namespace: String,
    /// The worker name it registered under (`III_WORKER_NAME`, else `ide`).
    pub worker_name: String,
    /// This process: random, drawn at start. Another value than the last answer's means the ide restarted (its terminals, jobs and watches are new), so a page re-reads what it shows.
    pub instance: String,
    /// When this process started, Unix epoch milliseconds.
    pub started_ms: u64,
}

#[async_trait::async_trait]
pub trait Outbound: Send + Sync {
    /// Call a function over the engine and wait for its result. Errors keep
    /// the remote `{code, message}` verbatim; no answer in time is
    /// [`CALL_TIMED_OUT`].
    async fn call(
        &self,
        function_id: &str,
        payload: Value,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError>;
    /// Who this worker is on the engine (its namespace and worker name),
    /// for a page that reaches several ide by namespace. None without an
    /// engine.
    fn host(&self) -> Option<HostIdentity> {
        None
    }
    /// [`call`](Self::call) a function registered in `namespace` (the
    /// engine's `default` for a console tab's handler), whatever namespace
    /// this worker serves in. Without a namespace-routing engine it is
    /// `call`.
    async fn call_in(
        &self,
        namespace: &str,
        function_id: &str,
        payload: Value,
        timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        let _ = namespace;
        self.call(function_id, payload, timeout_ms).await
    }
    /// Invoke a bound function without waiting (trigger delivery). Must
    /// return immediately: a slow subscriber never delays the caller.
    /// The binding's metadata and namespace travel with the fire, as the
    /// engine's own trigger types do.
    fn fire(&self, binding: &Binding, payload: Value);

    /// Create a byte channel whose consumer is someone else: returns the
    /// reader's ref (handed to the caller) and our writing end.
    async fn create_outgoing_stream(&self) -> Result<(ContentRef, Box<dyn ByteSink>), StreamError> {
        Err(StreamError("byte channels need the engine".into()))
    }

    /// Open our reading end of a channel a caller created and named by ref.
    async fn open_incoming_stream(
        &self,
        channel: &ContentRef,
    ) -> Result<Box<dyn ByteSource>, StreamError> {
        let _ = channel;
        Err(StreamError("byte channels need the engine".into()))
    }
}

/// One binding of a custom trigger type, as the engine delivers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// Trigger instance id.
    pub id: String,
    /// Function to invoke when the trigger fires.
    pub function_id: String,
    /// Binding configuration (validated by the provider).
    pub config: Value,
    /// Caller metadata, sent back with every fire.
    pub metadata: Option<Value>,
    /// Namespace the bound function resolves in (`None`: this worker's).
    pub namespace: Option<String>,
}
