//! The `ide` command line: serve (default), `call`, `functions`.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use ide::catalog::Catalog;
use ide::config::{BUILTIN_DEFAULT_YAML, Config};
use ide::runtime::Runtime;
use ide::services::Services;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ide",
    version,
    about = "iii worker: commands, files, code edits and terminals under one policy",
    after_help = "Conventions (stated once, in `ide call coder::info` under `conventions`): line \
                  numbers are 1-based and inclusive; a revision is the SHA-256 of a file's bytes, \
                  passed back as expected_revision (C221 when stale); errors are {code, message} \
                  (C2xx coder::*, S2xx shell::*). `ide call` exits 0 answered, 1 failed, 2 bad \
                  usage, 3 a batch answered with a failed entry."
)]
struct Cli {
    /// WebSocket URL of the iii engine (the flag wins over III_URL).
    #[arg(long, env = "III_URL", default_value = iii_sdk::DEFAULT_ENGINE_URL, global = true)]
    url: String,
    /// Seed config: sent as initial_value on FIRST registration only; `ide call` uses it
    /// directly. A supervisor's III_CONFIG (compose's resolved configuration) is the default.
    #[arg(
        long,
        env = "III_CONFIG",
        default_value = "./config.yaml",
        global = true
    )]
    config: PathBuf,
    /// The configuration entry this worker owns (default: `ide`, carrying a pre-rename
    /// `shell` value over once). Without it, a III_CONFIG file is the configuration itself
    /// and no entry is claimed.
    #[arg(long, env = "III_CONFIG_NAME", global = true)]
    config_name: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run one function in-process against --config (or the built-in default) and print its JSON result.
    #[command(
        after_help = "Exit status: 0 the function answered; 1 it failed (its {code, message} is \
                      printed); 2 bad usage, an unknown function or a configuration that cannot \
                      be enforced; 3 a batch answered, but some of its entries failed (the answer's \
                      `failed` counts them, each entry carries its own error)."
    )]
    Call {
        /// Function id, e.g. coder::info
        function_id: String,
        /// JSON payload, or `-` to read it from stdin (default `{}`)
        payload: Option<String>,
    },
    /// Serve the agent functions as an MCP server on stdin/stdout (no engine needed): one
    /// tool per function, under --config's policy (see README, "Agents (MCP)").
    Mcp {
        /// Serve only the tools that change nothing (reads, searches, listings).
        #[arg(long)]
        read_only: bool,
        /// Serve only these tools (function ids or tool names, comma-separated).
        #[arg(long, value_delimiter = ',')]
        tools: Vec<String>,
        /// Declare each tool's output schema (the function's response schema; the tool list
        /// grows about threefold).
        #[arg(long)]
        output_schemas: bool,
        /// With --url: the namespace of the ide worker to call (a host on a shared engine).
        #[arg(long)]
        namespace: Option<String>,
    },
    /// Print the function catalog exactly as registered with the engine (JSON, with every
    /// schema); `--brief` lists each id with what it does and its required parameters; an id
    /// prints that function's description and request schema (`--response`: and its answer's).
    Functions {
        /// One line per function and trigger type: id, flags, what it does, required parameters.
        #[arg(long, conflicts_with = "id")]
        brief: bool,
        /// With an id: print the response schema too.
        #[arg(long, requires = "id")]
        response: bool,
        /// Print the engine configuration of an agent-safe deployment: a second listener
        /// whose RBAC exposes exactly the non-internal functions (deploy/engine-agents.yaml).
        #[arg(long, conflicts_with_all = ["id", "brief"])]
        rbac: bool,
        /// One function (or trigger type) id, e.g. coder::update-file.
        id: Option<String>,
    },
}

/// Read the seed: a file that exists must parse; a missing one falls
/// through to the built-in default.
fn load_seed(path: &Path) -> Result<Config, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Config::from_yaml(&text).map_err(|e| {
            format!(
                "config file {} does not parse, refusing to start: {e}",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Config::from_yaml(BUILTIN_DEFAULT_YAML)
        }
        Err(e) => Err(format!("cannot read config file {}: {e}", path.display())),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // colour only for a person at a terminal: a log file or journald gets
    // plain text, not escape codes
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// At most two malloc arenas (glibc's default is eight per core): every
/// thread arena keeps its own free lists and slack, which measured as a few
/// MB of resident memory across a worker's threads (BENCHMARKS.md, terminal
/// sessions); the worker's hot paths are I/O, not allocator contention.
fn limit_malloc_arenas() {
    #[cfg(target_env = "gnu")]
    // SAFETY: called first thing in main, before any other thread exists.
    unsafe {
        nix::libc::mallopt(nix::libc::M_ARENA_MAX, 2);
        // Blocks this large (a terminal's ring, a read of a big file) are
        // mapped on their own and go back to the system when freed; glibc
        // would otherwise raise this threshold after the first such free
        // and serve them from an arena that does not shrink.
        nix::libc::mallopt(nix::libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

fn main() -> ExitCode {
    limit_malloc_arenas();
    let matches = Cli::command().get_matches();
    // `ide mcp` goes through an engine only when --url is on its command
    // line: an III_URL in the environment of an agent's host is not a
    // request to leave this machine.
    let url_given = matches.value_source("url") == Some(clap::parser::ValueSource::CommandLine);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    init_logging();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        None => {
            // compose hands its resolved configuration over as III_CONFIG;
            // with no entry named, that file is the configuration itself
            let file = std::env::var("III_CONFIG")
                .ok()
                .map(|_| cli.config.display().to_string());
            let home = ide::bus::ConfigHome::from_env(cli.config_name.as_deref(), file.as_deref());
            rt.block_on(serve(cli.url, &cli.config, home))
        }
        Some(Command::Functions {
            brief,
            response,
            rbac,
            id,
        }) => {
            let catalog = Catalog::standard();
            if rbac {
                return emit(catalog.agent_engine_config().trim_end(), ExitCode::SUCCESS);
            }
            match (brief, id) {
                (true, _) => emit(catalog.brief().trim_end(), ExitCode::SUCCESS),
                (false, Some(id)) => match catalog.entry_for_reading(&id, response) {
                    Some(v) => emit(&pretty(&v), ExitCode::SUCCESS),
                    None => {
                        eprintln!(
                            "unknown function {id:?}; `ide functions --brief` lists every id"
                        );
                        ExitCode::from(2)
                    }
                },
                (false, None) => emit(&pretty(&catalog.to_json()), ExitCode::SUCCESS),
            }
        }
        Some(Command::Call {
            function_id,
            payload,
        }) => rt.block_on(call(&cli.config, &function_id, payload.as_deref())),
        Some(Command::Mcp {
            read_only,
            tools,
            output_schemas,
            namespace,
        }) => {
            let options = ide::mcp::Options {
                read_only,
                tools,
                output_schemas,
            };
            if url_given {
                rt.block_on(mcp_through_engine(&cli.url, namespace, options))
            } else if namespace.is_some() {
                eprintln!("--namespace names a host on an engine: give the engine with --url");
                ExitCode::from(2)
            } else {
                rt.block_on(mcp(&cli.config, options))
            }
        }
    }
}

/// `ide mcp`: serve MCP on stdio until the client closes stdin or the
/// process is signalled; exit 2 when the configuration cannot be enforced
/// or the tool selection names no tool.
async fn mcp(config: &Path, options: ide::mcp::Options) -> ExitCode {
    // commands' orphans are re-parented to the server, found and killed
    ide::exec::tree::init();
    let runtime = match load_seed(config).and_then(Runtime::build) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let services = Services::standalone(runtime);
    // a long-lived process: the search indexes saved by the worker (or the
    // last `ide mcp`) on this configuration come back in the background
    services.resume_indexes();
    let backend = std::sync::Arc::new(ide::mcp::InProcess(services));
    serve_mcp(backend, &options).await
}

/// `ide mcp --url`: the same tools, each call answered by the ide worker on
/// the engine at `url` (in `namespace`).
async fn mcp_through_engine(
    url: &str,
    namespace: Option<String>,
    options: ide::mcp::Options,
) -> ExitCode {
    let client = iii_sdk::register_worker(
        url,
        iii_sdk::InitOptions {
            metadata: Some(iii_sdk::runtime::WorkerMetadata {
                name: format!("ide-mcp-{}", std::process::id()),
                version: env!("CARGO_PKG_VERSION").to_string(),
                description: Some("ide's MCP server, calling an ide worker".into()),
                ..Default::default()
            }),
            // exports as the worker does: only with OTEL_ENABLED
            otel: Some(ide::bus::telemetry::config().0),
            ..iii_sdk::InitOptions::default()
        },
    );
    if let Err(e) = client
        .wait_until_registered(std::time::Duration::from_secs(10))
        .await
    {
        eprintln!(
            "cannot reach the engine at {url}: {e}; start it, or drop --url to serve this machine"
        );
        client.shutdown_async().await;
        return ExitCode::from(2);
    }
    let backend = std::sync::Arc::new(ide::mcp::ThroughEngine {
        client,
        namespace,
        // beyond shell::exec's longest deadline (max_timeout_ms, 120 s by
        // default), so ide's own answer wins
        timeout: std::time::Duration::from_secs(15 * 60),
    });
    serve_mcp(backend, &options).await
}

async fn serve_mcp(
    backend: std::sync::Arc<dyn ide::mcp::Backend>,
    options: &ide::mcp::Options,
) -> ExitCode {
    match ide::mcp::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        backend,
        options,
        shutdown_signal(),
    )
    .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Print `text` and a newline to stdout, then exit with `code`. A reader
/// that went away (`ide functions | head`) ends the output quietly: nothing
/// is left to say and no one to say it to.
fn emit(text: &str, code: ExitCode) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
    {
        Ok(()) => code,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => code,
        Err(e) => {
            eprintln!("cannot write the result to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Exit status of `ide call` when the call answered but an entry of its
/// batch (`results[]`) failed.
const BATCH_ENTRY_FAILED: u8 = 3;

/// Whether an answer is a batch with a failed entry (`results: [{success:
/// false, …}]`, as `coder::update-file`/`create-file`/`delete-file`/`move`,
/// batch `coder::read-file` and `shell::fs::sed` answer).
fn has_failed_entry(v: &serde_json::Value) -> bool {
    v.get("results")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|r| {
            r.iter()
                .any(|e| e.get("success") == Some(&serde_json::Value::Bool(false)))
        })
}

async fn serve(url: String, config: &Path, home: ide::bus::ConfigHome) -> ExitCode {
    // Before any command runs: orphans of commands are re-parented to the
    // worker, so they can be found and killed with their command.
    ide::exec::tree::init();
    if matches!(home, ide::bus::ConfigHome::File(_)) && !config.exists() {
        tracing::error!(
            "the configuration file {} (III_CONFIG) does not exist; it is this worker's whole \
             configuration, refusing to start",
            config.display()
        );
        return ExitCode::FAILURE;
    }
    let seed = match load_seed(config) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = ide::bus::ServeOptions {
        url,
        seed: seed.to_value(),
        home,
    };
    match ide::bus::serve(opts, shutdown_signal()).await {
        Ok(()) => {
            tracing::info!("ide stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutdown requested");
}

/// `ide call`: exit 0 with the result, 1 with a function error envelope on
/// stdout, 2 for bad usage or a configuration that cannot be enforced, 3
/// with the result when an entry of its batch failed.
async fn call(config: &Path, function_id: &str, payload: Option<&str>) -> ExitCode {
    let text = match payload {
        None => "{}".to_string(),
        Some("-") => {
            let mut s = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut s) {
                eprintln!("cannot read the payload from stdin: {e}");
                return ExitCode::from(2);
            }
            s
        }
        Some(s) => s.to_string(),
    };
    let payload: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("payload is not valid JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let catalog = Catalog::standard();
    if catalog.get(function_id).is_none() {
        eprintln!("unknown function {function_id:?}; `ide functions` lists the catalog");
        return ExitCode::from(2);
    }
    // A background job lives in the worker's process; `ide call` exits as
    // soon as it answers, so the job would be killed before it ran.
    let backgrounds = function_id == "shell::exec_bg"
        || (function_id == "shell::exec"
            && payload.get("on_timeout") == Some(&"background".into()));
    if backgrounds {
        return emit(
            &pretty(&serde_json::json!({
                "code": "S210",
                "message": format!(
                    "{function_id} with a background job cannot run in one-shot `ide call`: the \
                     job would die with this process as soon as it answered. Run it through the \
                     engine against a serving worker (iii trigger {function_id} ...), or call \
                     shell::exec without on_timeout: \"background\""
                ),
            })),
            ExitCode::from(1),
        );
    }
    let runtime = match load_seed(config).and_then(Runtime::build) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let services = Services::one_shot(runtime);
    let result = catalog.call(&services, function_id, payload).await;
    services.shutdown().await;
    match result {
        Ok(v) => {
            let code = if has_failed_entry(&v) {
                ExitCode::from(BATCH_ENTRY_FAILED)
            } else {
                ExitCode::SUCCESS
            };
            emit(&pretty(&v), code)
        }
        Err(e) => emit(
            &pretty(&serde_json::json!({"code": e.code, "message": e.message})),
            ExitCode::from(1),
        ),
    }
}
