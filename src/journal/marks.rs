//! Who changed it: the change ids of this worker's own recent writes, by
//! path, so the live change feed (`shell::changed`) can say which of its
//! events were this worker's changes.
//!
//! The journal notes each record's paths here as it appends it; a watcher
//! asks about every path it reports. One map per worker, owned by the
//! [`super::Journals`] in the services (no process global): bounded at
//! [`MAX`] entries, each attributable for [`TTL`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an own write stays attributable.
pub const TTL: Duration = Duration::from_secs(5);
/// Most own writes remembered at once.
pub const MAX: usize = 4096;

/// Recent own writes: canonical absolute path → (change id, when noted).
#[derive(Default)]
pub struct OwnWrites {
    map: Mutex<HashMap<PathBuf, (String, Instant)>>,
}

impl OwnWrites {
    pub fn new() -> OwnWrites {
        OwnWrites::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (String, Instant)>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Note that this worker's change `change_id` wrote `path` (the
    /// canonical absolute path), just before or just after it happened.
    pub fn note(&self, path: &Path, change_id: &str) {
        let mut w = self.lock();
        let now = Instant::now();
        if w.len() >= MAX {
            w.retain(|_, (_, at)| now.duration_since(*at) < TTL);
            if w.len() >= MAX {
                w.clear();
            }
        }
        w.insert(path.to_path_buf(), (change_id.to_string(), now));
    }

    /// The change id of an own write of `abs` noted at most a second before
    /// a watcher first saw the path (and not expired).
    pub fn change_id_of(&self, abs: &Path, first_seen: Instant) -> Option<String> {
        let w = self.lock();
        let (id, at) = w.get(abs)?;
        let fresh = at.elapsed() < TTL
            && first_seen
                .checked_sub(Duration::from_secs(1))
                .is_none_or(|floor| *at >= floor);
        fresh.then(|| id.clone())
    }
}
