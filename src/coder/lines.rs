//! Line-oriented reading in bounded memory.
//!
//! A window of a file of any size is read by skipping to its first line with
//! a large buffered scan (newlines counted with `memchr`, nothing kept), then
//! collecting lines until the window ends or the byte budget is spent. Line
//! terminators are kept. Budgets count the returned text: after invalid UTF-8
//! became U+FFFD and after `N→` prefixes.

use crate::error::{Class, Failure};
use std::io::{BufRead, BufReader, Read};

const SCAN_BUFFER: usize = 256 * 1024;

/// Lines of a byte slice: newlines, plus one for an unterminated tail.
pub fn count_lines(bytes: &[u8]) -> u64 {
    let nl = memchr::memchr_iter(b'\n', bytes).count() as u64;
    if bytes.last().is_some_and(|b| *b != b'\n') {
        nl + 1
    } else {
        nl
    }
}

/// Lines of a whole stream, as [`count_lines`] counts them, in bounded
/// memory.
pub fn count_lines_in(mut r: impl Read) -> std::io::Result<u64> {
    let mut buf = vec![0u8; SCAN_BUFFER];
    let (mut nl, mut last) = (0u64, b'\n');
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        nl += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        last = buf[n - 1];
    }
    Ok(if last != b'\n' { nl + 1 } else { nl })
}

/// The line count `coder::list-folder` and `coder::tree` report for the
/// entry `name` of the directory open as `dir`, read through its handle:
/// `None` unless it is a regular file (a link is not followed, a FIFO never
/// waited on) of at most `cap` bytes (0: no cap).
pub fn count_lines_of(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    cap: u64,
) -> Option<u64> {
    use nix::fcntl::OFlag;
    let fd = crate::jail::walk::open_child(dir, name, OFlag::O_RDONLY | OFlag::O_NONBLOCK).ok()?;
    let file = std::fs::File::from(fd);
    let md = file.metadata().ok()?;
    if !md.is_file() || (cap > 0 && md.len() > cap) {
        return None;
    }
    // never more than the size it had when opened: a file growing under a
    // writer is counted as it was
    count_lines_in(file.take(md.len())).ok()
}

/// Bytes as text: invalid UTF-8 becomes U+FFFD. Returns (text, was_valid).
pub fn lossy(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), true),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
    }
}

/// The `N→` prefix of a numbered line.
pub fn number_prefix(line_no: u64) -> String {
    format!("{line_no}→")
}

/// Whole-buffer text conversion, optionally numbered from line 1.
pub fn to_text(bytes: &[u8], numbered: bool) -> (String, bool) {
    let (text, valid) = lossy(bytes);
    if !numbered {
        return (text, valid);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        out.push_str(&number_prefix(i as u64 + 1));
        out.push_str(line);
    }
    (out, valid)
}

/// A window read from a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowText {
    pub content: String,
    pub lines_returned: u64,
    /// The file continues past what `content` holds.
    pub more_lines: bool,
    /// Known only when the read reached EOF naturally.
    pub total_lines: Option<u64>,
    pub is_utf8: bool,
}

/// Read lines `from..=to` (1-based; `to = None` reads to EOF), returning
/// at most `cap` bytes of text (`None` = unlimited).
pub fn read_window<R: Read>(
    source: R,
    from: u64,
    to: Option<u64>,
    cap: Option<u64>,
    numbered: bool,
) -> Result<WindowText, Failure> {
    let mut reader = BufReader::with_capacity(SCAN_BUFFER, source);
    let io = |e: std::io::Error| Failure::io(format!("read failed: {e}"));
    // Skip phase: count newlines without keeping bytes.
    let mut line = 1u64;
    let mut mid_line = false;
    while line < from {
        let buf = reader.fill_buf().map_err(io)?;
        if buf.is_empty() {
            let total = if mid_line { line } else { line - 1 };
            return Ok(WindowText {
                content: String::new(),
                lines_returned: 0,
                more_lines: false,
                total_lines: Some(total),
                is_utf8: true,
            });
        }
        let need = from - line;
        let mut consumed = buf.len();
        let mut seen = 0u64;
        for pos in memchr::memchr_iter(b'\n', buf) {
            seen += 1;
            if seen == need {
                consumed = pos + 1;
                break;
            }
        }
        mid_line = buf[..consumed].last() != Some(&b'\n');
        line += seen.min(need);
        reader.consume(consumed);
    }
    // Collect phase.
    let mut out = String::new();
    let mut valid = true;
    let mut returned = 0u64;
    let mut raw = Vec::new();
    let limit = cap.unwrap_or(u64::MAX);
    loop {
        if to.is_some_and(|t| line > t) {
            break;
        }
        raw.clear();
        let remaining = limit - out.len() as u64;
        let n = (&mut reader)
            .take(remaining.saturating_add(1))
            .read_until(b'\n', &mut raw)
            .map_err(io)?;
        if n == 0 {
            return Ok(WindowText {
                content: out,
                lines_returned: returned,
                more_lines: false,
                total_lines: Some(line - 1),
                is_utf8: valid,
            });
        }
        let (text, ok) = lossy(&raw);
        let prefix = if numbered {
            number_prefix(line)
        } else {
            String::new()
        };
        let cost = (prefix.len() + text.len()) as u64;
        let complete_line = raw.last() == Some(&b'\n') || (n as u64) <= remaining;
        if cost > remaining || !complete_line {
            if returned == 0 {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "line {line} alone is larger than the {limit}-byte window budget; read \
                         the file's bytes with shell::fs::read, or coder::read-file with \
                         encoding: \"base64\" if it fits max_read_bytes"
                    ),
                ));
            }
            return Ok(WindowText {
                content: out,
                lines_returned: returned,
                more_lines: true,
                total_lines: None,
                is_utf8: valid,
            });
        }
        valid &= ok;
        out.push_str(&prefix);
        out.push_str(&text);
        returned += 1;
        line += 1;
    }
    // The window ended; is there more?
    let at_eof = reader.fill_buf().map_err(io)?.is_empty();
    Ok(WindowText {
        content: out,
        lines_returned: returned,
        more_lines: !at_eof,
        total_lines: at_eof.then_some(line - 1),
        is_utf8: valid,
    })
}

/// A reader that passes every byte through a SHA-256 and a line count, so a
/// windowed read or a stat probe can also give the whole file's `revision`
/// from the same open file: read what the answer needs through it, then
/// [`Tap::finish`] reads the rest (constant memory) and returns the digest.
pub struct Tap<R> {
    inner: R,
    hasher: sha2::Sha256,
    newlines: u64,
    last: Option<u8>,
    /// Bytes read through so far.
    seen: u64,
    /// Every byte read through, while they stay within `keep_cap`.
    kept: Option<Vec<u8>>,
    keep_cap: usize,
}

impl<R: Read> Tap<R> {
    pub fn new(inner: R) -> Tap<R> {
        use sha2::Digest;
        Tap {
            inner,
            hasher: sha2::Sha256::new(),
            newlines: 0,
            last: None,
            seen: 0,
            kept: None,
            keep_cap: 0,
        }
    }

    /// Keep a copy of what goes through, for a stream of at most `cap`
    /// bytes (a longer one keeps nothing): [`Tap::finish_keeping`].
    pub fn keeping(mut self, cap: usize) -> Tap<R> {
        self.kept = Some(Vec::new());
        self.keep_cap = cap;
        self
    }

    /// Read the rest of the stream; then the revision (SHA-256 hex) and the
    /// line count of every byte that went through.
    pub fn finish(self) -> Result<(String, u64), Failure> {
        self.finish_within(u64::MAX)
            .map(|done| done.expect("an unlimited read reaches the end"))
    }

    /// [`Tap::finish`], reading at most `limit` bytes in all: `None` when
    /// the stream holds more (a file that grew past `fs.max_read_bytes`
    /// while it was read has no revision, rather than one of a prefix).
    pub fn finish_within(self, limit: u64) -> Result<Option<(String, u64)>, Failure> {
        self.finish_keeping(limit).map(|(done, _)| done)
    }

    /// [`Tap::finish_within`], and the whole stream's bytes when it was
    /// made [`Tap::keeping`] and they fit.
    #[allow(clippy::type_complexity)]
    pub fn finish_keeping(
        mut self,
        limit: u64,
    ) -> Result<(Option<(String, u64)>, Option<Vec<u8>>), Failure> {
        use sha2::Digest;
        let mut buf = vec![0u8; SCAN_BUFFER];
        loop {
            if self.seen > limit {
                return Ok((None, None));
            }
            let room = usize::try_from(limit - self.seen)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
                .min(buf.len());
            match self.read(&mut buf[..room]) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::io(format!("read failed: {e}"))),
            }
        }
        if self.seen > limit {
            return Ok((None, None));
        }
        let total = self.newlines + u64::from(self.last.is_some_and(|b| b != b'\n'));
        let kept = self.kept.take();
        Ok((Some((super::hex(&self.hasher.finalize()), total)), kept))
    }
}

impl<R: Read> Read for Tap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.read(buf)?;
        if n > 0 {
            let got = &buf[..n];
            self.hasher.update(got);
            self.newlines += memchr::memchr_iter(b'\n', got).count() as u64;
            self.last = got.last().copied();
            self.seen += n as u64;
            if let Some(k) = &mut self.kept {
                if k.len() + n > self.keep_cap {
                    self.kept = None;
                } else {
                    k.extend_from_slice(got);
                }
            }
        }
        Ok(n)
    }
}

/// Stream a whole file: (total_lines, is_utf8), constant memory.
pub fn scan<R: Read>(source: R) -> Result<(u64, bool), Failure> {
    let mut reader = BufReader::with_capacity(SCAN_BUFFER, source);
    let mut newlines = 0u64;
    let mut last = None;
    let mut valid = true;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = reader
            .fill_buf()
            .map_err(|e| Failure::io(format!("read failed: {e}")))?;
        if buf.is_empty() {
            break;
        }
        newlines += memchr::memchr_iter(b'\n', buf).count() as u64;
        last = buf.last().copied();
        if valid {
            let mut chunk = std::mem::take(&mut carry);
            chunk.extend_from_slice(buf);
            match std::str::from_utf8(&chunk) {
                Ok(_) => {}
                Err(e) if e.error_len().is_none() => carry = chunk[e.valid_up_to()..].to_vec(),
                Err(_) => valid = false,
            }
        }
        let n = buf.len();
        reader.consume(n);
    }
    if !carry.is_empty() {
        valid = false;
    }
    let total = newlines + u64::from(last.is_some_and(|b| b != b'\n'));
    Ok((total, valid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_counts_as_its_bytes_do() {
        for bytes in [&b""[..], b"a", b"a\n", b"a\nb", b"\n\n", b"x\r\ny\r\n"] {
            assert_eq!(
                count_lines_in(bytes).unwrap(),
                count_lines(bytes),
                "{bytes:?}"
            );
        }
        // across buffer boundaries
        let big = "line\n".repeat(SCAN_BUFFER / 3) + "tail";
        assert_eq!(
            count_lines_in(big.as_bytes()).unwrap(),
            count_lines(big.as_bytes())
        );
    }

    fn win(s: &str, from: u64, to: Option<u64>, cap: Option<u64>) -> WindowText {
        read_window(s.as_bytes(), from, to, cap, false).unwrap()
    }

    #[test]
    fn a_tap_hashes_and_counts_what_a_window_left_unread() {
        let body: String = (1..=50_000).map(|i| format!("{i}\n")).collect();
        let mut tap = Tap::new(body.as_bytes());
        let w = read_window(&mut tap, 10, Some(11), None, false).unwrap();
        assert_eq!(w.content, "10\n11\n");
        let (revision, total) = tap.finish().unwrap();
        assert_eq!(revision, crate::coder::revision_of(body.as_bytes()));
        assert_eq!(total, 50_000);
        // no final newline: the last line still counts
        let (_, total) = Tap::new(&b"a\nb"[..]).finish().unwrap();
        assert_eq!(total, 2);
        // more than the limit: no revision of a prefix
        let len = body.len() as u64;
        assert!(
            Tap::new(body.as_bytes())
                .finish_within(len - 1)
                .unwrap()
                .is_none()
        );
        assert!(
            Tap::new(body.as_bytes())
                .finish_within(len)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn counts_lines_like_an_editor() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(scan(&b"a\nb"[..]).unwrap(), (2, true));
        assert_eq!(scan(&b"a\xff\n"[..]).unwrap(), (1, false));
    }

    #[test]
    fn window_in_the_middle_reports_more_lines_without_total() {
        let w = win("1\n2\n3\n4\n", 2, Some(3), None);
        assert_eq!(w.content, "2\n3\n");
        assert_eq!(w.lines_returned, 2);
        assert!(w.more_lines);
        assert_eq!(w.total_lines, None);
    }

    #[test]
    fn window_reaching_eof_reports_total() {
        let w = win("1\n2\n3\n4\n", 3, Some(4), None);
        assert_eq!(w.content, "3\n4\n");
        assert!(!w.more_lines);
        assert_eq!(w.total_lines, Some(4));
        let open = win("1\n2\n3", 2, None, None);
        assert_eq!(open.content, "2\n3");
        assert_eq!(open.total_lines, Some(3));
    }

    #[test]
    fn window_past_eof_is_empty_with_total() {
        let w = win("1\n2\n", 9, Some(12), None);
        assert_eq!(w.content, "");
        assert_eq!(w.total_lines, Some(2));
        let w = win("1\n2", 5, None, None);
        assert_eq!(w.total_lines, Some(2));
    }

    #[test]
    fn budget_cuts_the_window_at_a_line_boundary() {
        let w = win("aaaa\nbbbb\ncccc\n", 1, None, Some(11));
        assert_eq!(w.content, "aaaa\nbbbb\n");
        assert!(w.more_lines);
        assert_eq!(w.total_lines, None);
        let err = read_window(&b"aaaaaaaaaa\n"[..], 1, None, Some(4), false).unwrap_err();
        assert_eq!(err.class, Class::TooLarge);
    }

    #[test]
    fn numbered_prefixes_count_against_the_budget() {
        let w = read_window(&b"a\nb\n"[..], 1, None, Some(6), true).unwrap();
        assert_eq!(w.content, "1→a\n");
        let (t, _) = to_text(b"x\ny", true);
        assert_eq!(t, "1→x\n2→y");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let w = read_window(&b"ok\n\xffbad\n"[..], 2, None, None, false).unwrap();
        assert!(!w.is_utf8);
        assert_eq!(w.content, "\u{FFFD}bad\n");
        let clean = read_window(&b"ok\n\xffbad\n"[..], 1, Some(1), None, false).unwrap();
        assert!(clean.is_utf8);
    }

    #[test]
    fn skipping_crosses_buffer_boundaries() {
        let mut s = String::new();
        for i in 1..=100_000 {
            s.push_str(&format!("line {i}\n"));
        }
        let w = win(&s, 99_999, None, None);
        assert_eq!(w.content, "line 99999\nline 100000\n");
        assert_eq!(w.total_lines, Some(100_000));
    }
}
