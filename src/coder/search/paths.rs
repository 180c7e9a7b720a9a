//! Path matching: which entries match the query by name (or relative path),
//! and how path results are ordered and cut.

use super::{PathMatch, PathMatchKind, StopReason};
use crate::error::Failure;
use nucleo_matcher::pattern::{AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use std::cmp::Reverse;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How entry paths are matched against the query.
pub(crate) enum PathQuery {
    /// Empty query: every path.
    All { fuzzy: bool },
    /// Literal or regex: against the entry's name, or against its path
    /// relative to the searched folder when the query contains `/`.
    Pattern {
        re: regex::bytes::Regex,
        full_path: bool,
    },
    /// Quick-open ranking against the path relative to the searched folder.
    Fuzzy(Pattern),
}

impl PathQuery {
    pub fn new(
        query: &str,
        regex: bool,
        ignore_case: bool,
        fuzzy: bool,
    ) -> Result<PathQuery, Failure> {
        if query.is_empty() {
            return Ok(PathQuery::All { fuzzy });
        }
        if fuzzy {
            let case = if ignore_case {
                CaseMatching::Ignore
            } else {
                CaseMatching::Smart
            };
            return Ok(PathQuery::Fuzzy(Pattern::new(
                query,
                case,
                Normalization::Smart,
                AtomKind::Fuzzy,
            )));
        }
        let source = if regex {
            query.to_string()
        } else {
            regex::escape(query)
        };
        let re = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .build()
            .map_err(|e| bad_query(query, regex, &e.to_string()))?;
        Ok(PathQuery::Pattern {
            re,
            full_path: query.contains('/'),
        })
    }

    pub fn fuzzy(&self) -> bool {
        matches!(self, PathQuery::Fuzzy(_) | PathQuery::All { fuzzy: true })
    }
}

/// The C210 for a query the matcher refuses.
pub(crate) fn bad_query(query: &str, regex: bool, err: &str) -> Failure {
    if regex {
        // `\r?$` is how one makes a pattern safe for CRLF files elsewhere;
        // here `$` already ends a line before its `\r\n`.
        let crlf = if err.contains("\\r") {
            " A line's terminator (LF or CRLF) is never part of it and `$` matches before \
             either, so drop the `\\r`."
        } else {
            ""
        };
        Failure::bad_input(format!(
            "query {query:?} is not a valid regex: {err}.{crlf} Fix the pattern (Rust regex \
             syntax; coder::search matches within one line, so a pattern cannot require a \
             newline), or pass regex: false to search for the literal text"
        ))
    } else {
        Failure::bad_input(format!(
            "query {query:?} cannot be searched: {err}. coder::search matches within one line: \
             search for a single line of the text (no newline or NUL byte), e.g. its most \
             distinctive line"
        ))
    }
}

/// A path result before ordering and budgeting.
#[derive(Debug)]
pub(crate) struct PathHit {
    pub path: PathBuf,
    pub kind: PathMatchKind,
    /// Fuzzy score (higher is better); 0 otherwise.
    pub score: u32,
    /// Components below the searched folder.
    pub depth: usize,
}

/// One walker thread's matcher state (nucleo's matcher is not shareable).
pub(crate) struct PathScorer<'q> {
    query: &'q PathQuery,
    matcher: Option<Matcher>,
    buf: Vec<char>,
}

impl<'q> PathScorer<'q> {
    pub fn new(query: &'q PathQuery) -> PathScorer<'q> {
        let matcher = matches!(query, PathQuery::Fuzzy(_))
            .then(|| Matcher::new(Config::DEFAULT.match_paths()));
        PathScorer {
            query,
            matcher,
            buf: Vec::new(),
        }
    }

    /// The score of an entry, `None` when it does not match. `rel` is the
    /// entry's path relative to the searched folder.
    pub fn score(&mut self, name: &OsStr, rel: &Path) -> Option<u32> {
        match self.query {
            PathQuery::All { .. } => Some(0),
            PathQuery::Pattern { re, full_path } => {
                let subject = if *full_path { rel.as_os_str() } else { name };
                re.is_match(subject.as_bytes()).then_some(0)
            }
            PathQuery::Fuzzy(pattern) => {
                let matcher = self.matcher.as_mut()?;
                let hay = rel.to_string_lossy();
                pattern.score(Utf32Str::new(&hay, &mut self.buf), matcher)
            }
        }
    }
}

/// Rank the hits (fuzzy), apply `max_matches` and the byte budget. Returns the
/// matches, the budget bytes they used, and why the list was cut (if it was).
pub(crate) fn finish(
    mut hits: Vec<PathHit>,
    query: Option<&PathQuery>,
    max_matches: usize,
    budget: usize,
) -> (Vec<PathMatch>, usize, Option<StopReason>) {
    // Hits arrive in path order from the walk; the fuzzy ranking is a
    // stable sort, so equal ranks keep path order.
    if query.is_some_and(PathQuery::fuzzy) {
        hits.sort_by_key(|h| (Reverse(h.score), h.depth, h.path.as_os_str().len()));
    }
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for hit in hits {
        if out.len() >= max_matches {
            return (out, bytes, Some(StopReason::MaxMatches));
        }
        let path = hit.path.to_string_lossy().into_owned();
        if bytes + path.len() > budget {
            return (out, bytes, Some(StopReason::Budget));
        }
        bytes += path.len();
        out.push(PathMatch {
            path,
            kind: hit.kind,
        });
    }
    (out, bytes, None)
}
