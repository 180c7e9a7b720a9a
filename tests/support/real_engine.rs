//! A real iii engine process, for the end-to-end tests.
//!
//! Started from the binary named by `IDE_TEST_ENGINE` on a free loopback
//! port, in a fresh data directory (its configuration store is
//! `DATA/config/<id>.yaml`), with telemetry, update checks and built-in
//! daemons off. It is stopped by its pid (TERM, then KILL) when the test
//! stops or drops it. Its output goes to a log file in the data directory;
//! when a test fails the log is printed and the directory is kept.
//!
//! What the engine itself can tell (registered functions, trigger types,
//! workers, stored values) is read through its own public functions
//! (`engine::functions::info`, `engine::triggers::info`,
//! `engine::workers::list`, `configuration::get {raw: true}`), called by a
//! test client connected under a unique worker name.

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iii_sdk::IIIClient;
use iii_sdk::protocol::{ErrorBody, TriggerRequest};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::time::Instant;

use super::engine::{RegisteredFunction, RegisteredTriggerType, connect_worker, unique_name};

/// Names the engine binary; unset means the loopback stand-in.
pub const ENGINE_VAR: &str = "IDE_TEST_ENGINE";
/// How long a start may take before the test gives up (a debug build
/// starts in well under a second).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a TERM may take before the engine is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Poll interval for state the engine only offers by asking.
const POLL: Duration = Duration::from_millis(50);

/// The engine binary named by [`ENGINE_VAR`], if set and not blank.
pub fn engine_binary() -> Option<PathBuf> {
    std::env::var_os(ENGINE_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// An engine's data directory: its configuration store and its logs. Keep
/// it to restart an engine over the same stored values.
#[derive(Clone)]
pub struct DataDir(Arc<TempDir>);

impl DataDir {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("ide-e2e-engine-")
            .tempdir()
            .expect("engine data dir");
        std::fs::create_dir_all(dir.path().join("config")).expect("config dir");
        DataDir(Arc::new(dir))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    fn entry(&self, id: &str) -> PathBuf {
        self.path().join("config").join(format!("{id}.yaml"))
    }

    /// Write a stored value as the engine's `fs` adapter keeps it (one YAML
    /// file per id; JSON is YAML). Before a start this is a value that was
    /// on disk; under a running engine it is a hand edit, which the engine
    /// picks up (debounced by about 500 ms) and validates against the
    /// registered schema, if it knows one.
    pub fn write_value(&self, id: &str, value: &Value) {
        let path = self.entry(id);
        // keep the entry's name and description when the engine wrote it
        let mut doc: Value = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_norway::from_slice(&b).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({"id": id, "name": id, "description": ""}));
        doc["value"] = value.clone();
        let tmp = path.with_extension("yaml.edit");
        std::fs::write(&tmp, doc.to_string()).expect("write config entry");
        std::fs::rename(&tmp, &path).expect("rename config entry");
    }

    /// Remove a stored value (the engine fires `configuration:deleted`).
    pub fn remove_value(&self, id: &str) -> bool {
        std::fs::remove_file(self.entry(id)).is_ok()
    }
}

impl Default for DataDir {
    fn default() -> Self {
        Self::new()
    }
}

/// A running engine process.
pub struct RealEngine {
    bin: PathBuf,
    port: u16,
    data: DataDir,
    log: PathBuf,
    child: Mutex<Option<Child>>,
    client: IIIClient,
    /// Workers that were there before any test worker connected (the
    /// engine's own modules): their functions are not "registered by a
    /// worker".
    builtin_workers: Vec<String>,
}

impl RealEngine {
    /// Start `bin` on `port` (0: a free one) over `data`.
    pub async fn start(bin: &Path, port: u16, data: DataDir) -> RealEngine {
        Self::start_with_workers(bin, port, data, |_| String::new()).await
    }

    /// [`start`](Self::start) with more entries in the engine's `workers:`
    /// list: `extra(port)` gives them (YAML list items at two spaces'
    /// indent) for the port the engine's main listener got.
    pub async fn start_with_workers(
        bin: &Path,
        port: u16,
        data: DataDir,
        extra: impl Fn(u16) -> String,
    ) -> RealEngine {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let chosen = if port == 0 { free_port() } else { port };
            match Self::try_start(bin, chosen, data.clone(), &extra(chosen)).await {
                Ok(engine) => return engine,
                // a free port can be taken between the probe and the bind
                Err(log) if port == 0 && attempts < 3 => {
                    eprintln!("engine did not start on {chosen}, trying another port:\n{log}");
                }
                Err(log) => panic!("the iii engine did not start on port {chosen}:\n{log}"),
            }
        }
    }

    async fn try_start(
        bin: &Path,
        port: u16,
        data: DataDir,
        extra: &str,
    ) -> Result<RealEngine, String> {
        let dir = data.path().to_path_buf();
        std::fs::write(
            dir.join("config.yaml"),
            format!(
                "workers:\n  - name: iii-worker-manager\n    config: {{host: 127.0.0.1, port: {port}}}\n  \
                 - name: configuration\n    config: {{adapter: {{name: fs, config: {{directory: ./config}}}}, ttl_seconds: 0}}\n  \
                 - name: iii-telemetry\n    config: {{enabled: false}}\n{extra}"
            ),
        )
        .map_err(|e| e.to_string())?;
        let n = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(Result::ok).count())
            .unwrap_or(0);
        let log = dir.join(format!("engine-{n}.log"));
        let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .args(["--no-update-check", "--config", "config.yaml"])
            .current_dir(&dir)
            .env("HOME", &dir)
            .env("III_TELEMETRY_ENABLED", "false")
            .env("IIIWORKER_DISABLE_BUILTIN_DAEMONS", "1")
            .env_remove("III_URL")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let mut child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(c) = child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                return Err(format!(
                    "exited with {status}:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                if let Some(c) = child.take() {
                    terminate(c);
                }
                return Err(format!(
                    "port {port} not open within {START_TIMEOUT:?}:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
        let client = connect_worker(
            &format!("ws://127.0.0.1:{port}"),
            &unique_name("e2e-caller"),
        );
        let engine = RealEngine {
            bin: bin.to_path_buf(),
            port,
            data,
            log,
            child: Mutex::new(child),
            client,
            builtin_workers: Vec::new(),
        };
        // ready once the configuration worker answers
        let ready = engine
            .poll(START_TIMEOUT, || async {
                match engine
                    .call(
                        "configuration::get",
                        json!({"id": "ide-e2e-probe"}),
                        POLL * 20,
                    )
                    .await
                {
                    Err(e) if e.code == "NOT_FOUND" => Some(()),
                    Ok(_) => Some(()),
                    Err(_) => None,
                }
            })
            .await;
        if ready.is_none() {
            return Err(format!(
                "the configuration worker never answered:\n{}",
                engine.log_text()
            ));
        }
        let mut engine = engine;
        engine.builtin_workers = engine
            .function_list()
            .await
            .iter()
            .filter_map(|f| f["worker_name"].as_str().map(str::to_string))
            .collect();
        Ok(engine)
    }

    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn data(&self) -> DataDir {
        self.data.clone()
    }

    pub fn binary(&self) -> &Path {
        &self.bin
    }

    pub fn pid(&self) -> Option<u32> {
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(Child::id)
    }

    /// Everything the engine printed so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Call a function as a worker connected to this engine would.
    pub async fn call(
        &self,
        function_id: &str,
        payload: Value,
        timeout: Duration,
    ) -> Result<Value, ErrorBody> {
        let mut req = TriggerRequest::new(function_id, payload);
        req.timeout_ms = Some(timeout.as_millis() as u64);
        match tokio::time::timeout(timeout + Duration::from_secs(1), self.client.trigger(req)).await
        {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(iii_sdk::Error::Remote { code, message, .. })) => {
                Err(ErrorBody::new(code, message))
            }
            Ok(Err(iii_sdk::Error::Timeout)) | Err(_) => Err(ErrorBody::new(
                "TIMEOUT",
                format!("no answer from {function_id} within {timeout:?}"),
            )),
            Ok(Err(other)) => Err(ErrorBody::new("sdk_error", other.to_string())),
        }
    }

    /// Poll `probe` until it returns `Some` or `timeout` passes.
    pub async fn poll<T, F, Fut>(&self, timeout: Duration, probe: F) -> Option<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = probe().await {
                return Some(v);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Function `id` as the engine reports it (`engine::functions::info`).
    pub async fn function(&self, id: &str) -> Option<RegisteredFunction> {
        let v = self
            .call(
                "engine::functions::info",
                json!({"function_id": id}),
                Duration::from_secs(10),
            )
            .await
            .ok()?;
        Some(function_of(&v))
    }

    /// Functions registered by workers other than the engine and this test
    /// client, with their schemas, sorted by id.
    pub async fn functions(&self) -> Vec<RegisteredFunction> {
        let ids: Vec<String> = self
            .function_list()
            .await
            .iter()
            .filter(|f| {
                let worker = f["worker_name"].as_str().unwrap_or_default();
                !worker.starts_with("e2e-caller")
                    && !self.builtin_workers.iter().any(|b| b == worker)
            })
            .filter_map(|f| f["function_id"].as_str().map(str::to_string))
            .collect();
        let mut out = Vec::new();
        for batch in ids.chunks(32) {
            let Ok(info) = self
                .call(
                    "engine::functions::info",
                    json!({"function_ids": batch}),
                    Duration::from_secs(10),
                )
                .await
            else {
                continue;
            };
            for f in info["functions"].as_array().into_iter().flatten() {
                if f.get("error").is_none() {
                    out.push(function_of(f));
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// `engine::functions::list`, internal functions included.
    async fn function_list(&self) -> Vec<Value> {
        self.call(
            "engine::functions::list",
            json!({"include_internal": true}),
            Duration::from_secs(10),
        )
        .await
        .ok()
        .and_then(|v| v["functions"].as_array().cloned())
        .unwrap_or_default()
    }

    /// Trigger type `id` as the engine reports it (`engine::triggers::info`).
    pub async fn trigger_type(&self, id: &str) -> Option<RegisteredTriggerType> {
        let v = self
            .call(
                "engine::triggers::info",
                json!({"id": id}),
                Duration::from_secs(10),
            )
            .await
            .ok()?;
        let worker = v["worker_name"].as_str().map(str::to_string);
        Some(RegisteredTriggerType {
            id: v["id"].as_str().unwrap_or(id).to_string(),
            description: v["description"].as_str().unwrap_or_default().to_string(),
            trigger_request_format: v.get("configuration_schema").cloned(),
            call_request_format: v.get("request_schema").cloned(),
            builtin: worker.as_deref() == Some("engine"),
            provided_by: worker,
        })
    }

    /// Names of the connected workers (`engine::workers::list`).
    pub async fn workers(&self) -> Vec<String> {
        let Ok(v) = self
            .call("engine::workers::list", json!({}), Duration::from_secs(10))
            .await
        else {
            return Vec::new();
        };
        let mut names: Vec<String> = v["workers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|w| w["status"].as_str().is_none_or(|s| s == "connected"))
            .filter_map(|w| w["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }

    /// The stored value of `id`, verbatim (`configuration::get {raw: true}`).
    pub async fn stored_value(&self, id: &str) -> Option<Value> {
        self.call(
            "configuration::get",
            json!({"id": id, "raw": true}),
            Duration::from_secs(10),
        )
        .await
        .ok()
        .map(|v| v["value"].clone())
    }

    /// Stop the process by its pid and wait until the port is free.
    pub async fn stop(&self) {
        self.client.shutdown_async().await;
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(child) = child {
            tokio::task::spawn_blocking(move || terminate(child))
                .await
                .ok();
        }
        let deadline = Instant::now() + STOP_GRACE;
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for RealEngine {
    fn drop(&mut self) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(child) = child {
            terminate(child);
        }
        if std::thread::panicking() {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "---- iii engine log ({}) ----\n{}\n---- end of engine log; data dir kept at {} ----",
                self.log.display(),
                self.log_text(),
                self.data.path().display()
            );
            keep(&self.data);
        }
    }
}

/// Keep a failed test's data directory for inspection.
fn keep(data: &DataDir) {
    // leak one reference: the TempDir is never dropped, so never removed
    std::mem::forget(data.0.clone());
}

/// TERM, wait up to the grace, then KILL; always reaps the child.
fn terminate(mut child: Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let deadline = std::time::Instant::now() + STOP_GRACE;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn function_of(v: &Value) -> RegisteredFunction {
    RegisteredFunction {
        id: v["function_id"].as_str().unwrap_or_default().to_string(),
        description: v["description"].as_str().map(str::to_string),
        request_format: v.get("request_schema").cloned(),
        response_format: v.get("response_schema").cloned(),
        metadata: v.get("metadata").cloned(),
        worker_name: v["worker_name"].as_str().map(str::to_string),
        worker_id: String::new(),
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
