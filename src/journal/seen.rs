//! The contents of revisions this worker recently served or wrote, by
//! revision, in bounded memory: what lets a refused stale write say what
//! changed since the revision its caller had (and move line ops over an
//! edit made elsewhere in the file, when asked), without another read.
//!
//! Only files up to [`MAX_ENTRY`] bytes are kept, [`MAX_TOTAL`] bytes in
//! all, the oldest dropped first. A revision is the SHA-256 of the bytes,
//! so an entry can never disagree with its key.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Largest file kept.
pub const MAX_ENTRY: usize = 2 << 20;
/// Bytes kept in all.
pub const MAX_TOTAL: usize = 64 << 20;

#[derive(Default)]
pub struct Seen {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    order: VecDeque<String>,
    map: HashMap<String, Arc<[u8]>>,
    bytes: usize,
}

impl Seen {
    /// Keep `bytes` as the content of `revision` (when small enough).
    pub fn remember(&self, revision: &str, bytes: &[u8]) {
        if bytes.len() > MAX_ENTRY {
            return;
        }
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if st.map.contains_key(revision) {
            return;
        }
        while st.bytes + bytes.len() > MAX_TOTAL {
            let Some(old) = st.order.pop_front() else {
                break;
            };
            if let Some(b) = st.map.remove(&old) {
                st.bytes -= b.len();
            }
        }
        st.bytes += bytes.len();
        st.order.push_back(revision.to_string());
        st.map.insert(revision.to_string(), Arc::from(bytes));
    }

    /// The content of `revision`, if still kept.
    pub fn get(&self, revision: &str) -> Option<Arc<[u8]>> {
        let st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        st.map.get(revision).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_stays_bounded_and_the_oldest_go_first() {
        let s = Seen::default();
        let big = vec![b'x'; MAX_ENTRY];
        s.remember("too-big", &[big.as_slice(), b"!"].concat());
        assert!(s.get("too-big").is_none());
        let n = MAX_TOTAL / MAX_ENTRY;
        for i in 0..=n {
            s.remember(&format!("r{i}"), &big);
        }
        assert!(s.get("r0").is_none(), "the oldest was dropped");
        assert!(s.get(&format!("r{n}")).is_some());
        let st = s.inner.lock().unwrap();
        assert!(st.bytes <= MAX_TOTAL);
        assert_eq!(st.bytes, st.map.values().map(|b| b.len()).sum::<usize>());
    }
}
