//! The `shell::changed` trigger type as the catalog lists it: its binding
//! and payload schemas, and the provider that attaches a binding to the
//! worker's watchers ([`super::Registry`], held by the services).

use super::{ChangedConfig, ChangedEvent, ID};
use crate::error::Failure;
use crate::function::{TriggerProvider, TriggerTypeDef, schema_of};
use crate::ports::Binding;
use crate::services::Services;
use std::sync::Arc;

struct Provider;

#[async_trait::async_trait]
impl TriggerProvider for Provider {
    async fn register(&self, services: &Arc<Services>, binding: Binding) -> Result<(), Failure> {
        let registry = services.watch.clone();
        let (live, outbound) = (services.live.clone(), services.outbound.clone());
        let (id, function_id) = (binding.id.clone(), binding.function_id.clone());
        let result =
            crate::runtime::blocking(move || registry.subscribe(&live, outbound, binding)).await;
        if let Err(f) = &result {
            let wire = f.to_wire(crate::error::Surface::Shell);
            tracing::warn!(
                "{ID} binding {id} -> {function_id} refused: {}: {}",
                wire.code,
                wire.message
            );
        }
        result
    }

    async fn unregister(&self, services: &Arc<Services>, binding_id: &str) {
        let registry = services.watch.clone();
        let id = binding_id.to_string();
        let _ = crate::runtime::blocking(move || {
            registry.unsubscribe(&id);
            Ok(())
        })
        .await;
    }
}

/// The catalog entry of the trigger type.
pub fn trigger_type() -> TriggerTypeDef {
    TriggerTypeDef {
        id: ID,
        description: "Fires when anything under the watched directory changes, whoever changed \
                      it — bind with config: { path } naming the directory (jail-checked like \
                      every coder::* path). Ignored paths (git-ignored; outside a repository \
                      data/, config/, .iii/, node_modules/) are skipped unless config also sets \
                      include_ignored: true.",
        config_schema: schema_of::<ChangedConfig>(),
        payload_schema: schema_of::<ChangedEvent>(),
        provider: Arc::new(Provider),
    }
}
