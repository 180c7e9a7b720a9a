//! Configuration-worker sync: register the schema, seed once, carry over the
//! pre-rename `shell` value once, and fetch the authoritative value.

use super::ServeError;
use crate::config::Config;
use crate::ports::ConfigSource;
use iii_sdk::IIIClient;
use iii_sdk::protocol::TriggerRequest;
use serde_json::{Value, json};
use std::time::Duration;

/// The configuration id this worker owns.
pub const CONFIG_ID: &str = "ide";
/// The id used before the rename; its stored value is carried over once.
pub const LEGACY_CONFIG_ID: &str = "shell";

const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);

enum Fetch {
    Value(Value),
    Missing,
}

async fn call(iii: &IIIClient, function_id: &str, payload: Value) -> Result<Value, iii_sdk::Error> {
    let mut req = TriggerRequest::new(function_id, payload);
    req.timeout_ms = Some(CALL_TIMEOUT.as_millis() as u64);
    iii.trigger(req).await
}

fn remote_code(e: &iii_sdk::Error) -> Option<&str> {
    match e {
        iii_sdk::Error::Remote { code, .. } => Some(code.as_str()),
        _ => None,
    }
}

async fn get(iii: &IIIClient, id: &str) -> Result<Fetch, iii_sdk::Error> {
    match call(iii, "configuration::get", json!({ "id": id })).await {
        Ok(v) => Ok(Fetch::Value(v.get("value").cloned().unwrap_or(Value::Null))),
        Err(e) if remote_code(&e) == Some("NOT_FOUND") => Ok(Fetch::Missing),
        Err(e) => Err(e),
    }
}

async fn register(iii: &IIIClient, initial: Option<Value>) -> Result<Value, iii_sdk::Error> {
    let mut payload = json!({
        "id": CONFIG_ID,
        "name": "ide",
        "description": "ide worker: exec limits, env forwarding, command denylist, filesystem \
                        jail and caps, coder budgets. Hot-reloaded.",
        "schema": Config::json_schema(),
    });
    if let Some(initial) = initial {
        payload["initial_value"] = initial;
    }
    call(iii, "configuration::register", payload).await
}

/// Confirm the authoritative configuration. Retries (every 2 s) while the
/// configuration worker cannot be reached; never returns a value it did not
/// read back from the store.
pub async fn confirm(iii: &IIIClient, seed: &Value) -> Result<Value, ServeError> {
    let mut logged = false;
    loop {
        match confirm_once(iii, seed).await {
            Ok(v) => return Ok(v),
            Err(Attempt::Fatal(msg)) => return Err(ServeError::Config(msg)),
            Err(Attempt::Retry(msg)) => {
                if !logged {
                    tracing::error!(
                        error = %msg,
                        "cannot confirm the authoritative configuration; no functions are \
                         registered until it is confirmed; retrying every 2s"
                    );
                    logged = true;
                } else {
                    tracing::debug!(error = %msg, "configuration not confirmed yet");
                }
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

enum Attempt {
    Retry(String),
    Fatal(String),
}

async fn confirm_once(iii: &IIIClient, seed: &Value) -> Result<Value, Attempt> {
    let retry = |what: &str, e: iii_sdk::Error| Attempt::Retry(format!("{what}: {e}"));
    let stored = get(iii, CONFIG_ID)
        .await
        .map_err(|e| retry("configuration::get id=ide", e))?;
    let initial = match stored {
        Fetch::Value(_) => None,
        Fetch::Missing => match get(iii, LEGACY_CONFIG_ID)
            .await
            .map_err(|e| retry("configuration::get id=shell", e))?
        {
            Fetch::Value(v) if !v.is_null() => {
                tracing::info!("carrying the stored 'shell' configuration over to 'ide' (once)");
                Some(v)
            }
            _ => Some(seed.clone()),
        },
    };
    let carrying = initial.is_some();
    let entry = match register(iii, initial).await {
        Ok(entry) => entry,
        Err(e) => {
            if remote_code(&e) == Some("SCHEMA_INVALID") && carrying {
                return Err(Attempt::Fatal(format!(
                    "the initial configuration value was refused by the configuration worker: \
                     {e}; fix the seed file (or the stored 'shell' value) and start again"
                )));
            }
            return Err(retry("configuration::register id=ide", e));
        }
    };
    // `configuration::register` answers with the stored entry: its value is
    // the authoritative one, with no second round trip (a separate `get` right
    // after registering was seen to miss the entry on a real engine). Only a
    // value holding `${VAR}` placeholders is fetched again, because `get` is
    // what expands them.
    match entry.get("value") {
        Some(v) if !has_placeholder(v) => Ok(v.clone()),
        _ => match get(iii, CONFIG_ID)
            .await
            .map_err(|e| retry("configuration::get id=ide", e))?
        {
            Fetch::Value(v) => Ok(v),
            Fetch::Missing => Err(Attempt::Retry(
                "configuration 'ide' missing right after registering it".to_string(),
            )),
        },
    }
}

/// Whether a stored value holds a `${VAR}` placeholder anywhere.
fn has_placeholder(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("${"),
        Value::Array(items) => items.iter().any(has_placeholder),
        Value::Object(m) => m.values().any(has_placeholder),
        _ => false,
    }
}

/// Re-register the schema (never a seed) after an engine restart.
pub async fn reregister(iii: &IIIClient) {
    if let Err(e) = register(iii, None).await {
        tracing::error!(error = %e, "cannot re-register the configuration schema");
    }
}

/// The configuration worker as the source of truth for hot reloads.
pub struct BusConfigSource {
    pub iii: IIIClient,
}

#[async_trait::async_trait]
impl ConfigSource for BusConfigSource {
    async fn fetch(&self) -> Result<Value, String> {
        match get(&self.iii, CONFIG_ID).await {
            Ok(Fetch::Value(v)) => Ok(v),
            Ok(Fetch::Missing) => Err("configuration 'ide' not found".to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}
