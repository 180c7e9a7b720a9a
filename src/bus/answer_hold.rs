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
//! The hold is the configured base plus how late this process's own threads
//! get the CPU right now (the engine's window is its threads waiting for a
//! CPU; ours wait in the same run queue). Both are kept by one clock thread
//! ([`Hold`]) that sleeps with microsecond precision: the runtime's timers
//! round every sleep up to the next whole millisecond, which made a 2 ms
//! hold cost 3–4 ms and read its own rounding as load.
//!
//! `IDE_ANSWER_HOLD_US` sets the base (microseconds, `0` turns the hold
//! off); the default is [`DEFAULT`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The environment variable that sets the hold, in microseconds.
pub const KNOB: &str = "IDE_ANSWER_HOLD_US";
/// The hold when [`KNOB`] is unset.
pub const DEFAULT: Duration = Duration::from_micros(1_000);
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

/// How often the clock looks at how late it wakes when no answer is due.
const TICK: Duration = Duration::from_millis(10);

/// The decaying maximum after one tick that woke `late` behind time.
pub fn next_lag(prev_us: u64, late: Duration) -> u64 {
    let late_us = late.as_micros().min(MAX.as_micros()) as u64;
    late_us.max(prev_us - prev_us / 10)
}

/// One answer waiting for its time.
struct Due {
    at: Instant,
    seq: u64,
    go: tokio::sync::oneshot::Sender<()>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// The hold: the configured base, grown by how late this process's threads
/// get the CPU right now.
///
/// A clock thread keeps both: it wakes every [`TICK`] and at every answer's
/// time, with microsecond precision (its timer slack is set to 1 µs), and
/// how late it wakes is the load it sees: a decaying maximum, a tenth off
/// per tick, so a burst of load is remembered for about a quarter second, at
/// most [`MAX`]. On an idle machine it is the configured hold. The thread
/// ends when the last clone of the hold is dropped and every answer handed
/// to it has left. A base of zero starts no thread and holds nothing.
#[derive(Clone)]
pub struct Hold {
    base: Duration,
    lag_us: Arc<AtomicU64>,
    clock: Option<mpsc::Sender<Due>>,
}

impl Hold {
    pub fn new(base: Duration) -> Self {
        let lag_us = Arc::new(AtomicU64::new(0));
        let clock = (!base.is_zero())
            .then(|| {
                let (tx, rx) = mpsc::channel();
                let lag = lag_us.clone();
                std::thread::Builder::new()
                    .name("answer-hold".into())
                    .spawn(move || run_clock(rx, &lag))
                    .map_err(|e| {
                        tracing::warn!(
                            "no answer-hold clock ({e}); the runtime's timers hold answers"
                        )
                    })
                    .ok()
                    .map(|_| tx)
            })
            .flatten();
        Hold {
            base,
            lag_us,
            clock,
        }
    }

    /// The hold for an answer now (zero when the knob turned it off).
    pub fn now(&self) -> Duration {
        if self.base.is_zero() {
            return Duration::ZERO;
        }
        let lag = Duration::from_micros(self.lag_us.load(Ordering::Relaxed));
        (self.base + lag).min(MAX)
    }

    /// Wait until `hold` has passed since `arrived` (at once when it has).
    pub async fn wait(&self, arrived: Instant, hold: Duration) {
        let at = arrived + hold;
        // never early, not even by a little: the faulted stand-in's window
        // is as wide as the default hold, and only its opening before the
        // call's receipt keeps an answer held that long out of it
        if at <= Instant::now() {
            return;
        }
        let (go, gone) = tokio::sync::oneshot::channel();
        let handed = self.clock.as_ref().is_some_and(|clock| {
            static SEQ: AtomicU64 = AtomicU64::new(0);
            let seq = SEQ.fetch_add(1, Ordering::Relaxed);
            clock.send(Due { at, seq, go }).is_ok()
        });
        if !handed || gone.await.is_err() {
            // no clock: the runtime's timer, rounded up but never early
            tokio::time::sleep_until(at.into()).await;
        }
    }
}

/// The clock thread: lets each answer go at its time, and measures how late
/// it wakes.
fn run_clock(rx: mpsc::Receiver<Due>, lag: &AtomicU64) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes a plain integer and affects
    // only the calling thread's timers.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    let mut due: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
    let mut tick = Instant::now() + TICK;
    let mut open = true;
    while open || !due.is_empty() {
        let wake = due.peek().map_or(tick, |d| d.0.at.min(tick));
        let timeout = wake.saturating_duration_since(Instant::now());
        if open {
            match rx.recv_timeout(timeout) {
                Ok(d) => due.push(Reverse(d)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
            }
        } else {
            std::thread::sleep(timeout);
        }
        let now = Instant::now();
        let mut late = Duration::ZERO;
        while due.peek().is_some_and(|d| d.0.at <= now) {
            let Some(Reverse(d)) = due.pop() else { break };
            late = late.max(now - d.at);
            let _ = d.go.send(());
        }
        let prev = lag.load(Ordering::Relaxed);
        let next = if now >= tick {
            let next = next_lag(prev, late.max(now - tick));
            tick = now + TICK;
            next
        } else {
            prev.max(late.min(MAX).as_micros() as u64)
        };
        lag.store(next, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Waker};

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
        h.lag_us.store(3_000, Ordering::Relaxed);
        assert_eq!(h.now(), Duration::from_millis(5));
        h.lag_us.store(u64::MAX / 2, Ordering::Relaxed);
        assert_eq!(h.now(), MAX);
        // the knob's 0 turns it off, load or not, and starts no clock
        let off = Hold::new(Duration::ZERO);
        assert!(off.clock.is_none());
        off.lag_us.store(3_000, Ordering::Relaxed);
        assert_eq!(off.now(), Duration::ZERO);
    }

    /// Whether `f` is done at its first poll.
    fn ready_at_once(f: impl Future<Output = ()>) -> bool {
        let mut f = std::pin::pin!(f);
        f.as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
    }

    #[tokio::test]
    async fn an_answer_waits_out_the_rest_of_the_hold_and_never_less() {
        let h = Hold::new(Duration::from_millis(1));
        for hold in [Duration::from_micros(300), Duration::from_millis(20)] {
            let arrived = Instant::now();
            h.wait(arrived, hold).await;
            assert!(
                arrived.elapsed() >= hold,
                "{hold:?}: {:?}",
                arrived.elapsed()
            );
        }
        // a slow handler already spent it: no wait at all
        let arrived = Instant::now() - Duration::from_millis(50);
        assert!(ready_at_once(h.wait(arrived, Duration::from_millis(20))));
        // off: nothing is ever held
        let off = Hold::new(Duration::ZERO);
        assert!(ready_at_once(off.wait(Instant::now(), off.now())));
    }

    #[tokio::test]
    async fn the_clock_lets_each_answer_go_at_its_own_time_not_in_the_order_handed() {
        let h = Hold::new(Duration::from_millis(1));
        let now = Instant::now();
        let late = tokio::spawn({
            let h = h.clone();
            async move { h.wait(now, Duration::from_secs(120)).await }
        });
        let soon = tokio::spawn({
            let h = h.clone();
            async move { h.wait(now, Duration::from_millis(5)).await }
        });
        soon.await.unwrap();
        assert!(now.elapsed() >= Duration::from_millis(5));
        assert!(!late.is_finished(), "an answer left 2 minutes early");
        late.abort();
    }
}
