//! Test fixtures shared by the unit tests: a jailed context over a temp dir.

use crate::catalog::Catalog;

use crate::function::Ctx;

use crate::config::Config;
use crate::error::WireError;
use crate::function::FunctionDef;
use crate::runtime::Runtime;
use crate::services::Services;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

/// A temp directory used as the only jail root.
pub struct Jail {
    pub dir: TempDir,
    /// The change journal's directory (outside the jail).
    pub journal: TempDir,
    pub root: PathBuf,
    pub services: Arc<Services>,
}

impl Default for Jail {
    fn default() -> Self {
        Self::with(|_| {})
    }
}

impl Jail {
    pub fn new() -> Jail {
        Self::default()
    }

    /// A jail whose config is adjusted by `tweak` first.
    pub fn with(tweak: impl FnOnce(&mut Config)) -> Jail {
        let dir = TempDir::new().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical temp dir");
        let mut cfg = Config::zero_config();
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![root.clone()];
        cfg.fs.denylist_paths = vec![root.join("denied")];
        let journal = TempDir::new().expect("journal dir");
        cfg.turns.data_dir = journal.path().to_path_buf();
        tweak(&mut cfg);
        let services = Services::standalone(Runtime::build(cfg).expect("runtime"));
        Jail {
            dir,
            journal,
            root,
            services,
        }
    }

    pub fn ctx(&self) -> Ctx {
        Ctx::new(self.services.clone())
    }

    /// Write a file (parents created) relative to the root.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, content).expect("write");
        p
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).expect("read")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Call a catalog function; Ok(value) or Err((code, message)).
    pub async fn call(&self, id: &str, payload: Value) -> Result<Value, (String, String)> {
        Catalog::standard()
            .call(&self.services, id, payload)
            .await
            .map_err(|e| (e.code, e.message))
    }

    pub fn exists(&self, rel: &str) -> bool {
        Path::new(&self.root.join(rel)).exists()
    }
}

/// The redaction check: a denied path and a missing path fail with the same
/// code and the same message modulo the path.
pub fn assert_redacted(
    denied: Result<Value, (String, String)>,
    denied_raw: &str,
    missing: Result<Value, (String, String)>,
    missing_raw: &str,
) {
    let (dc, dm) = denied.expect_err("denied path must fail");
    let (mc, mm) = missing.expect_err("missing path must fail");
    assert_eq!(dc, mc, "codes differ: denied {dm:?} vs missing {mm:?}");
    // the quoted path as messages carry it (a bare replace would also hit
    // a glob that names the same text)
    assert_eq!(
        dm.replace(&format!("{denied_raw:?}"), "<P>"),
        mm.replace(&format!("{missing_raw:?}"), "<P>"),
        "messages differ"
    );
}

/// The error of entry `i` of a coder batch answer, as `Err((code, message))`
/// (for [`assert_redacted`] over the entries of a batch that answered: one
/// where another entry succeeded). A batch whose every entry failed fails
/// the call itself: compare those call results directly. Panics when the
/// entry has no error.
pub fn entry_error(v: &Value, i: usize) -> Result<Value, (String, String)> {
    let e = &v["results"][i]["error"];
    let code = e["code"].as_str();
    let message = e["message"].as_str();
    match (code, message) {
        (Some(code), Some(message)) => Err((code.to_string(), message.to_string())),
        _ => panic!("entry {i} carries no error: {v}"),
    }
}

/// Whether `pid` is a running process. A zombie still answers `kill(pid, 0)`,
/// so its state in `/proc` is read instead; a zombie or a missing entry is
/// not running.
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Fields this worker adds to the published shapes (all optional): the
/// change history's ids, and `note` (an answer saying why it may surprise:
/// include globs that matched no file).
const ADDITIVE: [&str; 4] = ["turn_id", "session_id", "change_id", "note"];

/// Fields this worker adds to one published shape only (the `properties`
/// they sit in, the field): the failed-entry count of a batch answer
/// (`crate::batch`), which only `shell::fs::sed` of the published
/// functions is.
const ADDED_AT: [(&str, &str); 1] = [("shell::fs::sed response_schema/properties", "failed")];

/// Descriptions reworded on purpose (same shape), each with the words the
/// new one must hold: the globs of `shell::fs::grep`/`sed` match relative
/// to `path`, which the published text left unsaid.
const REWORDED: [(&str, &str); 4] = [
    (
        "shell::fs::grep request_schema/properties/include_glob/description",
        "relative to `path`",
    ),
    (
        "shell::fs::grep request_schema/properties/exclude_glob/description",
        "relative to `path`",
    ),
    (
        "shell::fs::sed request_schema/properties/include_glob/description",
        "relative to `path`",
    ),
    (
        "shell::fs::sed request_schema/properties/exclude_glob/description",
        "relative to `path`",
    ),
];

/// Enum values this worker adds on purpose (the path's end, the value): a
/// session an agent started and drives by pulling reads as `running`, not
/// as `detached` (the console's "nobody is watching").
const EXTENDED_ENUMS: [(&str, &str); 1] = [("$defs/SessionStatus/oneOf[0]/enum", "running")];

/// A property schema as the contract publishes it (draft-07), as ide
/// registers it: an optional request field (`request`) or a response field.
pub fn as_registered(property: Value, request: bool) -> Value {
    let side = if request {
        crate::schema::Side::Request { strict: false }
    } else {
        crate::schema::Side::Response
    };
    let wrapped = serde_json::json!({"type": "object", "properties": {"p": property}});
    crate::schema::to_2020_12(wrapped, side)["properties"]["p"].clone()
}

/// Published draft-07 `definitions`, as ide registers them (`$defs`).
pub fn defs_as_registered(definitions: Value, request: bool) -> Value {
    let side = if request {
        crate::schema::Side::Request { strict: false }
    } else {
        crate::schema::Side::Response
    };
    let wrapped = serde_json::json!({"type": "object", "definitions": definitions});
    crate::schema::to_2020_12(wrapped, side)["$defs"].clone()
}

/// Differences between two schema values. Numbers compare by value
/// (schemars writes `0.0` where the published page shows `0`); the change
/// history's optional fields may appear on our side only.
fn schema_diffs(a: &Value, b: &Value, at: &str, diffs: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => schema_diffs(p, q, &format!("{at}/{k}"), diffs),
                    (Some(_), None)
                        if at.ends_with("/properties") && ADDITIVE.contains(&k.as_str()) => {}
                    (Some(_), None) if ADDED_AT.contains(&(at, k.as_str())) => {}
                    _ => diffs.push(format!("{at}/{k} present on one side only")),
                }
            }
        }
        (Value::Array(x), Value::Array(y))
            if EXTENDED_ENUMS.iter().any(|(end, v)| {
                at.ends_with(end) && x.len() == y.len() + 1 && x.last() == Some(&Value::from(*v))
            }) =>
        {
            schema_diffs(&Value::from(x[..y.len()].to_vec()), b, at, diffs);
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                schema_diffs(p, q, &format!("{at}[{i}]"), diffs);
            }
        }
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => {}
        _ if a == b => {}
        (Value::String(ours), _)
            if REWORDED
                .iter()
                .any(|(path, words)| at == *path && ours.contains(words)) => {}
        _ => diffs.push(format!("{at}: {a} != {b}")),
    }
}

/// Assert that the catalog registers exactly the `count` functions of a
/// published contract fixture (`{functions: [{name, description,
/// metadata, request_schema, response_schema}]}`).
pub fn assert_matches_contract(fixture: &str, count: usize) {
    let contract: Value = serde_json::from_str(fixture).expect("contract fixture");
    let catalog = Catalog::standard();
    let published = contract["functions"].as_array().expect("functions");
    assert_eq!(published.len(), count);
    let mut diffs = Vec::new();
    for want in published {
        let id = want["name"].as_str().expect("name");
        let got = catalog
            .get(id)
            .unwrap_or_else(|| panic!("{id} not in the catalog"));
        let got = serde_json::json!({
            "description": got.description,
            "metadata": got.metadata,
            "request_schema": got.request_schema,
            "response_schema": got.response_schema,
        });
        // The contract publishes draft-07 schemas; ide registers the same
        // shapes in JSON Schema 2020-12 (crate::schema): the published one,
        // put through the same translation, must be what ide registers.
        let strict = got["request_schema"]["additionalProperties"] == false;
        let want = serde_json::json!({
            "description": want["description"],
            "metadata": want["metadata"],
            "request_schema": crate::schema::to_2020_12(
                want["request_schema"].clone(),
                crate::schema::Side::Request { strict },
            ),
            "response_schema": crate::schema::to_2020_12(
                want["response_schema"].clone(),
                crate::schema::Side::Response,
            ),
        });
        // A description may say more than the published one (which
        // parameters to send): it still holds the published text.
        let mut got = got;
        if let (Some(ours), Some(theirs)) =
            (got["description"].as_str(), want["description"].as_str())
            && ours.contains(theirs)
        {
            got["description"] = want["description"].clone();
        }
        for part in [
            "description",
            "metadata",
            "request_schema",
            "response_schema",
        ] {
            schema_diffs(&got[part], &want[part], &format!("{id} {part}"), &mut diffs);
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// Every call the unit tests make through the catalog is checked against
/// the function's registered schemas: a call the function answers without
/// error must have been a request its request schema accepts (engine
/// sidecar fields `_…` dropped, as the function drops them), and its answer
/// must match its response schema. A function whose schema drifts from what
/// it really accepts or returns fails whichever test calls it.
pub fn check_against_schemas(
    def: &FunctionDef,
    payload: &Value,
    answer: &Result<Value, WireError>,
) {
    let Ok(answer) = answer else { return };
    let compiled = validators(def);
    let (request, response) = (&compiled.0, &compiled.1);
    let payload = crate::function::as_seen(payload);
    for (side, validator, value) in [("request", request, &payload), ("answer", response, answer)] {
        let errors: Vec<String> = validator
            .iter_errors(value)
            .take(5)
            .map(|e| format!("{e} at `{}`", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{}: the {side} of a call answered without error does not match the registered \
             {side} schema: {}\n{side}: {}",
            def.id,
            errors.join("; "),
            truncated(value)
        );
    }
}

fn truncated(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(2000) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

type Validators = Arc<(jsonschema::Validator, jsonschema::Validator)>;

/// The compiled request and response validators of a function, compiled
/// once per test process.
fn validators(def: &FunctionDef) -> Validators {
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<&'static str, Validators>>,
    > = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(def.id)
        .or_insert_with(|| {
            let compile = |schema: &Value, side: &str| {
                jsonschema::draft202012::new(schema).unwrap_or_else(|e| {
                    panic!("{}: the {side} schema does not compile: {e}", def.id)
                })
            };
            Arc::new((
                compile(&def.request_schema, "request"),
                compile(&def.response_schema, "response"),
            ))
        })
        .clone()
}
