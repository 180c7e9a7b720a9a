//! One namespace gives a function id to one worker: a second ide in the
//! same namespace under another worker name has every registration refused
//! (`FUNCTION_NAMESPACE_CONFLICT`), and the SDK only logs a warning per
//! function and keeps the connection up, so that ide would sit connected
//! and serve nothing. After each registration this module asks the engine
//! who serves ide's functions in ide's namespace; when another worker does,
//! ide stops with one error that names the owner and the fix.
//!
//! A worker-name conflict (a second ide under the same name) is fatal in
//! the SDK; [`fatal`] turns it into the same kind of stop at any time.

use super::ServeError;
use iii_sdk::IIIClient;
use iii_sdk::protocol::TriggerRequest;
use serde_json::{Value, json};
use std::time::Duration;

/// The worker name this process registers under: `III_WORKER_NAME` (as the
/// SDK reads it: non-empty), else `ide`.
pub fn own_name() -> String {
    std::env::var("III_WORKER_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "ide".to_string())
}

/// The functions of `ids` another worker serves in this worker's namespace,
/// as `(function id, owner)`.
pub async fn foreign_owners(
    iii: &IIIClient,
    ids: &[String],
) -> Result<Vec<(String, String)>, String> {
    let namespace = iii
        .namespace()
        .unwrap_or_else(|| crate::ports::DEFAULT_NAMESPACE.to_string());
    let mut taken = Vec::new();
    // the engine answers at most 32 ids per batch
    for batch in ids.chunks(32) {
        let mut req = TriggerRequest::new(
            "engine::functions::info",
            json!({"function_ids": batch, "namespace": namespace}),
        );
        req.timeout_ms = Some(Duration::from_secs(10).as_millis() as u64);
        let answer = iii.trigger(req).await.map_err(|e| e.to_string())?;
        taken.extend(owners_other_than(&answer, &own_name()));
    }
    Ok(taken)
}

/// The entries of an `engine::functions::info` batch answer whose worker is
/// not `me`.
fn owners_other_than(answer: &Value, me: &str) -> Vec<(String, String)> {
    answer["functions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let owner = f["worker_name"].as_str()?;
            (owner != me).then(|| {
                (
                    f["function_id"].as_str().unwrap_or("?").to_string(),
                    owner.to_string(),
                )
            })
        })
        .collect()
}

/// Check that this worker serves its own functions: the stop error when
/// another worker in the namespace owns them. An engine that cannot answer
/// the question (one without `engine::functions::info`) is not a conflict.
///
/// The engine names a function's owner from its worker registry and, for
/// a function it cannot attribute yet, falls back to the id's first segment
/// (`shell::turns::list` -> `shell`). Right after a reconnect the SDK
/// re-registers in the background, so some of ide's own functions briefly
/// read as owned by such a made-up name. Only an owner that is a connected
/// worker of this namespace is a conflict; an unattributed one is asked
/// again until it resolves (or, after [`SETTLE`], taken as not a conflict).
pub async fn check(iii: &IIIClient, ids: &[String]) -> Result<(), ServeError> {
    let started = std::time::Instant::now();
    loop {
        let taken = match foreign_owners(iii, ids).await {
            Ok(taken) => taken,
            Err(e) => {
                tracing::info!(error = %e, "cannot ask the engine who serves ide's functions; not checked");
                return Ok(());
            }
        };
        if taken.is_empty() {
            return Ok(());
        }
        let live = connected_workers(iii).await;
        let (real, unattributed): (Vec<_>, Vec<_>) = taken
            .into_iter()
            .partition(|(f, owner)| is_real_owner(f, owner, live.as_deref()));
        if !real.is_empty() {
            return Err(conflict(iii, &real));
        }
        if started.elapsed() >= SETTLE {
            tracing::debug!(
                functions = unattributed.len(),
                "the engine does not attribute some of ide's functions to a worker yet; not a conflict"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long an unattributed owner is asked about again.
const SETTLE: Duration = Duration::from_secs(5);

/// Names of the workers connected in this worker's namespace, `None` when
/// the engine cannot list them.
async fn connected_workers(iii: &IIIClient) -> Option<Vec<String>> {
    let namespace = iii
        .namespace()
        .unwrap_or_else(|| crate::ports::DEFAULT_NAMESPACE.to_string());
    let mut req = TriggerRequest::new("engine::workers::list", json!({}));
    req.timeout_ms = Some(Duration::from_secs(10).as_millis() as u64);
    let answer = iii.trigger(req).await.ok()?;
    Some(workers_in(&answer, &namespace))
}

fn workers_in(answer: &Value, namespace: &str) -> Vec<String> {
    answer["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| {
            w["namespace"]
                .as_str()
                .unwrap_or(crate::ports::DEFAULT_NAMESPACE)
                == namespace
        })
        .filter_map(|w| w["name"].as_str().map(str::to_string))
        .collect()
}

/// Whether `owner` of `function` names a worker rather than the engine's
/// fallback. Without a worker list, only a name that is not the fallback.
fn is_real_owner(function: &str, owner: &str, live: Option<&[String]>) -> bool {
    match live {
        Some(names) => names.iter().any(|n| n == owner),
        None => function.split("::").next() != Some(owner),
    }
}

fn conflict(iii: &IIIClient, taken: &[(String, String)]) -> ServeError {
    let namespace = iii
        .namespace()
        .unwrap_or_else(|| crate::ports::DEFAULT_NAMESPACE.to_string());
    let mut owners: Vec<&str> = taken.iter().map(|(_, o)| o.as_str()).collect();
    owners.sort_unstable();
    owners.dedup();
    let examples: Vec<&str> = taken.iter().take(3).map(|(f, _)| f.as_str()).collect();
    ServeError::Rejected(format!(
        "{} of ide's functions ({}{}) are already served in namespace '{namespace}' by worker {} \
         (FUNCTION_NAMESPACE_CONFLICT): one namespace serves one ide. Stopping instead of \
         serving nothing. Give each host its own namespace (III_NAMESPACE, or its own compose \
         project), or stop the other worker first",
        taken.len(),
        examples.join(", "),
        if taken.len() > examples.len() {
            ", ..."
        } else {
            ""
        },
        owners
            .iter()
            .map(|o| format!("'{o}'"))
            .collect::<Vec<_>>()
            .join(", "),
    ))
}

/// A fatal rejection the SDK recorded (a worker-name conflict, possibly
/// after a reconnect), as the stop error.
pub(super) fn fatal(iii: &IIIClient) -> Option<ServeError> {
    iii.fatal_error().map(|e| {
        ServeError::Rejected(format!(
            "the engine rejected this worker: {e}; another worker named '{}' already serves this \
             namespace. Stopping: set III_WORKER_NAME and III_NAMESPACE to run a second ide",
            own_name()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_functions_of_another_worker_are_conflicts() {
        let answer = json!({"functions": [
            {"function_id": "coder::info", "namespace": "a", "worker_name": "ide"},
            {"function_id": "shell::exec", "namespace": "a", "worker_name": "ide-b"},
            {"function_id": "gone", "error": "not_found"},
        ]});
        assert_eq!(
            owners_other_than(&answer, "ide"),
            vec![("shell::exec".to_string(), "ide-b".to_string())]
        );
        assert!(owners_other_than(&json!({}), "ide").is_empty());
    }

    #[test]
    fn an_owner_the_engine_made_up_from_the_id_is_not_a_conflict() {
        let list = json!({"workers": [
            {"name": "ide", "namespace": "default"},
            {"name": "ide-b", "namespace": "a"},
            {"name": "nameless-ns"},
        ]});
        let live = workers_in(&list, "default");
        assert_eq!(live, vec!["ide".to_string(), "nameless-ns".to_string()]);
        // the fallback `shell` for shell::turns::list is no connected worker
        assert!(!is_real_owner("shell::turns::list", "shell", Some(&live)));
        assert!(is_real_owner("shell::exec", "ide", Some(&live)));
        // ide-b lives in another namespace
        assert!(!is_real_owner("shell::exec", "ide-b", Some(&live)));
        // without a list: only the fallback name is doubted
        assert!(!is_real_owner("shell::exec", "shell", None));
        assert!(is_real_owner("shell::exec", "ide-b", None));
    }
}
