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

    #[tokio::test]
    async fn an_answer_waits_out_the_rest_of_the_hold_and_no_more() {
        let hold = Duration::from_millis(20);
        let arrived = Instant::now();
        wait(arrived, hold).await;
        assert!(arrived.elapsed() >= hold, "{:?}", arrived.elapsed());
        // a slow handler already spent it: no wait at all
        let arrived = Instant::now() - Duration::from_millis(50);
        let before = Instant::now();
        wait(arrived, hold).await;
        assert!(before.elapsed() < hold, "{:?}", before.elapsed());
    }
}
