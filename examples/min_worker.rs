//! The smallest iii worker: one function, `repro::echo`, answering `{}`.
//!
//! It isolates what the engine and the SDK do with a worker's answers from
//! anything `ide` does: run it with the SDK's default telemetry (export on)
//! and with `OTEL_ENABLED=false`, drive it with a long-lived client, and
//! compare (ENGINE-FACTS.md, "long-lived clients").
//!
//! ```sh
//! cargo run --release --example min_worker -- ws://127.0.0.1:49134 [NAME]
//! ```

use iii_sdk::runtime::WorkerMetadata;
use iii_sdk::{InitOptions, RegisterFunction};
use serde_json::{Value, json};

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "ws://127.0.0.1:49134".to_string());
    let name = args.next().unwrap_or_else(|| "min-worker".to_string());
    let iii = iii_sdk::register_worker(
        &url,
        InitOptions {
            metadata: Some(WorkerMetadata {
                name,
                ..WorkerMetadata::default()
            }),
            ..InitOptions::default()
        },
    );
    // REPRO_DELAY_US holds each answer back that long: how long the engine
    // may still be registering the invocation after it forwarded it.
    let delay = std::env::var("REPRO_DELAY_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(std::time::Duration::from_micros);
    iii.register_function(
        "repro::echo",
        RegisterFunction::new_async(move |_payload: Value| async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            Ok(json!({}))
        })
        .description("answers {} (after REPRO_DELAY_US, when set)"),
    );
    tokio::signal::ctrl_c().await.ok();
    iii.shutdown_async().await;
}
