//! Self-test of the loopback engine stand-in, driven by real SDK clients.

mod support;

use std::time::Duration;

use async_trait::async_trait;
use iii_sdk::protocol::{
    ErrorBody, RegisterTriggerInput, TriggerRequest, WORKER_NAMESPACE_CONFLICT,
};
use iii_sdk::trigger::{TriggerConfig, TriggerHandler};
use iii_sdk::{Error as SdkError, IIIClient, RegisterFunction, RegisterTriggerType};
use serde_json::{Value, json};
use support::engine::{
    CALLER_FIELD, ConfigStore, LoopbackEngine, RegisteredTrigger, connect_worker, unique_name,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(5);
/// The SDK waits 2 s between reconnect attempts.
const RECONNECT_WAIT: Duration = Duration::from_secs(15);

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap_or_else(|| panic!("channel closed waiting for {what}"))
}

fn remote_code(err: &SdkError) -> (&str, &str) {
    match err {
        SdkError::Remote { code, message, .. } => (code, message),
        other => panic!("expected a remote error, got {other:?}"),
    }
}

fn assert_error(err: &ErrorBody, code: &str) {
    assert_eq!(err.code, code, "unexpected error: {err:?}");
}

/// A function that answers with its payload and metadata sidecar.
fn echo() -> RegisterFunction {
    RegisterFunction::new_async(|input: Value, metadata: Option<Value>| async move {
        Ok::<Value, SdkError>(json!({ "input": input, "metadata": metadata }))
    })
}

/// A function that reports each payload and metadata sidecar on `tx`.
fn recorder(tx: mpsc::UnboundedSender<(Value, Option<Value>)>) -> RegisterFunction {
    RegisterFunction::new_async(move |input: Value, metadata: Option<Value>| {
        let tx = tx.clone();
        async move {
            let _ = tx.send((input, metadata));
            Ok::<Value, SdkError>(json!({}))
        }
    })
}

/// The SDK reports a fatal rejection only through `fatal_error()`: the
/// engine's `WorkerRegistered` (sent on connect) may already have satisfied
/// `wait_until_registered`, and there is no event for what follows.
async fn wait_fatal(client: &IIIClient) -> SdkError {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(err) = client.fatal_error() {
            return err;
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if let Err(err @ SdkError::RegistrationRejected { .. }) =
            client.wait_until_registered(remaining).await
        {
            return err;
        }
        assert!(
            Instant::now() < deadline,
            "the client never saw its rejection"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn routes_calls_between_workers_with_the_caller_id() {
    let engine = LoopbackEngine::start().await;
    let a_name = unique_name("route-a");
    let b_name = unique_name("route-b");
    let a = connect_worker(&engine.url(), &a_name);
    a.register_function("route::echo", echo().description("echoes its input"));
    let b = connect_worker(&engine.url(), &b_name);

    let function = engine
        .wait_for_function("route::echo", WAIT)
        .await
        .expect("route::echo registered");
    assert_eq!(function.worker_name.as_deref(), Some(a_name.as_str()));
    assert_eq!(function.description.as_deref(), Some("echoes its input"));
    assert!(function.request_format.is_some());
    assert!(engine.wait_for_worker(&b_name, WAIT).await);
    let a_id = engine.worker_id(&a_name).expect("a's worker id");
    let b_id = engine.worker_id(&b_name).expect("b's worker id");
    assert_ne!(a_id, b_id);
    assert_eq!(engine.workers().len(), 2);

    let out = b
        .trigger(
            TriggerRequest::new("route::echo", json!({ "x": 1 }))
                .metadata(json!({ "tenant": "t1" })),
        )
        .await
        .expect("call from b");
    assert_eq!(out["input"]["x"], 1);
    assert_eq!(out["input"][CALLER_FIELD], json!(b_id));
    assert_eq!(out["metadata"], json!({ "tenant": "t1" }));

    // only objects get the caller id
    let out = b
        .trigger(TriggerRequest::new("route::echo", json!([1, 2])))
        .await
        .expect("array payload");
    assert_eq!(out["input"], json!([1, 2]));

    // the CLI-like caller has an id of its own
    let out = engine
        .call("route::echo", json!({ "y": 2 }))
        .await
        .expect("call from the engine");
    assert_eq!(out["input"]["y"], 2);
    let cli_id = out["input"][CALLER_FIELD]
        .as_str()
        .expect("caller id")
        .to_string();
    assert!(uuid::Uuid::parse_str(&cli_id).is_ok());
    assert_ne!(cli_id, a_id);
    assert_ne!(cli_id, b_id);
    let record = engine
        .wait_for_call(
            |c| c.function_id == "route::echo" && c.caller_worker_id == b_id,
            WAIT,
        )
        .await
        .expect("the call was recorded");
    assert_eq!(record.payload[CALLER_FIELD], json!(b_id));

    a.shutdown_async().await;
    assert!(engine.wait_for_function_gone("route::echo", WAIT).await);
    b.shutdown_async().await;
    assert!(engine.wait_for_worker_gone(&b_name, WAIT).await);
    engine.stop().await;
}

/// The stand-in checks every answer without error against the function's
/// own registered formats (the real engine does not): an answer or a
/// request the schema rejects reaches the caller as an error saying so.
#[tokio::test]
async fn answers_that_break_their_registered_schemas_become_errors() {
    let engine = LoopbackEngine::start().await;
    let a = connect_worker(&engine.url(), &unique_name("formats"));
    let request = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"x": {"type": "integer"}, "answer": {"type": "object"}},
        "required": ["x"],
        "additionalProperties": false
    });
    let response = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    });
    // answers with whatever `answer` says, so one function shows both sides
    a.register_function(
        "formats::answer",
        RegisterFunction::new_async(|input: Value, _: Option<Value>| async move {
            Ok::<Value, SdkError>(input["answer"].clone())
        })
        .request_format(request)
        .response_format(response),
    );
    engine
        .wait_for_function("formats::answer", WAIT)
        .await
        .expect("registered");

    let ok = engine
        .call("formats::answer", json!({"x": 1, "answer": {"ok": true}}))
        .await
        .expect("a call both schemas accept");
    assert_eq!(ok, json!({"ok": true}));
    assert_eq!(engine.schema_violations(), 0);

    let err = engine
        .call("formats::answer", json!({"x": 1, "answer": {"ok": "yes"}}))
        .await
        .expect_err("the answer breaks the response schema");
    assert_error(&err, "invocation_failed");
    assert!(
        err.message
            .contains("the answer does not match its registered schema"),
        "{}",
        err.message
    );
    let err = engine
        .call(
            "formats::answer",
            json!({"x": "one", "answer": {"ok": true}}),
        )
        .await
        .expect_err("the request breaks the request schema");
    assert!(
        err.message
            .contains("the request does not match its registered schema"),
        "{}",
        err.message
    );
    assert_eq!(engine.schema_violations(), 2);

    a.shutdown_async().await;
    engine.stop().await;
}

#[tokio::test]
async fn unknown_function_is_function_not_found() {
    let engine = LoopbackEngine::start().await;
    let b = connect_worker(&engine.url(), &unique_name("missing"));
    b.wait_until_registered(WAIT).await.expect("registered");

    let err = b
        .trigger(TriggerRequest::new("nowhere::fn", json!({})))
        .await
        .expect_err("no such function");
    assert_eq!(
        remote_code(&err),
        (
            "function_not_found",
            "Function nowhere::fn not found in namespace default."
        )
    );
    let err = engine.call("nowhere::fn", json!({})).await.unwrap_err();
    assert_error(&err, "function_not_found");
    assert_eq!(
        err.message,
        "Function nowhere::fn not found in namespace default."
    );

    b.shutdown_async().await;
    engine.stop().await;
}

#[tokio::test]
async fn handler_errors_keep_their_code() {
    let engine = LoopbackEngine::start().await;
    let a = connect_worker(&engine.url(), &unique_name("errors-a"));
    a.register_function(
        "errors::refuse",
        RegisterFunction::new_async(|_input: Value| async move {
            Err::<Value, SdkError>(SdkError::Remote {
                code: "S211".to_string(),
                message: "refused by policy".to_string(),
                stacktrace: None,
            })
        }),
    );
    let b = connect_worker(&engine.url(), &unique_name("errors-b"));
    assert!(
        engine
            .wait_for_function("errors::refuse", WAIT)
            .await
            .is_some()
    );

    let err = b
        .trigger(TriggerRequest::new(
            "errors::refuse",
            json!({ "path": "/etc" }),
        ))
        .await
        .expect_err("the handler refuses");
    assert_eq!(remote_code(&err), ("S211", "refused by policy"));
    let err = engine.call("errors::refuse", json!({})).await.unwrap_err();
    assert_error(&err, "S211");
    assert_eq!(err.message, "refused by policy");

    a.shutdown_async().await;
    b.shutdown_async().await;
    engine.stop().await;
}

#[tokio::test]
async fn a_call_in_flight_fails_when_its_worker_leaves() {
    let engine = LoopbackEngine::start().await;
    let a = connect_worker(&engine.url(), &unique_name("stuck-a"));
    a.register_function(
        "stuck::forever",
        RegisterFunction::new_async(|_input: Value| async move {
            std::future::pending::<()>().await;
            Ok::<Value, SdkError>(Value::Null)
        }),
    );
    let b = connect_worker(&engine.url(), &unique_name("stuck-b"));
    assert!(
        engine
            .wait_for_function("stuck::forever", WAIT)
            .await
            .is_some()
    );

    let call = {
        let b = b.clone();
        tokio::spawn(async move {
            b.trigger(TriggerRequest::new("stuck::forever", json!({})))
                .await
        })
    };
    assert!(
        engine
            .wait_for_call(|c| c.function_id == "stuck::forever", WAIT)
            .await
            .is_some()
    );
    a.shutdown_async().await;
    let err = tokio::time::timeout(WAIT, call)
        .await
        .expect("the caller is answered")
        .expect("task")
        .expect_err("the worker left");
    assert_eq!(remote_code(&err).0, "invocation_stopped");

    b.shutdown_async().await;
    engine.stop().await;
}

#[tokio::test]
async fn a_second_live_worker_with_the_same_name_is_rejected() {
    let engine = LoopbackEngine::start().await;
    let name = unique_name("dup");
    let first = connect_worker(&engine.url(), &name);
    first.register_function("dup::first", echo());
    assert!(engine.wait_for_function("dup::first", WAIT).await.is_some());
    let owner_id = engine.worker_id(&name).expect("first worker id");

    let second = connect_worker(&engine.url(), &name);
    second.register_function("dup::second", echo());
    assert!(engine.wait_for_rejection(&name, WAIT).await);
    match wait_fatal(&second).await {
        SdkError::RegistrationRejected {
            code,
            namespace,
            worker_name,
            owner_worker_id,
            ..
        } => {
            assert_eq!(code, WORKER_NAMESPACE_CONFLICT);
            assert_eq!(namespace, "default");
            assert_eq!(worker_name.as_deref(), Some(name.as_str()));
            assert_eq!(owner_worker_id, owner_id);
        }
        other => panic!("expected a registration rejection, got {other:?}"),
    }

    // the first keeps its name and its functions; the second registered nothing
    assert_eq!(engine.worker_id(&name), Some(owner_id));
    assert!(engine.function("dup::second").is_none());
    assert_eq!(engine.workers().iter().filter(|n| **n == name).count(), 1);
    let out = engine.call("dup::first", json!({ "k": 1 })).await.unwrap();
    assert_eq!(out["input"]["k"], 1);

    second.shutdown_async().await;
    first.shutdown_async().await;
    engine.stop().await;
}

enum TriggerEvent {
    Register(TriggerConfig),
    Unregister(TriggerConfig),
}

struct TriggerRecorder {
    tx: mpsc::UnboundedSender<TriggerEvent>,
}

#[async_trait]
impl TriggerHandler for TriggerRecorder {
    async fn register_trigger(&self, config: TriggerConfig) -> Result<(), SdkError> {
        let _ = self.tx.send(TriggerEvent::Register(config));
        Ok(())
    }

    async fn unregister_trigger(&self, config: TriggerConfig) -> Result<(), SdkError> {
        let _ = self.tx.send(TriggerEvent::Unregister(config));
        Ok(())
    }
}

#[allow(deprecated)]
fn provide(client: &IIIClient, trigger_type: &str) -> mpsc::UnboundedReceiver<TriggerEvent> {
    let (tx, rx) = mpsc::unbounded_channel();
    client.register_trigger_type(RegisterTriggerType::new(
        trigger_type,
        "a trigger type for tests",
        TriggerRecorder { tx },
    ));
    rx
}

async fn next_register(rx: &mut mpsc::UnboundedReceiver<TriggerEvent>) -> TriggerConfig {
    match next(rx, "a registertrigger").await {
        TriggerEvent::Register(config) => config,
        TriggerEvent::Unregister(config) => panic!("unexpected unregister of {}", config.id),
    }
}

async fn next_unregister(rx: &mut mpsc::UnboundedReceiver<TriggerEvent>) -> TriggerConfig {
    match next(rx, "an unregistertrigger").await {
        TriggerEvent::Unregister(config) => config,
        TriggerEvent::Register(config) => panic!("unexpected register of {}", config.id),
    }
}

#[tokio::test]
async fn custom_trigger_types_get_engine_registered_bindings() {
    let engine = LoopbackEngine::start().await;
    let provider = connect_worker(&engine.url(), &unique_name("tick-provider"));
    let mut events = provide(&provider, "loop-tick");
    let consumer = connect_worker(&engine.url(), &unique_name("tick-consumer"));
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    consumer.register_function("tick::handler", recorder(fired_tx));
    assert!(engine.wait_for_trigger_type("loop-tick", WAIT).await);
    assert!(
        engine
            .wait_for_function("tick::handler", WAIT)
            .await
            .is_some()
    );

    let out = consumer
        .trigger(TriggerRequest::new(
            "engine::register_trigger",
            json!({
                "trigger_type": "loop-tick",
                "function_id": "tick::handler",
                "config": { "every": "1s", "nested": { "a": [1, 2] } },
                "metadata": { "team": "ide" },
            }),
        ))
        .await
        .expect("engine::register_trigger");
    let id = out["id"].as_str().expect("trigger id").to_string();

    let config = next_register(&mut events).await;
    assert_eq!(config.id, id);
    assert_eq!(config.function_id, "tick::handler");
    assert_eq!(
        config.config,
        json!({ "every": "1s", "nested": { "a": [1, 2] } })
    );
    assert_eq!(config.metadata, Some(json!({ "team": "ide" })));
    assert_eq!(config.namespace.as_deref(), Some("default"));
    let active = |ts: &[RegisteredTrigger]| ts.iter().any(|t| t.id == id && t.active);
    assert!(engine.wait_for_triggers(active, WAIT).await);

    // the provider fires the bound function by calling it
    provider
        .trigger(TriggerRequest::new(
            config.function_id.clone(),
            json!({ "tick": 1 }),
        ))
        .await
        .expect("fire");
    let (payload, _) = next(&mut fired, "the fired handler").await;
    assert_eq!(payload["tick"], 1);

    let out = consumer
        .trigger(TriggerRequest::new(
            "engine::unregister_trigger",
            json!({ "id": id }),
        ))
        .await
        .expect("engine::unregister_trigger");
    assert_eq!(out, json!({ "removed": true }));
    assert_eq!(next_unregister(&mut events).await.id, id);
    let out = engine
        .call("engine::unregister_trigger", json!({ "id": id }))
        .await
        .expect("idempotent");
    assert_eq!(out, json!({ "removed": false }));

    // the same through the engine's own API
    let id = engine.register_trigger("loop-tick", "tick::handler", json!({ "every": "2s" }), None);
    let config = next_register(&mut events).await;
    assert_eq!((config.id.as_str(), config.metadata), (id.as_str(), None));
    assert!(engine.unregister_trigger(&id));
    assert_eq!(next_unregister(&mut events).await.id, id);

    provider.shutdown_async().await;
    consumer.shutdown_async().await;
    engine.stop().await;
}

#[tokio::test]
#[allow(deprecated)]
async fn bindings_wait_for_a_provider_and_leave_with_their_worker() {
    let engine = LoopbackEngine::start().await;
    let consumer = connect_worker(&engine.url(), &unique_name("late-consumer"));
    let (fired_tx, _fired) = mpsc::unbounded_channel();
    consumer.register_function("late::handler", recorder(fired_tx));
    consumer
        .register_trigger(
            RegisterTriggerInput::new("late-type", "late::handler", json!({ "k": 1 }))
                .with_metadata(json!({ "m": 2 })),
        )
        .expect("register_trigger");
    let held = |ts: &[RegisteredTrigger]| {
        ts.iter()
            .any(|t| t.trigger_type == "late-type" && !t.active && t.registered_by.is_some())
    };
    assert!(engine.wait_for_triggers(held, WAIT).await);
    let id = engine.triggers()[0].id.clone();

    // a provider that appears later gets the binding
    let provider = connect_worker(&engine.url(), &unique_name("late-provider"));
    let mut events = provide(&provider, "late-type");
    let config = next_register(&mut events).await;
    assert_eq!(config.id, id);
    assert_eq!(config.function_id, "late::handler");
    assert_eq!(config.config, json!({ "k": 1 }));
    assert_eq!(config.metadata, Some(json!({ "m": 2 })));

    // and so does the next provider after it left
    provider.shutdown_async().await;
    let inactive = |ts: &[RegisteredTrigger]| ts.iter().any(|t| t.id == id && !t.active);
    assert!(engine.wait_for_triggers(inactive, WAIT).await);
    let provider = connect_worker(&engine.url(), &unique_name("late-provider"));
    let mut events = provide(&provider, "late-type");
    assert_eq!(next_register(&mut events).await.id, id);

    // the binding leaves with the worker that made it
    consumer.shutdown_async().await;
    assert_eq!(next_unregister(&mut events).await.id, id);
    assert!(engine.wait_for_triggers(|ts| ts.is_empty(), WAIT).await);

    provider.shutdown_async().await;
    engine.stop().await;
}

fn shell_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["shell"],
        "properties": {
            "shell": { "type": "string" },
            "limits": {
                "type": "object",
                "additionalProperties": false,
                "properties": { "max": { "type": "integer", "minimum": 1 } }
            }
        }
    })
}

fn register_payload(id: &str, initial_value: Option<Value>) -> Value {
    let mut payload = json!({
        "id": id,
        "name": "Shell",
        "description": "Shell settings",
        "schema": shell_schema(),
    });
    if let Some(value) = initial_value {
        payload["initial_value"] = value;
    }
    payload
}

#[tokio::test]
async fn configuration_values_outlive_the_engine_and_schemas_do_not() {
    let store = ConfigStore::new();
    store.preload("legacy", json!({ "shell": "zsh", "old": true }));
    let engine = LoopbackEngine::start_with(0, store.clone()).await;
    let port = engine.port();

    let entry = engine
        .call(
            "configuration::register",
            register_payload("shell", Some(json!({ "shell": "/bin/sh" }))),
        )
        .await
        .expect("register");
    assert_eq!(
        entry,
        json!({
            "id": "shell",
            "name": "Shell",
            "description": "Shell settings",
            "schema": shell_schema(),
            "value": { "shell": "/bin/sh" },
            "metadata": null,
        })
    );
    let got = engine
        .call("configuration::get", json!({ "id": "shell" }))
        .await;
    assert_eq!(
        got.unwrap(),
        json!({ "id": "shell", "value": { "shell": "/bin/sh" } })
    );

    let set = engine
        .call(
            "configuration::set",
            json!({ "id": "shell", "value": { "shell": "/bin/bash", "limits": { "max": 3 } } }),
        )
        .await
        .expect("set");
    assert_eq!(
        set,
        json!({
            "old_value": { "shell": "/bin/sh" },
            "new_value": { "shell": "/bin/bash", "limits": { "max": 3 } },
        })
    );

    for bad in [
        json!({ "shell": 1 }),
        json!({ "shell": "x", "extra": true }),
        json!({ "limits": { "max": 2 } }),
        json!({ "shell": "x", "limits": { "max": 0 } }),
        json!({ "shell": "x", "limits": { "max": 2, "min": 1 } }),
        json!(null),
    ] {
        let err = engine
            .call("configuration::set", json!({ "id": "shell", "value": bad }))
            .await
            .expect_err("fails the schema");
        assert_error(&err, "SCHEMA_INVALID");
    }
    assert_eq!(
        store.value("shell"),
        Some(json!({ "shell": "/bin/bash", "limits": { "max": 3 } }))
    );

    let err = engine
        .call("configuration::get", json!({ "id": "nothing-here" }))
        .await
        .unwrap_err();
    assert_error(&err, "NOT_FOUND");
    assert_eq!(err.message, "configuration 'nothing-here' not found");
    let err = engine
        .call(
            "configuration::set",
            json!({ "id": "nothing-here", "value": {} }),
        )
        .await
        .unwrap_err();
    assert_error(&err, "NOT_REGISTERED");
    let err = engine
        .call(
            "configuration::register",
            register_payload("Not Valid", None),
        )
        .await
        .unwrap_err();
    assert_error(&err, "INVALID_ID");
    let err = engine
        .call(
            "configuration::register",
            register_payload("shell", Some(json!({ "nope": 1 }))),
        )
        .await
        .unwrap_err();
    assert_error(&err, "SCHEMA_INVALID");

    // registering again keeps the value, unless it brings one
    let entry = engine
        .call("configuration::register", register_payload("shell", None))
        .await
        .unwrap();
    assert_eq!(
        entry["value"],
        json!({ "shell": "/bin/bash", "limits": { "max": 3 } })
    );
    let entry = engine
        .call(
            "configuration::register",
            register_payload("shell", Some(json!({ "shell": "/bin/dash" }))),
        )
        .await
        .unwrap();
    assert_eq!(entry["value"], json!({ "shell": "/bin/dash" }));

    // a value stored before the engine ran is readable, but not settable
    let got = engine
        .call("configuration::get", json!({ "id": "legacy" }))
        .await;
    assert_eq!(
        got.unwrap()["value"],
        json!({ "shell": "zsh", "old": true })
    );
    let err = engine
        .call(
            "configuration::set",
            json!({ "id": "legacy", "value": { "shell": "sh" } }),
        )
        .await
        .unwrap_err();
    assert_error(&err, "SCHEMA_UNAVAILABLE");

    // restart on the same port with the same store
    engine.stop().await;
    let engine = LoopbackEngine::start_with(port, store.clone()).await;
    assert_eq!(engine.port(), port);
    let got = engine
        .call("configuration::get", json!({ "id": "shell" }))
        .await;
    assert_eq!(got.unwrap()["value"], json!({ "shell": "/bin/dash" }));
    let err = engine
        .call(
            "configuration::set",
            json!({ "id": "shell", "value": { "shell": "/bin/ksh" } }),
        )
        .await
        .unwrap_err();
    assert_error(&err, "SCHEMA_UNAVAILABLE");
    let err = engine
        .call("configuration::schema", json!({ "id": "shell" }))
        .await
        .unwrap_err();
    assert_error(&err, "NOT_FOUND");

    engine
        .call("configuration::register", register_payload("shell", None))
        .await
        .expect("register after the restart");
    let set = engine
        .call(
            "configuration::set",
            json!({ "id": "shell", "value": { "shell": "/bin/ksh" } }),
        )
        .await
        .expect("set after registering again");
    assert_eq!(set["old_value"], json!({ "shell": "/bin/dash" }));
    assert_eq!(store.value("shell"), Some(json!({ "shell": "/bin/ksh" })));
    let listed = engine.call("configuration::list", json!({})).await.unwrap();
    assert_eq!(listed["configurations"][0]["id"], "shell");
    assert!(listed["configurations"][0].get("value").is_none());

    engine.stop().await;
}

#[tokio::test]
#[allow(deprecated)]
async fn the_configuration_trigger_fires_on_set_and_on_hand_edits() {
    let engine = LoopbackEngine::start().await;
    let schema = json!({
        "type": "object",
        "required": ["n"],
        "properties": { "n": { "type": "integer" } }
    });
    let watcher_name = unique_name("cfg-watcher");
    let watcher = connect_worker(&engine.url(), &watcher_name);
    let (tx, mut events) = mpsc::unbounded_channel();
    watcher.register_function("cfg::changed", recorder(tx));
    watcher
        .register_trigger(
            RegisterTriggerInput::new(
                "configuration",
                "cfg::changed",
                json!({ "configuration_id": "watched" }),
            )
            .with_metadata(json!({ "binding": "w" })),
        )
        .expect("bind");
    assert!(
        engine
            .wait_for_function("cfg::changed", WAIT)
            .await
            .is_some()
    );
    let bound = |ts: &[RegisteredTrigger]| {
        ts.iter().any(|t| {
            t.trigger_type == "configuration" && t.function_id == "cfg::changed" && t.active
        })
    };
    assert!(engine.wait_for_triggers(bound, WAIT).await);

    // another id does not reach the binding: the first event is the watched one
    let register = |id: &str, value: Value| {
        json!({ "id": id, "name": "Watched", "description": "watched value",
                "schema": schema.clone(), "initial_value": value })
    };
    engine
        .call(
            "configuration::register",
            register("other", json!({ "n": 0 })),
        )
        .await
        .unwrap();
    engine
        .call(
            "configuration::register",
            register("watched", json!({ "n": 1 })),
        )
        .await
        .unwrap();
    let (event, metadata) = next(&mut events, "the registered event").await;
    assert_eq!(event["event_type"], "configuration:registered");
    assert_eq!(event["id"], "watched");
    assert_eq!(event["old_value"], Value::Null);
    assert_eq!(event["new_value"], json!({ "n": 1 }));
    assert_eq!(metadata, Some(json!({ "binding": "w" })));

    // set, from a worker
    let setter_name = unique_name("cfg-setter");
    let setter = connect_worker(&engine.url(), &setter_name);
    let out = setter
        .trigger(TriggerRequest::new(
            "configuration::set",
            json!({ "id": "watched", "value": { "n": 2 } }),
        ))
        .await
        .expect("set");
    assert_eq!(
        out,
        json!({ "old_value": { "n": 1 }, "new_value": { "n": 2 } })
    );
    let (mut event, metadata) = next(&mut events, "the updated event").await;
    let caller = event
        .as_object_mut()
        .and_then(|m| m.remove(CALLER_FIELD))
        .expect("the event carries a caller id");
    assert!(caller.is_string());
    assert_eq!(
        event,
        json!({
            "type": "configuration",
            "event_type": "configuration:updated",
            "id": "watched",
            "name": "Watched",
            "description": "watched value",
            "schema": schema,
            "old_value": { "n": 1 },
            "new_value": { "n": 2 },
        })
    );
    assert_eq!(metadata, Some(json!({ "binding": "w" })));

    // a hand edit fires too
    engine
        .hand_edit("watched", json!({ "n": 3 }))
        .expect("valid edit");
    let (event, _) = next(&mut events, "the hand edit event").await;
    assert_eq!(event["event_type"], "configuration:updated");
    assert_eq!(event["old_value"], json!({ "n": 2 }));
    assert_eq!(event["new_value"], json!({ "n": 3 }));
    assert_eq!(event[CALLER_FIELD], json!(engine.engine_worker_id()));

    // a hand edit the schema refuses changes nothing and fires nothing; an
    // unchecked one goes through: the next event is that one
    assert!(
        engine
            .hand_edit("watched", json!({ "n": "three" }))
            .is_err()
    );
    assert_eq!(engine.store().value("watched"), Some(json!({ "n": 3 })));
    engine
        .hand_edit("other", json!({ "n": 5 }))
        .expect("valid edit");
    engine.hand_edit_unchecked("watched", Value::Null);
    let (event, _) = next(&mut events, "the unchecked edit event").await;
    assert_eq!(event["old_value"], json!({ "n": 3 }));
    assert_eq!(event["new_value"], Value::Null);
    assert_eq!(engine.store().value("watched"), Some(Value::Null));

    setter.shutdown_async().await;
    watcher.shutdown_async().await;
    // the binding went with its worker
    assert!(engine.wait_for_triggers(|ts| ts.is_empty(), WAIT).await);
    engine.stop().await;
}

#[tokio::test]
async fn workers_reconnect_by_themselves_after_a_restart() {
    let engine = LoopbackEngine::start().await;
    let port = engine.port();
    let store = engine.store();
    let name = unique_name("restart");
    let worker = connect_worker(&engine.url(), &name);
    worker.register_function(
        "restart::ping",
        RegisterFunction::new_async(
            |_input: Value| async move { Ok::<Value, SdkError>(json!("pong")) },
        ),
    );
    assert!(
        engine
            .wait_for_function("restart::ping", WAIT)
            .await
            .is_some()
    );
    assert_eq!(
        engine.call("restart::ping", json!({})).await.unwrap(),
        json!("pong")
    );

    engine.stop().await;
    let err = engine.call("restart::ping", json!({})).await.unwrap_err();
    assert_error(&err, "function_not_found");

    let engine = LoopbackEngine::start_with(port, store).await;
    let function = engine
        .wait_for_function("restart::ping", RECONNECT_WAIT)
        .await
        .expect("re-registered after the restart");
    assert_eq!(function.worker_name.as_deref(), Some(name.as_str()));
    assert_eq!(
        engine.call("restart::ping", json!({})).await.unwrap(),
        json!("pong")
    );

    // a dropped connection is recovered the same way
    assert!(engine.disconnect_worker(&name));
    assert!(engine.function("restart::ping").is_none());
    assert!(
        engine
            .wait_for_function("restart::ping", RECONNECT_WAIT)
            .await
            .is_some()
    );
    assert_eq!(
        engine.call("restart::ping", json!({})).await.unwrap(),
        json!("pong")
    );

    worker.shutdown_async().await;
    engine.stop().await;
}
