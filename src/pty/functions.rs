//! The `shell::pty::*` functions: the eight console functions exactly as
//! published, and four agent-facing ones (`start`, `send`, `read`,
//! `screen`).

use super::creds::Credentials;
use super::ring::End;
use super::session::{Session, Start, Status, Summary};
use super::target::{self, Target};
use super::{keys, screen, spawn};
use crate::error::{Class, Failure, Result, quote};
use crate::exec::{NotADirectory, env_gate};
use crate::function::{Ctx, Flags, FunctionDef, function};
use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Widest terminal accepted, in columns.
pub const MAX_COLS: u16 = 1000;
/// Tallest terminal accepted, in rows.
pub const MAX_ROWS: u16 = 500;
/// Largest single write, in bytes (after base64 decoding).
pub const MAX_WRITE_BYTES: usize = 1024 * 1024;
/// Longest `shell::pty::read` wait.
pub const MAX_WAIT_MS: u64 = 60_000;

const CONSOLE: Flags = Flags {
    internal: true,
    trace_hidden: true,
    display: false,
};

// ---- wire types (the published contract) ----

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Attached,
    Detached,
    Exited {
        exit_code: Option<u32>,
        signal: Option<String>,
        error: Option<String>,
    },
}

impl From<Status> for SessionStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Attached => SessionStatus::Attached,
            Status::Detached => SessionStatus::Detached,
            Status::Exited(End {
                exit_code,
                signal,
                error,
            }) => SessionStatus::Exited {
                exit_code,
                signal,
                error,
            },
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenRequest {
    /// argv for `program`. Ignored without `program` (a login shell takes no arguments here).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    pub cols: u16,
    pub cwd: String,
    /// Extra environment on top of what the worker forwards; exec-hijacking keys (PATH, LD_*, DYLD_*, BASH_ENV, …) fail the call.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    pub output_function_id: String,
    /// Program to run instead of the user's login shell (an agent CLI, REPL, TUI), resolved on the worker's PATH.
    #[serde(default)]
    pub program: Option<String>,
    #[serde(default)]
    pub request_id: Option<String>,
    pub rows: u16,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenResponse {
    pub access_key: String,
    pub cwd: String,
    pub pid: Option<u32>,
    /// The program the session runs; absent for a login shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    pub reconnect_token: String,
    pub session_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteRequest {
    pub access_key: String,
    pub data: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteResponse {
    pub written: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResizeRequest {
    pub access_key: String,
    pub cols: u16,
    pub rows: u16,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ResizeResponse {
    pub cols: u16,
    pub rows: u16,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AttachRequest {
    pub after_sequence: u64,
    pub cols: u16,
    pub output_function_id: String,
    pub reconnect_token: String,
    #[serde(default)]
    pub request_id: Option<String>,
    pub rows: u16,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OutputFrame {
    pub data: String,
    pub sequence: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AttachResponse {
    pub access_key: String,
    pub cwd: String,
    pub frames: Vec<OutputFrame>,
    pub next_sequence: u64,
    pub reconnect_token: String,
    pub status: SessionStatus,
    pub truncated: bool,
}

/// Take back a session whose reconnect token is gone.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AdoptRequest {
    #[serde(default)]
    pub after_sequence: u64,
    pub cols: u16,
    /// Where output goes next; must belong to the same console page family as the target it replaces.
    pub output_function_id: String,
    pub rows: u16,
    pub session_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DetachRequest {
    pub access_key: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DetachResponse {
    pub status: SessionStatus,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CloseRequest {
    pub access_key: String,
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CloseResponse {
    pub closed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionsRequest {}

/// One live session, without credentials: enough to tell a terminal that shows nothing apart from one that was never fed. A page that counts the frames it applied compares its own count against `sequence` — equal means the frames arrived and the browser is at fault, far behind means delivery is.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionSummary {
    pub cwd: String,
    pub frame_bytes: usize,
    /// Frames still replayable from the ring buffer.
    pub frames: usize,
    /// Where output is being delivered; absent while detached.
    pub output_function_id: Option<String>,
    pub pid: Option<u32>,
    pub program: Option<String>,
    /// Sequence number of the last frame the session produced.
    pub sequence: u64,
    pub session_id: String,
    pub status: SessionStatus,
    /// Whether the buffer has dropped frames a full replay would need.
    pub truncated: bool,
    /// The console page family this session belongs to — the `<name>` in `iii::<name>-ui::pty-output::console-<browser>`. Present whether or not anyone is attached, because it is what a page uses to recognise its own orphaned session; it names a page, never a browser.
    pub ui: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionsResponse {
    pub sessions: Vec<SessionSummary>,
}

// ---- agent-facing wire types ----

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartRequest {
    /// argv for `program`. Ignored without `program` (a login shell takes no arguments here).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Terminal width in columns (default 120).
    #[serde(default)]
    pub cols: Option<u16>,
    /// Directory to start in, through the same policy as `shell::exec`'s `cwd`; omit it for the configured working_dir.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment on top of what the worker forwards; exec-hijacking keys (`PATH`, `LD_*`, `DYLD_*`, `BASH_ENV`, …) fail the call.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Program to run instead of the user's login shell (a REPL, `npm`, `less`…), resolved on the worker's PATH.
    #[serde(default)]
    pub program: Option<String>,
    /// A retried start with the same `request_id` returns the same session instead of a second one.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Terminal height in rows (default 40).
    #[serde(default)]
    pub rows: Option<u16>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StartResponse {
    pub session_id: String,
    /// Needed by send, read, screen, resize and close.
    pub access_key: String,
    /// Lets a console attach to watch the session (`shell::pty::attach`).
    pub reconnect_token: String,
    pub pid: u32,
    pub cwd: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendRequest {
    pub session_id: String,
    pub access_key: String,
    /// UTF-8 text typed as is (sent before `keys`).
    #[serde(default)]
    pub text: Option<String>,
    /// Named keys, in order: `enter`, `tab`, `esc`, `backspace`, `up`, `down`, `left`, `right`, `home`, `end`, `pageup`, `pagedown`, `delete`, `space`, `ctrl-<letter>` (`ctrl-c`, `ctrl-d`, …).
    #[serde(default)]
    pub keys: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SendResponse {
    /// Bytes the program's terminal took.
    pub written: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadRequest {
    pub session_id: String,
    pub access_key: String,
    /// Return output after this sequence number (0: everything retained); pass the previous answer's `next_sequence - 1`.
    #[serde(default)]
    pub after_sequence: u64,
    /// Wait up to this long (ms, at most 60000) for output — or, with `until`, for it to match. Default 0: answer at once.
    #[serde(default)]
    pub wait_ms: u64,
    /// A regex the output after `after_sequence` must match before the call returns (or `wait_ms` runs out).
    #[serde(default)]
    pub until: Option<String>,
    /// Drop escape sequences and control characters (default true); `until` is matched against the same text.
    #[serde(default)]
    pub strip_ansi: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadResponse {
    /// The output after `after_sequence`, as text.
    pub text: String,
    /// The sequence number the next frame will carry; read on with `after_sequence: next_sequence - 1`.
    pub next_sequence: u64,
    /// `until` matched (or, without `until`, some output arrived).
    pub matched: bool,
    /// `wait_ms` ran out first.
    pub timed_out: bool,
    /// Output after `after_sequence` was already evicted from the ring.
    pub truncated: bool,
    pub status: SessionStatus,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScreenRequest {
    pub session_id: String,
    pub access_key: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Cursor {
    /// 0-based.
    pub row: u16,
    /// 0-based.
    pub col: u16,
    pub visible: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenResponse {
    /// The visible screen, one string per row (trailing blanks trimmed).
    pub rows: Vec<String>,
    pub cursor: Cursor,
    pub cols: u16,
    pub height: u16,
    /// A full-screen program (less, vim, top) is showing.
    pub alternate_screen: bool,
    /// The window title the program set, or "".
    pub title: String,
    /// Sequence number of the last frame the screen includes.
    pub sequence: u64,
    pub status: SessionStatus,
}

// ---- shared checks ----

fn check_size(cols: u16, rows: u16) -> Result<()> {
    if cols == 0 || rows == 0 || cols > MAX_COLS || rows > MAX_ROWS {
        return Err(Failure::bad_input(format!(
            "terminal size {cols}x{rows} (cols x rows) is out of range; cols must be 1..={MAX_COLS} \
             and rows 1..={MAX_ROWS} (the pane's size in character cells)"
        )));
    }
    Ok(())
}

fn summary(s: Summary) -> SessionSummary {
    SessionSummary {
        cwd: s.cwd,
        frame_bytes: s.frame_bytes,
        frames: s.frames,
        output_function_id: s.output_function_id,
        pid: Some(s.pid),
        program: s.program,
        sequence: s.sequence,
        session_id: s.session_id,
        status: s.status.into(),
        truncated: s.truncated,
        ui: s.ui,
    }
}

/// What open and start share.
struct Opening {
    cwd: Option<String>,
    program: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cols: u16,
    rows: u16,
    target: Option<Target>,
    request_id: Option<String>,
}

/// Open a session under the one policy: size, env gate, cwd, program, cap.
async fn open_session(ctx: &Ctx, o: Opening) -> Result<(Arc<Session>, Credentials)> {
    check_size(o.cols, o.rows)?;
    if let Some(env) = &o.env {
        env_gate::check(env)?;
    }
    if let Some(rid) = &o.request_id
        && (rid.is_empty() || rid.len() > 256)
    {
        return Err(Failure::bad_input(
            "request_id must be 1 to 256 characters (a fresh random id per logical open)",
        ));
    }
    let sessions = ctx.services.pty.clone();
    let _gate = sessions.open_gate.lock().await;
    let target_id = o.target.as_ref().map(|t| t.function_id.clone());
    if let Some(rid) = &o.request_id {
        let seen = sessions.opens().get(rid).cloned();
        if let Some((tgt, sid, creds)) = seen
            && let Ok(s) = sessions.get(&sid)
        {
            if tgt != target_id {
                return Err(Failure::bad_input(format!(
                    "request_id {} already opened session {} for another output target; use a \
                     fresh request_id for a new session",
                    quote(rid),
                    quote(&sid)
                )));
            }
            if s.credentials().access_key != creds.access_key {
                return Err(Failure::bad_input(format!(
                    "request_id {} opened session {}, whose credentials have rotated since (it \
                     was attached or adopted); attach with the current reconnect token",
                    quote(rid),
                    quote(&sid)
                )));
            }
            return Ok((s, creds));
        }
    }
    let rt = ctx.runtime.clone();
    let raw_cwd = o.cwd.clone();
    let cwd = tokio::task::spawn_blocking(move || match raw_cwd {
        Some(raw) => crate::exec::resolve_cwd_as(&rt, &raw, NotADirectory::WrongType),
        None => Ok(crate::exec::default_cwd(&rt)),
    })
    .await
    .map_err(|e| Failure::io(format!("cwd resolution failed: {e}")))??;
    let (program_path, arg0, args) = match &o.program {
        Some(p) => (
            spawn::resolve_program(p)?,
            p.clone(),
            o.args.clone().unwrap_or_default(),
        ),
        None => {
            let shell = spawn::login_shell();
            let name = shell
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "sh".into());
            (shell, format!("-{name}"), Vec::new())
        }
    };
    let config = &ctx.runtime.config;
    let mut env = if config.env.inherit {
        env_gate::child_env(&config.env, [], o.env.as_ref())
    } else {
        env_gate::child_env(&config.env, env_gate::worker_env(), o.env.as_ref())
    };
    if !o.env.as_ref().is_some_and(|e| e.contains_key("TERM")) {
        env.vars.insert("TERM".into(), "xterm-256color".into());
    }
    let dir = match &cwd.handle {
        Some(fd) => crate::jail::proc_path(std::os::fd::AsFd::as_fd(&**fd)),
        None => cwd.path.clone(),
    };
    sessions.make_room(config.pty.max_sessions as usize).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let session = Session::start(
        id,
        Start {
            spec: spawn::Spec {
                program: program_path,
                arg0,
                args,
                dir,
                env,
                cols: o.cols,
                rows: o.rows,
            },
            program: o.program.clone(),
            cwd: cwd.path.display().to_string(),
            ring_bytes: usize::try_from(config.pty.ring_bytes).unwrap_or(usize::MAX),
            target: o.target,
            outbound: ctx.services.outbound.clone(),
        },
    )?;
    drop(cwd);
    sessions.insert(session.clone());
    sessions.ensure_sweeper(ctx.services.live.clone());
    let creds = session.credentials();
    if let Some(rid) = o.request_id {
        let mut opens = sessions.opens();
        if opens.len() >= 1024 {
            opens.clear(); // bounded; a retry is seconds after its open
        }
        opens.insert(rid, (target_id, session.id.clone(), creds.clone()));
    }
    tracing::info!(session = %session.id, pid = session.pid, "pty session opened");
    Ok((session, creds))
}

fn attach_response(out: super::session::AttachOut) -> AttachResponse {
    let b64 = base64::engine::general_purpose::STANDARD;
    AttachResponse {
        access_key: out.creds.access_key,
        cwd: out.cwd,
        frames: out
            .frames
            .into_iter()
            .map(|(sequence, data)| OutputFrame {
                data: b64.encode(data),
                sequence,
            })
            .collect(),
        next_sequence: out.next_sequence,
        reconnect_token: out.creds.reconnect_token,
        status: out.status.into(),
        truncated: out.truncated,
    }
}

// ---- the console functions ----

pub fn open_def() -> FunctionDef {
    function(
        "shell::pty::open",
        "Open a persistent host PTY running the user's login shell, or the program named in `program`.",
        CONSOLE,
        |ctx: Ctx, req: OpenRequest| async move {
            let target = target::parse(&req.output_function_id)?;
            let (s, creds) = open_session(
                &ctx,
                Opening {
                    cwd: Some(req.cwd),
                    program: req.program,
                    args: req.args,
                    env: req.env,
                    cols: req.cols,
                    rows: req.rows,
                    target: Some(target),
                    request_id: req.request_id,
                },
            )
            .await?;
            Ok(OpenResponse {
                access_key: creds.access_key,
                cwd: s.cwd.clone(),
                pid: Some(s.pid),
                program: s.program.clone(),
                reconnect_token: creds.reconnect_token,
                session_id: s.id.clone(),
            })
        },
    )
}

pub fn write_def() -> FunctionDef {
    function(
        "shell::pty::write",
        "Write base64-encoded keyboard input to a PTY session.",
        CONSOLE,
        |ctx: Ctx, req: WriteRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let data = base64::engine::general_purpose::STANDARD
                .decode(req.data.as_bytes())
                .map_err(|e| {
                    Failure::bad_input(format!(
                        "data is not standard base64 ({e}); encode the keystrokes' UTF-8 bytes, \
                         e.g. btoa(\"ls\\r\")"
                    ))
                })?;
            if data.len() > MAX_WRITE_BYTES {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "one write carries {} bytes, more than {MAX_WRITE_BYTES}; split it",
                        data.len()
                    ),
                ));
            }
            let written = s.write(&data).await?;
            Ok(WriteResponse { written })
        },
    )
}

pub fn resize_def() -> FunctionDef {
    function(
        "shell::pty::resize",
        "Resize a PTY session in terminal columns and rows.",
        CONSOLE,
        |ctx: Ctx, req: ResizeRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            check_size(req.cols, req.rows)?;
            s.resize(req.cols, req.rows)?;
            Ok(ResizeResponse {
                cols: req.cols,
                rows: req.rows,
            })
        },
    )
}

pub fn attach_def() -> FunctionDef {
    function(
        "shell::pty::attach",
        "Attach to a retained PTY session and replay buffered output.",
        CONSOLE,
        |ctx: Ctx, req: AttachRequest| async move {
            let target = target::parse(&req.output_function_id)?;
            check_size(req.cols, req.rows)?;
            let s = ctx.services.pty.get(&req.session_id)?;
            let out = s.attach(
                &req.reconnect_token,
                req.request_id.as_deref(),
                target,
                req.after_sequence,
                req.cols,
                req.rows,
            )?;
            Ok(attach_response(out))
        },
    )
}

pub fn detach_def() -> FunctionDef {
    function(
        "shell::pty::detach",
        "Detach a browser output target while retaining its PTY session.",
        CONSOLE,
        |ctx: Ctx, req: DetachRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            Ok(DetachResponse {
                status: s.detach().await.into(),
            })
        },
    )
}

pub fn close_def() -> FunctionDef {
    function(
        "shell::pty::close",
        "Terminate and close a PTY session.",
        CONSOLE,
        |ctx: Ctx, req: CloseRequest| async move {
            ctx.services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let closed = ctx.services.pty.close(&req.session_id).await;
            tracing::info!(session = %req.session_id, "pty session closed");
            Ok(CloseResponse { closed })
        },
    )
}

pub fn adopt_def() -> FunctionDef {
    function(
        "shell::pty::adopt",
        "Take back an unattached PTY session whose reconnect token is gone, from the console page that owns it. Refuses a session someone is attached to, and a page that is not the session's own.",
        CONSOLE,
        |ctx: Ctx, req: AdoptRequest| async move {
            let target = target::parse(&req.output_function_id)?;
            check_size(req.cols, req.rows)?;
            let s = ctx.services.pty.get(&req.session_id)?;
            let out = s.adopt(target, req.after_sequence, req.cols, req.rows)?;
            Ok(attach_response(out))
        },
    )
}

pub fn sessions_def() -> FunctionDef {
    function(
        "shell::pty::sessions",
        "List live PTY sessions with program, cwd, sequence, replay buffer size, and output target. Diagnostics only — no credentials.",
        Flags::NONE,
        |ctx: Ctx, _req: SessionsRequest| async move {
            let sessions = ctx
                .services
                .pty
                .all()
                .iter()
                .map(|s| summary(s.summary()))
                .collect();
            Ok(SessionsResponse { sessions })
        },
    )
}

// ---- the agent functions ----

pub fn start_def() -> FunctionDef {
    function(
        "shell::pty::start",
        "Start a terminal session an agent drives: the login shell or `program` (with `args`) on a real PTY, in `cwd` (same policy, env gate and session cap as the console's terminals; default size 120x40). Drive it with shell::pty::send, follow it with shell::pty::read (wait for a prompt with `until`), look at it with shell::pty::screen, end it with shell::pty::close. Errors return { code, message }; common: S210 bad input, S211 cwd or program not found, S212 cwd not a directory, S215 jail escape, S218 session cap.",
        Flags::NONE,
        |ctx: Ctx, req: StartRequest| async move {
            let (s, creds) = open_session(
                &ctx,
                Opening {
                    cwd: req.cwd,
                    program: req.program,
                    args: req.args,
                    env: req.env,
                    cols: req.cols.unwrap_or(120),
                    rows: req.rows.unwrap_or(40),
                    target: None,
                    request_id: req.request_id,
                },
            )
            .await?;
            Ok(StartResponse {
                session_id: s.id.clone(),
                access_key: creds.access_key,
                reconnect_token: creds.reconnect_token,
                pid: s.pid,
                cwd: s.cwd.clone(),
            })
        },
    )
}

pub fn send_def() -> FunctionDef {
    function(
        "shell::pty::send",
        "Type into a terminal session: `text` (UTF-8, as is) then `keys` (named keys such as `enter`, `tab`, `esc`, `up`, `ctrl-c`, `ctrl-d`). Returns { written }. Errors return { code, message }; common: S210 unknown key, S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: SendRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let mut bytes = req.text.unwrap_or_default().into_bytes();
            for k in req.keys.unwrap_or_default() {
                bytes.extend(keys::bytes_of(&k)?);
            }
            if bytes.is_empty() {
                return Err(Failure::bad_input(
                    "nothing to send; pass `text` and/or `keys` (e.g. {\"text\": \"ls\", \"keys\": [\"enter\"]})",
                ));
            }
            if bytes.len() > MAX_WRITE_BYTES {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "one send carries {} bytes, more than {MAX_WRITE_BYTES}; split it",
                        bytes.len()
                    ),
                ));
            }
            Ok(SendResponse {
                written: s.write(&bytes).await?,
            })
        },
    )
}

pub fn read_def() -> FunctionDef {
    function(
        "shell::pty::read",
        "Read a terminal session's output after `after_sequence` as text, waiting up to `wait_ms` for output or until the regex `until` matches. Returns { text, next_sequence, matched, timed_out, truncated, status }; pass `next_sequence - 1` as the next `after_sequence`. Errors return { code, message }; common: S211 unknown session or stale access_key, S217 bad `until` regex.",
        Flags::NONE,
        |ctx: Ctx, req: ReadRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let strip = req.strip_ansi.unwrap_or(true);
            let until = match &req.until {
                Some(pat) => Some(
                    regex::RegexBuilder::new(pat)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| {
                            Failure::new(
                                Class::BadRegex,
                                format!("until {} is not a valid regex: {e}", quote(pat)),
                            )
                        })?,
                ),
                None => None,
            };
            let text_of = move |raw: &[u8]| {
                if strip {
                    screen::strip_ansi(raw)
                } else {
                    String::from_utf8_lossy(raw).into_owned()
                }
            };
            let wait = Duration::from_millis(req.wait_ms.min(MAX_WAIT_MS));
            let (out, matched, timed_out) = s
                .read(req.after_sequence, wait, |raw| match &until {
                    Some(re) => re.is_match(&text_of(raw)),
                    None => !raw.is_empty(),
                })
                .await;
            Ok(ReadResponse {
                text: text_of(&out.raw),
                next_sequence: out.next_sequence,
                matched,
                timed_out,
                truncated: out.truncated,
                status: out.status.into(),
            })
        },
    )
}

pub fn screen_def() -> FunctionDef {
    function(
        "shell::pty::screen",
        "The rendered screen of a terminal session, as a terminal shows it now: rows of text, cursor, alternate-screen flag (a full-screen program such as less or vim is up) and window title. Errors return { code, message }; common: S211 unknown session or stale access_key.",
        Flags::NONE,
        |ctx: Ctx, req: ScreenRequest| async move {
            let s = ctx
                .services
                .pty
                .with_key(&req.session_id, &req.access_key)?;
            let (r, sequence) = s.render();
            Ok(ScreenResponse {
                rows: r
                    .rows
                    .into_iter()
                    .map(|row| row.trim_end().to_string())
                    .collect(),
                cursor: Cursor {
                    row: r.cursor_row,
                    col: r.cursor_col,
                    visible: r.cursor_visible,
                },
                cols: r.cols,
                height: r.height,
                alternate_screen: r.alternate_screen,
                title: r.title,
                sequence,
                status: s.status().into(),
            })
        },
    )
}

/// Every `shell::pty::*` function, for the catalog.
pub fn defs() -> Vec<FunctionDef> {
    vec![
        open_def(),
        write_def(),
        resize_def(),
        attach_def(),
        detach_def(),
        close_def(),
        adopt_def(),
        sessions_def(),
        start_def(),
        send_def(),
        read_def(),
        screen_def(),
    ]
}
