//! The one function table.
//!
//! Every function is described once here: id, description, metadata,
//! request/response JSON schemas and its handler. The bus registers exactly
//! this table with the engine, `ide call` runs the same handlers in-process,
//! `ide functions` prints it, and the end-to-end tests compare what the engine
//! received with it. Adding a function means one module and one line in
//! [`Catalog::standard`].
//!
//! Request decoding policy: keys starting with `_` are engine sidecars (the
//! engine stamps `_caller_worker_id` on every payload) and are dropped; any
//! other key the request schema does not declare is refused with 210, so a
//! misspelt option never silently falls back to its default.

use crate::error::{Failure, Surface, WireError};
use crate::runtime::{LiveRuntime, Runtime};
use crate::stream::{ByteSink, ByteSource, ContentRef, StreamError};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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

/// Long-lived services shared by every call.
pub struct Services {
    pub live: Arc<LiveRuntime>,
    /// Absent in `ide call` mode, where there is no configuration worker.
    pub config_source: Option<Arc<dyn ConfigSource>>,
    /// Absent in `ide call` mode, where there is no engine.
    pub outbound: Option<Arc<dyn Outbound>>,
    /// Background jobs and every live command process group.
    pub jobs: Arc<crate::exec::jobs::JobTable>,
    /// Terminal sessions (`shell::pty::*`).
    pub pty: Arc<crate::pty::Sessions>,
}

impl Services {
    /// Services without an engine (`ide call`, unit tests).
    pub fn standalone(runtime: Runtime) -> Arc<Services> {
        Arc::new(Services {
            live: Arc::new(LiveRuntime::new(runtime)),
            config_source: None,
            outbound: None,
            jobs: Arc::new(crate::exec::jobs::JobTable::new(None)),
            pty: Arc::new(crate::pty::Sessions::new()),
        })
    }

    /// Stop everything the services own (called on worker shutdown):
    /// every running command's process group and every terminal session
    /// is killed and reaped.
    pub async fn shutdown(&self) {
        tokio::join!(self.jobs.shutdown(), self.pty.shutdown());
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

/// The provider side of a custom trigger type.
#[async_trait::async_trait]
pub trait TriggerProvider: Send + Sync {
    async fn register(&self, services: &Arc<Services>, binding: Binding) -> Result<(), Failure>;
    async fn unregister(&self, services: &Arc<Services>, binding_id: &str);
}

/// A custom trigger type this worker provides.
#[derive(Clone)]
pub struct TriggerTypeDef {
    pub id: &'static str,
    pub description: &'static str,
    /// Schema of the binding `config`.
    pub config_schema: Value,
    /// Schema of the payload each fire carries.
    pub payload_schema: Value,
    pub provider: Arc<dyn TriggerProvider>,
}

/// What a handler gets: one runtime snapshot and the shared services.
#[derive(Clone)]
pub struct Ctx {
    pub runtime: Arc<Runtime>,
    pub services: Arc<Services>,
}

impl Ctx {
    /// A context over the current snapshot.
    pub fn new(services: Arc<Services>) -> Ctx {
        Ctx {
            runtime: services.live.snapshot(),
            services,
        }
    }
}

pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, WireError>> + Send>>;
pub type Handler = Arc<dyn Fn(Ctx, Value) -> HandlerFuture + Send + Sync>;

/// One catalog entry.
#[derive(Clone)]
pub struct FunctionDef {
    pub id: &'static str,
    pub description: &'static str,
    pub metadata: Value,
    pub request_schema: Value,
    pub response_schema: Value,
    pub handler: Handler,
}

/// Function metadata flags, as the engine and console read them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    /// Console/operator plumbing, hidden from agents.
    pub internal: bool,
    /// Spans kept out of the default trace view.
    pub trace_hidden: bool,
    /// Shown in the console's function display.
    pub display: bool,
}

impl Flags {
    pub const NONE: Flags = Flags {
        internal: false,
        trace_hidden: false,
        display: false,
    };
    pub const INTERNAL: Flags = Flags {
        internal: true,
        trace_hidden: false,
        display: false,
    };

    fn to_value(self) -> Value {
        let mut m = Map::new();
        if self.display {
            m.insert("display".into(), Value::Bool(true));
        }
        if self.internal {
            m.insert("internal".into(), Value::Bool(true));
        }
        if self.trace_hidden {
            m.insert("trace_hidden".into(), Value::Bool(true));
        }
        Value::Object(m)
    }
}

/// The JSON schema of a type, draft-07 as the engine shows it.
pub fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// Build a typed catalog entry whose request refuses undeclared fields.
pub fn function<Req, Resp, F, Fut>(
    id: &'static str,
    description: &'static str,
    flags: Flags,
    f: F,
) -> FunctionDef
where
    Req: DeserializeOwned + JsonSchema + Send + 'static,
    Resp: Serialize + JsonSchema + Send + 'static,
    F: Fn(Ctx, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = crate::error::Result<Resp>> + Send + 'static,
{
    build(id, description, flags, true, f)
}

/// Build a catalog entry for an event handler: fields the request type does
/// not declare are ignored instead of refused (trigger payloads carry many
/// advisory fields).
pub fn event_function<Req, Resp, F, Fut>(
    id: &'static str,
    description: &'static str,
    flags: Flags,
    f: F,
) -> FunctionDef
where
    Req: DeserializeOwned + JsonSchema + Send + 'static,
    Resp: Serialize + JsonSchema + Send + 'static,
    F: Fn(Ctx, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = crate::error::Result<Resp>> + Send + 'static,
{
    build(id, description, flags, false, f)
}

fn build<Req, Resp, F, Fut>(
    id: &'static str,
    description: &'static str,
    flags: Flags,
    strict: bool,
    f: F,
) -> FunctionDef
where
    Req: DeserializeOwned + JsonSchema + Send + 'static,
    Resp: Serialize + JsonSchema + Send + 'static,
    F: Fn(Ctx, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = crate::error::Result<Resp>> + Send + 'static,
{
    let request_schema = schema_of::<Req>();
    let accepted = if strict {
        declared_properties(&request_schema)
    } else {
        None
    };
    let string_arrays = Arc::new(string_array_properties(&request_schema));
    let surface = Surface::of(id);
    let f = Arc::new(f);
    let handler: Handler = Arc::new(move |ctx: Ctx, payload: Value| {
        let f = f.clone();
        let accepted = accepted.clone();
        let string_arrays = string_arrays.clone();
        Box::pin(async move {
            let scope = crate::journal::Scope::of_call(id, &payload, &ctx.runtime);
            let req: Req =
                decode(id, payload, &accepted, &string_arrays).map_err(|e| e.to_wire(surface))?;
            let resp = scope
                .run(f(ctx, req))
                .await
                .map_err(|e| e.to_wire(surface))?;
            serde_json::to_value(resp).map_err(|e| {
                Failure::io(format!("cannot encode the response: {e}")).to_wire(surface)
            })
        })
    });
    FunctionDef {
        id,
        description,
        metadata: flags.to_value(),
        request_schema,
        response_schema: schema_of::<Resp>(),
        handler,
    }
}

fn declared_properties(schema: &Value) -> Option<Vec<String>> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .or_else(|| {
            // A struct without fields has no `properties`: it accepts none.
            (schema.get("type") == Some(&Value::String("object".into()))).then(Vec::new)
        })
}

/// Top-level properties whose schema is an array of strings (`args`, …).
fn string_array_properties(schema: &Value) -> Vec<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(_, p)| {
            let is_array = match p.get("type") {
                Some(Value::String(t)) => t == "array",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
                _ => false,
            };
            is_array && p.pointer("/items/type") == Some(&Value::String("string".into()))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// The phrase the original worker used for the same decoding failure
/// (`'command' must be a string`, `'args' must be an array of strings`,
/// `'command' is required`): callers written against it match these
/// substrings, so every decoding message carries one.
fn original_phrase(path: &str, inner: &str, string_arrays: &[String]) -> Option<String> {
    if let Some(rest) = inner.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or_default();
        return Some(format!("'{field}' is required"));
    }
    let field = path.split(['.', '[']).next().filter(|f| !f.is_empty())?;
    if string_arrays.iter().any(|a| a == field) {
        return Some(format!("'{field}' must be an array of strings"));
    }
    if !path.contains(['.', '[']) && inner.contains("expected a string") {
        return Some(format!("'{field}' must be a string"));
    }
    None
}

fn decode<Req: DeserializeOwned>(
    id: &str,
    payload: Value,
    accepted: &Option<Vec<String>>,
    string_arrays: &[String],
) -> Result<Req, Failure> {
    let payload = match payload {
        Value::Null => Value::Object(Map::new()),
        Value::Object(mut m) => {
            m.retain(|k, _| !k.starts_with('_'));
            if let Some(accepted) = accepted {
                let mut unknown: Vec<&String> =
                    m.keys().filter(|k| !accepted.contains(k)).collect();
                unknown.sort();
                if let Some(first) = unknown.first() {
                    if accepted.is_empty() {
                        return Err(Failure::bad_input(format!(
                            "{id}: unknown field `{first}`; {id} takes no arguments, call it with {{}}"
                        )));
                    }
                    let mut names = accepted.clone();
                    names.sort();
                    return Err(Failure::bad_input(format!(
                        "{id}: unknown field `{first}`; accepted fields: [{}]",
                        names.join(", ")
                    )));
                }
            }
            Value::Object(m)
        }
        other => {
            return Err(Failure::bad_input(format!(
                "{id}: payload must be a JSON object, got {other}"
            )));
        }
    };
    serde_path_to_error::deserialize(payload).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.inner().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at `{path}`")
        };
        let phrase = original_phrase(&path, &inner, string_arrays)
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        Failure::bad_input(format!(
            "{id}: malformed payload{at}: {inner}{phrase}; see `ide functions` (or the engine's \
             function info) for the request schema"
        ))
    })
}

/// The function table (and the trigger types this worker provides).
pub struct Catalog {
    defs: Vec<FunctionDef>,
    trigger_types: Vec<TriggerTypeDef>,
}

impl Catalog {
    /// Every function this worker serves.
    pub fn standard() -> Catalog {
        let mut defs = vec![
            crate::coder::info::def(),
            crate::coder::read_file::def(),
            crate::coder::list_folder::def(),
            crate::coder::tree::def(),
            crate::coder::create_file::def(),
            crate::coder::update_file::def(),
            crate::coder::delete_file::def(),
            crate::coder::move_file::def(),
            crate::coder::search::def(),
            crate::journal::functions::change_diff_def(),
            crate::journal::functions::list_def(),
            crate::journal::functions::revert_def(),
            crate::control::config_status::def(),
            crate::control::on_config_change::def(),
            crate::exec::foreground::def(),
            crate::exec::background::def(),
            crate::exec::status::def(),
            crate::exec::list::def(),
            crate::exec::kill::def(),
            crate::fs::ls::def(),
            crate::fs::stat::def(),
            crate::fs::read::def(),
            crate::fs::write::def(),
            crate::fs::mkdir::def(),
            crate::fs::rm::def(),
            crate::fs::chmod::def(),
            crate::fs::mv::def(),
            crate::fs::grep::def(),
            crate::fs::sed::def(),
        ];
        defs.extend(crate::workspace::defs());
        defs.push(crate::ui::def());
        defs.extend(crate::pty::functions::defs());
        let trigger_types = vec![
            crate::exec::job_finished::trigger_type(),
            crate::watch::trigger_type(),
        ];
        Catalog {
            defs,
            trigger_types,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &FunctionDef> {
        self.defs.iter()
    }

    pub fn trigger_types(&self) -> impl Iterator<Item = &TriggerTypeDef> {
        self.trigger_types.iter()
    }

    pub fn get(&self, id: &str) -> Option<&FunctionDef> {
        self.defs.iter().find(|d| d.id == id)
    }

    /// Run one function against the current snapshot.
    pub async fn call(
        &self,
        services: &Arc<Services>,
        id: &str,
        payload: Value,
    ) -> Result<Value, WireError> {
        let def = self.get(id).ok_or_else(|| WireError {
            code: "function_not_found".into(),
            message: format!("Function {id} not found; `ide functions` lists the catalog"),
        })?;
        (def.handler)(Ctx::new(services.clone()), payload).await
    }

    /// The catalog as printed by `ide functions`: exactly what is registered.
    pub fn to_json(&self) -> Value {
        let functions: Vec<Value> = self
            .defs
            .iter()
            .map(|d| {
                serde_json::json!({
                    "id": d.id,
                    "description": d.description,
                    "metadata": d.metadata,
                    "request_schema": d.request_schema,
                    "response_schema": d.response_schema,
                })
            })
            .collect();
        let triggers: Vec<Value> = self
            .trigger_types
            .iter()
            .map(|t| {
                serde_json::json!({
                    "id": t.id,
                    "description": t.description,
                    "config_schema": t.config_schema,
                    "payload_schema": t.payload_schema,
                })
            })
            .collect();
        serde_json::json!({ "functions": functions, "trigger_types": triggers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use serde_json::json;

    fn services() -> Arc<Services> {
        Services::standalone(Runtime::build(Config::zero_config()).unwrap())
    }

    #[test]
    fn every_function_has_a_description_and_object_schemas() {
        let c = Catalog::standard();
        let mut seen = std::collections::HashSet::new();
        for d in c.iter() {
            assert!(seen.insert(d.id), "duplicate id {}", d.id);
            assert!(d.description.len() > 20, "{} lacks a description", d.id);
            assert_eq!(d.request_schema["type"], "object", "{}", d.id);
            assert_eq!(
                d.request_schema["$schema"],
                "http://json-schema.org/draft-07/schema#"
            );
            assert!(d.response_schema.is_object(), "{}", d.id);
        }
    }

    #[tokio::test]
    async fn engine_sidecar_fields_are_accepted_and_unknown_fields_refused() {
        let c = Catalog::standard();
        let s = services();
        let ok = c
            .call(&s, "coder::info", json!({"_caller_worker_id": "w-1"}))
            .await
            .unwrap();
        assert_eq!(ok["mode"], "unjailed");
        let err = c
            .call(&s, "coder::info", json!({"bogus": 1}))
            .await
            .unwrap_err();
        assert_eq!(err.code, "C210");
        assert!(err.message.contains("bogus"));
        let err = c
            .call(&s, "shell::config-status", json!([1]))
            .await
            .unwrap_err();
        assert_eq!(err.code, "S210");
    }

    #[tokio::test]
    async fn unknown_function_is_reported() {
        let err = Catalog::standard()
            .call(&services(), "coder::nope", json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.code, "function_not_found");
    }
}
