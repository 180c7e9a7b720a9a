//! Capped capture of one output stream.
//!
//! A child's stdout or stderr is read to its end no matter how much it
//! writes — a pipe that stops being read blocks the writer, and a blocked
//! child never exits — but only a bounded part is kept: the first
//! `Shape::head` bytes and, in a ring, the last `Shape::tail` bytes of what
//! followed them. Memory per stream is therefore bounded by `head + tail`
//! whatever the child does, and the count of bytes seen says how many were
//! dropped in between.
//!
//! [`Capture::view`] renders what is kept for an answer: `keep: head` (the
//! first `limit` bytes), `tail` (the last `limit` bytes) or `both` (the first
//! and last halves, joined by a [`cut_marker`] line naming how many bytes
//! were cut). A character cut in half at a boundary is dropped, never turned
//! into U+FFFD, and counts as dropped.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Read size for one pipe read. Large reads keep a chatty child's
/// throughput close to what the pipe allows.
const READ_CHUNK: usize = 128 * 1024;

/// Which part of a long output an answer keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    /// The first `max_output_bytes` bytes (the end is dropped).
    #[default]
    Head,
    /// The last `max_output_bytes` bytes (where a test runner prints its summary).
    Tail,
    /// The first and the last half of `max_output_bytes`, joined by a line `[… N bytes cut …]`.
    Both,
}

/// How much of a stream a capture keeps: the first `head` bytes and the
/// last `tail` bytes of the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub head: usize,
    pub tail: usize,
}

impl Shape {
    /// What an answer of `limit` bytes with `keep` needs, and no more.
    pub fn for_answer(keep: Keep, limit: usize) -> Shape {
        match keep {
            Keep::Head => Shape {
                head: limit,
                tail: 0,
            },
            Keep::Tail => Shape {
                head: 0,
                tail: limit,
            },
            Keep::Both => Shape {
                head: limit / 2,
                tail: limit - limit / 2,
            },
        }
    }

    /// A background job's capture: its first and its last `cap` bytes, so
    /// `shell::status` can answer any `keep` with any limit up to `cap`.
    pub fn job(cap: usize) -> Shape {
        Shape {
            head: cap,
            tail: cap,
        }
    }
}

/// What was kept of one stream, shared between the reader and whoever
/// reports on the command (a running job shows the output so far).
#[derive(Debug)]
pub struct Capture {
    shape: Shape,
    inner: Mutex<Captured>,
}

#[derive(Debug, Default)]
struct Captured {
    head: Vec<u8>,
    tail: Ring,
    /// Every byte the stream delivered.
    seen: u64,
}

/// The last `cap` bytes pushed into it.
#[derive(Debug, Default)]
struct Ring {
    buf: Vec<u8>,
    /// Where the oldest byte is, once `buf` is full.
    start: usize,
}

/// Grow `v` so `extra` more bytes fit, geometrically but never past `cap`,
/// so the allocation itself stays within the cap.
fn reserve_within(v: &mut Vec<u8>, extra: usize, cap: usize) {
    let need = v.len() + extra;
    if need > v.capacity() {
        let target = (v.capacity() * 2).max(need).min(cap);
        let len = v.len();
        v.reserve_exact(target - len);
    }
}

impl Ring {
    fn push(&mut self, mut chunk: &[u8], cap: usize) {
        if cap == 0 || chunk.is_empty() {
            return;
        }
        if chunk.len() >= cap {
            self.buf.clear();
            reserve_within(&mut self.buf, cap, cap);
            self.buf.extend_from_slice(&chunk[chunk.len() - cap..]);
            self.start = 0;
            return;
        }
        if self.buf.len() < cap {
            let take = (cap - self.buf.len()).min(chunk.len());
            reserve_within(&mut self.buf, take, cap);
            self.buf.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        // Full: overwrite the oldest bytes.
        while !chunk.is_empty() {
            let take = (cap - self.start).min(chunk.len());
            self.buf[self.start..self.start + take].copy_from_slice(&chunk[..take]);
            self.start = (self.start + take) % cap;
            chunk = &chunk[take..];
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    /// The last `n` bytes held, oldest first.
    fn last(&self, n: usize) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.buf.len());
        all.extend_from_slice(&self.buf[self.start..]);
        all.extend_from_slice(&self.buf[..self.start]);
        all.split_off(all.len() - n.min(all.len()))
    }
}

/// One stream rendered for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub text: String,
    /// Something the stream delivered is not in `text`.
    pub truncated: bool,
    /// How many of the delivered bytes are not in `text`.
    pub dropped: u64,
}

/// The line that stands for the bytes `keep: both` cut out.
pub fn cut_marker(dropped: u64) -> String {
    format!("\n[… {dropped} bytes cut …]\n")
}

impl Capture {
    pub fn new(shape: Shape) -> Arc<Capture> {
        Arc::new(Capture {
            shape,
            inner: Mutex::new(Captured::default()),
        })
    }

    /// The capture's limits.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    fn lock(&self) -> MutexGuard<'_, Captured> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take one chunk of the stream: the head fills first, the ring keeps
    /// the end of the rest.
    pub fn push(&self, mut chunk: &[u8]) {
        let Shape { head, tail } = self.shape;
        let mut c = self.lock();
        c.seen += chunk.len() as u64;
        if c.head.len() < head {
            let take = (head - c.head.len()).min(chunk.len());
            reserve_within(&mut c.head, take, head);
            c.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        c.tail.push(chunk, tail);
    }

    /// The answer for `keep` in at most `limit` bytes (plus the cut marker
    /// for `both`), from what is kept.
    pub fn view(&self, keep: Keep, limit: usize) -> Kept {
        let c = self.lock();
        let seen = c.seen;
        let (h, t) = (c.head.len(), c.tail.len());
        // Bytes neither kept in the head nor in the ring.
        let gap = seen - h as u64 - t as u64;
        let whole = || {
            let mut all = c.head.clone();
            all.extend_from_slice(&c.tail.last(t));
            all
        };
        // The longest prefix and suffix of the stream that are kept.
        let prefix_len = if gap == 0 { h + t } else { h };
        let suffix_len = if gap == 0 { h + t } else { t };
        let prefix = |n: usize| -> Vec<u8> {
            if n <= h {
                c.head[..n].to_vec()
            } else {
                let mut v = c.head.clone();
                v.extend_from_slice(&c.tail.last(t)[..n - h]);
                v
            }
        };
        let suffix = |n: usize| -> Vec<u8> {
            if n <= t {
                c.tail.last(n)
            } else {
                let mut v = c.head[h - (n - t)..].to_vec();
                v.extend_from_slice(&c.tail.last(t));
                v
            }
        };
        if gap == 0 && seen <= limit as u64 {
            let all = whole();
            return Kept {
                text: String::from_utf8_lossy(&all).into_owned(),
                truncated: false,
                dropped: 0,
            };
        }
        match keep {
            Keep::Head => {
                let bytes = prefix(limit.min(prefix_len));
                let bytes = cut_at_end(&bytes);
                let dropped = seen - bytes.len() as u64;
                Kept {
                    text: String::from_utf8_lossy(bytes).into_owned(),
                    truncated: dropped > 0,
                    dropped,
                }
            }
            Keep::Tail => {
                let bytes = suffix(limit.min(suffix_len));
                let bytes = cut_at_start(&bytes);
                let dropped = seen - bytes.len() as u64;
                Kept {
                    text: String::from_utf8_lossy(bytes).into_owned(),
                    truncated: dropped > 0,
                    dropped,
                }
            }
            Keep::Both => {
                let first = prefix((limit / 2).min(prefix_len));
                let last = suffix((limit - limit / 2).min(suffix_len));
                let (first, last) = (cut_at_end(&first), cut_at_start(&last));
                let dropped = seen - first.len() as u64 - last.len() as u64;
                let mut text = String::from_utf8_lossy(first).into_owned();
                if dropped > 0 {
                    text.push_str(&cut_marker(dropped));
                }
                text.push_str(&String::from_utf8_lossy(last));
                Kept {
                    text,
                    truncated: dropped > 0,
                    dropped,
                }
            }
        }
    }

    /// Everything kept, head first: (text, truncated). What a capture
    /// whose shape is one answer's shows.
    pub fn snapshot(&self) -> (String, bool) {
        let Shape { head, tail } = self.shape;
        let keep = match (head, tail) {
            (_, 0) => Keep::Head,
            (0, _) => Keep::Tail,
            _ => Keep::Both,
        };
        let k = self.view(keep, head.saturating_add(tail));
        (k.text, k.truncated)
    }

    /// Bytes currently held (for the retained-output budget).
    pub fn held_bytes(&self) -> usize {
        let c = self.lock();
        c.head.capacity() + c.tail.buf.capacity()
    }

    /// Release spare capacity once the stream has ended.
    pub fn shrink(&self) {
        let mut c = self.lock();
        c.head.shrink_to_fit();
        c.tail.buf.shrink_to_fit();
    }

    /// Replace the content (a sandbox job's output arrives all at once).
    pub fn set(&self, bytes: &[u8]) {
        *self.lock() = Captured::default();
        self.push(bytes);
        self.shrink();
    }
}

/// A head cut at the end: a multi-byte character cut in half is dropped.
fn cut_at_end(bytes: &[u8]) -> &[u8] {
    let from = bytes.len().saturating_sub(4);
    match std::str::from_utf8(&bytes[from..]) {
        Err(e) if e.error_len().is_none() => &bytes[..from + e.valid_up_to()],
        _ => bytes,
    }
}

/// A tail cut at the start: continuation bytes of a character whose start
/// was dropped go too (at most three).
fn cut_at_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    &bytes[skip..]
}

/// Read `reader` to its end into `capture`, keeping what its shape allows.
/// Read errors end the stream (the child's side is what matters).
pub async fn drain<R: AsyncRead + Unpin>(mut reader: R, capture: Arc<Capture>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => capture.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    capture.shrink();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(cap: usize) -> Arc<Capture> {
        Capture::new(Shape::for_answer(Keep::Head, cap))
    }

    #[test]
    fn capture_keeps_the_cap_and_flags_the_rest() {
        let c = head(8);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.snapshot(), ("hello wo".to_string(), true));
        c.push(b"more");
        assert_eq!(c.snapshot(), ("hello wo".to_string(), true));
        assert_eq!(c.view(Keep::Head, 8).dropped, 7);
    }

    #[test]
    fn exactly_the_cap_is_not_truncated() {
        let c = head(8);
        c.push(b"12345678");
        assert_eq!(c.snapshot(), ("12345678".to_string(), false));
        c.push(b"");
        assert!(!c.snapshot().1);
        assert_eq!(c.view(Keep::Head, 8).dropped, 0);
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let c = head(0);
        c.push(b"x");
        assert_eq!(c.snapshot(), (String::new(), true));
    }

    #[test]
    fn a_character_cut_by_the_cap_is_dropped_not_replaced() {
        // "é" is two bytes; the cap cuts after its first byte.
        let c = head(3);
        c.push("abé".as_bytes());
        let k = c.view(Keep::Head, 3);
        assert_eq!((k.text.as_str(), k.truncated, k.dropped), ("ab", true, 2));
        // the tail side: the cut character's second byte is dropped too
        let c = Capture::new(Shape::for_answer(Keep::Tail, 2));
        c.push("éab".as_bytes());
        let k = c.view(Keep::Tail, 2);
        assert_eq!((k.text.as_str(), k.dropped), ("ab", 2));
        let c = Capture::new(Shape::for_answer(Keep::Tail, 3));
        c.push("aéb".as_bytes());
        let k = c.view(Keep::Tail, 3);
        assert_eq!((k.text.as_str(), k.dropped), ("éb", 1));
    }

    #[test]
    fn tail_keeps_the_last_bytes_across_many_chunks() {
        let c = Capture::new(Shape::for_answer(Keep::Tail, 10));
        let mut all = Vec::new();
        for i in 0..1000u32 {
            let chunk = format!("{i},");
            all.extend_from_slice(chunk.as_bytes());
            c.push(chunk.as_bytes());
        }
        let k = c.view(Keep::Tail, 10);
        assert_eq!(k.text.as_bytes(), &all[all.len() - 10..]);
        assert_eq!(k.dropped, all.len() as u64 - 10);
        assert!(k.truncated);
        // a chunk larger than the ring replaces it whole
        c.push(&[b'z'; 25]);
        assert_eq!(c.view(Keep::Tail, 10).text, "z".repeat(10));
        assert!(c.held_bytes() <= 10);
    }

    #[test]
    fn both_keeps_first_and_last_halves_with_a_marker() {
        let c = Capture::new(Shape::for_answer(Keep::Both, 8));
        c.push(b"0123456789abcdefghij");
        let k = c.view(Keep::Both, 8);
        assert_eq!(k.text, format!("0123{}ghij", cut_marker(12)));
        assert_eq!((k.truncated, k.dropped), (true, 12));
        // short output: no marker, nothing dropped
        let c = Capture::new(Shape::for_answer(Keep::Both, 8));
        c.push(b"0123");
        c.push(b"4567");
        assert_eq!(c.view(Keep::Both, 8).text, "01234567");
        assert_eq!(c.view(Keep::Both, 8).dropped, 0);
    }

    #[test]
    fn a_job_capture_answers_every_keep_and_limit() {
        let c = Capture::new(Shape::job(10));
        c.push(b"0123456789abcdef"); // 16 bytes: head 10, ring 6, no gap
        assert_eq!(c.view(Keep::Head, 10).text, "0123456789");
        assert_eq!(c.view(Keep::Tail, 10).text, "6789abcdef");
        assert_eq!(c.view(Keep::Tail, 4).text, "cdef");
        assert_eq!(
            c.view(Keep::Both, 6).text,
            format!("012{}def", cut_marker(10))
        );
        assert_eq!(c.view(Keep::Head, 100).text, "0123456789abcdef");
        c.push(&[b'x'; 30]); // now a gap between head and ring
        let k = c.view(Keep::Head, 100);
        assert_eq!((k.text.as_str(), k.dropped), ("0123456789", 36));
        let k = c.view(Keep::Tail, 100);
        assert_eq!((k.text.len(), k.dropped), (10, 36));
        let k = c.view(Keep::Both, 100);
        assert_eq!(
            k.text,
            format!("0123456789{}{}", cut_marker(26), "x".repeat(10))
        );
        assert!(c.held_bytes() <= 20);
    }

    #[tokio::test]
    async fn drain_reads_everything_but_keeps_the_cap() {
        let data = vec![b'z'; 1_000_000];
        for keep in [Keep::Head, Keep::Tail, Keep::Both] {
            let c = Capture::new(Shape::for_answer(keep, 1000));
            drain(&data[..], c.clone()).await;
            let k = c.view(keep, 1000);
            assert_eq!(k.text.replace(&cut_marker(999_000), "").len(), 1000);
            assert_eq!(k.dropped, 999_000);
            assert!(c.held_bytes() <= 1000, "{keep:?}");
        }
    }
}
