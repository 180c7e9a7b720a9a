//! One file's n-grams, kept small: a Bloom filter (two probes per key, in
//! one word)
//! sized to the number of distinct keys.
//!
//! The keys are the file's byte 4-grams and 3-grams, each folded to ASCII
//! lower case ([`key3`], [`key4`]). Folding serves both kinds of query with
//! one key per position: a case-insensitive query asks for the folded
//! n-gram instead of every spelling (16 for four letters), and a
//! case-sensitive one asks for the fold of what it needs, which every
//! matching file holds. 4-grams are what make the filter selective: an
//! identifier's trigrams are common in code ("ser", "ize", "ent"), its
//! 4-grams much less so — on a cargo registry tree the candidates of a
//! case-insensitive literal fell from 10× to 1.8× the files that match,
//! those of a rare literal from 4.5× to 1.1×. 3-grams serve patterns
//! whose longest fragment has three bytes.
//!
//! Two bits per key, two probes: a key the file does not hold reads as
//! present with probability ≈ (1 − e^−1)² ≈ 40 % (a little more for the
//! probes sharing a word, less where rounding the
//! size up to a power of two adds bits). One key rules out little; a
//! literal asks for all of its keys, and a file that lacks most of them
//! passes with ≈ 0.4 per key it lacks — on the cargo registry tree, a rare
//! 22-byte literal had 21 candidates for 18 files that match (exact 4-grams:
//! 20). A present key always reads as present: the filter never rules out
//! a file that holds the n-grams.

/// Bits per distinct key.
const BITS_PER_KEY: usize = 2;
/// Smallest and largest filter, in 64-bit words.
const MIN_WORDS: usize = 1;
const MAX_WORDS: usize = 1 << 15; // 256 KiB: past it, a file reads as "may hold anything"
/// Most keys a filter takes.
const MAX_KEYS: usize = MAX_WORDS * 64 / BITS_PER_KEY;
/// The 4-gram table kept between files (entries).
const MIN_TABLE: usize = 1 << 13;

/// Where the 4-gram table looks first for `v` (a Fibonacci hash).
fn home(v: u64, tmask: u64) -> u64 {
    (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24) & tmask
}

/// What the index knows about one file's bytes.
#[derive(Debug, Clone)]
pub enum Content {
    /// The file has a NUL byte: the scan skips it as binary.
    Binary,
    /// Too many distinct keys to filter: always a candidate.
    Dense,
    /// The file's n-grams.
    Filter(Filter),
}

/// A Bloom filter over n-gram keys (a power of two of bits).
#[derive(Debug, Clone)]
pub struct Filter {
    words: Box<[u64]>,
    /// Words - 1.
    mask: u64,
}

/// Where `key` lives in a filter of `words_mask + 1` words: one word, and
/// two bits in it (one 64-bit mix, split). Both probes in one word make a
/// lookup one memory access — the replay of a search looks up a key of
/// every file, and each lookup is a cache miss — for a false-positive rate
/// only slightly above two free probes' (the load per word varies).
fn probe(key: u64, words_mask: u64) -> (usize, u64) {
    // splitmix64's finalizer: every input bit moves every output bit
    let mut x = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let word = ((x >> 32) & words_mask) as usize;
    (word, (1u64 << (x & 63)) | (1u64 << ((x >> 6) & 63)))
}

impl Filter {
    fn set(&mut self, key: u64) {
        let (w, bits) = probe(key, self.mask);
        self.words[w] |= bits;
    }

    /// The file may hold the n-gram of `key`.
    pub fn has(&self, key: u64) -> bool {
        let (w, bits) = probe(key, self.mask);
        self.words[w] & bits == bits
    }

    /// Load the word `key` lives in (its value is of no use): a replay
    /// touches the words of a directory's files before it visits them, so
    /// their cache misses overlap instead of coming one after another.
    pub fn touch(&self, key: u64) -> u64 {
        self.words[probe(key, self.mask).0]
    }

    /// Bytes this filter holds.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The filter's words (to save it).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// A filter of saved `words`: a power of two of them, no more than a
    /// build makes.
    pub fn from_words(words: Box<[u64]>) -> Result<Filter, String> {
        let n = words.len();
        if !n.is_power_of_two() || !(MIN_WORDS..=MAX_WORDS).contains(&n) {
            return Err(format!("a filter of {n} words"));
        }
        Ok(Filter {
            words,
            mask: (n - 1) as u64,
        })
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

/// The key of the 3-gram `b[..3]`, folded to ASCII lower case.
pub fn key3(b: &[u8]) -> u64 {
    let l = |i: usize| u64::from(b[i].to_ascii_lowercase());
    (3 << 32) | (l(0) << 16) | (l(1) << 8) | l(2)
}

/// The key of the 4-gram `b[..4]`, folded to ASCII lower case.
pub fn key4(b: &[u8]) -> u64 {
    let l = |i: usize| u64::from(b[i].to_ascii_lowercase());
    (4 << 32) | (l(0) << 24) | (l(1) << 16) | (l(2) << 8) | l(3)
}

/// Distinct keys of a byte string, with reusable scratch sets (cleared
/// again on the way out): a 2^24-bit set for the 3-grams, an open-addressed
/// table for the 4-grams.
pub struct Scratch {
    seen3: Vec<u64>,
    /// 4-gram table: folded 4-gram + 1 (0 = empty), a power of two long.
    table: Vec<u64>,
    keys: Vec<u64>,
    /// The build's read buffer, kept between files up to [`READ_KEEP`].
    pub(super) read: Vec<u8>,
}

/// The most read buffer a [`Scratch`] keeps between files.
const READ_KEEP: usize = 1 << 20;

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            seen3: vec![0; (1 << 24) / 64],
            table: vec![0; MIN_TABLE],
            keys: Vec::new(),
            read: Vec::new(),
        }
    }
}

impl Scratch {
    /// Take the read buffer back for the next file (dropped when a large
    /// file grew it past [`READ_KEEP`]).
    pub(super) fn keep_read(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        if buf.capacity() <= READ_KEEP {
            self.read = buf;
        }
    }

    /// What the index keeps of `bytes`.
    pub fn summarize(&mut self, bytes: &[u8]) -> Content {
        if memchr::memchr(0, bytes).is_some() {
            return Content::Binary;
        }
        self.keys.clear();
        for w in bytes.windows(3) {
            let k = key3(w);
            let t = (k & 0xFF_FFFF) as usize;
            let (word, bit) = (t / 64, 1u64 << (t % 64));
            if self.seen3[word] & bit == 0 {
                self.seen3[word] |= bit;
                self.keys.push(k);
            }
        }
        let threes = self.keys.len();
        for &k in &self.keys {
            self.seen3[(k & 0xFF_FFFF) as usize / 64] = 0;
        }
        // a table at most half full holds every 4-gram up to the most a
        // filter takes
        let want = (bytes.len() * 2)
            .next_power_of_two()
            .clamp(MIN_TABLE, 2 * MAX_KEYS);
        if self.table.len() < want {
            self.table = vec![0; want];
        }
        let tmask = (self.table.len() - 1) as u64;
        let mut dense = false;
        for w in bytes.windows(4) {
            let k = key4(w);
            let v = (k & 0xFFFF_FFFF) + 1;
            let mut i = home(v, tmask);
            loop {
                let slot = &mut self.table[i as usize];
                if *slot == v {
                    break;
                }
                if *slot == 0 {
                    *slot = v;
                    self.keys.push(k);
                    break;
                }
                i = (i + 1) & tmask;
            }
            if self.keys.len() > MAX_KEYS {
                dense = true;
                break;
            }
        }
        // clean the table for the next file: only what was set, unless
        // most of it was
        if self.table.len() > MIN_TABLE {
            // a large file's table is not kept
            self.table = vec![0; MIN_TABLE];
        } else {
            for &k in &self.keys[threes..] {
                let mut i = home((k & 0xFFFF_FFFF) + 1, tmask);
                while self.table[i as usize] != 0 {
                    self.table[i as usize] = 0;
                    i = (i + 1) & tmask;
                }
            }
        }
        if dense {
            return Content::Dense;
        }
        let want_bits = (self.keys.len() * BITS_PER_KEY).max(MIN_WORDS * 64);
        let words = want_bits.div_ceil(64).next_power_of_two();
        if words > MAX_WORDS {
            return Content::Dense;
        }
        let mut f = Filter {
            words: vec![0u64; words].into_boxed_slice(),
            mask: (words - 1) as u64,
        };
        for &k in &self.keys {
            f.set(k);
        }
        Content::Filter(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ngram_of_the_file_reads_as_present_in_any_spelling() {
        let mut s = Scratch::default();
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("Line {i} of {} ", i * 7919 % 1013).into_bytes())
            .collect();
        let Content::Filter(f) = s.summarize(&text) else {
            panic!("a text file gets a filter");
        };
        for w in text.windows(4) {
            assert!(f.has(key3(w)));
            assert!(f.has(key4(w)));
            let upper: Vec<u8> = w.to_ascii_uppercase();
            assert!(f.has(key4(&upper)), "the fold of any spelling");
            assert!(f.has(key3(&upper)));
        }
        // an absent key reads as present at most at the filter's rate
        // (≈ 40 % at two bits per key)
        let absent = (0..1000u32)
            .map(|i| {
                key4(&[
                    b'~',
                    b'q',
                    b'a' + (i % 26) as u8,
                    b'a' + (i / 26 % 26) as u8,
                ])
            })
            .filter(|&k| f.has(k))
            .count();
        assert!(
            absent < 450,
            "{absent} of 1000 absent 4-grams read as present"
        );
        // the scratch sets are clean again
        assert!(s.seen3.iter().all(|&w| w == 0));
        assert!(s.table.iter().all(|&w| w == 0));
        assert!(matches!(s.summarize(b"a\0b"), Content::Binary));
        assert!(matches!(s.summarize(b""), Content::Filter(_)));
    }

    #[test]
    fn the_scratch_table_stays_exact_across_files_of_any_size() {
        let mut s = Scratch::default();
        // a large file (the table grows, then is cleared whole), then small
        // ones (cleared slot by slot): each sees only its own 4-grams
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i:x}-").into_bytes())
            .collect();
        assert!(matches!(s.summarize(&big), Content::Filter(_)));
        for text in [&b"abcdefgh"[..], b"zyxw", b"abcdefgh"] {
            let Content::Filter(f) = s.summarize(text) else {
                panic!("filter");
            };
            for w in text.windows(4) {
                assert!(f.has(key4(w)));
            }
            assert!(s.table.iter().all(|&w| w == 0));
        }
    }
}
