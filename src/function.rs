//! The function framework: what a handler receives ([`Ctx`]), what one
//! catalog entry is ([`FunctionDef`]), the typed builder that derives the
//! request/response schemas and wraps a handler with decoding and error
//! rendering ([`function`], [`event_function`]), and the shape of a custom
//! trigger type ([`TriggerTypeDef`]). The table of every function is
//! [`crate::catalog`], at the top.
//!
//! Request decoding policy: keys starting with `_` are engine sidecars (the
//! engine stamps `_caller_worker_id` on every payload) and are dropped; any
//! other key the request schema does not declare is refused with 210, so a
//! misspelt option never silently falls back to its default.

use crate::error::{Failure, Surface, WireError};
use crate::journal::Scope;
use crate::ports::Binding;
use crate::runtime::Runtime;
use crate::services::Services;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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

/// What a handler gets: one runtime snapshot, the shared services and the
/// call's scope (who is changing files, and the journal recording it).
#[derive(Clone)]
pub struct Ctx {
    pub runtime: Arc<Runtime>,
    pub services: Arc<Services>,
    /// Set by the builder for each call; every write the handler makes is
    /// handed [`Scope::recorder`].
    pub scope: Scope,
    /// Whether the builder gives calls a recorded scope (off only to
    /// measure the journal's own cost side by side).
    journaled: bool,
}

impl Ctx {
    /// A context over the current snapshot.
    pub fn new(services: Arc<Services>) -> Ctx {
        Ctx {
            runtime: services.live.snapshot(),
            services,
            scope: Scope::none(),
            journaled: true,
        }
    }

    /// A context whose calls are not journaled (benchmarks of the journal's
    /// own cost; nothing on the wire reaches it).
    pub fn unjournaled(services: Arc<Services>) -> Ctx {
        Ctx {
            journaled: false,
            ..Ctx::new(services)
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

/// The JSON schema of a type as registered (2020-12; see [`crate::schema`]).
pub fn schema_of<T: JsonSchema>() -> Value {
    crate::schema::of::<T>(crate::schema::Side::Response)
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
    let request_schema = crate::schema::of::<Req>(crate::schema::Side::Request { strict });
    let accepted = if strict {
        declared_properties(&request_schema)
    } else {
        None
    };
    let string_arrays = Arc::new(string_array_properties(&request_schema));
    let surface = Surface::of(id);
    let f = Arc::new(f);
    let handler: Handler = Arc::new(move |mut ctx: Ctx, payload: Value| {
        let f = f.clone();
        let accepted = accepted.clone();
        let string_arrays = string_arrays.clone();
        Box::pin(async move {
            if ctx.journaled {
                ctx.scope = Scope::of_call(id, &payload, &ctx.runtime, &ctx.services.journals);
            }
            let req: Req =
                decode(id, payload, &accepted, &string_arrays).map_err(|e| e.to_wire(surface))?;
            let resp = f(ctx, req).await.map_err(|e| e.to_wire(surface))?;
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
        response_schema: crate::schema::of::<Resp>(crate::schema::Side::Response),
        handler,
    }
}

/// A payload as a function sees it: an object without the engine's `_`
/// sidecar fields (`_caller_worker_id`), `null` as `{}`; anything else as
/// sent. What the request schema describes.
pub fn as_seen(payload: &Value) -> Value {
    match payload {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
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
        // an entry that is not a string (`args[1]`): the original said so
        // of the entry
        if let Some(entry) = path.strip_prefix(field).filter(|r| r.starts_with('['))
            && inner.contains("expected a string")
        {
            return Some(format!(
                "'{field}' must be an array of strings: '{field}{entry}' must be a string"
            ));
        }
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
