//! Code understanding, beneath the functions: the languages ide knows
//! ([`lang`], data), what a file defines ([`outline`]), where a name
//! occurs ([`occurrences`]), and name paths ([`names`]).
//!
//! Everything here is blocking and pure over bytes: callers run it off
//! the async runtime, on files they opened through the policy.

pub mod lang;
pub mod names;
pub mod occurrences;
pub mod outline;

/// Run `f` over `items` on every core (blocking), results in order.
pub fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let n = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(items.len().max(1));
    if n <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = Vec::with_capacity(items.len());
    slots.resize_with(items.len(), || None);
    let slots = std::sync::Mutex::new(slots);
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= items.len() {
                        break;
                    }
                    let r = f(&items[i]);
                    slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}
