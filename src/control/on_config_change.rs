//! `shell::on-config-change`: the target of the `configuration` trigger.
//!
//! It never trusts the event payload: it re-fetches the authoritative value
//! from the configuration worker and asks the live runtime to apply it. A
//! value that cannot be built is rejected (last good runtime kept, outcome
//! recorded for `shell::config-status`) and not retried: re-fetching would
//! return the same bad value.

use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, event_function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Event delivered by the `configuration` trigger. Only `id` is declared
/// (advisory); every other event field is accepted and ignored, because the
/// handler re-fetches the value instead of reading it from the event.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "OnConfigChangeEvent")]
pub struct OnConfigChangeEvent {
    /// Configuration id that changed (advisory; the handler re-fetches the value).
    #[serde(default)]
    pub id: Option<String>,
}

/// Ack returned to the trigger.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "OnConfigChangeResponse")]
pub struct OnConfigChangeResponse {
    /// true when the new value was applied; false when it was rejected.
    pub ok: bool,
}

pub fn def() -> FunctionDef {
    event_function(
        "shell::on-config-change",
        "Internal: configuration-change hook. Re-fetches the authoritative `ide` configuration, \
         builds a new runtime and swaps it in atomically; an invalid value is rejected and the \
         last good policy kept (see shell::config-status).",
        Flags::INTERNAL,
        |ctx: Ctx, _event: OnConfigChangeEvent| async move { reload(&ctx).await },
    )
}

/// Re-fetch and apply. Also used at boot-time resync after a reconnect.
pub async fn reload(ctx: &Ctx) -> Result<OnConfigChangeResponse, Failure> {
    let Some(source) = &ctx.services.config_source else {
        return Err(Failure::io(
            "shell::on-config-change needs the configuration worker; it only runs while ide is \
             connected to an engine",
        ));
    };
    let value = source.fetch().await.map_err(|e| {
        tracing::error!(error = %e, "configuration re-fetch failed; keeping the current policy");
        Failure::io(format!("cannot re-fetch configuration 'ide': {e}"))
    })?;
    match ctx.services.live.apply(&value) {
        Ok(report) => {
            if let Some(widened) = report.widened {
                tracing::warn!(change = %widened, "configuration reload applied: PRIVILEGE CHANGE (policy widened)");
            } else if report.changed {
                tracing::info!("configuration reload applied");
            } else {
                tracing::debug!("configuration re-fetched, unchanged");
            }
            if report.changed {
                // servers of roots no longer served, or reconfigured, stop
                let rt = ctx.services.live.snapshot();
                ctx.services.servers.reconfigure(&rt).await;
            }
            Ok(OnConfigChangeResponse { ok: true })
        }
        Err(err) => {
            tracing::error!(error = %err, "configuration reload rejected; keeping the last good policy");
            Ok(OnConfigChangeResponse { ok: false })
        }
    }
}
