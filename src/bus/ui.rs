//! Publishing the console page: one `console:script` and one `console:style`
//! binding to `ide::ui-content`, made at boot and made again after every
//! reconnect.
//!
//! The bindings go through the SDK's message path, so the engine drops them
//! when this worker disconnects and parks them while no console provides the
//! types (a console that arrives later gets them replayed). A refusal comes
//! back as a `TriggerRegistrationResult` the SDK logs; nothing here retries,
//! so no console, or one that refuses, costs one log line per connection and
//! never a loop. On a reconnect the SDK replays the previous bindings; the new
//! ones are registered first and the previous ones unregistered after, the
//! console's documented re-register discipline (no window without the page,
//! and the SDK's replay list stays at one binding per asset).

use crate::ui::{ASSETS, CONTENT_FUNCTION};
use iii_sdk::IIIClient;
use iii_sdk::protocol::RegisterTriggerInput;
use iii_sdk::triggers::Trigger;
use std::sync::Mutex;

#[derive(Default)]
pub(super) struct UiBindings {
    held: Mutex<Vec<Trigger>>,
}

impl UiBindings {
    /// Register one binding per asset, then drop the ones held before.
    pub(super) fn publish(&self, iii: &IIIClient) {
        let mut fresh = Vec::with_capacity(ASSETS.len());
        for asset in &ASSETS {
            let mut input = RegisterTriggerInput::new(
                asset.trigger_type.to_string(),
                CONTENT_FUNCTION.to_string(),
                serde_json::json!({ "path": asset.path }),
            );
            input.metadata = None;
            #[allow(deprecated)]
            match iii.register_trigger(input) {
                Ok(t) => fresh.push(t),
                Err(e) => tracing::warn!(
                    path = asset.path,
                    error = %e,
                    "cannot publish a console asset; the console page is missing until the next reconnect"
                ),
            }
        }
        tracing::info!(assets = fresh.len(), "console page published");
        let previous = std::mem::replace(
            &mut *self.held.lock().unwrap_or_else(|e| e.into_inner()),
            fresh,
        );
        for t in previous {
            t.unregister();
        }
    }
}
