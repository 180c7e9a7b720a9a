//! Run the real `ide` binary as a child process and watch its output.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long dropping a still running process waits after SIGTERM before it
/// sends SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(3);

/// Identity variables a supervisor would set; cleared so the test decides.
const INHERITED_IDENTITY: [&str; 5] = [
    "III_URL",
    "III_WORKER_NAME",
    "III_NAMESPACE",
    "III_CONFIG",
    "III_CONFIG_NAME",
];

#[derive(Default)]
struct Output {
    /// stdout and stderr lines, in arrival order.
    all: Mutex<String>,
    stdout: Mutex<String>,
    /// Streams that reached end of file.
    closed: Mutex<u8>,
    notify: Notify,
}

impl Output {
    fn all(&self) -> MutexGuard<'_, String> {
        self.all.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn closed(&self) -> u8 {
        *self.closed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running `ide` process. Dropping it stops the process: SIGTERM, then
/// SIGKILL if it is still there after a grace period.
pub struct IdeProcess {
    /// The working directory (and home) when the caller gave none (removed
    /// on drop), so nothing the worker keeps lands outside the test's dirs.
    _cwd: Option<tempfile::TempDir>,
    child: Child,
    output: Arc<Output>,
    readers: Vec<JoinHandle<()>>,
}

/// The signals a worker started by `nohup cmd &` from a script ignores.
pub const IGNORED_AT_START: [Signal; 3] = [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGHUP];

/// In a forked child before exec: ignore [`IGNORED_AT_START`].
pub fn ignore_as_a_background_start() -> std::io::Result<()> {
    for signal in IGNORED_AT_START {
        // SAFETY: setting SIG_IGN installs no handler; signal(2) is
        // async-signal-safe.
        unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn) }
            .map_err(std::io::Error::from)?;
    }
    Ok(())
}

impl IdeProcess {
    /// Start `ide` with `args` and extra environment `envs` (the inherited
    /// `III_URL`, `III_WORKER_NAME` and `III_NAMESPACE` are removed first).
    /// Must be called inside a tokio runtime.
    pub fn spawn(args: &[&str], envs: &[(&str, &str)]) -> IdeProcess {
        Self::spawn_in(None, args, envs)
    }

    /// Write `cfg` to `config_path` (JSON is YAML) and serve it on the
    /// engine at `url`, logging at `info` (bindings and registrations are
    /// awaited through ide's log lines).
    pub fn serve(
        url: &str,
        cfg: &ide::config::Config,
        config_path: &std::path::Path,
    ) -> IdeProcess {
        Self::serve_with(url, cfg, config_path, &[])
    }

    /// [`serve`](Self::serve) with more environment for the worker.
    pub fn serve_with(
        url: &str,
        cfg: &ide::config::Config,
        config_path: &std::path::Path,
        envs: &[(&str, String)],
    ) -> IdeProcess {
        std::fs::write(config_path, cfg.to_value().to_string()).expect("write seed");
        let mut all: Vec<(&str, &str)> = vec![("RUST_LOG", "info")];
        all.extend(envs.iter().map(|(k, v)| (*k, v.as_str())));
        Self::spawn(
            &["--url", url, "--config", &config_path.display().to_string()],
            &all,
        )
    }

    /// [`spawn`](Self::spawn) with the process's working directory set.
    pub fn spawn_in(
        cwd: Option<&std::path::Path>,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> IdeProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ide"));
        // The home and state home (where a relative `turns.data_dir`, the
        // SDK's process marker and a test shell's history land) are the
        // working directory too, unless `envs` names others.
        let own_cwd = match cwd {
            Some(dir) => {
                command
                    .current_dir(dir)
                    .env("XDG_STATE_HOME", dir)
                    .env("HOME", dir);
                None
            }
            None => {
                let t = tempfile::TempDir::new().expect("worker cwd");
                command
                    .current_dir(t.path())
                    .env("XDG_STATE_HOME", t.path())
                    .env("HOME", t.path());
                Some(t)
            }
        };
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in INHERITED_IDENTITY {
            command.env_remove(name);
        }
        for (name, value) in envs {
            command.env(name, value);
        }
        // Started the way a script starts a worker in the background (`&`
        // without job control ignores SIGINT and SIGQUIT) or `nohup` does
        // (SIGHUP): what ide starts must not inherit that, or a console's
        // Ctrl+C interrupts nothing. Every end-to-end test runs so.
        // SAFETY: in the forked child before exec; signal(2) is
        // async-signal-safe and nothing is allocated.
        unsafe {
            command.pre_exec(ignore_as_a_background_start);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the ide binary: {e}"));
        let output = Arc::new(Output::default());
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let readers = vec![
            tokio::spawn(read_lines(stdout, output.clone(), true)),
            tokio::spawn(read_lines(stderr, output.clone(), false)),
        ];
        IdeProcess {
            _cwd: own_cwd,
            child,
            output,
            readers,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Everything printed so far, stdout and stderr interleaved by line.
    pub fn logs(&self) -> String {
        self.output.all().clone()
    }

    /// What was printed on stdout only.
    pub fn stdout(&self) -> String {
        self.output
            .stdout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Length of [`logs`](Self::logs) now: an offset for
    /// [`wait_for_log_from`](Self::wait_for_log_from).
    pub fn log_len(&self) -> usize {
        self.output.all().len()
    }

    /// Wait until the output contains `needle`. `false` on timeout, or when
    /// the process closed its output without printing it.
    pub async fn wait_for_log(&self, needle: &str, timeout: Duration) -> bool {
        self.wait_for_log_from(0, needle, timeout).await
    }

    /// Like [`wait_for_log`](Self::wait_for_log), looking only at the output
    /// after byte `offset` (see [`log_len`](Self::log_len)).
    ///
    /// Each wake-up looks only at what arrived since the last one (plus the
    /// needle's length less one, for a needle split across lines), copied out
    /// under the lock and searched outside it: the whole wait is linear in
    /// the output, and the readers are never held up by a search.
    pub async fn wait_for_log_from(&self, offset: usize, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        // where the next look starts (a char boundary of the output)
        let mut from = offset;
        let mut found = || {
            let fresh = {
                let all = self.output.all();
                let mut start = from.min(all.len());
                while !all.is_char_boundary(start) {
                    start += 1;
                }
                let fresh = all[start..].to_string();
                // the next look keeps the last needle.len() - 1 bytes
                let mut next = all
                    .len()
                    .saturating_sub(needle.len().saturating_sub(1))
                    .max(start);
                while !all.is_char_boundary(next) {
                    next -= 1;
                }
                from = next;
                fresh
            };
            fresh.contains(needle)
        };
        loop {
            let notified = self.output.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if found() {
                return true;
            }
            if self.output.closed() >= 2 {
                return false;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return found();
            }
        }
    }

    /// Ask the process to stop (SIGTERM).
    pub fn signal_term(&self) {
        self.signal(Signal::SIGTERM);
    }

    pub fn signal(&self, signal: Signal) {
        if let Some(pid) = self.child.id() {
            let _ = kill(Pid::from_raw(pid as i32), signal);
        }
    }

    /// Wait for the process to exit; once it has, its output is read to the
    /// end before this returns. `None` on timeout.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let status = tokio::time::timeout_at(deadline, self.child.wait())
            .await
            .ok()?
            .ok()?;
        for reader in &mut self.readers {
            // a grandchild may hold the pipes open: do not wait forever
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        Some(status)
    }
}

impl Drop for IdeProcess {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        self.signal_term();
        // Drop cannot await: check for the exit a few times within the grace.
        let deadline = std::time::Instant::now() + TERM_GRACE;
        while std::time::Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.start_kill();
    }
}

async fn read_lines(pipe: impl AsyncRead + Unpin, output: Arc<Output>, is_stdout: bool) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        {
            let mut all = output.all();
            all.push_str(&line);
            all.push('\n');
        }
        if is_stdout {
            let mut stdout = output.stdout.lock().unwrap_or_else(|e| e.into_inner());
            stdout.push_str(&line);
            stdout.push('\n');
        }
        output.notify.notify_waiters();
    }
    *output.closed.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    output.notify.notify_waiters();
}
