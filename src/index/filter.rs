//! One file's trigrams, kept small: a Bloom filter (one hash) sized to the
//! number of distinct trigrams.
//!
//! Each distinct trigram goes in as itself and, marked, as its ASCII
//! case fold ([`fold_key`]): a case-insensitive query asks for one folded
//! trigram per position instead of every spelling (eight for three
//! letters), which a filter this sparse would let through almost always.
//!
//! Two bits per key: a key the file does not hold reads as
//! present with probability ≈ 39 %, so a query of eight trigrams lets a
//! non-matching file through ≈ 0.05 % of the time (it is then read and
//! matched for nothing, never reported). A present trigram always reads as
//! present: the filter never rules out a file that holds the trigrams.

use super::query::trigram;

/// Bits per distinct trigram.
const BITS_PER_TRIGRAM: usize = 2;
/// Smallest and largest filter, in 64-bit words.
const MIN_WORDS: usize = 1;
const MAX_WORDS: usize = 1 << 14; // 128 KiB: past it, a file reads as "may hold anything"

/// What the index knows about one file's bytes.
#[derive(Debug, Clone)]
pub enum Content {
    /// The file has a NUL byte: the scan skips it as binary.
    Binary,
    /// Too many distinct trigrams to filter: always a candidate.
    Dense,
    /// The file's trigrams.
    Filter(Filter),
}

/// A Bloom filter over trigrams (a power of two of bits).
#[derive(Debug, Clone)]
pub struct Filter {
    words: Box<[u64]>,
    shift: u32,
}

impl Filter {
    fn slot(&self, t: u32) -> usize {
        (t.wrapping_mul(0x9E37_79B1) >> self.shift) as usize
    }

    /// The file may hold trigram `t`.
    pub fn has(&self, t: u32) -> bool {
        let i = self.slot(t);
        self.words[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// Bytes this filter holds.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

impl Content {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        match self {
            Content::Filter(f) => f.bytes(),
            _ => 0,
        }
    }
}

/// The key of trigram `t` folded to ASCII lower case (bit 24 marks it).
pub fn fold_key(t: u32) -> u32 {
    let lower = |b: u32| {
        if (0x41..=0x5A).contains(&b) {
            b + 0x20
        } else {
            b
        }
    };
    (1 << 24) | (lower(t >> 16) << 16) | (lower((t >> 8) & 0xFF) << 8) | lower(t & 0xFF)
}

/// Distinct keys of a byte string, with a reusable 2^25-bit scratch set
/// (cleared again on the way out).
pub struct Scratch {
    seen: Vec<u64>,
    list: Vec<u32>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            seen: vec![0; (1 << 25) / 64],
            list: Vec::new(),
        }
    }
}

impl Scratch {
    /// What the index keeps of `bytes`.
    pub fn summarize(&mut self, bytes: &[u8]) -> Content {
        if memchr::memchr(0, bytes).is_some() {
            return Content::Binary;
        }
        self.list.clear();
        for w in bytes.windows(3) {
            let t = trigram(w);
            for k in [t, fold_key(t)] {
                let k = k as usize;
                let (word, bit) = (k / 64, 1u64 << (k % 64));
                if self.seen[word] & bit == 0 {
                    self.seen[word] |= bit;
                    self.list.push(k as u32);
                }
            }
        }
        for &t in &self.list {
            self.seen[t as usize / 64] = 0;
        }
        let want_bits = (self.list.len() * BITS_PER_TRIGRAM).max(MIN_WORDS * 64);
        let words = want_bits.div_ceil(64).next_power_of_two();
        if words > MAX_WORDS {
            return Content::Dense;
        }
        let bits = words * 64;
        let mut f = Filter {
            words: vec![0u64; words].into_boxed_slice(),
            shift: 32 - bits.trailing_zeros(),
        };
        for &t in &self.list {
            let i = f.slot(t);
            f.words[i / 64] |= 1u64 << (i % 64);
        }
        Content::Filter(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trigram_of_the_file_reads_as_present() {
        let mut s = Scratch::default();
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("line {i} of {} ", i * 7919 % 1013).into_bytes())
            .collect();
        let Content::Filter(f) = s.summarize(&text) else {
            panic!("a text file gets a filter");
        };
        for w in text.windows(3) {
            assert!(f.has(trigram(w)));
            assert!(f.has(fold_key(trigram(w))));
            let upper: Vec<u8> = w.to_ascii_uppercase();
            assert!(f.has(fold_key(trigram(&upper))), "the fold of any spelling");
        }
        // absent trigrams mostly read as absent
        let absent = (0..1000u32)
            .map(|i| trigram(&[b'~', b'A' + (i % 26) as u8, b'a' + (i / 26 % 26) as u8]))
            .filter(|&t| f.has(t))
            .count();
        assert!(
            absent < 600,
            "{absent} of 1000 absent trigrams read as present"
        );
        // the scratch set is clean again
        assert!(s.seen.iter().all(|&w| w == 0));
        assert!(matches!(s.summarize(b"a\0b"), Content::Binary));
        assert!(matches!(s.summarize(b""), Content::Filter(_)));
    }
}
