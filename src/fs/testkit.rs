//! Test fixtures for the `shell::fs::*` unit tests: a jail in a temp dir,
//! a directory outside it, a fake engine (in-memory channels and canned
//! `sandbox::fs::*` answers) and the redaction check every function runs.

use crate::catalog::Catalog;

use crate::ports::{Binding, Outbound};

use crate::config::Config;
use crate::error::WireError;
use crate::runtime::Runtime;
use crate::services::Services;
use crate::stream::memory::Pipes;
use crate::stream::{ByteSink, ByteSource, ContentRef, StreamError};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

pub const SANDBOX_ID: &str = "8c1c5c63-0a5e-4a5b-9e0e-0d7b0c1f2e3d";

/// A fake engine: channels are in-memory pipes; calls to `sandbox::*`
/// answer from a table and are recorded.
#[derive(Default)]
pub struct FakeEngine {
    pub pipes: Pipes,
    pub answers: Mutex<HashMap<String, Result<Value, WireError>>>,
    pub calls: Mutex<Vec<(String, Value)>>,
}

#[async_trait::async_trait]
impl Outbound for FakeEngine {
    async fn call(
        &self,
        function_id: &str,
        payload: Value,
        _timeout_ms: Option<u64>,
    ) -> Result<Value, WireError> {
        self.calls
            .lock()
            .unwrap()
            .push((function_id.to_string(), payload));
        self.answers
            .lock()
            .unwrap()
            .get(function_id)
            .cloned()
            .unwrap_or_else(|| {
                Err(WireError {
                    code: "function_not_found".into(),
                    message: format!("Function {function_id} not found"),
                })
            })
    }

    fn fire(&self, _binding: &Binding, _payload: Value) {}

    async fn create_outgoing_stream(&self) -> Result<(ContentRef, Box<dyn ByteSink>), StreamError> {
        let (w, r) = self.pipes.create(4);
        let sink = self.pipes.take_sink(&w).expect("fresh pipe");
        Ok((r, Box::new(sink)))
    }

    async fn open_incoming_stream(
        &self,
        channel: &ContentRef,
    ) -> Result<Box<dyn ByteSource>, StreamError> {
        self.pipes
            .take_source(channel)
            .map(|s| Box::new(s) as Box<dyn ByteSource>)
            .ok_or_else(|| StreamError("no such channel".into()))
    }
}

pub struct Kit {
    /// Owns the jail directory (deleted on drop).
    pub _dir: TempDir,
    pub outside: TempDir,
    /// The change journal's directory.
    pub _journal: TempDir,
    /// The jail root (canonical).
    pub root: PathBuf,
    pub engine: Arc<FakeEngine>,
    pub services: Arc<Services>,
    pub catalog: Catalog,
}

impl Kit {
    /// Jailed at a temp dir; `blocked/` is denylisted; default protected
    /// globs (`**/.env`, `**/secrets/**`, ...).
    pub fn jailed() -> Kit {
        Self::build(|cfg, root| {
            cfg.fs.allow_unjailed = false;
            cfg.fs.host_roots = vec![root.to_path_buf()];
        })
    }

    /// Unjailed (absolute paths only), same denylist and globs.
    pub fn unjailed() -> Kit {
        Self::build(|_, _| {})
    }

    pub fn build(tune: impl FnOnce(&mut Config, &std::path::Path)) -> Kit {
        let dir = TempDir::new().unwrap();
        let outside = TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut cfg = Config::zero_config();
        cfg.fs.denylist_paths = vec![root.join("blocked")];
        tune(&mut cfg, &root);
        Self::with_config(dir, outside, root, cfg)
    }

    pub fn with_config(dir: TempDir, outside: TempDir, root: PathBuf, mut cfg: Config) -> Kit {
        let journal = TempDir::new().unwrap();
        cfg.turns.data_dir = journal.path().to_path_buf();
        let engine = Arc::new(FakeEngine::default());
        let services = Arc::new(Services::new(
            Runtime::build(cfg).unwrap(),
            None,
            Some(engine.clone() as Arc<dyn Outbound>),
        ));
        Kit {
            _dir: dir,
            outside,
            _journal: journal,
            root,
            engine,
            services,
            catalog: Catalog::standard(),
        }
    }

    /// The wire spelling of a root-relative path (absolute when unjailed).
    pub fn p(&self, rel: &str) -> String {
        if self.services.live.snapshot().policy.jail_roots().is_empty() {
            self.root.join(rel).to_string_lossy().into_owned()
        } else {
            rel.to_string()
        }
    }

    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn dir(&self, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    pub async fn call(&self, id: &str, payload: Value) -> Result<Value, WireError> {
        self.catalog.call(&self.services, id, payload).await
    }

    /// A successful answer, without its change-history ids (`change_id`
    /// is random per change; the journal's own tests check it), so the
    /// shape tests compare the rest exactly.
    pub async fn ok(&self, id: &str, payload: Value) -> Value {
        match self.call(id, payload.clone()).await {
            Ok(mut v) => {
                strip_change_ids(&mut v);
                v
            }
            Err(e) => panic!("{id} {payload} failed: {e}"),
        }
    }

    pub async fn err(&self, id: &str, payload: Value) -> WireError {
        match self.call(id, payload.clone()).await {
            Ok(v) => panic!("{id} {payload} unexpectedly succeeded: {v}"),
            Err(e) => e,
        }
    }

    /// Make `sandbox::fs::<op>` answer `value`.
    pub fn sandbox_answers(&self, function_id: &str, value: Result<Value, WireError>) {
        self.engine
            .answers
            .lock()
            .unwrap()
            .insert(function_id.to_string(), value);
    }

    /// The payloads sent to the fake sandbox, in order.
    pub fn sandbox_calls(&self) -> Vec<(String, Value)> {
        self.engine.calls.lock().unwrap().clone()
    }

    /// Drain a channel whose reader ref a function returned.
    pub async fn drain(&self, reader: &Value) -> Vec<u8> {
        let r: ContentRef = serde_json::from_value(reader.clone()).unwrap();
        let mut src = self.engine.pipes.take_source(&r).expect("channel exists");
        let mut out = Vec::new();
        while let Some(chunk) = src.next_chunk().await.unwrap() {
            out.extend_from_slice(&chunk);
        }
        out
    }

    /// A channel a caller would upload through: returns the reader ref to
    /// pass in `content` and a task feeding `chunks` then closing.
    pub fn upload(&self, chunks: Vec<Vec<u8>>) -> Value {
        let (w, r) = self.engine.pipes.create(4);
        let mut sink = self.engine.pipes.take_sink(&w).unwrap();
        tokio::spawn(async move {
            for c in chunks {
                if sink.write(c).await.is_err() {
                    return;
                }
            }
        });
        serde_json::to_value(r).unwrap()
    }
}

/// Create the denied fixtures: a denylisted directory with a file, a
/// protected `.env` and a file under `secrets/`.
pub fn denied_fixtures(k: &Kit) -> Vec<String> {
    k.file("blocked/f.txt", "denied");
    k.file(".env", "SECRET=1");
    k.file("secrets/key.txt", "k");
    k.file("sub/.env", "SECRET=2");
    vec![
        k.p("blocked"),
        k.p("blocked/f.txt"),
        k.p(".env"),
        k.p("secrets/key.txt"),
        k.p("sub/.env"),
    ]
}

fn masked(e: &WireError, path: &str) -> (String, String) {
    (
        e.code.clone(),
        e.message.replace(&format!("{path:?}"), "<PATH>"),
    )
}

/// The redaction contract for one function: every denied path fails with
/// the same code and message as a missing path spelled the same way below
/// a missing directory (`nope/<path>`), modulo the path itself: the answer
/// depends on the spelling (a protected glob is named either way), never
/// on what exists. Checked jailed and unjailed. `make` builds the payload
/// for a path.
pub async fn redaction_holds(id: &str, make: impl Fn(&str) -> Value) {
    redaction_holds_with(id, "nope/missing.txt", make).await
}

/// A missing path spelled like the denied fixture `d`, below the missing
/// directory `dir` (`nope/.env` for `.env`): what `d` must read like.
pub fn missing_twin(k: &Kit, dir: &str, d: &str) -> String {
    let rel = Path::new(d)
        .strip_prefix(&k.root)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|_| d.to_string());
    k.p(&format!("{dir}/{rel}"))
}

/// Like [`redaction_holds`], with the plain missing path spelled `missing`
/// (its first component is the missing directory of the twins).
pub async fn redaction_holds_with(id: &str, missing: &str, make: impl Fn(&str) -> Value) {
    let dir = missing.split('/').next().unwrap_or("nope");
    for k in [Kit::jailed(), Kit::unjailed()] {
        let denied = denied_fixtures(&k);
        let plain = k.p(missing);
        let m = k.err(id, make(&plain)).await;
        assert_eq!(m.code, "S211", "{id}: missing path gave {m}");
        for d in denied {
            let twin = missing_twin(&k, dir, &d);
            let want = masked(&k.err(id, make(&twin)).await, &twin);
            assert_eq!(want.0, "S211", "{id}: missing twin {twin} gave {want:?}");
            let e = k.err(id, make(&d)).await;
            assert_eq!(
                masked(&e, &d),
                want,
                "{id}: denied {d} differs from the missing {twin}"
            );
        }
    }
}

fn strip_change_ids(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("change_id");
            m.values_mut().for_each(strip_change_ids);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_change_ids),
        _ => {}
    }
}

pub fn sandbox_target() -> Value {
    json!({"kind": "sandbox", "sandbox_id": SANDBOX_ID})
}
