//! What `shell::pty::start` and `shell::pty::send` answer after acting,
//! when asked to wait: the output that came (as `shell::pty::read` answers
//! it) or the rendered screen once the program settled (as
//! `shell::pty::screen` answers it).

use crate::error::Failure;
use crate::pty::read::{ReadResponse, compile_until, wait_for};
use crate::pty::screen::{ScreenResponse, look, settled};
use crate::pty::session::Session;
use crate::pty::shared::MAX_WAIT_MS;
use std::time::Duration;

/// How long `screen: true` waits for the program to settle when the
/// caller gave no `wait_ms`.
pub const SETTLE_MS: u64 = 2_000;

/// What shell::pty::start and shell::pty::send were asked to wait for after
/// acting: the output (`wait_ms`, `until`, `strip_ansi`) or the rendered
/// screen once the program settled (`screen`).
pub struct Waiting {
    pub wait_ms: Option<u64>,
    pub until: Option<regex::Regex>,
    pub strip_ansi: bool,
    pub screen: bool,
}

impl Waiting {
    /// Checks the request's waiting fields (S210 for `until` with nothing
    /// to wait, S217 for a bad regex) before anything is done.
    pub fn new(
        wait_ms: Option<u64>,
        until: Option<&str>,
        strip_ansi: Option<bool>,
        screen: Option<bool>,
    ) -> Result<Waiting, Failure> {
        let screen = screen.unwrap_or(false);
        if until.is_some() && wait_ms.is_none() && !screen {
            return Err(Failure::bad_input(
                "until needs wait_ms (how long to wait for it, at most 25000), or screen: true \
                 (which waits up to 2000 ms by default)",
            ));
        }
        Ok(Waiting {
            wait_ms,
            until: compile_until(until)?,
            strip_ansi: strip_ansi.unwrap_or(true),
            screen,
        })
    }

    /// What came after frame `before`: `(output, screen)`, at most one of
    /// them, neither when nothing was asked.
    pub async fn answer(
        &self,
        s: &Session,
        before: u64,
    ) -> (Option<ReadResponse>, Option<ScreenResponse>) {
        if self.screen {
            let wait = self.wait_ms.unwrap_or(SETTLE_MS).min(MAX_WAIT_MS);
            let screen = match &self.until {
                Some(re) => {
                    // the screen before this step may already show the
                    // pattern: look once the program answered the step
                    let t = tokio::time::Instant::now();
                    s.read(before, Duration::from_millis(wait), |raw| !raw.is_empty())
                        .await;
                    let spent = t.elapsed().as_millis() as u64;
                    look(s, Some(re), wait.saturating_sub(spent)).await
                }
                None => settled(s, before, wait).await,
            };
            return (None, Some(screen));
        }
        match self.wait_ms {
            Some(wait) => (
                Some(wait_for(s, before, wait, self.until.as_ref(), self.strip_ansi).await),
                None,
            ),
            None => (None, None),
        }
    }
}
