//! Starting a program on a new pseudo-terminal.
//!
//! The worker owns the master side itself (`posix_openpt`, close-on-exec,
//! non-blocking, so it can sit under tokio's `AsyncFd`: no thread is ever
//! blocked in a read). The child gets the slave as stdin/stdout/stderr and
//! as its controlling terminal: it forks (a `pre_exec` hook: `setsid`, then
//! `TIOCSCTTY`), leads a new session and process group (pgid = its pid),
//! and is registered with the worker's reaper ([`crate::exec::tree`]) so
//! its exit status stays the session's.

use crate::error::{Failure, quote};
use crate::exec::env_gate::ChildEnv;
use crate::exec::tree::{self, Owned, Tree};
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::libc;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

/// What to start.
pub struct Spec {
    /// The executable (absolute).
    pub program: PathBuf,
    /// `argv[0]` as the program sees it (`-bash` for a login shell).
    pub arg0: String,
    pub args: Vec<String>,
    /// The directory to start in (a `/proc/self/fd/N` link to a held handle).
    pub dir: PathBuf,
    pub env: ChildEnv,
    pub cols: u16,
    pub rows: u16,
}

/// A started session process.
pub struct Spawned {
    /// The master side, non-blocking and close-on-exec.
    pub master: OwnedFd,
    pub child: tokio::process::Child,
    pub pid: i32,
    /// Keeps the orphan reaper off the child until it is reaped here.
    pub owned: Owned,
    /// Everything the session starts, in its group or not.
    pub tree: Arc<Tree>,
}

/// Set the terminal size the program sees (it gets SIGWINCH).
pub fn set_size(master: BorrowedFd<'_>, cols: u16, rows: u16) -> Result<(), Failure> {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer, which points
    // to a live local; the fd is borrowed for the call.
    let r = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    if r < 0 {
        return Err(Failure::io(format!(
            "cannot resize the terminal: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

fn pty_failure(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::io(format!("cannot open a pseudo-terminal ({what}): {e}"))
}

pub fn spawn(spec: &Spec) -> Result<Spawned, Failure> {
    let pm = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .map_err(|e| pty_failure("posix_openpt", e))?;
    nix::pty::grantpt(&pm).map_err(|e| pty_failure("grantpt", e))?;
    nix::pty::unlockpt(&pm).map_err(|e| pty_failure("unlockpt", e))?;
    let name = nix::pty::ptsname_r(&pm).map_err(|e| pty_failure("ptsname", e))?;
    // SAFETY: `into_raw_fd` hands over sole ownership of a valid descriptor.
    let master = unsafe { OwnedFd::from_raw_fd(pm.into_raw_fd()) };
    set_size(master.as_fd(), spec.cols, spec.rows)?;
    let flags = fcntl(&master, FcntlArg::F_GETFL).map_err(|e| pty_failure("F_GETFL", e))?;
    fcntl(
        &master,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(|e| pty_failure("O_NONBLOCK", e))?;
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&name)
        .map_err(|e| pty_failure(&name, e))?;
    let stdio = || -> Result<Stdio, Failure> {
        Ok(Stdio::from(
            slave.try_clone().map_err(|e| pty_failure("dup", e))?,
        ))
    };
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.arg0(&spec.arg0)
        .args(&spec.args)
        .current_dir(&spec.dir)
        .stdin(stdio()?)
        .stdout(stdio()?)
        .stderr(stdio()?);
    if spec.env.clear {
        cmd.env_clear();
    }
    cmd.envs(&spec.env.vars);
    let id = tree::new_id();
    cmd.env(tree::MARKER, &id);
    // SAFETY: runs in the forked child before exec and calls only
    // setsid(2), ioctl(2) and what `signals::reset_in_child` calls, all
    // async-signal-safe; it allocates nothing and takes no lock. stdin
    // (fd 0) is the slave by then, so TIOCSCTTY makes it the new session's
    // controlling terminal. The program starts with default signal
    // dispositions, whatever the worker inherited (Ctrl+C must interrupt).
    unsafe {
        cmd.pre_exec(|| {
            crate::exec::signals::reset_in_child()?;
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let spawning = tree::spawning();
    let child = cmd.spawn().map_err(|e| {
        Failure::io(format!(
            "cannot start {}: {e}",
            quote(&spec.program.display().to_string())
        ))
    })?;
    let Some(pid) = child.id().map(|p| p as i32) else {
        return Err(Failure::io(
            "the session's program exited before it could be tracked",
        ));
    };
    let owned = spawning.own(pid);
    let tree = Tree::open(id, pid);
    // The child has its copies; ours must go, or the master never sees EOF.
    drop(cmd);
    drop(slave);
    Ok(Spawned {
        master,
        child,
        pid,
        owned,
        tree,
    })
}

/// The user's login shell, from the passwd entry (`/bin/sh` without one).
pub fn login_shell() -> PathBuf {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.shell)
        .filter(|s| s.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// `program` as the worker's PATH resolves it (a name with a `/` is taken
/// as a path). Missing or not executable → 211 naming PATH.
pub fn resolve_program(program: &str) -> Result<PathBuf, Failure> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() || program.contains('\0') {
        return Err(Failure::bad_input(
            "program must be a non-empty name or path without NUL bytes; omit it for the login shell",
        ));
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        if p.is_absolute() && executable(&p) {
            return Ok(p);
        }
        return Err(Failure::new(
            crate::error::Class::NotFound,
            format!(
                "program {} is not an executable file at an absolute path; pass a name on the \
                 worker's PATH or an absolute path",
                quote(program)
            ),
        ));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        if dir.is_absolute() && executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(Failure::new(
        crate::error::Class::NotFound,
        format!(
            "program {} is not on the worker's PATH; pass an absolute path, or omit program for \
             the login shell",
            quote(program)
        ),
    ))
}
