//! Capped capture of one output stream.
//!
//! A child's stdout or stderr is read to its end no matter how much it
//! writes — a pipe that stops being read blocks the writer, and a blocked
//! child never exits — but only the first `cap` bytes are kept. Memory per
//! stream is therefore bounded by the cap whatever the child does.

use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Read size for one pipe read. Large reads keep a chatty child's
/// throughput close to what the pipe allows.
const READ_CHUNK: usize = 128 * 1024;

/// What was kept of one stream, shared between the reader and whoever
/// reports on the command (a running job shows the output so far).
#[derive(Debug, Default)]
pub struct Capture {
    inner: Mutex<Captured>,
}

#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    truncated: bool,
}

impl Capture {
    pub fn new() -> Arc<Capture> {
        Arc::new(Capture::default())
    }

    fn lock(&self) -> MutexGuard<'_, Captured> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keep what fits under `cap` of `chunk`; flag the rest as dropped.
    pub fn push(&self, chunk: &[u8], cap: usize) {
        let mut c = self.lock();
        let room = cap.saturating_sub(c.kept.len());
        if chunk.len() > room {
            c.truncated = true;
        }
        let take = chunk.len().min(room);
        if take == 0 {
            return;
        }
        // Grow geometrically but never past the cap, so the allocation
        // itself stays within it.
        let need = c.kept.len() + take;
        if need > c.kept.capacity() {
            let target = (c.kept.capacity() * 2).max(need).min(cap);
            let len = c.kept.len();
            c.kept.reserve_exact(target - len);
        }
        c.kept.extend_from_slice(&chunk[..take]);
    }

    /// The text kept so far and whether anything was dropped.
    pub fn snapshot(&self) -> (String, bool) {
        let c = self.lock();
        (text_of(&c.kept, c.truncated), c.truncated)
    }

    /// Bytes currently held (for the retained-output budget).
    pub fn held_bytes(&self) -> usize {
        self.lock().kept.capacity()
    }

    /// Release spare capacity once the stream has ended.
    pub fn shrink(&self) {
        self.lock().kept.shrink_to_fit();
    }

    /// Replace the content (a sandbox job's output arrives all at once).
    pub fn set(&self, bytes: &[u8], cap: usize) {
        {
            let mut c = self.lock();
            c.kept = Vec::new();
            c.truncated = false;
        }
        self.push(bytes, cap);
        self.shrink();
    }
}

/// Decode kept bytes as text. Invalid UTF-8 becomes U+FFFD; a multi-byte
/// character cut in half by the cap is dropped rather than turned into a
/// replacement character, so truncated output never grows past the cap.
pub fn text_of(bytes: &[u8], truncated: bool) -> String {
    let mut end = bytes.len();
    if truncated {
        if let Err(e) = std::str::from_utf8(&bytes[bytes.len().saturating_sub(4)..]) {
            if e.error_len().is_none() {
                end = bytes.len().saturating_sub(4) + e.valid_up_to();
            }
        }
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Read `reader` to its end into `capture`, keeping at most `cap` bytes.
/// Read errors end the stream (the child's side is what matters).
pub async fn drain<R: AsyncRead + Unpin>(mut reader: R, capture: Arc<Capture>, cap: usize) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => capture.push(&buf[..n], cap),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    capture.shrink();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_the_cap_and_flags_the_rest() {
        let c = Capture::default();
        c.push(b"hello ", 8);
        c.push(b"world", 8);
        assert_eq!(c.snapshot(), ("hello wo".to_string(), true));
        c.push(b"more", 8);
        assert_eq!(c.snapshot(), ("hello wo".to_string(), true));
    }

    #[test]
    fn exactly_the_cap_is_not_truncated() {
        let c = Capture::default();
        c.push(b"12345678", 8);
        assert_eq!(c.snapshot(), ("12345678".to_string(), false));
        c.push(b"", 8);
        assert!(!c.snapshot().1);
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let c = Capture::default();
        c.push(b"x", 0);
        assert_eq!(c.snapshot(), (String::new(), true));
    }

    #[test]
    fn a_character_cut_by_the_cap_is_dropped_not_replaced() {
        let c = Capture::default();
        // "é" is two bytes; the cap cuts after its first byte.
        c.push("abé".as_bytes(), 3);
        let (text, truncated) = c.snapshot();
        assert!(truncated);
        assert_eq!(text, "ab");
        // invalid bytes in the middle still become replacement characters
        assert_eq!(text_of(b"a\xffb", false), "a\u{fffd}b");
    }

    #[tokio::test]
    async fn drain_reads_everything_but_keeps_the_cap() {
        let data = vec![b'z'; 1_000_000];
        let c = Capture::new();
        drain(&data[..], c.clone(), 1000).await;
        let (text, truncated) = c.snapshot();
        assert_eq!(text.len(), 1000);
        assert!(truncated);
        assert!(c.held_bytes() <= 1000);
    }
}
