//! The `shell::job-finished` trigger type.
//!
//! A binding's `config.job_id` selects one job: it fires when that job
//! reaches a terminal status, or at once when it already has and its record
//! is still retained (including a job that ended before `shell::exec_bg`
//! returned); either way once per binding. A binding without `job_id` gets
//! every future completion and no replay. Delivery is fire-and-forget with
//! the binding's metadata; a slow subscriber delays nothing.

// the event is the jobs' own record of an end (machinery); this file is the
// trigger type that publishes it
pub use super::jobs::JobFinishedEvent;
use crate::error::Failure;
use crate::function::{TriggerProvider, TriggerTypeDef, schema_of};
use crate::ports::Binding;
use crate::services::Services;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

pub const ID: &str = "shell::job-finished";

/// Select one background job, or observe future completions without a filter.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "JobFinishedConfig")]
pub struct JobFinishedConfig {
    /// Replay a terminal job while its record is retained in worker memory.
    pub job_id: Option<String>,
}

/// Decode a binding config: an object (or null) whose only field is an
/// optional non-blank `job_id`. Anything else is refused, so a misspelt
/// filter never silently becomes "every job".
pub fn parse_config(config: &Value) -> Result<Option<String>, Failure> {
    let obj = match config {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => {
            return Err(Failure::bad_input(format!(
                "{ID} config must be an object like {{\"job_id\": \"job-…\"}} (or {{}} for every \
                 job), got {other}"
            )));
        }
    };
    if let Some(key) = obj
        .keys()
        .find(|k| k.as_str() != "job_id" && !k.starts_with('_'))
    {
        return Err(Failure::bad_input(format!(
            "{ID} config: unknown field `{key}`; the only field is job_id (omit it to receive \
             every future completion)"
        )));
    }
    match obj.get("job_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.trim().is_empty() => Ok(Some(id.clone())),
        Some(Value::String(_)) => Err(Failure::bad_input(format!(
            "{ID} config: job_id is blank; pass the id you give shell::exec_bg, or omit job_id \
             to receive every future completion"
        ))),
        Some(other) => Err(Failure::bad_input(format!(
            "{ID} config: job_id must be a string, got {other}"
        ))),
    }
}

struct Provider;

#[async_trait::async_trait]
impl TriggerProvider for Provider {
    async fn register(&self, services: &Arc<Services>, binding: Binding) -> Result<(), Failure> {
        let job_id = parse_config(&binding.config)?;
        let runtime = services.live.snapshot();
        services.jobs.subscribe(binding, job_id, &runtime);
        Ok(())
    }

    async fn unregister(&self, services: &Arc<Services>, binding_id: &str) {
        services.jobs.unsubscribe(binding_id);
    }
}

/// The catalog entry of the trigger type.
pub fn trigger_type() -> TriggerTypeDef {
    TriggerTypeDef {
        id: ID,
        description: "Fires once when a shell::exec_bg background job reaches a terminal status \
                      (finished, killed, or failed). Bind with config: { job_id } to wake on one \
                      job (replaying its result if already terminal and still retained), or omit \
                      it to receive future completions. The event carries job_id, argv, status, \
                      exit_code and timings; call shell::status for the job's output.",
        config_schema: schema_of::<JobFinishedConfig>(),
        payload_schema: schema_of::<JobFinishedEvent>(),
        provider: Arc::new(Provider),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_accepts_a_job_id_or_nothing() {
        assert_eq!(parse_config(&json!(null)).unwrap(), None);
        assert_eq!(parse_config(&json!({})).unwrap(), None);
        assert_eq!(parse_config(&json!({"job_id": null})).unwrap(), None);
        assert_eq!(
            parse_config(&json!({"job_id": "job-1", "_caller_worker_id": "w"})).unwrap(),
            Some("job-1".to_string())
        );
    }

    #[test]
    fn config_refuses_typos_blank_ids_and_non_objects() {
        assert!(
            parse_config(&json!({"jobid": "x"}))
                .unwrap_err()
                .message
                .contains("jobid")
        );
        assert!(parse_config(&json!({"job_id": "  "})).is_err());
        assert!(parse_config(&json!({"job_id": 7})).is_err());
        assert!(parse_config(&json!("job-1")).is_err());
    }

    #[test]
    fn schemas_match_the_contract_shape() {
        let config = schema_of::<JobFinishedConfig>();
        assert_eq!(config["title"], "JobFinishedConfig");
        assert_eq!(
            config["properties"]["job_id"]["type"],
            json!(["string", "null"])
        );
        assert!(config.get("required").is_none());
        let event = schema_of::<JobFinishedEvent>();
        assert_eq!(
            event["required"],
            json!([
                "argv",
                "duration_ms",
                "finished_at_ms",
                "job_id",
                "started_at_ms",
                "status"
            ])
        );
        assert_eq!(
            event["$defs"]["JobStatus"],
            json!({"enum": ["running", "finished", "killed", "failed"], "type": "string"})
        );
        // an i32 (JSON Schema has no `int32` format: its range instead)
        assert_eq!(event["properties"]["exit_code"]["minimum"], i32::MIN);
        assert_eq!(event["properties"]["exit_code"]["maximum"], i32::MAX);
        assert!(event["properties"]["job_id"].get("description").is_none());
    }
}
