//! UTF-8 hold-back: a frame never ends inside a multi-byte character.

/// How many leading bytes of `buf` can be sent now: all of it, minus a
/// trailing *incomplete but valid so far* UTF-8 sequence (1 to 3 bytes),
/// which waits for the next read. Invalid bytes are never held (they could
/// never complete).
pub fn sendable(buf: &[u8]) -> usize {
    let n = buf.len();
    // A sequence is at most 4 bytes: look at the last 3 for a lead byte.
    for back in 1..=3.min(n) {
        let b = buf[n - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte: keep looking for its lead
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return n, // ASCII or invalid lead: nothing to wait for
        };
        if back < need && valid_prefix(&buf[n - back..]) {
            return n - back;
        }
        return n;
    }
    n
}

/// Whether `bytes` (a lead byte and its continuations so far) can still
/// become a valid character.
fn valid_prefix(bytes: &[u8]) -> bool {
    let (lead, rest) = (bytes[0], &bytes[1..]);
    if let Some(&second) = rest.first() {
        // the ranges UTF-8 forbids: overlongs, surrogates, past U+10FFFF
        let ok = match lead {
            0xE0 => (0xA0..=0xBF).contains(&second),
            0xED => (0x80..=0x9F).contains(&second),
            0xF0 => (0x90..=0xBF).contains(&second),
            0xF4 => (0x80..=0x8F).contains(&second),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    rest.iter().all(|b| b & 0b1100_0000 == 0b1000_0000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_text_is_sent_whole() {
        for s in ["", "abc", "é", "日本", "🦀", "a🦀b"] {
            assert_eq!(sendable(s.as_bytes()), s.len(), "{s}");
        }
    }

    #[test]
    fn a_cut_character_is_held_back_at_every_cut() {
        for s in ["é", "日", "🦀"] {
            let b = s.as_bytes();
            for cut in 1..b.len() {
                let mut buf = b"ab".to_vec();
                buf.extend_from_slice(&b[..cut]);
                assert_eq!(sendable(&buf), 2, "{s} cut at {cut}");
            }
        }
    }

    #[test]
    fn invalid_bytes_are_not_held() {
        assert_eq!(sendable(b"a\xff"), 2);
        assert_eq!(sendable(b"a\x80"), 2);
        assert_eq!(sendable(b"a\xed\xa0"), 3); // a surrogate can never complete
        assert_eq!(sendable(b"a\xc0"), 2); // overlong lead
    }

    #[test]
    fn frames_split_by_sendable_reassemble_into_valid_text() {
        let text = "héllo 日本語 🦀 wörld ".repeat(50);
        let bytes = text.as_bytes();
        for step in 1..9 {
            let (mut pending, mut out) = (Vec::new(), Vec::new());
            for chunk in bytes.chunks(step) {
                pending.extend_from_slice(chunk);
                let n = sendable(&pending);
                let frame: Vec<u8> = pending.drain(..n).collect();
                assert!(std::str::from_utf8(&frame).is_ok(), "step {step}");
                out.extend(frame);
            }
            out.extend(pending);
            assert_eq!(out, bytes);
        }
    }
}
