//! The one function table, at the top of the house.
//!
//! Every function is listed once here; each is described by its own module
//! (id, description, metadata, request/response schemas, handler, built with
//! [`crate::function`]). The bus registers exactly this table with the
//! engine, `ide call` runs the same handlers in-process, `ide functions`
//! prints it, and the end-to-end tests compare what the engine received with
//! it. Adding a function means one module and one line in
//! [`Catalog::standard`].

use crate::error::WireError;
use crate::function::{Ctx, FunctionDef, TriggerTypeDef};
use crate::services::Services;
use serde_json::Value;
use std::sync::Arc;

/// The function table (and the trigger types this worker provides).
pub struct Catalog {
    defs: Vec<FunctionDef>,
    trigger_types: Vec<TriggerTypeDef>,
}

impl Catalog {
    /// Every function this worker serves.
    pub fn standard() -> Catalog {
        let mut defs = vec![
            crate::coder::info::def(),
            crate::coder::read_file::def(),
            crate::coder::list_folder::def(),
            crate::coder::tree::def(),
            crate::coder::create_file::def(),
            crate::coder::update_file::def(),
            crate::coder::delete_file::def(),
            crate::coder::move_file::def(),
            crate::coder::search::def(),
            crate::coder::symbols::def(),
            crate::coder::find_symbol::def(),
            crate::coder::references::def(),
            crate::coder::definition::def(),
            crate::coder::hover::def(),
            crate::coder::diagnostics::def(),
            crate::coder::rename::def(),
            crate::coder::map::def(),
            crate::coder::change_diff::def(),
            crate::turns::list::def(),
            crate::turns::revert::def(),
            crate::control::config_status::def(),
            crate::control::on_config_change::def(),
            crate::exec::foreground::def(),
            crate::exec::background::def(),
            crate::exec::status::def(),
            crate::exec::list::def(),
            crate::exec::kill::def(),
            crate::fs::ls::def(),
            crate::fs::stat::def(),
            crate::fs::read::def(),
            crate::fs::write::def(),
            crate::fs::mkdir::def(),
            crate::fs::rm::def(),
            crate::fs::chmod::def(),
            crate::fs::mv::def(),
            crate::fs::grep::def(),
            crate::fs::sed::def(),
        ];
        defs.extend([
            crate::workspace::roots::def(),
            crate::workspace::list::def(),
            crate::workspace::validate::def(),
            crate::workspace::read_bytes::def(),
        ]);
        defs.push(crate::ui::def());
        defs.extend([
            crate::pty::open::def(),
            crate::pty::write::def(),
            crate::pty::resize::def(),
            crate::pty::attach::def(),
            crate::pty::detach::def(),
            crate::pty::close::def(),
            crate::pty::adopt::def(),
            crate::pty::sessions::def(),
            crate::pty::start::def(),
            crate::pty::send::def(),
            crate::pty::read::def(),
            crate::pty::screen::def(),
            crate::pty::stop::def(),
        ]);
        let trigger_types = vec![
            crate::exec::job_finished::trigger_type(),
            crate::watch::changed::trigger_type(),
        ];
        Catalog {
            defs,
            trigger_types,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &FunctionDef> {
        self.defs.iter()
    }

    pub fn trigger_types(&self) -> impl Iterator<Item = &TriggerTypeDef> {
        self.trigger_types.iter()
    }

    pub fn get(&self, id: &str) -> Option<&FunctionDef> {
        self.defs.iter().find(|d| d.id == id)
    }

    /// Run one function against the current snapshot.
    pub async fn call(
        &self,
        services: &Arc<Services>,
        id: &str,
        payload: Value,
    ) -> Result<Value, WireError> {
        self.call_in(Ctx::new(services.clone()), id, payload).await
    }

    /// Run one function in a given context ([`Ctx::unjournaled`]).
    pub async fn call_in(&self, ctx: Ctx, id: &str, payload: Value) -> Result<Value, WireError> {
        let def = self.get(id).ok_or_else(|| WireError {
            code: "function_not_found".into(),
            message: format!("Function {id} not found; `ide functions` lists the catalog"),
        })?;
        #[cfg(test)]
        let sent = payload.clone();
        let answer = (def.handler)(ctx, payload).await;
        #[cfg(test)]
        crate::testkit::check_against_schemas(def, &sent, &answer);
        answer
    }

    /// One function's (or trigger type's) entry, as [`Catalog::to_json`]
    /// prints it (`ide functions <id>`).
    pub fn entry_json(&self, id: &str) -> Option<Value> {
        let all = self.to_json();
        ["functions", "trigger_types"]
            .iter()
            .find_map(|k| all[k].as_array()?.iter().find(|e| e["id"] == id).cloned())
    }

    /// `ide functions --brief`: one line per function and trigger type —
    /// the id, `[internal]` for console plumbing agents need not call, the
    /// sentence that says what it does, and the parameters a call must
    /// send: enough to choose a function and call it, for the whole
    /// catalog in a few kilobytes (`ide functions <id>` has the rest).
    pub fn brief(&self) -> String {
        let mut out = String::new();
        for d in &self.defs {
            out.push_str(&brief_line(d));
        }
        for t in &self.trigger_types {
            out.push_str(&format!(
                "{} [trigger type]  {}\n",
                t.id,
                summary(t.description)
            ));
        }
        out.push_str(
            "\nEvery coder::* function also takes an optional `base_dir` (a session working \
             directory). `ide functions <id>` prints one function's description and request \
             schema (`--response` adds what it answers).\n",
        );
        out
    }

    /// `ide functions <id>`: the function's description, flags and request
    /// schema, and its response schema only with `response` (a trigger
    /// type's entry is printed whole).
    pub fn entry_for_reading(&self, id: &str, response: bool) -> Option<Value> {
        let mut entry = self.entry_json(id)?;
        if !response && let Value::Object(m) = &mut entry {
            m.remove("response_schema");
        }
        Some(entry)
    }

    /// The functions an agent may call: every function not marked
    /// internal. Internal ones are the console's plumbing (terminal panes,
    /// the picker, the page's assets) and the policy's own hook
    /// (`shell::on-config-change`); agents never need them.
    pub fn agent_functions(&self) -> impl Iterator<Item = &FunctionDef> {
        self.defs.iter().filter(|d| d.metadata["internal"] != true)
    }

    /// The engine configuration of an agent-safe deployment
    /// (`deploy/engine-agents.yaml`, `ide functions --rbac`): the trusted
    /// listener for ide, the console and operators, and a second listener
    /// for agents whose RBAC exposes exactly [`Catalog::agent_functions`] —
    /// not `configuration::set` (which could widen `host_roots`), not the
    /// console's internals, not the engine's own functions.
    pub fn agent_engine_config(&self) -> String {
        let mut out = String::from(AGENT_CONFIG_HEAD);
        for d in self.agent_functions() {
            out.push_str(&format!("          - match(\"{}\")\n", d.id));
        }
        out.push_str("\n# ide's internal functions, not exposed to agents:\n");
        for d in self.defs.iter().filter(|d| d.metadata["internal"] == true) {
            out.push_str(&format!("#   {}\n", d.id));
        }
        out
    }

    /// The catalog as printed by `ide functions`: exactly what is registered.
    pub fn to_json(&self) -> Value {
        let functions: Vec<Value> = self
            .defs
            .iter()
            .map(|d| {
                serde_json::json!({
                    "id": d.id,
                    "description": d.description,
                    "metadata": d.metadata,
                    "request_schema": d.request_schema,
                    "response_schema": d.response_schema,
                })
            })
            .collect();
        let triggers: Vec<Value> = self
            .trigger_types
            .iter()
            .map(|t| {
                serde_json::json!({
                    "id": t.id,
                    "description": t.description,
                    "config_schema": t.config_schema,
                    "payload_schema": t.payload_schema,
                })
            })
            .collect();
        serde_json::json!({ "functions": functions, "trigger_types": triggers })
    }
}

/// The part of [`Catalog::agent_engine_config`] before the list of
/// exposed functions.
const AGENT_CONFIG_HEAD: &str = "\
# An iii engine configuration under which agents can call ide's agent
# functions and nothing else. Generated from ide's catalog
# (`ide functions --rbac`); a test keeps this file equal to it.
#
# Two listeners (the engine's worker manager, once per port):
# - 49134, trusted: the ide worker itself, the console, the operator's CLI.
#   Bind it where agents cannot reach it (here: loopback only, and run the
#   agent where it cannot open loopback sockets, or in another network
#   namespace or host).
# - 49135, for agents (an MCP bridge, an agent's SDK client): a connection
#   there may call only the functions listed under expose_functions, which
#   are ide's non-internal functions. Not exposed, so refused with FORBIDDEN:
#   configuration::set/get (the policy: host_roots, denylists), ide's
#   internal functions (listed at the end), and the engine's own functions
#   (engine::*) but the few every connection needs (channels, worker
#   registration, logs, baggage), which the engine always allows.
#
# Merge these entries into your engine's `workers:` list (declaring a
# worker manager replaces the default listener, so both are needed), keep
# your other workers (configuration, telemetry, ...) as they are, and
# start ide on the trusted port: `ide --url ws://127.0.0.1:49134`.
#
# Limits to know:
# - Without an `auth_function_id`, a connection on the agent port may still
#   register functions and trigger bindings of its own (bindings can only
#   target exposed functions). Add an auth function that answers
#   `allow_function_registration: false` to forbid that too.
# - Engines whose RBAC rules take a namespace match a rule without one in
#   the `default` namespace only: with ide in a namespace, add
#   `namespace: <ns>` to each rule (`{match: \"coder::info\", namespace: <ns>}`).
workers:
  - name: iii-worker-manager
    config:
      host: 127.0.0.1
      port: 49134
  - name: iii-worker-manager
    config:
      host: 127.0.0.1
      port: 49135
      rbac:
        expose_functions:
";

/// The sentence of a description that says what the function does: its
/// first, or its second when the first only lists the parameters
/// ("Takes `path` (a file).").
pub fn summary(description: &str) -> &str {
    fn first_sentence(text: &str) -> (&str, &str) {
        let end = text
            .char_indices()
            .find(|&(i, c)| c == '.' && text[i + 1..].starts_with([' ', '\n']))
            .map_or(text.len(), |(i, _)| i + 1);
        (text[..end].trim(), text[end..].trim_start())
    }
    let (first, rest) = first_sentence(description);
    if first.starts_with("Takes ") && !rest.is_empty() {
        first_sentence(rest).0
    } else {
        first
    }
}

/// Optional parameters a brief line names (the rest are counted).
const BRIEF_OPTIONAL: usize = 6;

/// One function's line of the brief catalog.
fn brief_line(d: &FunctionDef) -> String {
    let internal = if d.metadata["internal"] == true {
        " [internal]"
    } else {
        ""
    };
    let required: Vec<&str> = d.request_schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    // `base_dir` (every coder::* function) is said once, below the list
    let optional: Vec<&str> = d.request_schema["properties"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.keys())
        .map(String::as_str)
        .filter(|p| !required.contains(p) && *p != "base_dir")
        .collect();
    let mut parts = Vec::new();
    if !required.is_empty() {
        parts.push(format!("required: {}", required.join(", ")));
    }
    if optional.len() > BRIEF_OPTIONAL {
        parts.push(format!(
            "optional: {}, +{} more",
            optional[..BRIEF_OPTIONAL].join(", "),
            optional.len() - BRIEF_OPTIONAL
        ));
    } else if !optional.is_empty() {
        parts.push(format!("optional: {}", optional.join(", ")));
    }
    let send = if parts.is_empty() {
        "  (no parameters)".to_string()
    } else {
        format!("  ({})", parts.join("; "))
    };
    format!(
        "{}{internal}  {}{send}\n",
        d.id,
        clip(summary(d.description), BRIEF_SUMMARY)
    )
}

/// Bytes of a description's first sentence a brief line keeps.
const BRIEF_SUMMARY: usize = 170;

/// `s` cut at a word boundary to at most `max` bytes, with `…` when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &s[..cut];
    let head = head.rsplit_once(' ').map_or(head, |(h, _)| h);
    format!("{}…", head.trim_end_matches([',', ';', ':']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::Runtime;
    use serde_json::json;

    fn services() -> Arc<Services> {
        Services::standalone(Runtime::build(Config::zero_config()).unwrap())
    }

    #[test]
    fn every_function_has_a_description_and_object_schemas() {
        let c = Catalog::standard();
        let mut seen = std::collections::HashSet::new();
        for d in c.iter() {
            assert!(seen.insert(d.id), "duplicate id {}", d.id);
            assert!(d.description.len() > 20, "{} lacks a description", d.id);
            assert_eq!(d.request_schema["type"], "object", "{}", d.id);
            assert_eq!(d.request_schema["$schema"], crate::schema::DIALECT);
            assert!(d.response_schema.is_object(), "{}", d.id);
        }
    }

    #[tokio::test]
    async fn engine_sidecar_fields_are_accepted_and_unknown_fields_refused() {
        let c = Catalog::standard();
        let s = services();
        let ok = c
            .call(&s, "coder::info", json!({"_caller_worker_id": "w-1"}))
            .await
            .unwrap();
        assert_eq!(ok["mode"], "unjailed");
        let err = c
            .call(&s, "coder::info", json!({"bogus": 1}))
            .await
            .unwrap_err();
        assert_eq!(err.code, "C210");
        assert!(err.message.contains("bogus"));
        let err = c
            .call(&s, "shell::config-status", json!([1]))
            .await
            .unwrap_err();
        assert_eq!(err.code, "S210");
    }

    /// The brief catalog names every function with what it does and what
    /// it needs, and the part an agent reads (the non-internal functions)
    /// stays within 10 KB; its size is printed with the full catalog's.
    #[test]
    fn the_brief_listing_names_every_function_in_a_few_kilobytes() {
        let c = Catalog::standard();
        let brief = c.brief();
        let mut agent_bytes = 0;
        for d in c.iter() {
            let line = brief
                .lines()
                .find(|l| l.split_whitespace().next() == Some(d.id))
                .unwrap_or_else(|| panic!("{} missing", d.id));
            for r in d.request_schema["required"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert!(line.contains(r.as_str().unwrap()), "{line}");
            }
            assert!(!line.contains("  Takes "), "{line}");
            if d.metadata["internal"] != true {
                agent_bytes += line.len() + 1;
            }
        }
        let full = c.to_json().to_string().len();
        let requests: usize = c
            .iter()
            .filter(|d| d.metadata["internal"] != true)
            .map(|d| d.request_schema.to_string().len() + d.description.len())
            .sum();
        println!(
            "catalog: brief {} bytes in all, {agent_bytes} bytes for the agent functions; \
             their descriptions and request schemas {requests} bytes; the full catalog {full} bytes",
            brief.len()
        );
        assert!(agent_bytes <= 10 * 1024, "{agent_bytes} bytes");
        assert!(brief.contains("shell::pty::open [internal]"));
        assert!(brief.contains("shell::changed [trigger type]"));
        assert!(brief.contains(
            "shell::fs::read  Stream a file: returns a ContentRef handle (channel_id/access_key) plus size/mode/mtime, NOT the text — for text use coder::read-file, which returns content inline.  (required: path; optional: target)"
        ), "{brief}");
        let one = c.entry_for_reading("coder::update-file", false).unwrap();
        assert_eq!(one["id"], "coder::update-file");
        assert!(one["request_schema"].is_object());
        assert!(one.get("response_schema").is_none());
        let with = c.entry_for_reading("coder::update-file", true).unwrap();
        assert!(with["response_schema"].is_object());
        assert!(c.entry_json("shell::job-finished").is_some());
        assert!(c.entry_json("coder::nope").is_none());
    }

    /// Everything a schema node must not be, and every object without
    /// `properties`, below `at`.
    fn loose_nodes(node: &Value, at: &str, out: &mut Vec<String>) {
        match node {
            Value::Object(m) => {
                if m.contains_key("definitions") {
                    out.push(format!("{at}: draft-07 `definitions`"));
                }
                if let Some(Value::String(r)) = m.get("$ref")
                    && !r.starts_with("#/$defs/")
                {
                    out.push(format!("{at}: $ref {r}"));
                }
                if let Some(Value::String(f)) = m.get("format")
                    && !["date-time", "date", "time", "uri", "uuid", "email"].contains(&f.as_str())
                {
                    out.push(format!("{at}: non-standard format {f}"));
                }
                if m.get("type") == Some(&json!("object")) && !m.contains_key("properties") {
                    out.push(format!("{at}: an object without `properties`"));
                }
                for (k, v) in m {
                    if !["enum", "const", "default", "examples", "required"].contains(&k.as_str()) {
                        loose_nodes(v, &format!("{at}/{k}"), out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    loose_nodes(v, &format!("{at}[{i}]"), out);
                }
            }
            _ => {}
        }
    }

    /// Every schema of the catalog as `ide functions` prints it: valid
    /// JSON Schema 2020-12 (by the meta-schema), `$defs` only, standard
    /// formats only, `properties` on every object, and every request that
    /// refuses undeclared fields says so at its top level.
    #[test]
    fn every_schema_is_strict_json_schema_2020_12() {
        let c = Catalog::standard();
        let printed = c.to_json();
        let mut problems = Vec::new();
        let mut schemas = 0;
        for (list, keys) in [
            ("functions", ["request_schema", "response_schema"]),
            ("trigger_types", ["config_schema", "payload_schema"]),
        ] {
            for entry in printed[list].as_array().unwrap() {
                for key in keys {
                    let schema = &entry[key];
                    let at = format!("{} {key}", entry["id"].as_str().unwrap());
                    schemas += 1;
                    if schema["$schema"] != crate::schema::DIALECT {
                        problems.push(format!("{at}: $schema {}", schema["$schema"]));
                    }
                    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                        problems.push(format!("{at}: not valid 2020-12: {e}"));
                    }
                    loose_nodes(schema, &at, &mut problems);
                }
            }
        }
        for d in c.iter() {
            let strict = d.request_schema["additionalProperties"] == false;
            if !strict && !EVENT_HANDLERS.contains(&d.id) {
                problems.push(format!("{}: the request schema allows any field", d.id));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        println!("{schemas} schemas checked");
    }

    /// Functions that take trigger payloads and ignore fields they do not
    /// use (the engine's events carry many); every other function refuses
    /// an undeclared field.
    const EVENT_HANDLERS: [&str; 1] = ["shell::on-config-change"];

    /// For every function, a request with one field it does not declare is
    /// refused by its schema and by the function itself, with the
    /// surface's 210 naming the field.
    #[tokio::test]
    async fn every_function_refuses_an_undeclared_field_by_schema_and_by_itself() {
        let c = Catalog::standard();
        let jail = crate::testkit::Jail::new();
        let mut checked = 0;
        for d in c.iter() {
            if EVENT_HANDLERS.contains(&d.id) {
                assert_eq!(d.metadata["internal"], true, "{} is an event handler", d.id);
                continue;
            }
            let payload = json!({"no_such_field": 1});
            let schema = jsonschema::draft202012::new(&d.request_schema).unwrap();
            assert!(
                !schema.is_valid(&payload),
                "{}: the schema accepts an undeclared field",
                d.id
            );
            let err = c.call(&jail.services, d.id, payload).await.expect_err(d.id);
            assert!(err.code.ends_with("210"), "{}: {err:?}", d.id);
            assert!(err.message.contains("no_such_field"), "{}: {err:?}", d.id);
            checked += 1;
        }
        assert_eq!(checked, c.iter().count() - EVENT_HANDLERS.len());
    }

    /// Whether `name` appears in `text` as a word of its own (`path` in
    /// "a `path` to read", not in "paths").
    fn names(text: &str, name: &str) -> bool {
        text.match_indices(name).any(|(i, _)| {
            let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
            let before = text[..i].chars().next_back();
            let after = text[i + name.len()..].chars().next();
            !before.is_some_and(word) && !after.is_some_and(word)
        })
    }

    /// An agent learns what to send from the description alone: every
    /// required parameter is named in it.
    #[test]
    fn every_description_names_its_required_parameters() {
        let mut missing = Vec::new();
        for d in Catalog::standard().iter() {
            for r in d.request_schema["required"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let r = r.as_str().unwrap();
                if !names(d.description, r) {
                    missing.push(format!("{}: `{r}`", d.id));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "not named in the description: {missing:?}"
        );
    }

    /// The functions only the console and the policy call. A new function
    /// must be put here or left out on purpose: the agent listener exposes
    /// every other one.
    const INTERNAL: [&str; 11] = [
        "shell::config-status",
        "shell::on-config-change",
        "shell::workspace::read-bytes",
        "ide::ui-content",
        "shell::pty::open",
        "shell::pty::write",
        "shell::pty::resize",
        "shell::pty::attach",
        "shell::pty::detach",
        "shell::pty::close",
        "shell::pty::adopt",
    ];

    /// The shipped agent-safe engine configuration is what the catalog
    /// generates, parses as YAML, keeps the trusted listener free of RBAC,
    /// and exposes to agents exactly the non-internal functions: nothing
    /// that changes policy (`configuration::*`), no internal function, no
    /// engine function.
    #[test]
    fn the_agent_engine_configuration_exposes_exactly_the_agent_functions() {
        let c = Catalog::standard();
        let internal: Vec<&str> = c
            .iter()
            .filter(|d| d.metadata["internal"] == true)
            .map(|d| d.id)
            .collect();
        assert_eq!(internal, INTERNAL, "classify each new function");
        let shipped = include_str!("../deploy/engine-agents.yaml");
        assert_eq!(
            shipped.trim_end(),
            c.agent_engine_config().trim_end(),
            "deploy/engine-agents.yaml is not what the catalog generates: \
             `ide functions --rbac > deploy/engine-agents.yaml`"
        );
        let config: Value = serde_norway::from_str(shipped).expect("valid YAML");
        let workers = config["workers"].as_array().unwrap();
        assert_eq!(workers.len(), 2);
        assert!(workers.iter().all(|w| w["name"] == "iii-worker-manager"));
        assert_eq!(workers[0]["config"]["port"], 49134);
        assert!(workers[0]["config"].get("rbac").is_none());
        let rbac = &workers[1]["config"]["rbac"];
        assert_eq!(workers[1]["config"]["port"], 49135);
        let exposed: Vec<String> = rbac["expose_functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let f = f.as_str().unwrap();
                let id = f
                    .strip_prefix("match(\"")
                    .and_then(|r| r.strip_suffix("\")"))
                    .unwrap_or_else(|| panic!("not an exact match filter: {f}"));
                assert!(!id.contains('*'), "{f}");
                id.to_string()
            })
            .collect();
        let agents: Vec<String> = c.agent_functions().map(|d| d.id.to_string()).collect();
        assert_eq!(exposed, agents);
        assert_eq!(exposed.len() + INTERNAL.len(), c.iter().count());
        for never in [
            "configuration::set",
            "configuration::get",
            "shell::on-config-change",
        ] {
            assert!(!exposed.iter().any(|e| e == never), "{never}");
        }
        assert!(!exposed.iter().any(|e| e.starts_with("engine::")));
        println!(
            "{} functions exposed to agents, {} internal",
            exposed.len(),
            INTERNAL.len()
        );
    }

    #[tokio::test]
    async fn unknown_function_is_reported() {
        let err = Catalog::standard()
            .call(&services(), "coder::nope", json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.code, "function_not_found");
    }
}
