//! How soon an answer may leave after its call arrived.
//!
//! The 0.23 engine forwards a routed call to the worker before it files the
//! call among its pending invocations; an answer that comes back before the
//! filing is discarded, and the caller waits out its whole timeout
//! (tests/support/ENGINE-FACTS.md, "answers lost under span load"). The
//! window is the engine's own bookkeeping, so it opens when the engine's
//! threads lose the CPU: with two busy loops on a 2-core machine, a worker
//! that answers at once lost 10 of 16 500 answers in a minute, the same
//! worker answering no sooner than 2 ms after the call arrived lost 0 of
//! 16 000 (1 ms: 1 of 19 700). A handler that takes longer than the hold
//! pays nothing; a fast one pays the rest of it.
//!
//! `IDE_ANSWER_HOLD_US` sets it (microseconds, `0` turns it off); the
//! default is [`DEFAULT`].

use std::time::Duration;
use tokio::time::Instant;

/// The environment variable that sets the hold, in microseconds.
pub const KNOB: &str = "IDE_ANSWER_HOLD_US";
/// The hold when [`KNOB`] is unset.
pub const DEFAULT: Duration = Duration::from_micros(2_000);
/// The largest hold taken: past it the knob is a mistake, not a choice.
pub const MAX: Duration = Duration::from_millis(100);

/// The hold [`KNOB`] asks for: unset or unreadable is [`DEFAULT`] (with a
/// warning for the unreadable), at most [`MAX`].
pub fn parse(value: Option<&str>) -> Result<Duration, String> {
    let Some(raw) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT);
    };
    match raw.parse::<u64>() {
        Ok(us) => Ok(Duration::from_micros(us).min(MAX)),
        Err(_) => Err(format!(
            "{KNOB}={raw:?} is not a number of microseconds; using {} us",
            DEFAULT.as_micros()
        )),
    }
}

/// The hold for this process.
pub fn configured() -> Duration {
    parse(std::env::var(KNOB).ok().as_deref()).unwrap_or_else(|warning| {
        tracing::warn!("{warning}");
        DEFAULT
    })
}

/// Wait until `hold` has passed since `arrived` (at once when it has).
pub async fn wait(arrived: Instant, hold: Duration) {
    if !hold.is_zero() {
        tokio::time::sleep_until(arrived + hold).await;
    }
}

/// How often [`Hold::watch`] looks at how late this process gets the CPU.
const TICK: Duration = Duration::from_millis(10);

/// The hold, grown by how late this process's own timers fire right now.
///
/// The engine's window is its threads waiting for a CPU; so are ours, on the
/// same machine. A 10 ms ticker measures how late it wakes; the hold is the
/// configured one plus a decaying maximum of that lateness (a tenth off per
/// tick, so a burst of load is remembered for about a quarter second), at
/// most [`MAX`]. On an idle machine it is the configured hold.
#[derive(Clone)]
pub struct Hold {
    base: Duration,
    lag_us: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The decaying maximum after one tick that woke `late` behind time.
pub fn next_lag(prev_us: u64, late: Duration) -> u64 {
    let late_us = late.as_micros().min(MAX.as_micros()) as u64;
    late_us.max(prev_us - prev_us / 10)
}

impl Hold {
    pub fn new(base: Duration) -> Self {
        Hold {
            base,
            lag_us: Default::default(),
        }
    }

    /// The hold for an answer now (zero when the knob turned it off).
    pub fn now(&self) -> Duration {
        if self.base.is_zero() {
            return Duration::ZERO;
        }
        let lag = Duration::from_micros(self.lag_us.load(std::sync::atomic::Ordering::Relaxed));
        (self.base + lag).min(MAX)
    }

    /// Measure this process's lateness while any clone of this hold lives
    /// (the registered handlers hold one each).
    pub fn watch(&self) -> tokio::task::JoinHandle<()> {
        let lag = self.lag_us.clone();
        let off = self.base.is_zero();
        tokio::spawn(async move {
            if off {
                return;
            }
            let mut due = Instant::now() + TICK;
            loop {
                tokio::time::sleep_until(due).await;
                if std::sync::Arc::strong_count(&lag) == 1 {
                    return;
                }
                let now = Instant::now();
                let prev = lag.load(std::sync::atomic::Ordering::Relaxed);
                lag.store(
                    next_lag(prev, now.saturating_duration_since(due)),
                    std::sync::atomic::Ordering::Relaxed,
                );
                due = now + TICK;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knob_reads_microseconds_and_is_bounded() {
        assert_eq!(parse(None), Ok(DEFAULT));
        assert_eq!(parse(Some(" ")), Ok(DEFAULT));
        assert_eq!(parse(Some("0")), Ok(Duration::ZERO));
        assert_eq!(parse(Some("750")), Ok(Duration::from_micros(750)));
        assert_eq!(parse(Some("9999999")), Ok(MAX));
        assert!(
            parse(Some("2ms"))
                .unwrap_err()
                .contains("IDE_ANSWER_HOLD_US")
        );
    }

    #[test]
    fn lateness_grows_the_hold_at_once_and_fades_out() {
        // a tick 8 ms late: the hold takes it in full
        let mut lag = next_lag(0, Duration::from_millis(8));
        assert_eq!(lag, 8_000);
        // on time again: it fades by a tenth per tick, not at once
        lag = next_lag(lag, Duration::ZERO);
        assert_eq!(lag, 7_200);
        for _ in 0..60 {
            lag = next_lag(lag, Duration::ZERO);
        }
        assert!(lag < 100, "{lag}");
        // never past the bound
        assert_eq!(next_lag(0, Duration::from_secs(5)), MAX.as_micros() as u64);
        let h = Hold::new(Duration::from_millis(2));
        assert_eq!(h.now(), Duration::from_millis(2));
        h.lag_us.store(3_000, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(h.now(), Duration::from_millis(5));
        h.lag_us
            .store(u64::MAX / 2, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(h.now(), MAX);
        // the knob's 0 turns it off, load or not
        let off = Hold::new(Duration::ZERO);
        off.lag_us
            .store(3_000, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(off.now(), Duration::ZERO);
    }

    /// Whether `wait(arrived, hold)` ends no later than a timer due at
    /// `due`: both run on the one timer wheel, and the wait is polled first,
    /// so it wins whenever it is due too.
    async fn ends_by(arrived: Instant, hold: Duration, due: Instant) -> bool {
        tokio::select! {
            biased;
            _ = wait(arrived, hold) => true,
            _ = tokio::time::sleep_until(due) => false,
        }
    }

    #[tokio::test]
    async fn an_answer_waits_out_the_rest_of_the_hold_and_no_more() {
        let hold = Duration::from_millis(20);
        let arrived = Instant::now();
        // no more than the hold: done by a timer due when it ends
        assert!(ends_by(arrived, hold, arrived + hold).await);
        // and not less
        assert!(arrived.elapsed() >= hold, "{:?}", arrived.elapsed());
        // a slow handler already spent it: no wait at all, done by a timer
        // due right now
        let arrived = Instant::now() - Duration::from_millis(50);
        assert!(ends_by(arrived, hold, Instant::now()).await);
    }
}
