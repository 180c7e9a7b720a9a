//! The configuration schema: typed, documented, strict.
//!
//! One [`Config`] value is what the configuration worker stores under id `ide`
//! and what `--config` seeds. Parsing is strict on purpose — a config is a
//! security policy, so an unknown key is an error rather than something serde
//! silently drops, and keys removed in earlier releases are rejected with the
//! migration hint that tells the operator what to write instead
//! ([`removed_keys`]). Turning a parsed config into something enforceable
//! (canonical roots, compiled globs and regexes) is [`crate::runtime`]'s job.

mod removed;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use removed::removed_keys;

/// The shipped `config.yaml`, byte for byte: the zero-config seed.
pub const BUILTIN_DEFAULT_YAML: &str = include_str!("../../config.yaml");

/// Worker configuration (configuration id `ide`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Hard cap for a foreground `shell::exec`, in milliseconds; a per-call `timeout_ms` is clamped to it.
    #[serde(default = "d::max_timeout_ms")]
    pub max_timeout_ms: u64,
    /// Hard cap for a host background job, in milliseconds; 0 = unbounded (killed jobs get status `killed`).
    #[serde(default)]
    pub max_bg_timeout_ms: u64,
    /// Timeout applied when a call omits `timeout_ms` (or passes a negative or fractional one), in milliseconds.
    #[serde(default = "d::default_timeout_ms")]
    pub default_timeout_ms: u64,
    /// Per-stream capture cap for command output, in bytes; past it `stdout_truncated`/`stderr_truncated` are set while the pipe keeps draining.
    #[serde(default = "d::max_output_bytes")]
    pub max_output_bytes: u64,
    /// Which of the worker's own environment variables children receive.
    #[serde(default)]
    pub env: EnvConfig,
    /// Advisory regexes over `argv.join(" ")` that refuse a command (a tripwire for catastrophic mistakes, not a security boundary).
    #[serde(default)]
    pub denylist_patterns: Vec<String>,
    /// Most background jobs running at once; `shell::exec_bg` past it is rejected.
    #[serde(default = "d::max_concurrent_jobs")]
    pub max_concurrent_jobs: u32,
    /// Seconds a finished job's record is kept (for `shell::status` and `shell::job-finished` replay).
    #[serde(default = "d::job_retention_secs")]
    pub job_retention_secs: u64,
    /// Filesystem jail and caps shared by `shell::fs::*`, per-call `cwd` and `coder::*`.
    #[serde(default)]
    pub fs: FsConfig,
    /// Sandbox-targeted execution (`target: {kind: "sandbox"}`).
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Working directory for commands that pass no `cwd`; null = the worker's own working directory.
    #[serde(default)]
    pub working_dir: Option<PathBuf>,
    /// Change-history storage (`shell::turns::*`).
    #[serde(default)]
    pub turns: TurnsConfig,
    /// The `coder::*` code surface: protected and noise globs, response budgets.
    #[serde(default)]
    pub code: CodeConfig,
    /// Terminal sessions (`shell::pty::*`): session cap, replay ring, retention of exited sessions.
    #[serde(default)]
    pub pty: PtyConfig,
    /// The live change feed (`shell::changed`).
    #[serde(default)]
    pub watch: WatchConfig,
}

/// The live change feed (`shell::changed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchConfig {
    /// Most distinct paths one 200 ms window delivers per binding; a window past it sends one `rescan` instead (0 counts as 1).
    #[serde(default = "d::max_paths_per_window")]
    pub max_paths_per_window: u64,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            max_paths_per_window: d::max_paths_per_window(),
        }
    }
}

/// Environment forwarding to child processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvConfig {
    /// Forward the worker's whole environment to children (per-call dangerous keys are still refused).
    #[serde(default = "d::yes")]
    pub inherit: bool,
    /// Variables forwarded when `inherit` is false. Has no effect on what a per-call `env` may set.
    #[serde(default = "d::env_allow")]
    pub allow: Vec<String>,
}

/// The filesystem jail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// Jail roots (absolute directories); the first is the primary root relative paths resolve against. Empty = unjailed, which requires `allow_unjailed: true`.
    #[serde(default)]
    pub host_roots: Vec<PathBuf>,
    /// Explicit opt-in to running with empty `host_roots` (paths anywhere on the host, confined only by `denylist_paths` and the protected globs).
    #[serde(default)]
    pub allow_unjailed: bool,
    /// Largest file `shell::fs::read` streams and `coder::*` reads, in bytes; 0 = unlimited.
    #[serde(default = "d::sixteen_mib")]
    pub max_read_bytes: u64,
    /// Largest file `shell::fs::write` and `coder::*` write, in bytes; 0 = unlimited.
    #[serde(default = "d::sixteen_mib")]
    pub max_write_bytes: u64,
    /// Paths no surface may read, write or list, in every mode (a path under one reads as missing).
    #[serde(default = "d::denylist_paths")]
    pub denylist_paths: Vec<PathBuf>,
    /// Permit setuid/setgid/sticky bits in modes given to mkdir/chmod/write/create-file.
    #[serde(default)]
    pub allow_special_bits: bool,
}

/// Sandbox forwarding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// false: every sandbox-targeted call is refused with S210.
    #[serde(default = "d::yes")]
    pub enabled: bool,
}

/// Change-history storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnsConfig {
    /// Directory holding the change history; a relative one is anchored at `$XDG_STATE_HOME/ide`, else `$HOME/.local/state/ide` (never the cwd), so every ide of one user shares it.
    #[serde(default = "d::turns_dir")]
    pub data_dir: PathBuf,
    /// Largest snapshot kept for one change, in bytes.
    #[serde(default = "d::max_blob_bytes")]
    pub max_blob_bytes: u64,
}

/// The `coder::*` code surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeConfig {
    /// Globs (globset syntax, matched root-relative) whose files are listable but never readable, writable, creatable or deletable, on both surfaces; they read as missing (211).
    #[serde(default = "d::non_accessible_globs")]
    pub non_accessible_globs: Vec<String>,
    /// Hide-only noise globs (root-relative): omitted from `coder::search`, pruned to stubs in `coder::tree`. No access protection.
    #[serde(default = "d::default_exclude_globs")]
    pub default_exclude_globs: Vec<String>,
    /// Budget for a single-path full `coder::read-file`, in bytes of returned content.
    #[serde(default = "d::code_max_output_bytes")]
    pub max_output_bytes: u64,
    /// Aggregate budget for one batch (`paths[]`) `coder::read-file`, in bytes of returned content.
    #[serde(default = "d::batch_read_budget_bytes")]
    pub batch_read_budget_bytes: u64,
    /// `coder::tree` depth when the call omits `max_depth`.
    #[serde(default = "d::tree_default_depth")]
    pub tree_default_depth: u32,
    /// Children shown per folder by `coder::tree` before it flags the folder truncated.
    #[serde(default = "d::tree_per_folder_limit")]
    pub tree_per_folder_limit: u32,
    /// Total nodes one `coder::tree` answer may hold before it stops with `max_nodes` truncation.
    #[serde(default = "d::tree_max_nodes")]
    pub tree_max_nodes: u32,
    /// `coder::list-folder` page size when the call omits `page_size`.
    #[serde(default = "d::list_default_page_size")]
    pub list_default_page_size: u32,
    /// Largest `page_size` `coder::list-folder` accepts (larger requests are clamped).
    #[serde(default = "d::list_max_page_size")]
    pub list_max_page_size: u32,
    /// `coder::search` match cap when the call omits `max_matches`.
    #[serde(default = "d::search_default_max_matches")]
    pub search_default_max_matches: u32,
    /// Per-line byte cap of `coder::search`: matching sees at most this much of a line, and returned lines are cut to it.
    #[serde(default = "d::search_default_max_line_bytes")]
    pub search_default_max_line_bytes: u32,
    /// Byte budget of one `coder::search` response (paths + matched text + context); hitting it sets `truncated`.
    #[serde(default = "d::search_response_budget_bytes")]
    pub search_response_budget_bytes: u64,
    /// Memory the content index of `coder::search` may hold per root, in bytes (an n-gram filter of every file, about 1.3 KB a source file, kept current by change events and saved in the state directory for the next start; a root over it is searched by scanning, and `coder::info` says so). 0 turns the index off.
    #[serde(default = "d::search_index_max_bytes")]
    pub search_index_max_bytes: u64,
    /// Language servers behind the semantic answers (coder::diagnostics, coder::hover, coder::rename, semantic coder::definition and coder::references), by name. An entry replaces the built-in of that name and `null` removes one; the built-ins (python: pyright-langserver, typescript: typescript-language-server, c: clangd, go: gopls, rust: rust-analyzer) are used when their program is on PATH.
    #[serde(default)]
    pub language_servers: BTreeMap<String, Option<LanguageServerConfig>>,
}

/// One language server ide runs, one instance per (root, server).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LanguageServerConfig {
    /// Program (PATH-resolved) or absolute path; it runs like a command of shell::exec (the environment gate, its own process group, killed with its tree).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// File extensions (without the dot) this server answers for.
    pub extensions: Vec<String>,
    /// `initializationOptions` of its `initialize` request.
    #[serde(default)]
    pub initialization_options: serde_json::Value,
    /// What it gets when it asks `workspace/configuration` (the object for each section asked, looked up by its dotted name; null when absent).
    #[serde(default)]
    pub settings: serde_json::Value,
    /// Milliseconds without a request after which it is shut down (default 600000).
    #[serde(default = "d::lsp_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// Resident memory of its process tree past which it is restarted, in bytes (default 2 GiB).
    #[serde(default = "d::lsp_memory_limit_bytes")]
    pub memory_limit_bytes: u64,
    /// How long one request may take before it is cancelled (and the server killed when it does not cancel), in milliseconds (default 15000).
    #[serde(default = "d::lsp_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Before coder::references and coder::rename, open in the server the files of its extensions that hold the name (up to 48, found by the content index) and wait until it has checked them: for a server that knows only the files it was sent (clangd without its background index). Default false; true for the built-in clangd.
    #[serde(default)]
    pub open_related: bool,
}

impl CodeConfig {
    /// The language servers in force: the built-ins whose program is on
    /// PATH, overlaid by `language_servers` (an entry replaces the
    /// built-in of its name, `null` removes it). The built-ins not on PATH
    /// are listed apart, with how to install them.
    pub fn servers(
        &self,
    ) -> (
        BTreeMap<String, LanguageServerConfig>,
        Vec<(String, String)>,
    ) {
        let mut on = BTreeMap::new();
        let mut missing = Vec::new();
        for (name, cfg, install) in builtin_servers() {
            if self.language_servers.contains_key(name) {
                continue;
            }
            if on_path(&cfg.command) {
                on.insert(name.to_string(), cfg);
            } else {
                missing.push((name.to_string(), install.to_string()));
            }
        }
        for (name, cfg) in &self.language_servers {
            if let Some(cfg) = cfg {
                on.insert(name.clone(), cfg.clone());
            }
        }
        (on, missing)
    }
}

pub use d::builtin_servers;

/// Whether `program` names an executable file (a path) or one on PATH.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return exec(std::path::Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| exec(&dir.join(program))))
}

/// Terminal sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PtyConfig {
    /// Most sessions held at once, running or exited-and-kept; past it `shell::pty::open` and `shell::pty::start` fail with S218 (the oldest exited session is dropped first to make room).
    #[serde(default = "d::pty_max_sessions")]
    pub max_sessions: u32,
    /// Raw output bytes each session keeps for replay (its ring buffer); at least 262144. Older frames are evicted first.
    #[serde(default = "d::pty_ring_bytes")]
    pub ring_bytes: u64,
    /// Seconds an exited session stays attachable for its replay before it is forgotten; 0 = until closed (still counted against `max_sessions`).
    #[serde(default = "d::pty_exited_retention_secs")]
    pub exited_retention_secs: u64,
}

impl PtyConfig {
    /// Smallest `ring_bytes`: room for the delivery window of full frames.
    pub const MIN_RING_BYTES: u64 = 256 * 1024;
    /// Largest `ring_bytes`.
    pub const MAX_RING_BYTES: u64 = 1 << 30;
}

impl Default for PtyConfig {
    fn default() -> Self {
        PtyConfig {
            max_sessions: d::pty_max_sessions(),
            ring_bytes: d::pty_ring_bytes(),
            exited_retention_secs: d::pty_exited_retention_secs(),
        }
    }
}

/// Serde defaults: what an absent key means. Note that `fs.allow_unjailed`
/// defaults to false, so a config that leaves the jail unset fails closed;
/// only the shipped seed opts in explicitly.
mod d {
    use super::LanguageServerConfig;
    use std::path::PathBuf;
    pub fn yes() -> bool {
        true
    }
    pub fn max_timeout_ms() -> u64 {
        120_000
    }
    pub fn default_timeout_ms() -> u64 {
        30_000
    }
    pub fn max_output_bytes() -> u64 {
        1_048_576
    }
    pub fn max_concurrent_jobs() -> u32 {
        16
    }
    pub fn job_retention_secs() -> u64 {
        3600
    }
    pub fn sixteen_mib() -> u64 {
        16 * 1024 * 1024
    }
    pub fn env_allow() -> Vec<String> {
        ["PATH", "HOME", "LANG", "LC_ALL", "TERM"]
            .map(String::from)
            .to_vec()
    }
    pub fn denylist_paths() -> Vec<PathBuf> {
        vec!["/etc/passwd".into(), "/etc/shadow".into()]
    }
    pub fn max_paths_per_window() -> u64 {
        1000
    }
    pub fn pty_max_sessions() -> u32 {
        32
    }
    pub fn pty_ring_bytes() -> u64 {
        2 * 1024 * 1024
    }
    pub fn pty_exited_retention_secs() -> u64 {
        3600
    }
    pub fn turns_dir() -> PathBuf {
        "data/shell/turns".into()
    }
    pub fn max_blob_bytes() -> u64 {
        256 * 1024 * 1024
    }
    pub fn non_accessible_globs() -> Vec<String> {
        [
            "**/.env",
            "**/.env.*",
            "**/*.pem",
            "**/*.key",
            "**/secrets/**",
        ]
        .map(String::from)
        .to_vec()
    }
    pub fn default_exclude_globs() -> Vec<String> {
        [
            "**/.git/**",
            "**/node_modules/**",
            "**/target/**",
            "**/dist/**",
            "**/.venv/**",
            "**/__pycache__/**",
        ]
        .map(String::from)
        .to_vec()
    }
    pub fn code_max_output_bytes() -> u64 {
        131_072
    }
    pub fn batch_read_budget_bytes() -> u64 {
        1_048_576
    }
    pub fn tree_default_depth() -> u32 {
        4
    }
    pub fn tree_per_folder_limit() -> u32 {
        50
    }
    pub fn tree_max_nodes() -> u32 {
        2000
    }
    pub fn list_default_page_size() -> u32 {
        100
    }
    pub fn list_max_page_size() -> u32 {
        1000
    }
    pub fn search_default_max_matches() -> u32 {
        1000
    }
    pub fn search_default_max_line_bytes() -> u32 {
        4096
    }
    pub fn search_response_budget_bytes() -> u64 {
        262_144
    }
    /// 1 GiB: about 1.3 KB a file was measured (BENCHMARKS.md, content
    /// index at scale), so a tree of 750 000 source files is indexed; a
    /// 500 000-file tree holds about 670 MB, 4 % of a 16 GiB machine.
    pub fn search_index_max_bytes() -> u64 {
        1024 * 1024 * 1024
    }
    pub fn lsp_idle_timeout_ms() -> u64 {
        600_000
    }
    pub fn lsp_memory_limit_bytes() -> u64 {
        2 << 30
    }
    pub fn lsp_request_timeout_ms() -> u64 {
        15_000
    }

    /// The built-in language servers: name, configuration, how to install.
    pub fn builtin_servers() -> Vec<(&'static str, LanguageServerConfig, &'static str)> {
        let server = |command: &str, args: &[&str], ext: &[&str], init: serde_json::Value| {
            LanguageServerConfig {
                command: command.to_string(),
                args: args.iter().map(|a| a.to_string()).collect(),
                extensions: ext.iter().map(|e| e.to_string()).collect(),
                initialization_options: init,
                settings: serde_json::Value::Null,
                idle_timeout_ms: lsp_idle_timeout_ms(),
                memory_limit_bytes: lsp_memory_limit_bytes(),
                request_timeout_ms: lsp_request_timeout_ms(),
                open_related: false,
            }
        };
        let mut clangd = server(
            "clangd",
            // the background index of a whole project is what grows
            // without bound (and it writes into the project); answers
            // for open files need none of it
            &["--background-index=false", "--log=error"],
            &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
            serde_json::Value::Null,
        );
        // without its index it knows only the files it was sent
        clangd.open_related = true;
        vec![
            (
                "python",
                server(
                    "pyright-langserver",
                    &["--stdio"],
                    &["py", "pyi"],
                    serde_json::Value::Null,
                ),
                "npm install -g pyright",
            ),
            (
                "typescript",
                server(
                    "typescript-language-server",
                    &["--stdio"],
                    &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
                    // tsserver's own heap, bounded
                    serde_json::json!({"maxTsServerMemory": 2048}),
                ),
                "npm install -g typescript-language-server typescript",
            ),
            ("c", clangd, "apt-get install clangd"),
            (
                "go",
                server("gopls", &[], &["go"], serde_json::Value::Null),
                "apt-get install gopls (or go install golang.org/x/tools/gopls@latest)",
            ),
            (
                "rust",
                server(
                    "rust-analyzer",
                    &[],
                    &["rs"],
                    // no proc-macro server, no cargo check on save: the two
                    // that grow without bound on big workspaces
                    serde_json::json!({"procMacro": {"enable": false}, "checkOnSave": false, "cachePriming": {"enable": false}}),
                ),
                "rustup component add rust-analyzer",
            ),
        ]
    }
}

impl Default for EnvConfig {
    fn default() -> Self {
        EnvConfig {
            inherit: true,
            allow: d::env_allow(),
        }
    }
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            host_roots: Vec::new(),
            allow_unjailed: false,
            max_read_bytes: d::sixteen_mib(),
            max_write_bytes: d::sixteen_mib(),
            denylist_paths: d::denylist_paths(),
            allow_special_bits: false,
        }
    }
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig { enabled: true }
    }
}

impl Default for TurnsConfig {
    fn default() -> Self {
        TurnsConfig {
            data_dir: d::turns_dir(),
            max_blob_bytes: d::max_blob_bytes(),
        }
    }
}

impl Default for CodeConfig {
    fn default() -> Self {
        CodeConfig {
            non_accessible_globs: d::non_accessible_globs(),
            default_exclude_globs: d::default_exclude_globs(),
            max_output_bytes: d::code_max_output_bytes(),
            batch_read_budget_bytes: d::batch_read_budget_bytes(),
            tree_default_depth: d::tree_default_depth(),
            tree_per_folder_limit: d::tree_per_folder_limit(),
            tree_max_nodes: d::tree_max_nodes(),
            list_default_page_size: d::list_default_page_size(),
            list_max_page_size: d::list_max_page_size(),
            search_default_max_matches: d::search_default_max_matches(),
            search_default_max_line_bytes: d::search_default_max_line_bytes(),
            search_response_budget_bytes: d::search_response_budget_bytes(),
            search_index_max_bytes: d::search_index_max_bytes(),
            language_servers: BTreeMap::new(),
        }
    }
}

/// The contract's command denylist, also the shipped one.
pub fn shipped_denylist_patterns() -> Vec<String> {
    const WRAPPER: &str = r"(?i)^(?:(?:\S*/)?env(?:\s+\S+=\S*)*\s+|(?:\S*/)?(?:sudo|doas|nohup)\s+|(?:\S*/)?timeout(?:\s+\S+)?\s+)*(\S*/)?";
    let mut out = vec![r"rm\s+-rf\s+/".to_string(), r":\(\)\s*\{\s*:\|".to_string()];
    for cmd in [r"mkfs", r"dd\s+if=", r"shutdown\b", r"reboot\b"] {
        out.push(format!("{WRAPPER}{cmd}"));
    }
    out.push("/etc/shadow".to_string());
    out
}

impl Config {
    /// The zero-config default, built from Rust values (the test
    /// `shipped_config_yaml_is_the_builtin_default` keeps `config.yaml` equal).
    pub fn zero_config() -> Config {
        Config {
            max_timeout_ms: d::max_timeout_ms(),
            max_bg_timeout_ms: 0,
            default_timeout_ms: d::default_timeout_ms(),
            max_output_bytes: d::max_output_bytes(),
            env: EnvConfig::default(),
            denylist_patterns: shipped_denylist_patterns(),
            max_concurrent_jobs: d::max_concurrent_jobs(),
            job_retention_secs: d::job_retention_secs(),
            fs: FsConfig {
                allow_unjailed: true,
                ..FsConfig::default()
            },
            sandbox: SandboxConfig::default(),
            working_dir: None,
            turns: TurnsConfig::default(),
            code: CodeConfig::default(),
            watch: WatchConfig::default(),
            pty: PtyConfig::default(),
        }
    }

    /// Parse a YAML document (a `--config` seed file).
    pub fn from_yaml(text: &str) -> Result<Config, String> {
        let value: Value =
            serde_norway::from_str(text).map_err(|e| format!("config is not valid YAML: {e}"))?;
        Config::from_value(&value)
    }

    /// Parse a JSON value (what the configuration worker stores). `null`
    /// is refused: a nulled stored value must never fall back to a default.
    pub fn from_value(value: &Value) -> Result<Config, String> {
        match value {
            Value::Null => {
                return Err(
                    "configuration value is null; refusing to fall back to a default \
                     policy — store a config object with configuration::set id=ide"
                        .to_string(),
                );
            }
            Value::Object(_) => {}
            other => {
                return Err(format!(
                    "configuration value must be an object, got {}",
                    kind_of(other)
                ));
            }
        }
        let removed = removed_keys(value);
        if !removed.is_empty() {
            return Err(removed.join("; "));
        }
        let de = value.clone();
        serde_path_to_error::deserialize::<_, Config>(de).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                format!("invalid config: {}", e.inner())
            } else {
                format!("invalid config at `{path}`: {}", e.inner())
            }
        })
    }

    /// The JSON schema registered with the configuration worker.
    pub fn json_schema() -> Value {
        let schema = schemars::schema_for!(Config);
        serde_json::to_value(schema).unwrap_or(Value::Null)
    }

    /// As a JSON value (for `configuration::register`'s `initial_value`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shipped_config_yaml_is_the_builtin_default() {
        let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.yaml"))
            .expect("config.yaml at the crate root");
        assert_eq!(
            shipped, BUILTIN_DEFAULT_YAML,
            "embedded seed drifted from config.yaml"
        );
        assert_eq!(Config::from_yaml(&shipped).unwrap(), Config::zero_config());
    }

    #[test]
    fn builtin_default_matches_the_contract_values() {
        let c = Config::zero_config();
        assert_eq!(c.max_timeout_ms, 120_000);
        assert_eq!(c.default_timeout_ms, 30_000);
        assert_eq!(c.max_output_bytes, 1_048_576);
        assert_eq!(c.max_concurrent_jobs, 16);
        assert_eq!(c.job_retention_secs, 3600);
        assert!(c.fs.allow_unjailed && c.fs.host_roots.is_empty());
        assert_eq!(c.fs.max_read_bytes, 16_777_216);
        assert_eq!(c.denylist_patterns.len(), 7);
        assert_eq!(
            c.denylist_patterns[4],
            r"(?i)^(?:(?:\S*/)?env(?:\s+\S+=\S*)*\s+|(?:\S*/)?(?:sudo|doas|nohup)\s+|(?:\S*/)?timeout(?:\s+\S+)?\s+)*(\S*/)?shutdown\b"
        );
        assert_eq!(c.turns.data_dir, PathBuf::from("data/shell/turns"));
    }

    #[test]
    fn unknown_keys_are_denied_with_their_path() {
        let err = Config::from_value(&json!({"fs": {"host_rootz": []}})).unwrap_err();
        assert!(err.contains("fs") && err.contains("host_rootz"), "{err}");
        let err = Config::from_value(&json!({"bogus": 1})).unwrap_err();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn null_and_non_objects_fail_closed() {
        assert!(
            Config::from_value(&Value::Null)
                .unwrap_err()
                .contains("null")
        );
        assert!(Config::from_value(&json!([1])).is_err());
    }

    #[test]
    fn absent_jail_keys_do_not_opt_in_to_unjailed() {
        let c = Config::from_value(&json!({})).unwrap();
        assert!(!c.fs.allow_unjailed);
        assert!(c.fs.host_roots.is_empty());
    }

    #[test]
    fn every_schema_field_has_a_description() {
        fn walk(v: &Value, path: &str, missing: &mut Vec<String>) {
            if let Some(props) = v.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    if p.get("description").is_none() {
                        missing.push(format!("{path}.{k}"));
                    }
                }
            }
            if let Some(defs) = v.get("definitions").and_then(Value::as_object) {
                for (k, d) in defs {
                    walk(d, k, missing);
                }
            }
        }
        let mut missing = Vec::new();
        walk(&Config::json_schema(), "Config", &mut missing);
        assert!(
            missing.is_empty(),
            "fields without description: {missing:?}"
        );
    }
}
