//! What a program ide starts inherits of its signal state: nothing.
//!
//! A process inherits the signals its parent ignores, across `exec`. A
//! worker started in the background by a script (`cmd &` without job
//! control ignores SIGINT and SIGQUIT), under `nohup` (SIGHUP), or by a
//! service manager that ignores some, would hand that on to every shell
//! and command it runs: a terminal pane whose Ctrl+C interrupts nothing, a
//! job that outlives its hang-up. A terminal emulator and a login start
//! their programs with default dispositions; so does ide, for terminal
//! sessions and commands alike. (The standard library already empties the
//! signal mask and restores SIGPIPE in the child; handlers the worker
//! installs are reset by `exec` itself; what is left is `SIG_IGN`.)
//!
//! Two means, one for each way ide spawns:
//! - [`children_start_with_defaults`], once per worker before its first
//!   spawn: each signal the worker inherited as ignored gets a handler that
//!   does nothing instead. The worker still ignores it in effect, and since
//!   `exec` resets caught signals to their default, every child — however
//!   spawned, `posix_spawn` included (the cheap path commands take) —
//!   starts with the default. The job-control signals stay ignored: a
//!   caught SIGTTOU would stop a background worker's own terminal writes.
//! - [`reset_in_child`], in the forked child of a terminal session before
//!   `exec`: everything back to default, job-control signals included (the
//!   session's shell runs job control on its own terminal).

use nix::libc;

/// The highest signal number Linux defines (`NSIG - 1`, real-time
/// signals included).
const LAST_SIGNAL: libc::c_int = 64;

/// In the forked child, before `exec`: every signal's disposition back to
/// its default and the signal mask empty.
///
/// # Safety
/// Call only between `fork` and `exec` (a `pre_exec` hook). It calls only
/// sigemptyset(3), sigprocmask(2) and sigaction(2), which are
/// async-signal-safe, allocates nothing and takes no lock.
pub unsafe fn reset_in_child() -> std::io::Result<()> {
    // SAFETY: plain-data structs, valid when zeroed; the calls only read
    // and write them.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default.sa_mask);
        for signal in 1..=LAST_SIGNAL {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            // The C library reserves a few real-time signals (EINVAL):
            // nothing to restore there.
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// Signals whose inherited `SIG_IGN` the worker keeps as it is: the ones it
/// cannot catch, and job control's (see the module's notes).
const KEPT: [libc::c_int; 5] = [
    libc::SIGKILL,
    libc::SIGSTOP,
    libc::SIGTTOU,
    libc::SIGTTIN,
    libc::SIGTSTP,
];

extern "C" fn ignore(_: libc::c_int) {}

/// Turn every signal the worker inherited as ignored (but job control's)
/// into one it catches and drops, so that children start with the default
/// (see the module's notes). Returns the signals it changed. Once per
/// process; later calls return the first answer.
pub fn children_start_with_defaults() -> &'static [libc::c_int] {
    static CHANGED: std::sync::OnceLock<Vec<libc::c_int>> = std::sync::OnceLock::new();
    CHANGED.get_or_init(|| {
        let mut changed = Vec::new();
        for signal in 1..=LAST_SIGNAL {
            if KEPT.contains(&signal) {
                continue;
            }
            // SAFETY: sigaction(2) on plain-data structs valid when zeroed;
            // the installed handler does nothing, so it is async-signal-safe.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut current) != 0
                    || current.sa_sigaction != libc::SIG_IGN
                {
                    continue;
                }
                let mut caught: libc::sigaction = std::mem::zeroed();
                caught.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
                caught.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut caught.sa_mask);
                if libc::sigaction(signal, &caught, std::ptr::null_mut()) == 0 {
                    changed.push(signal);
                }
            }
        }
        if !changed.is_empty() {
            tracing::debug!(
                signals = ?changed,
                "signals the worker inherited as ignored are caught and dropped instead, so \
                 the programs it starts get their default"
            );
        }
        changed
    })
}
