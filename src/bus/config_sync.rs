//! Configuration-worker sync: register the schema, seed once, carry over the
//! pre-rename `shell` value once, and fetch the authoritative value.
//!
//! Where the configuration lives ([`ConfigHome`]) follows the environment a
//! supervisor such as `iii compose` builds: `III_CONFIG_NAME` names the
//! configuration entry this worker owns (compose publishes the merged value,
//! `config_override` included, to it before starting the worker);
//! `III_CONFIG` alone is a resolved configuration file and no entry (compose
//! claimed none on this worker's behalf, so the shared `ide` entry is not
//! touched); neither is the fixed `ide` entry, with the pre-rename `shell`
//! value carried over once.

use super::ServeError;
use crate::config::Config;
use crate::ports::ConfigSource;
use iii_sdk::IIIClient;
use iii_sdk::protocol::TriggerRequest;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The configuration id this worker owns.
pub const CONFIG_ID: &str = "ide";
/// The id used before the rename; its stored value is carried over once.
pub const LEGACY_CONFIG_ID: &str = "shell";

const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);

/// Where this worker's configuration lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigHome {
    /// A configuration-worker entry: its id, and whether the pre-rename
    /// `shell` entry is carried over (only for the fixed `ide` id).
    Entry { id: String, legacy: bool },
    /// A resolved configuration file and no entry: the value in force is
    /// the file's, re-read by `shell::on-config-change`.
    File(PathBuf),
}

impl ConfigHome {
    /// From the supervisor's `III_CONFIG_NAME` and `III_CONFIG` (blank is
    /// unset, as a shell writes `III_CONFIG_NAME=` for "none").
    pub fn from_env(config_name: Option<&str>, config_file: Option<&str>) -> ConfigHome {
        let set = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        match (set(config_name), set(config_file)) {
            (Some(id), _) => ConfigHome::Entry { id, legacy: false },
            (None, Some(file)) => ConfigHome::File(PathBuf::from(file)),
            (None, None) => ConfigHome::Entry {
                id: CONFIG_ID.to_string(),
                legacy: true,
            },
        }
    }

    /// The entry id, when the configuration lives in an entry.
    pub fn entry_id(&self) -> Option<&str> {
        match self {
            ConfigHome::Entry { id, .. } => Some(id),
            ConfigHome::File(_) => None,
        }
    }
}

impl std::fmt::Display for ConfigHome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigHome::Entry { id, .. } => write!(f, "configuration entry '{id}'"),
            ConfigHome::File(p) => write!(f, "configuration file {}", p.display()),
        }
    }
}

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

async fn register(
    iii: &IIIClient,
    id: &str,
    initial: Option<Value>,
) -> Result<Value, iii_sdk::Error> {
    let mut payload = json!({
        "id": id,
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
pub async fn confirm(
    iii: &IIIClient,
    id: &str,
    legacy: bool,
    seed: &Value,
) -> Result<Value, ServeError> {
    let mut logged = false;
    loop {
        match confirm_once(iii, id, legacy, seed).await {
            Ok(v) => return Ok(v),
            Err(Attempt::Fatal(msg)) => return Err(ServeError::Config(msg)),
            Err(Attempt::Retry(msg)) => {
                // the engine may refuse the worker itself after it seemed
                // registered (a worker-name conflict): no retry can help
                if let Some(stop) = super::ownership::fatal(iii) {
                    return Err(stop);
                }
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

async fn confirm_once(
    iii: &IIIClient,
    id: &str,
    legacy: bool,
    seed: &Value,
) -> Result<Value, Attempt> {
    let retry = |what: &str, e: iii_sdk::Error| Attempt::Retry(format!("{what}: {e}"));
    let stored = get(iii, id)
        .await
        .map_err(|e| retry(&format!("configuration::get id={id}"), e))?;
    let initial = match stored {
        Fetch::Value(_) => None,
        Fetch::Missing if !legacy => Some(seed.clone()),
        Fetch::Missing => match get(iii, LEGACY_CONFIG_ID)
            .await
            .map_err(|e| retry("configuration::get id=shell", e))?
        {
            Fetch::Value(v) if !v.is_null() => {
                tracing::info!("carrying the stored 'shell' configuration over to '{id}' (once)");
                Some(v)
            }
            _ => Some(seed.clone()),
        },
    };
    let carrying = initial.is_some();
    let entry = match register(iii, id, initial).await {
        Ok(entry) => entry,
        Err(e) => {
            if remote_code(&e) == Some("SCHEMA_INVALID") && carrying {
                return Err(Attempt::Fatal(format!(
                    "the initial configuration value was refused by the configuration worker: \
                     {e}; fix the seed file (or the stored 'shell' value) and start again"
                )));
            }
            return Err(retry(&format!("configuration::register id={id}"), e));
        }
    };
    // `configuration::register` answers with the stored entry: its value is
    // the authoritative one, with no second round trip (a separate `get` right
    // after registering was seen to miss the entry on a real engine). Only a
    // value holding `${VAR}` placeholders is fetched again, because `get` is
    // what expands them.
    match entry.get("value") {
        Some(v) if !has_placeholder(v) => Ok(v.clone()),
        _ => match get(iii, id)
            .await
            .map_err(|e| retry(&format!("configuration::get id={id}"), e))?
        {
            Fetch::Value(v) => Ok(v),
            Fetch::Missing => Err(Attempt::Retry(format!(
                "configuration '{id}' missing right after registering it"
            ))),
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
pub async fn reregister(iii: &IIIClient, id: &str) {
    if let Err(e) = register(iii, id, None).await {
        tracing::error!(error = %e, "cannot re-register the configuration schema");
    }
}

/// The configuration worker as the source of truth for hot reloads.
pub struct BusConfigSource {
    pub iii: IIIClient,
    /// The entry this worker owns.
    pub id: String,
}

#[async_trait::async_trait]
impl ConfigSource for BusConfigSource {
    async fn fetch(&self) -> Result<Value, String> {
        match get(&self.iii, &self.id).await {
            Ok(Fetch::Value(v)) => Ok(v),
            Ok(Fetch::Missing) => Err(format!("configuration '{}' not found", self.id)),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A resolved configuration file as the source of truth (`III_CONFIG`
/// without `III_CONFIG_NAME`): a reload reads it again.
pub struct FileConfigSource {
    pub path: PathBuf,
}

impl FileConfigSource {
    /// The file's value, parsed and checked like a stored one.
    pub fn read(&self) -> Result<Value, String> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| {
            format!(
                "cannot read the configuration file {}: {e}",
                self.path.display()
            )
        })?;
        Config::from_yaml(&text)
            .map(|c| c.to_value())
            .map_err(|e| format!("configuration file {}: {e}", self.path.display()))
    }
}

#[async_trait::async_trait]
impl ConfigSource for FileConfigSource {
    async fn fetch(&self) -> Result<Value, String> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || FileConfigSource { path }.read())
            .await
            .map_err(|e| format!("reading the configuration file failed: {e}"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_follows_the_supervisor_environment() {
        assert_eq!(
            ConfigHome::from_env(None, None),
            ConfigHome::Entry {
                id: "ide".into(),
                legacy: true
            }
        );
        assert_eq!(
            ConfigHome::from_env(Some("ide-host-a"), Some("/run/c.yaml")),
            ConfigHome::Entry {
                id: "ide-host-a".into(),
                legacy: false
            }
        );
        assert_eq!(
            ConfigHome::from_env(Some(" "), Some("/run/c.yaml")),
            ConfigHome::File("/run/c.yaml".into())
        );
        assert_eq!(
            ConfigHome::from_env(Some(""), Some("")),
            ConfigHome::from_env(None, None)
        );
    }
}
