//! Work run on another thread while the calling one does its own, for the
//! journal's flushes: a body's or a record's `fdatasync` beside the
//! mutation's own `fsync`, so the two reach the disk together rather than
//! one after the other.
//!
//! The threads are kept (up to [`KEEP`] idle ones), so a write does not pay
//! for creating a thread each time: handing work to an idle one is a
//! channel send.

use std::sync::Mutex;
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

/// Idle threads kept for the next call; more run when calls overlap, and
/// those beyond this many end when done.
const KEEP: usize = 4;

static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

fn idle() -> std::sync::MutexGuard<'static, Vec<mpsc::Sender<Job>>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn dispatch(job: Job) {
    let mut job = job;
    while let Some(tx) = idle().pop() {
        match tx.send(job) {
            Ok(()) => return,
            // that thread is gone: try the next one
            Err(mpsc::SendError(j)) => job = j,
        }
    }
    let spawned = std::thread::Builder::new()
        .name("ide-journal".into())
        .spawn(move || helper(job));
    if let Err(e) = spawned {
        tracing::error!(error = %e, "change journal: cannot start a helper thread");
    }
}

fn helper(first: Job) {
    let (tx, rx) = mpsc::channel::<Job>();
    let mut job = first;
    loop {
        job();
        {
            let mut idle = idle();
            if idle.len() >= KEEP {
                return;
            }
            idle.push(tx.clone());
        }
        match rx.recv() {
            Ok(next) => job = next,
            Err(_) => return,
        }
    }
}

/// Run `work` on a helper thread and do not wait for it.
pub fn detach(work: impl FnOnce() + Send + 'static) {
    dispatch(Box::new(move || {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    }));
}

/// Run `work` on a helper thread while `here` runs on this one; both have
/// finished when this returns. `work`'s panic (or a helper that could not
/// start) comes back as `None`.
pub fn beside<T, U>(
    work: impl FnOnce() -> T + Send + 'static,
    here: impl FnOnce() -> U,
) -> (Option<T>, U)
where
    T: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    dispatch(Box::new(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        let _ = tx.send(out.ok());
    }));
    let u = here();
    (finished(&rx).ok().flatten(), u)
}

/// How long [`beside`] keeps looking for the helper's answer before it
/// sleeps on it: the two flushes of a write end within tens of
/// microseconds of each other, and a wake-up through the scheduler costs
/// about as much again.
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

fn finished<T>(rx: &mpsc::Receiver<T>) -> Result<T, mpsc::RecvError> {
    let start = std::time::Instant::now();
    while start.elapsed() < SPIN {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    rx.recv()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn both_sides_run_and_threads_are_reused() {
        let (a, b) = beside(|| 1 + 1, || "here");
        assert_eq!((a, b), (Some(2), "here"));
        // the helper that ran it is idle again and takes the next job
        let name = || std::thread::current().name().map(str::to_string);
        let (first, _) = beside(name, || ());
        let (second, _) = beside(name, || ());
        assert_eq!(first.flatten().as_deref(), Some("ide-journal"));
        assert_eq!(second.flatten().as_deref(), Some("ide-journal"));
    }

    #[test]
    fn a_panicking_job_reports_none_and_overlapping_calls_all_finish() {
        let (out, ()) = beside(|| -> u8 { panic!("job failed") }, || ());
        assert_eq!(out, None);
        let done = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..16 {
                let done = done.clone();
                s.spawn(move || {
                    let (out, ()) = beside(
                        move || {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            done.fetch_add(1, Ordering::SeqCst)
                        },
                        || (),
                    );
                    assert!(out.is_some());
                });
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 16);
        assert!(idle().len() <= KEEP);
    }
}
