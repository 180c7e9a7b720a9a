//! The content scan: ripgrep's own searcher over the files the walk hands
//! over, on worker threads, while the walk goes on.
//!
//! The walk delivers files in path order and numbers them. A file's matches
//! land in its slot; after each file a worker advances the completed prefix
//! (the longest run of finished slots from the start). Once that prefix alone
//! holds more matches than `max_matches` or more payload than the budget,
//! nothing after it can appear in the answer, so the walk and the workers
//! stop. The answer is then cut from the prefix in order — the same answer a
//! sequential scan would give, whatever the thread timing.

use super::paths::bad_query;
use super::{ContentMatch, StopReason};
use crate::error::Failure;
use crate::policy::Resolved;
use grep_matcher::{LineTerminator, Matcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

/// The compiled content side of a search.
pub(crate) struct ContentQuery {
    matcher: RegexMatcher,
    max_line_bytes: usize,
    before: usize,
    after: usize,
}

impl ContentQuery {
    pub fn new(
        query: &str,
        regex: bool,
        ignore_case: bool,
        max_line_bytes: usize,
        before: usize,
        after: usize,
    ) -> Result<ContentQuery, Failure> {
        let matcher = RegexMatcherBuilder::new()
            .fixed_strings(!regex)
            .case_insensitive(ignore_case)
            // `^` and `$` anchor at every line's start and end, as in rg:
            // the searcher hands the matcher whole buffers, not lines.
            .multi_line(true)
            // `$` matches before `\r\n` too; no match ever spans a line end.
            .crlf(true)
            // Binary files are skipped at their first NUL, so a NUL in the
            // pattern could never match: refuse it up front.
            .ban_byte(Some(0))
            .build(query)
            .map_err(|e| bad_query(query, regex, &e.to_string()))?;
        Ok(ContentQuery {
            matcher,
            max_line_bytes,
            before,
            after,
        })
    }

    fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .line_terminator(LineTerminator::crlf())
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(self.before)
            .after_context(self.after)
            .build()
    }
}

/// The content side of the answer.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    pub matches: Vec<ContentMatch>,
    pub files_scanned: u64,
    pub cut: Option<StopReason>,
}

/// One file's findings.
#[derive(Debug, Default)]
struct FileHits {
    /// Each match with its budget cost (path + text + context bytes).
    matches: Vec<(ContentMatch, usize)>,
    /// The file's content was searched (not skipped as binary, too large,
    /// special or unreadable).
    searched: bool,
}

/// Results so far and the progress of the completed prefix.
#[derive(Default)]
struct Progress {
    /// Slot `i` holds file `i`'s findings once it is scanned.
    slots: Vec<Option<FileHits>>,
    /// Length of the completed prefix.
    done: usize,
    count: usize,
    bytes: usize,
}

/// Scan the files `walk` produces for `q`, until the completed prefix holds
/// more than `max_matches` matches or `budget` payload bytes (or `cancel` is
/// set); files larger than `max_read_bytes` (0 = no limit) are skipped.
/// `walk` runs on the calling thread and hands each file, in path order, to
/// the callback it is given; the callback returns false once nothing more
/// can enter the answer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_while<R>(
    q: &ContentQuery,
    cancel: &AtomicBool,
    max_matches: usize,
    budget: usize,
    max_read_bytes: u64,
    root_at: &Resolved,
    walk: impl FnOnce(&mut dyn FnMut(super::walk::FileRef<'_>) -> bool) -> R,
) -> (Collected, R) {
    let limits = Limits {
        max_matches,
        budget,
        max_read_bytes,
    };
    let stop = AtomicBool::new(false);
    let progress = Mutex::new(Progress::default());
    let (tx, rx) = mpsc::channel::<(usize, Resolved)>();
    let queue = Mutex::new(rx);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    // A file's findings into its slot, and the completed prefix advanced.
    let settle = |i: usize, hits: FileHits| {
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        if p.slots.len() <= i {
            p.slots.resize_with(i + 1, || None);
        }
        p.slots[i] = Some(hits);
        let p = &mut *p;
        while let Some(Some(hits)) = p.slots.get(p.done) {
            p.count += hits.matches.len();
            p.bytes += hits.matches.iter().map(|(_, c)| c).sum::<usize>();
            p.done += 1;
            if p.count > max_matches || p.bytes > budget {
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    };
    let worker = || {
        let mut searcher = q.searcher();
        let mut buf = Reuse::take();
        loop {
            if stop.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
                break;
            }
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
            let Ok((i, path)) = next else {
                break;
            };
            let hits = search_file(&mut searcher, q, &path, &limits, &mut buf);
            settle(i, hits);
        }
        Reuse::keep(buf);
    };
    let walked = std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(worker);
        }
        let mut next = 0usize;
        let mut read = 0usize;
        let walked = walk(&mut |file| {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            use super::walk::FileRef;
            use crate::index::Verdict;
            let path = match file {
                FileRef::Root => root_at.clone(),
                // what the index proves needs no read, settled here: exactly
                // what the read would conclude (nothing found; or skipped)
                FileRef::Below(_, Verdict::NoMatch) => {
                    let hits = FileHits {
                        matches: Vec::new(),
                        searched: true,
                    };
                    settle(next, hits);
                    next += 1;
                    return true;
                }
                FileRef::Below(_, Verdict::Skipped) => {
                    settle(next, FileHits::default());
                    next += 1;
                    return true;
                }
                FileRef::Below(rel, Verdict::Read) => root_at.below(rel),
            };
            read += 1;
            let sent = tx.send((next, path)).is_ok();
            next += 1;
            sent
        });
        // Closing the queue lets the workers finish what is left and exit.
        drop(tx);
        tracing::debug!(files = next, read, "coder::search scan handed out");
        walked
    });
    let slots = progress
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .slots;
    (Collected { slots }, walked)
}

/// Every file's findings, in path order, as far as the scan went.
#[derive(Default)]
pub(crate) struct Collected {
    slots: Vec<Option<FileHits>>,
}

impl Collected {
    /// Cut the answer from the completed prefix, in path then line order,
    /// with at most `max_matches` matches and `budget` payload bytes (at most
    /// the limits the scan ran with).
    pub fn assemble(self, max_matches: usize, budget: usize) -> Scanned {
        assemble(self.slots, max_matches, budget)
    }
}

fn assemble(slots: Vec<Option<FileHits>>, max_matches: usize, budget: usize) -> Scanned {
    let mut out = Scanned::default();
    let mut bytes = 0usize;
    // Slots past the completed prefix exist only when the prefix already
    // overflowed the scan's limits, which are at least these, so the cut
    // always happens before the first empty slot.
    'files: for hits in slots.into_iter().map_while(|s| s) {
        if hits.searched {
            out.files_scanned += 1;
        }
        for (m, cost) in hits.matches {
            if out.matches.len() >= max_matches {
                out.cut = Some(StopReason::MaxMatches);
                break 'files;
            }
            if bytes + cost > budget {
                out.cut = Some(StopReason::Budget);
                break 'files;
            }
            bytes += cost;
            out.matches.push(m);
        }
    }
    out
}

struct Limits {
    max_matches: usize,
    budget: usize,
    max_read_bytes: u64,
}

/// Files up to this size are read whole and searched in memory, so the
/// revision a match carries is the hash of exactly the bytes searched.
const WHOLE_MAX: u64 = 16 * 1024 * 1024;

/// What a worker's read buffer keeps between files.
const BUF_KEEP: usize = 1024 * 1024;

/// Read buffers kept from one search to the next (at most [`KEPT`], each
/// at most [`BUF_KEEP`]): a search's reads land in memory that is already
/// mapped, instead of faulting in fresh pages for every file of every
/// search (a tenth of an indexed search's time went to those faults).
struct Reuse;

const KEPT: usize = 8;
static KEPT_BUFFERS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

impl Reuse {
    fn take() -> Vec<u8> {
        KEPT_BUFFERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    /// `buf` is at most [`BUF_KEEP`] long after every file a search read
    /// (what it holds is cleared by the next read).
    fn keep(buf: Vec<u8>) {
        if buf.capacity() == 0 {
            return;
        }
        let mut kept = KEPT_BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT {
            kept.push(buf);
        }
    }
}

/// Search one file, opened by handle without following any symlink (the
/// walk saw a regular file; a swap since then is refused). A file with a
/// NUL byte is binary and skipped.
fn search_file(
    searcher: &mut Searcher,
    q: &ContentQuery,
    at: &Resolved,
    limits: &Limits,
    buf: &mut Vec<u8>,
) -> FileHits {
    let Ok(file) = at.loc().open_read() else {
        return FileHits::default();
    };
    let Ok(md) = file.metadata() else {
        return FileHits::default();
    };
    if !md.is_file() || (limits.max_read_bytes > 0 && md.len() > limits.max_read_bytes) {
        return FileHits::default();
    }
    let path = at.path.to_string_lossy().into_owned();
    let mut sink = FileSink {
        q,
        path_len: path.len(),
        limits,
        lines: Vec::new(),
        matches: Vec::new(),
        bytes: 0,
        stop_at_line: None,
        binary: false,
    };
    let revision = if md.len() <= WHOLE_MAX {
        let read_at = std::time::SystemTime::now();
        let whole = crate::index::read_capped(&file, md.len(), WHOLE_MAX, buf);
        let hits = match whole {
            Some(bytes) if memchr::memchr(0, bytes).is_none() => searcher
                .search_slice(&q.matcher, bytes, &mut sink)
                .is_ok()
                .then(|| {
                    (!sink.matches.is_empty()).then(|| revision_of(&file, &md, read_at, bytes))
                }),
            _ => None,
        };
        if buf.capacity() > BUF_KEEP {
            buf.clear();
            buf.shrink_to(BUF_KEEP);
        }
        match hits {
            Some(revision) => revision,
            None => return FileHits::default(),
        }
    } else {
        // Too large to hold: streamed, then hashed by a second read that
        // counts only when the file did not change in between.
        let before = stamp(&file);
        if searcher.search_file(&q.matcher, &file, &mut sink).is_err() || sink.binary {
            return FileHits::default();
        }
        if sink.matches.is_empty() {
            None
        } else {
            let hashed = file.try_clone().ok().and_then(|mut again| {
                std::io::Seek::rewind(&mut again).ok()?;
                crate::jail::atomic::revision_of_file(&mut again).ok()
            });
            hashed.filter(|_| before.is_some() && stamp(&file) == before)
        }
    };
    FileHits {
        matches: sink.finish(&path, revision.as_deref()),
        searched: true,
    }
}

/// The revision of `bytes`, the whole content of `file` (described by `md`
/// before they were read from `read_at` on): the one kept from an earlier
/// search when the file's stamp is the same before and after this read,
/// else hashed (and kept for the next search).
fn revision_of(
    file: &std::fs::File,
    md: &std::fs::Metadata,
    read_at: std::time::SystemTime,
    bytes: &[u8],
) -> String {
    use super::revisions::{REVISIONS, Stamp};
    if let Some(kept) = REVISIONS.get(md)
        && stamp(file) == Some(Stamp::of(md))
    {
        return kept;
    }
    let revision = super::super::revision_of(bytes);
    REVISIONS.keep(md, read_at, &revision);
    revision
}

/// Size, modification and change time: what moves when a file changes.
fn stamp(file: &std::fs::File) -> Option<super::revisions::Stamp> {
    file.metadata()
        .ok()
        .map(|m| super::revisions::Stamp::of(&m))
}

/// A line the searcher reported (a match or context), cut to
/// `max_line_bytes`.
struct Line {
    number: u64,
    text: String,
}

/// Collects one file's lines and matches.
struct FileSink<'a> {
    q: &'a ContentQuery,
    path_len: usize,
    limits: &'a Limits,
    /// Every reported line, in file order.
    lines: Vec<Line>,
    /// (index into `lines`, 1-based byte column) of each accepted match.
    matches: Vec<(usize, u32)>,
    /// Lower bound of the matches' budget cost (context not yet counted).
    bytes: usize,
    /// Once this file alone overflows the answer, read on only to this line
    /// (the after-context of the matches already taken), then stop.
    stop_at_line: Option<u64>,
    binary: bool,
}

impl FileSink<'_> {
    fn push_line(&mut self, number: Option<u64>, bytes: &[u8]) -> u64 {
        let number = number.unwrap_or(0);
        self.lines.push(Line {
            number,
            text: cut_line(strip_terminator(bytes), self.q.max_line_bytes),
        });
        number
    }

    fn keep_going(&self, number: u64) -> bool {
        self.stop_at_line.is_none_or(|last| number < last)
    }

    /// Build the matches with their own context and their budget cost.
    fn finish(self, path: &str, revision: Option<&str>) -> Vec<(ContentMatch, usize)> {
        let lines = &self.lines;
        self.matches
            .iter()
            .map(|&(k, column)| {
                let at = lines[k].number;
                let mut before: Vec<String> = (1..=self.q.before)
                    .map_while(|d| {
                        let j = k.checked_sub(d)?;
                        (lines[j].number + d as u64 == at).then(|| lines[j].text.clone())
                    })
                    .collect();
                before.reverse();
                let after: Vec<String> = (1..=self.q.after)
                    .map_while(|d| {
                        let l = lines.get(k + d)?;
                        (l.number == at + d as u64).then(|| l.text.clone())
                    })
                    .collect();
                let text = lines[k].text.clone();
                let cost = path.len()
                    + revision.map_or(0, str::len)
                    + text.len()
                    + before.iter().map(String::len).sum::<usize>()
                    + after.iter().map(String::len).sum::<usize>();
                let m = ContentMatch {
                    path: path.to_string(),
                    line: u32::try_from(at).unwrap_or(u32::MAX),
                    column,
                    text,
                    before: (!before.is_empty()).then_some(before),
                    after: (!after.is_empty()).then_some(after),
                    revision: revision.map(str::to_string),
                };
                (m, cost)
            })
            .collect()
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let number = self.push_line(mat.line_number(), mat.bytes());
        if self.stop_at_line.is_some() {
            return Ok(self.keep_going(number));
        }
        // Matching considers only the first `max_line_bytes` of the line.
        let raw = strip_terminator(mat.bytes());
        let considered = &raw[..raw.len().min(self.q.max_line_bytes)];
        let Ok(Some(found)) = self.q.matcher.find(considered) else {
            return Ok(true);
        };
        let k = self.lines.len() - 1;
        let column = u32::try_from(found.start() + 1).unwrap_or(u32::MAX);
        self.matches.push((k, column));
        self.bytes += self.path_len + self.lines[k].text.len();
        if self.matches.len() > self.limits.max_matches || self.bytes > self.limits.budget {
            // This file alone overflows the answer: finish the context of
            // what was taken, then stop reading.
            let last = number + self.q.after as u64;
            self.stop_at_line = Some(last);
            return Ok(self.keep_going(number));
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        let number = self.push_line(ctx.line_number(), ctx.bytes());
        Ok(self.keep_going(number))
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn strip_terminator(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The first `max` bytes of a line as text, never splitting a character
/// (invalid UTF-8 becomes U+FFFD).
fn cut_line(raw: &[u8], max: usize) -> String {
    let mut end = raw.len().min(max);
    if end < raw.len() {
        let floor = end.saturating_sub(3);
        while end > floor && (raw[end] & 0xC0) == 0x80 {
            end -= 1;
        }
    }
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn cut_line_never_splits_a_character() {
        assert_eq!(cut_line("héllo".as_bytes(), 2), "h");
        assert_eq!(cut_line("héllo".as_bytes(), 3), "hé");
        assert_eq!(cut_line(b"abc", 10), "abc");
        assert_eq!(cut_line(b"a\xffb", 10), "a\u{fffd}b");
    }

    #[test]
    fn terminators_are_stripped() {
        assert_eq!(strip_terminator(b"x\r\n"), b"x");
        assert_eq!(strip_terminator(b"x\n"), b"x");
        assert_eq!(strip_terminator(b"x"), b"x");
    }
}
