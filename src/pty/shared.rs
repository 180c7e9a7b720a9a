//! What the `shell::pty::*` functions share: the size and write limits,
//! the console's flags, the session status on the wire, and opening a
//! session under the one policy (`open` and `start`).

use crate::error::{Failure, Result, quote};
use crate::exec::{NotADirectory, env_gate};
use crate::function::{Ctx, Flags};
use crate::pty::creds::Credentials;
use crate::pty::ring::End;
use crate::pty::session::{Session, Start, Status};
use crate::pty::spawn;
use crate::pty::target::Target;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Widest terminal accepted, in columns.
pub const MAX_COLS: u16 = 1000;

/// Tallest terminal accepted, in rows.
pub const MAX_ROWS: u16 = 500;

/// Largest single write, in bytes (after base64 decoding).
pub const MAX_WRITE_BYTES: usize = 1024 * 1024;

/// Longest `shell::pty::read` wait: under the engine's default call
/// timeout (30 s), so a caller waiting its default never loses the answer
/// of a read that waited the longest it may.
pub const MAX_WAIT_MS: u64 = 25_000;

pub const CONSOLE: Flags = Flags {
    internal: true,
    trace_hidden: true,
    display: false,
};

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Attached,
    Detached,
    Running,
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
            Status::Running => SessionStatus::Running,
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

pub fn check_size(cols: u16, rows: u16) -> Result<()> {
    if cols == 0 || rows == 0 || cols > MAX_COLS || rows > MAX_ROWS {
        return Err(Failure::bad_input(format!(
            "terminal size {cols}x{rows} (cols x rows) is out of range; cols must be 1..={MAX_COLS} \
             and rows 1..={MAX_ROWS} (the pane's size in character cells)"
        )));
    }
    Ok(())
}

/// What open and start share.
pub struct Opening {
    pub cwd: Option<String>,
    pub program: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cols: u16,
    pub rows: u16,
    pub target: Option<Target>,
    pub request_id: Option<String>,
}

/// Open a session under the one policy: size, env gate, cwd, program, cap.
pub async fn open_session(ctx: &Ctx, o: Opening) -> Result<(Arc<Session>, Credentials)> {
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
