//! The replay ring: numbered frames of raw output, bounded by bytes.
//!
//! Frames are numbered from 1 without gaps. The ring keeps the newest
//! frames whose raw bytes fit in its capacity (always at least the newest
//! one), so memory per session is bounded whatever the program prints.

use std::collections::VecDeque;

/// How a session ended, as its last frame and its status report it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct End {
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
    pub error: Option<String>,
}

/// One frame of output (a copy of what the ring holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub seq: u64,
    pub data: Vec<u8>,
    /// Set on the last frame of an exited session.
    pub end: Option<End>,
}

/// What a replay after some sequence number yields.
#[derive(Debug)]
pub struct Replay {
    pub frames: Vec<Frame>,
    /// Frames the caller asked for are no longer held.
    pub truncated: bool,
}

/// Where one frame's bytes sit in the ring.
#[derive(Debug)]
struct Meta {
    seq: u64,
    /// Where its bytes start, counted over everything ever pushed.
    start: u64,
    len: usize,
    end: Option<End>,
}

/// The bytes of every held frame, oldest first, in ONE buffer that grows
/// to the capacity and then wraps: a full ring costs its capacity and
/// nothing more (one allocation per session, no per-frame heap blocks to
/// fragment), and a session's bytes go back to the system when it closes.
#[derive(Debug)]
pub struct Ring {
    bytes: VecDeque<u8>,
    frames: VecDeque<Meta>,
    cap: usize,
    last_seq: u64,
    /// Where `bytes[0]` is, counted over everything ever pushed (so a
    /// frame's place is found without summing the frames before it).
    front: u64,
}

impl Ring {
    pub fn new(cap: usize) -> Ring {
        Ring {
            bytes: VecDeque::new(),
            frames: VecDeque::new(),
            cap,
            last_seq: 0,
            front: 0,
        }
    }

    /// Append a frame; returns its sequence number. The oldest frames make
    /// room first, so the buffer never holds more than the capacity (or the
    /// one newest frame, when that alone is larger).
    pub fn push(&mut self, data: &[u8], end: Option<End>) -> u64 {
        while !self.frames.is_empty() && self.bytes.len() + data.len() > self.cap {
            if let Some(old) = self.frames.pop_front() {
                self.bytes.drain(..old.len);
                self.front += old.len as u64;
            }
        }
        let need = self.bytes.len() + data.len();
        if need > self.bytes.capacity() {
            // The whole capacity at once, not by doubling: pages cost memory
            // only once written, and no outgrown halves are left behind in
            // the allocator (a full ring is its capacity, nothing more).
            self.bytes
                .reserve_exact(self.cap.max(need) - self.bytes.len());
        }
        self.bytes.extend(data);
        self.last_seq += 1;
        self.frames.push_back(Meta {
            seq: self.last_seq,
            start: self.front + (self.bytes.len() - data.len()) as u64,
            len: data.len(),
            end,
        });
        self.last_seq
    }

    /// Sequence number of the newest frame (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Sequence number of the oldest frame still held.
    pub fn first_seq(&self) -> Option<u64> {
        self.frames.front().map(|f| f.seq)
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Raw bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Whether frames were dropped that a full replay (from 0) would need.
    pub fn truncated(&self) -> bool {
        self.first_seq().is_some_and(|f| f > 1)
    }

    /// Copies of the held frames from index `from` on (the caller reads
    /// what it needs while holding the session lock, then lets go).
    fn copy_from(&self, from: usize, count: usize) -> Vec<Frame> {
        let Some(first) = self.frames.get(from) else {
            return Vec::new();
        };
        let mut at = (first.start - self.front) as usize;
        self.frames
            .range(from..)
            .take(count)
            .map(|m| {
                let data = self.slice(at, m.len);
                at += m.len;
                Frame {
                    seq: m.seq,
                    data,
                    end: m.end.clone(),
                }
            })
            .collect()
    }

    /// `len` bytes at `at`, from the one or two halves of the buffer.
    fn slice(&self, at: usize, len: usize) -> Vec<u8> {
        let (a, b) = self.bytes.as_slices();
        let mut out = Vec::with_capacity(len);
        let head = &a[at.min(a.len())..(at + len).min(a.len())];
        out.extend_from_slice(head);
        let from = at.saturating_sub(a.len());
        out.extend_from_slice(&b[from..from + len - head.len()]);
        out
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The bytes of every held frame numbered above `after`, in order, as
    /// the one or two halves of the buffer they lie in.
    pub fn bytes_after(&self, after: u64) -> (&[u8], &[u8]) {
        let (a, b) = self.bytes.as_slices();
        let Some(first) = self.first_seq() else {
            return (&[], &[]);
        };
        let i =
            usize::try_from(after.saturating_add(1).saturating_sub(first)).unwrap_or(usize::MAX);
        let Some(m) = self.frames.get(i) else {
            return (&[], &[]);
        };
        let at = (m.start - self.front) as usize;
        if at < a.len() {
            (&a[at..], b)
        } else {
            (&b[at - a.len()..], &[])
        }
    }

    /// The frame numbered `seq`, if still held.
    pub fn get(&self, seq: u64) -> Option<Frame> {
        let first = self.first_seq()?;
        let i = usize::try_from(seq.checked_sub(first)?).ok()?;
        if i >= self.frames.len() {
            return None;
        }
        self.copy_from(i, 1).pop()
    }

    /// Whether some frame between `after` and the oldest held one is gone.
    pub fn lost_after(&self, after: u64) -> bool {
        match self.first_seq() {
            Some(first) => first > after.saturating_add(1) && after < self.last_seq,
            None => self.last_seq > after,
        }
    }

    /// Every held frame after `after`; `truncated` when some frame between
    /// `after` and the oldest held one is gone.
    pub fn after(&self, after: u64) -> Replay {
        let truncated = self.lost_after(after);
        let from = match self.first_seq() {
            Some(first) => usize::try_from(after.saturating_add(1).saturating_sub(first))
                .unwrap_or(usize::MAX)
                .min(self.frames.len()),
            None => 0,
        };
        Replay {
            frames: self.copy_from(from, usize::MAX),
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_start_at_one_without_gaps() {
        let mut r = Ring::new(100);
        for i in 1..=5u64 {
            assert_eq!(r.push(&[b'x'; 3], None), i);
        }
        let seqs: Vec<u64> = r.after(0).frames.iter().map(|f| f.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
        assert!(!r.after(0).truncated);
        assert_eq!(r.get(3).unwrap().seq, 3);
        assert!(r.get(6).is_none());
    }

    #[test]
    fn oldest_frames_are_evicted_past_the_byte_cap() {
        let mut r = Ring::new(10);
        for _ in 0..5 {
            r.push(&[0; 4], None);
        }
        assert_eq!(r.bytes(), 8);
        assert_eq!(r.len(), 2);
        assert_eq!(r.first_seq(), Some(4));
        assert_eq!(r.last_seq(), 5);
        assert!(r.truncated());
        assert!(r.get(3).is_none());
    }

    #[test]
    fn an_oversized_frame_is_still_kept_alone() {
        let mut r = Ring::new(10);
        r.push(&[0; 4], None);
        r.push(&[0; 50], None);
        assert_eq!(r.len(), 1);
        assert_eq!(r.first_seq(), Some(2));
        assert_eq!(r.bytes(), 50);
    }

    #[test]
    fn replay_reports_truncation_only_when_asked_for_lost_frames() {
        let mut r = Ring::new(8);
        for _ in 0..6 {
            r.push(&[0; 4], None);
        }
        // held: 5, 6
        let all = r.after(0);
        assert!(all.truncated);
        assert_eq!(all.frames.len(), 2);
        let cont = r.after(4);
        assert!(!cont.truncated);
        assert_eq!(cont.frames[0].seq, 5);
        let lost = r.after(3);
        assert!(lost.truncated);
        let none = r.after(6);
        assert!(!none.truncated && none.frames.is_empty());
        // asking beyond the end is not a truncation
        assert!(!r.after(99).truncated);
    }

    #[test]
    fn empty_ring_is_not_truncated() {
        let r = Ring::new(8);
        assert!(!r.truncated());
        assert!(!r.after(0).truncated);
        assert_eq!(r.last_seq(), 0);
    }

    #[test]
    fn frames_read_back_exactly_across_eviction_and_wrap_around() {
        let mut r = Ring::new(64);
        let frame = |i: u64| -> Vec<u8> { (0..(5 + i % 11)).map(|b| (i * 7 + b) as u8).collect() };
        for i in 1..=500u64 {
            assert_eq!(r.push(&frame(i), None), i);
            assert!(r.bytes() <= 64);
            let first = r.first_seq().unwrap();
            for seq in first..=i {
                assert_eq!(
                    r.get(seq).unwrap().data,
                    frame(seq),
                    "frame {seq} after {i}"
                );
            }
            let all: Vec<u64> = r.after(first - 1).frames.iter().map(|f| f.seq).collect();
            assert_eq!(all, (first..=i).collect::<Vec<_>>());
            // the bytes after any held frame, joined, are those frames' bytes
            for after in first - 1..=i {
                let (a, b) = r.bytes_after(after);
                let want: Vec<u8> = (after + 1..=i).flat_map(frame).collect();
                assert_eq!([a, b].concat(), want, "bytes after {after} at {i}");
            }
        }
        assert_eq!(r.bytes_after(500), (&[][..], &[][..]));
    }
}
