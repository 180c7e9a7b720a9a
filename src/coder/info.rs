//! `coder::info`: the agent-facing access contract.
//!
//! Mode, roots (primary first), the session root, every size cap and
//! response budget, and both glob lists, all read from the call's runtime
//! snapshot. Agents call it first, and again whenever a path is rejected.

use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// No arguments — `coder::info` is a pure discovery call.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "InfoInput", example = "empty_example")]
pub struct InfoInput {}

fn empty_example() -> serde_json::Value {
    serde_json::json!({})
}

/// Effective access mode of the coder surface — the same deny-only policy switch `shell::fs::*` runs under.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessMode {
    /// Paths are confined to `base_paths`; anything outside is rejected.
    Jailed,
    /// Operator opt-in (`fs.allow_unjailed: true`, empty `fs.host_roots`): absolute paths anywhere on the host are accepted, confined only by `fs.denylist_paths` and `non_accessible_globs`. `base_paths` only anchor relative wire paths.
    Unjailed,
}

/// What holds across functions, so no description has to repeat it.
const CONVENTIONS: [&str; 6] = [
    "Line numbers are 1-based and ranges inclusive (`line_from`/`line_to`, `insert`/`remove`/`update_lines`); `column` (coder::search) is a 1-based byte offset in the line.",
    "A revision is the SHA-256 hex of a file's exact bytes: every read of a file up to `max_read_bytes` answers it; pass it as `expected_revision` to coder::create-file/update-file and a file changed since fails with C221 and is not written; each write answers the new revision to chain the next edit. When the worker still holds the content of the revision you had (it served or wrote it recently), the C221 says what changed since and where your line ops' lines are now, and coder::update-file with `rebase_lines: true` applies line ops at their new numbers when only their position changed.",
    "Edits keep a file's shape: a CRLF file stays CRLF (ops see `\\n`), a UTF-8 BOM and a missing final newline are kept, the mode is kept; a file that is not UTF-8 is refused (C210), never rewritten with replacement characters.",
    "Batch functions (coder::create-file, update-file, delete-file, move, read-file with `paths[]`, shell::fs::sed) answer one entry per file and count the failed ones in `failed`; when every entry fails, the call fails with the entry's error (several: the first's code, each entry's error in the message).",
    "Errors are {code, message}: `C2xx` from coder::*, `S2xx` from shell::*; 210 bad input, 211 not found (a denied path reads exactly like a missing one), 212 wrong type, 213 exists, 214 not empty, 215 outside the jail, 216 I/O, 217 bad regex, 218 too large, 220 outside the session scope, 221 stale revision. The message names the next call that works.",
    "`ide call` exits 0 with the answer on stdout, 1 with the {code, message} of a failed call, 2 on bad usage, 3 when a batch answered but an entry failed.",
];

/// The coder access contract.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "InfoOutput")]
pub struct InfoOutput {
    /// `jailed`: paths must stay inside `base_paths`. `unjailed`: absolute paths anywhere on the host are accepted (deny-only, like `shell::fs::*`) and `base_paths` only anchor relative paths.
    pub mode: AccessMode,
    /// Canonical absolute paths of the allowed roots, in configuration order. The primary root (index 0) is where relative wire paths resolve; an absolute path is accepted when it canonicalises inside ANY of these (in `unjailed` mode: anywhere on the host). In `jailed` mode paths outside every root are rejected — use `shell::fs::*` instead.
    pub base_paths: Vec<String>,
    /// Convenience duplicate of `base_paths[0]` — the primary allowed root. Relative paths resolve against this directory UNLESS `session_root` is set, which takes precedence.
    pub primary_root: String,
    /// The session's working directory when the caller runs under a harness-stamped filesystem scope; `null` otherwise. When set, THIS is what relative wire paths anchor against — not `primary_root`. Pass it as `base_dir` on each call to scope it.
    pub session_root: Option<String>,
    /// Per-file IO ceiling for `coder::read-file` (`fs.max_read_bytes`; 0 = unlimited). Full reads of larger files are rejected with C218; windowed reads cap the returned window bytes instead. Also the ceiling for `coder::search` content scanning — larger files are skipped.
    pub max_read_bytes: u64,
    /// Maximum bytes `coder::create-file` or `coder::update-file` will write to one file (`fs.max_write_bytes`; 0 = unlimited). Larger writes are rejected with C218.
    pub max_write_bytes: u64,
    /// Context budget for single-path FULL reads in `coder::read-file`, in bytes of returned content. Larger full reads return C218 with the file's size/line count and window/stat recovery guidance; a per-call `max_output_bytes` override is clamped to `max_read_bytes`.
    pub max_output_bytes: u64,
    /// Aggregate budget across one `paths[]` batch of `coder::read-file`, in bytes of returned content (after UTF-8 sanitization). An entry reached with nothing left gets a per-entry C218.
    pub batch_read_budget_bytes: u64,
    /// Default `max_depth` used by `coder::tree` when the caller omits it.
    pub tree_default_depth: u32,
    /// Maximum entries returned per folder node by `coder::tree`; folders that exceed this are flagged `truncated`.
    pub tree_per_folder_limit: u32,
    /// Total node budget of one `coder::tree` answer; past it the tree stops with `max_nodes` truncation.
    pub tree_max_nodes: u32,
    /// Default `page_size` used by `coder::list-folder` when the caller omits it.
    pub list_default_page_size: u32,
    /// Hard cap on `page_size` accepted by `coder::list-folder`.
    pub list_max_page_size: u32,
    /// Default `max_matches` used by `coder::search` when the caller omits it.
    pub search_default_max_matches: u32,
    /// Per-line byte cap in `coder::search`: matching considers at most this many bytes of each line, and matched/context lines are truncated to it.
    pub search_default_max_line_bytes: u32,
    /// Aggregate byte budget for one `coder::search` response (paths + matched text + context lines). When hit the response sets `truncated: true`.
    pub search_response_budget_bytes: u64,
    /// Noise-exclusion globs (root-relative): omitted from `coder::search`, pruned to childless stubs in `coder::tree`. Hide-only — no access protection. Pass `use_default_excludes: false` to look inside.
    pub default_exclude_globs: Vec<String>,
    /// Glob patterns matched root-relative. Matching files are listable but not readable/writable/deletable/creatable through `coder::*` and `shell::fs::*`; they return C211 exactly like a missing path. Commands are NOT confined by them (see `exec_confinement`).
    pub non_accessible_globs: Vec<String>,
    /// What confines commands (`shell::exec`, `shell::exec_bg`, `shell::pty::*`): only their `cwd` goes through the jail. `non_accessible_globs`, `fs.denylist_paths` and the roots do not apply to what a command reads or writes — `cat .env` works. Host exec is not a security boundary; the operator's OS-level setup is.
    pub exec_confinement: String,
    /// The limits of commands, so an agent does not take the coder read budget (`max_output_bytes` above) for them.
    pub exec_limits: ExecLimits,
    /// Conventions every function follows, stated once: line numbers, columns, revisions, how edits keep a file's shape, batch answers, error codes.
    pub conventions: Vec<&'static str>,
    /// The content index that lets `coder::search` skip files that cannot match: its budget, and where each root searched so far stands.
    pub search_index: SearchIndex,
    /// Code intelligence: the languages parsed (coder::symbols, find-symbol, definition, references, map, symbol edits) and where each root's symbol index stands.
    pub code: CodeInfo,
    /// Default working directory of commands (`working_dir` resolved against the worker's cwd, or the worker's cwd).
    pub working_dir: String,
    /// Worker version.
    pub version: String,
}

/// What bounds `shell::exec`, `shell::exec_bg` and their output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExecLimits {
    /// Bytes of stdout (and of stderr) a command's answer keeps (`max_output_bytes`; a per-call `max_output_bytes` is clamped to it). Not the coder read budget.
    pub max_output_bytes: u64,
    /// Timeout of a `shell::exec` that names none, in milliseconds (configured).
    pub default_timeout_ms: u64,
    /// How long a foreground `shell::exec` that names no `timeout_ms` may take before ide answers (with `timed_out: true`, the output so far and what to call next): `default_timeout_ms`, but at most 25000, under the SDKs' 30 s default call timeout. Waits elsewhere (`wait_ms` of shell::pty::*) are capped at 25000 too. A longer foreground wait needs `timeout_ms` and a longer call timeout in the caller's SDK; otherwise use `on_timeout: "background"` or shell::exec_bg.
    pub answer_within_ms: u64,
    /// Largest `timeout_ms` a foreground `shell::exec` gets; larger ones are clamped.
    pub max_timeout_ms: u64,
    /// Hard cap on a background job's run time, in milliseconds (0: none).
    pub max_bg_timeout_ms: u64,
    /// Background jobs that may run at once.
    pub max_concurrent_jobs: u64,
}

/// The content index of `coder::search`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchIndex {
    /// Memory one root's index may hold (`code.search_index_max_bytes`; 0: the index is off and every search reads every file).
    pub max_bytes: u64,
    /// Each root searched so far (or restored from its saved index at start), most recently searched last. A root not listed is indexed by its first search. Searches give the same answers in every state; only their speed differs.
    pub roots: Vec<IndexRoot>,
}

/// Where one root's index stands.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndexRoot {
    /// The root directory.
    pub root: String,
    /// `building` (searches read every file meanwhile), `ready` (searches read only the files that may match), `off` (see `why`), `none` (not built yet).
    pub state: IndexState,
    /// Files with a content filter.
    pub files: u64,
    /// Bytes of memory held.
    pub bytes: u64,
    /// Seconds since the index in use was built or restored (`ready` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<u64>,
    /// Files whose filter the last build took from the index saved in the worker's state directory instead of reading them (a restart reads only what changed).
    pub restored_files: u64,
    /// Why the root is not indexed (`off` only): over the budget, not enough inotify watches, the root gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A root index's state.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexState {
    None,
    Building,
    Ready,
    Off,
}

/// Code intelligence.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CodeInfo {
    /// Each language ide parses with tree-sitter (no server to install).
    pub languages: Vec<LanguageInfo>,
    /// Files parsed up to this size in bytes; a larger one gets a note and no symbols.
    pub max_parse_bytes: u64,
    /// Each root's symbol index (built after its content index, by the first coder::find-symbol or coder::map), most recently used last. Before it is ready, those functions parse the files (and say so in `served_by`/`note`).
    pub symbol_index: Vec<SymbolIndexRoot>,
    /// The language servers behind the semantic answers (coder::diagnostics, coder::hover, coder::rename, semantic definition and references): each configured or built-in one, and each instance that ran (one per root).
    pub language_servers: Vec<LanguageServerInfo>,
}

/// One language server.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LanguageServerInfo {
    /// Its name in code.language_servers (python, typescript, c, go, rust, or one configured).
    pub name: String,
    /// File extensions it answers for.
    pub extensions: Vec<String>,
    /// The program ide runs.
    pub command: String,
    /// `not_installed` (how to install it is in `install`), `idle` (starts on the first semantic call), `starting`, `ready` or `crashed` (`last_error` says why).
    pub state: String,
    /// The root this instance serves (null: not started for any root).
    pub root: Option<String>,
    pub pid: Option<u32>,
    /// Resident memory of its whole process tree, in bytes (read every 2 s).
    pub rss_bytes: Option<u64>,
    /// Times it was started again after stopping unexpectedly.
    pub restarts: u64,
    pub last_error: Option<String>,
    /// Work it reports in progress (indexing): title, message, percentage, seconds so far.
    pub progress: Vec<String>,
    /// How to install it (not_installed only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
}

/// One language.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LanguageInfo {
    /// As answers name it (`language`).
    pub name: String,
    /// File extensions, without the dot.
    pub extensions: Vec<String>,
    /// Interpreters of a `#!` line that make an extensionless file this language.
    pub shebangs: Vec<String>,
    /// What works: outline, find_symbol, definition, references, symbol_edits, map (all structural, `precision: "syntactic"`).
    pub supports: Vec<String>,
}

/// Where one root's symbol index stands.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SymbolIndexRoot {
    pub root: String,
    pub state: IndexState,
    /// Source files and their definitions held.
    pub files: u64,
    pub symbols: u64,
    /// Bytes of memory held (counted against `search_index.max_bytes`).
    pub bytes: u64,
    /// While building: files parsed of files to parse.
    pub progress: Option<[u64; 2]>,
    /// Files the last build took from the index saved in the state directory (a restart parses only what changed).
    pub restored_files: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

fn index_state(phase: crate::index::Phase) -> IndexState {
    use crate::index::Phase;
    match phase {
        Phase::None => IndexState::None,
        Phase::Building => IndexState::Building,
        Phase::Ready => IndexState::Ready,
        Phase::Off => IndexState::Off,
    }
}

fn code_info(ctx: &Ctx) -> CodeInfo {
    let languages = crate::code::lang::LANGS
        .iter()
        .map(|l| LanguageInfo {
            name: l.name.into(),
            extensions: l.extensions.iter().map(|e| e.to_string()).collect(),
            shebangs: l.shebangs.iter().map(|e| e.to_string()).collect(),
            supports: [
                "outline",
                "find_symbol",
                "definition",
                "references",
                "symbol_edits",
                "map",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        })
        .collect();
    let symbol_index = ctx
        .services
        .symbols
        .describe()
        .into_iter()
        .map(|(root, st)| SymbolIndexRoot {
            root: root.display().to_string(),
            state: index_state(st.phase),
            files: st.files as u64,
            symbols: st.symbols as u64,
            bytes: st.bytes as u64,
            progress: (st.phase == crate::index::Phase::Building)
                .then_some([st.done as u64, st.total as u64]),
            restored_files: st.reused as u64,
            why: st.why,
        })
        .collect();
    CodeInfo {
        languages,
        max_parse_bytes: crate::code::outline::MAX_PARSE_BYTES as u64,
        symbol_index,
        language_servers: language_servers(ctx),
    }
}

fn language_servers(ctx: &Ctx) -> Vec<LanguageServerInfo> {
    let (on, missing) = ctx.runtime.config.code.servers();
    let running = ctx.services.servers.describe();
    let mut out = Vec::new();
    for (name, cfg) in &on {
        let instances: Vec<_> = running.iter().filter(|d| &d.name == name).collect();
        if instances.is_empty() {
            out.push(LanguageServerInfo {
                name: name.clone(),
                extensions: cfg.extensions.clone(),
                command: cfg.command.clone(),
                state: "idle".into(),
                root: None,
                pid: None,
                rss_bytes: None,
                restarts: 0,
                last_error: None,
                progress: Vec::new(),
                install: None,
            });
        }
        for d in instances {
            out.push(LanguageServerInfo {
                name: name.clone(),
                extensions: cfg.extensions.clone(),
                command: cfg.command.clone(),
                state: d.state.as_str().into(),
                root: Some(d.root.display().to_string()),
                pid: d.pid,
                rss_bytes: d.rss_bytes,
                restarts: d.restarts,
                last_error: d.last_error.clone(),
                progress: d
                    .progress
                    .iter()
                    .map(crate::lsp::server::Progress::describe)
                    .collect(),
                install: None,
            });
        }
    }
    for (name, install) in missing {
        let cfg = crate::config::builtin_servers()
            .into_iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, c, _)| c);
        out.push(LanguageServerInfo {
            extensions: cfg
                .as_ref()
                .map(|c| c.extensions.clone())
                .unwrap_or_default(),
            command: cfg.map(|c| c.command).unwrap_or_default(),
            name,
            state: "not_installed".into(),
            root: None,
            pid: None,
            rss_bytes: None,
            restarts: 0,
            last_error: None,
            progress: Vec::new(),
            install: Some(install),
        });
    }
    out
}

fn search_index(ctx: &Ctx) -> SearchIndex {
    use crate::index::Phase;
    let roots = ctx
        .services
        .index
        .describe()
        .into_iter()
        .map(|(root, st)| IndexRoot {
            root: root.display().to_string(),
            state: index_state(st.phase),
            files: st.files as u64,
            bytes: st.bytes as u64,
            age_secs: st
                .since
                .filter(|_| st.phase == Phase::Ready)
                .map(|t| t.elapsed().unwrap_or_default().as_secs()),
            restored_files: st.reused as u64,
            why: st.why,
        })
        .collect();
    SearchIndex {
        max_bytes: ctx.runtime.config.code.search_index_max_bytes,
        roots,
    }
}

pub fn def() -> FunctionDef {
    function(
        "coder::info",
        "Report the coder access contract: mode (jailed | unjailed), allowed roots (primary \
         first), the session_root relative paths anchor against, size caps, response budgets, \
         listing/search limits, the search index's state per root, non-accessible globs and \
         default_exclude_globs, and what confines commands (exec_confinement: shell::exec is not bound by the protected globs), \
         and the conventions every function follows (line numbers, revisions, batches, error \
         codes). Call it first when a path is rejected.",
        Flags::NONE,
        |ctx: Ctx, _req: InfoInput| async move { Ok::<_, Failure>(info(&ctx)) },
    )
}

/// `exec_confinement`: the difference between protected paths and commands.
pub const EXEC_CONFINEMENT: &str = "Commands (shell::exec, shell::exec_bg, shell::pty::*) are \
     not confined by non_accessible_globs, fs.denylist_paths or the allowed roots: only their \
     cwd is resolved through the jail, and a command reads and writes whatever this worker's OS \
     user can (`cat .env` prints a protected file). Host exec is not a security boundary; \
     protection from commands is the operator's OS-level setup (user, sandbox target).";

/// The report for the call's snapshot.
pub fn info(ctx: &Ctx) -> InfoOutput {
    let rt = &ctx.runtime;
    let code = &rt.config.code;
    let roots: Vec<String> = rt
        .policy
        .coder_roots()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    InfoOutput {
        mode: match rt.policy.mode() {
            Mode::Jailed => AccessMode::Jailed,
            Mode::Unjailed => AccessMode::Unjailed,
        },
        primary_root: roots.first().cloned().unwrap_or_default(),
        base_paths: roots,
        session_root: None,
        max_read_bytes: rt.config.fs.max_read_bytes,
        max_write_bytes: rt.config.fs.max_write_bytes,
        max_output_bytes: code.max_output_bytes,
        batch_read_budget_bytes: code.batch_read_budget_bytes,
        tree_default_depth: code.tree_default_depth,
        tree_per_folder_limit: code.tree_per_folder_limit,
        tree_max_nodes: code.tree_max_nodes,
        list_default_page_size: code.list_default_page_size,
        list_max_page_size: code.list_max_page_size,
        search_default_max_matches: code.search_default_max_matches,
        search_default_max_line_bytes: code.search_default_max_line_bytes,
        search_response_budget_bytes: code.search_response_budget_bytes,
        default_exclude_globs: code.default_exclude_globs.clone(),
        non_accessible_globs: code.non_accessible_globs.clone(),
        exec_confinement: EXEC_CONFINEMENT.to_string(),
        conventions: CONVENTIONS.to_vec(),
        exec_limits: ExecLimits {
            max_output_bytes: rt.config.max_output_bytes,
            default_timeout_ms: rt.config.default_timeout_ms,
            answer_within_ms: crate::exec::timeout::effective(
                None,
                rt.config.default_timeout_ms,
                rt.config.max_timeout_ms,
            ),
            max_timeout_ms: rt.config.max_timeout_ms,
            max_bg_timeout_ms: rt.config.max_bg_timeout_ms,
            max_concurrent_jobs: u64::from(rt.config.max_concurrent_jobs),
        },
        search_index: search_index(ctx),
        code: code_info(ctx),
        working_dir: rt.working_dir.display().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::Runtime;
    use crate::services::Services;

    fn ctx(cfg: Config) -> Ctx {
        Ctx::new(Services::standalone(Runtime::build(cfg).unwrap()))
    }

    /// What holds across functions is stated once, where an agent looks
    /// first.
    #[tokio::test]
    async fn info_states_the_conventions_every_function_follows() {
        let jail = crate::testkit::Jail::new();
        let v = jail
            .call("coder::info", serde_json::json!({}))
            .await
            .unwrap();
        let text = v["conventions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        for fact in [
            "1-based",
            "expected_revision",
            "C221",
            "CRLF",
            "BOM",
            "`failed`",
            "211",
            "3 when a batch",
        ] {
            assert!(text.contains(fact), "{fact} is not stated: {text}");
        }
    }

    /// Each searched root's index: none before a search, building or
    /// ready after, with what it holds (the answer checked against the
    /// response schema, as every catalog call in tests is).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn info_reports_each_roots_search_index() {
        let jail = crate::testkit::Jail::new();
        jail.write("src/a.rs", "fn alpha() {}\n");
        jail.write("src/b.rs", "fn beta() {}\n");
        let v = jail
            .call("coder::info", serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(v["search_index"]["roots"], serde_json::json!([]), "{v}");
        assert!(v["search_index"]["max_bytes"].as_u64().unwrap() > 0);
        jail.call("coder::search", serde_json::json!({"query": "alpha"}))
            .await
            .unwrap();
        let index = jail.services.index.clone();
        let settled =
            tokio::task::spawn_blocking(move || index.settle(std::time::Duration::from_secs(300)))
                .await
                .unwrap();
        assert!(settled);
        let v = jail
            .call("coder::info", serde_json::json!({}))
            .await
            .unwrap();
        let root = &v["search_index"]["roots"][0];
        assert_eq!(root["state"], "ready", "{v}");
        assert_eq!(root["root"], v["primary_root"]);
        assert!(root["files"].as_u64().unwrap() >= 2, "{root}");
        assert!(root["bytes"].as_u64().unwrap() > 0, "{root}");
        assert!(root["age_secs"].is_u64(), "{root}");
        assert_eq!(root["restored_files"], 0);
        assert!(root.get("why").is_none(), "{root}");
    }

    /// A root over the budget is off, and the answer says why and what
    /// would index it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn info_says_why_a_root_is_not_indexed() {
        let dir = tempfile::TempDir::new().unwrap();
        let journal = tempfile::TempDir::new().unwrap();
        for i in 0..20 {
            std::fs::write(
                dir.path().join(format!("f{i}.rs")),
                format!("fn f{i}() {{}}\n"),
            )
            .unwrap();
        }
        let mut cfg = Config::zero_config();
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![dir.path().into()];
        cfg.turns.data_dir = journal.path().into();
        cfg.code.search_index_max_bytes = 1000;
        let services = Services::standalone(Runtime::build(cfg).unwrap());
        let c = crate::catalog::Catalog::standard();
        c.call(
            &services,
            "coder::search",
            serde_json::json!({"query": "fn f1"}),
        )
        .await
        .unwrap();
        let index = services.index.clone();
        let settled =
            tokio::task::spawn_blocking(move || index.settle(std::time::Duration::from_secs(300)))
                .await
                .unwrap();
        assert!(settled);
        let v = c
            .call(&services, "coder::info", serde_json::json!({}))
            .await
            .unwrap();
        let root = &v["search_index"]["roots"][0];
        assert_eq!(root["state"], "off", "{v}");
        let why = root["why"].as_str().unwrap();
        assert!(
            why.contains("code.search_index_max_bytes (1000 bytes)"),
            "{why}"
        );
        assert!(why.contains("raise code.search_index_max_bytes"), "{why}");
        assert!(root.get("age_secs").is_none(), "{root}");
    }

    #[test]
    fn jailed_info_reports_roots_in_order_and_every_budget() {
        let a = tempfile::TempDir::new().unwrap();
        let b = tempfile::TempDir::new().unwrap();
        let mut cfg = Config::zero_config();
        cfg.fs.allow_unjailed = false;
        cfg.fs.host_roots = vec![a.path().into(), b.path().into()];
        cfg.code.max_output_bytes = 777;
        cfg.max_output_bytes = 1 << 20;
        cfg.default_timeout_ms = 15_000;
        let out = serde_json::to_value(info(&ctx(cfg))).unwrap();
        // the exec limits sit beside the coder read budget, apart from it
        assert_eq!(out["exec_limits"]["max_output_bytes"], 1 << 20);
        assert_eq!(out["exec_limits"]["default_timeout_ms"], 15_000);
        assert_eq!(out["exec_limits"]["answer_within_ms"], 15_000);
        assert!(out["exec_limits"]["max_timeout_ms"].as_u64().unwrap() > 0);
        assert!(out["exec_limits"]["max_concurrent_jobs"].as_u64().unwrap() > 0);
        assert_eq!(out["mode"], "jailed");
        let ca = a.path().canonicalize().unwrap().display().to_string();
        let cb = b.path().canonicalize().unwrap().display().to_string();
        assert_eq!(out["base_paths"], serde_json::json!([ca, cb]));
        assert_eq!(out["primary_root"], ca);
        assert_eq!(out["session_root"], serde_json::Value::Null);
        assert_eq!(out["max_output_bytes"], 777);
        assert_eq!(out["max_read_bytes"], 16_777_216);
        assert_eq!(out["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(out["non_accessible_globs"][0], "**/.env");
        let exec = out["exec_confinement"].as_str().unwrap();
        assert!(
            exec.contains("not confined by non_accessible_globs"),
            "{exec}"
        );
        assert!(exec.contains("cat .env"), "{exec}");
    }

    #[test]
    fn unjailed_info_reports_the_fallback_anchors() {
        let out = serde_json::to_value(info(&ctx(Config::zero_config()))).unwrap();
        assert_eq!(out["mode"], "unjailed");
        let roots = out["base_paths"].as_array().unwrap();
        assert!(roots.iter().any(|r| r == "/tmp"));
    }

    #[test]
    fn response_schema_requires_the_contract_fields() {
        let schema = crate::function::schema_of::<InfoOutput>();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for f in [
            "base_paths",
            "batch_read_budget_bytes",
            "default_exclude_globs",
            "list_default_page_size",
            "list_max_page_size",
            "max_output_bytes",
            "max_read_bytes",
            "max_write_bytes",
            "mode",
            "non_accessible_globs",
            "primary_root",
            "search_default_max_line_bytes",
            "search_default_max_matches",
            "search_response_budget_bytes",
            "tree_default_depth",
            "tree_per_folder_limit",
            "version",
        ] {
            assert!(required.contains(&f), "{f} not required");
        }
    }
}
