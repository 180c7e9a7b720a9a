//! What a pattern needs from a file: a boolean query over n-grams.
//!
//! The analysis follows Russ Cox's trigram index (Google Code Search):
//! every string a node of the pattern can match is tracked exactly while the
//! set stays small, and turned into "one of these strings' n-grams must
//! all be present" when it grows. The pattern is parsed with the very flags
//! the content matcher uses (case folding expands into classes, `^`/`$`
//! match the empty string), so the query is implied by every match: a file
//! without the n-grams cannot match, and nothing is ever concluded from a
//! file that has them (the real matcher decides). [`Query::All`] means the
//! pattern has no usable fragment: every file is a candidate.
//!
//! Strings are tracked folded to ASCII lower case, as the filter's keys
//! are ([`super::filter`]): a case-insensitive literal stays one string
//! however long it is, instead of doubling per letter.

use super::filter::{key3, key4};
use regex_syntax::hir::{Class, Hir, HirKind};
use std::collections::{BTreeSet, HashSet};

/// A condition on a file's n-grams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// Every file passes.
    All,
    /// The file holds an n-gram whose ASCII case fold has this key
    /// ([`key3`], [`key4`]).
    Key(u64),
    And(Vec<Query>),
    Or(Vec<Query>),
}

/// Strings tracked exactly up to this many (a case-insensitive literal
/// doubles them per letter).
const MAX_EXACT: usize = 64;
/// A class expands into its characters up to this many.
const MAX_CLASS: usize = 16;

impl Query {
    fn and(a: Query, b: Query) -> Query {
        match (a, b) {
            (Query::All, q) | (q, Query::All) => q,
            (Query::And(mut x), Query::And(y)) => {
                x.extend(y);
                Query::And(x)
            }
            (Query::And(mut x), q) | (q, Query::And(mut x)) => {
                x.push(q);
                Query::And(x)
            }
            (a, b) => Query::And(vec![a, b]),
        }
    }

    fn or(parts: Vec<Query>) -> Query {
        if parts.contains(&Query::All) || parts.is_empty() {
            return Query::All;
        }
        let mut flat = Vec::new();
        for q in parts {
            match q {
                Query::Or(x) => flat.extend(x),
                q => flat.push(q),
            }
        }
        flat.dedup();
        if flat.len() == 1 {
            flat.pop().unwrap_or(Query::All)
        } else {
            Query::Or(flat)
        }
    }

    /// Whether a file whose keys `has` reports passes.
    pub fn admits(&self, has: &impl Fn(u64) -> bool) -> bool {
        match self {
            Query::All => true,
            Query::Key(k) => has(*k),
            Query::And(x) => x.iter().all(|q| q.admits(has)),
            Query::Or(x) => x.iter().any(|q| q.admits(has)),
        }
    }

    /// The key a file is asked for first (for a replay to load ahead).
    pub fn first_key(&self) -> Option<u64> {
        match self {
            Query::All => None,
            Query::Key(k) => Some(*k),
            Query::And(x) | Query::Or(x) => x.first().and_then(Query::first_key),
        }
    }

    /// The query rules nothing out.
    pub fn is_all(&self) -> bool {
        *self == Query::All
    }
}

/// Every string of `set` present: OR over the strings of AND over each
/// one's n-gram keys ([`keys_of`]). A string shorter than three bytes
/// leaves it open. Keys are ASCII case folds, so strings that are
/// spellings of one another (what case folding makes of a literal) count
/// as one. Keys every string needs are asked once, first:
/// `(a∧b∧c) ∨ (a∧b∧d)` becomes `a∧b∧(c∨d)`, so a file that lacks `a` is
/// ruled out by one lookup instead of one per string.
fn of_strings(set: &BTreeSet<Vec<u8>>) -> Query {
    let mut folded = BTreeSet::new();
    for s in set {
        if s.len() < 3 {
            return Query::All;
        }
        folded.insert(s.to_ascii_lowercase());
    }
    let each: Vec<Vec<u64>> = folded.iter().map(|s| keys_of(s)).collect();
    let all_of = |keys: &mut dyn Iterator<Item = u64>| {
        keys.fold(Query::All, |q, k| Query::and(q, Query::Key(k)))
    };
    let (first, rest) = match each.as_slice() {
        [] => return Query::All,
        // one string (a plain literal): its keys, nothing to factor
        [only] => return all_of(&mut only.iter().copied()),
        [first, rest @ ..] => (first, rest),
    };
    let rest_sets: Vec<HashSet<u64>> = rest.iter().map(|r| r.iter().copied().collect()).collect();
    let common: Vec<u64> = first
        .iter()
        .copied()
        .filter(|k| rest_sets.iter().all(|r| r.contains(k)))
        .collect();
    let common_set: HashSet<u64> = common.iter().copied().collect();
    let branches = each
        .iter()
        .map(|keys| all_of(&mut keys.iter().copied().filter(|k| !common_set.contains(k))))
        .collect();
    let needed = all_of(&mut common.iter().copied());
    Query::and(needed, Query::or(branches))
}

/// Strings with fewer 4-grams than this are asked for their 3-grams too.
const FEW_4GRAMS: usize = 4;

/// The keys a file holding `s` (three bytes or more) holds, distinct, in
/// the string's order: its 4-grams, or for three bytes its 3-gram; a short
/// string (fewer than [`FEW_4GRAMS`] 4-grams) then its 3-grams as well.
///
/// A key a file lacks still reads as present ≈ 40 % of the time (two bits a
/// key), so one or two keys rule out little: `TODO`'s one 4-gram admitted
/// 19 961 of 45 060 files of a cargo registry tree, about 2 000 of which
/// hold it. Every file's filter holds its 3-grams anyway (for 3-byte
/// patterns), and asking `tod` and `odo` too costs a lookup only for the
/// files that passed the 4-gram. A longer string's 4-grams alone leave a
/// file that lacks it ≈ 0.4⁴ ≈ 3 % or less.
fn keys_of(s: &[u8]) -> Vec<u64> {
    if s.len() == 3 {
        return vec![key3(s)];
    }
    let mut seen = HashSet::new();
    let mut keys: Vec<u64> = s.windows(4).map(key4).filter(|&k| seen.insert(k)).collect();
    if keys.len() < FEW_4GRAMS {
        keys.extend(s.windows(3).map(key3).filter(|&k| seen.insert(k)));
    }
    keys
}

/// What is known about a node: the exact strings it matches (when few), and
/// a query every match implies.
struct Info {
    exact: Option<BTreeSet<Vec<u8>>>,
    query: Query,
}

impl Info {
    fn exact(set: BTreeSet<Vec<u8>>) -> Info {
        Info {
            exact: Some(set),
            query: Query::All,
        }
    }

    fn open(query: Query) -> Info {
        Info { exact: None, query }
    }

    /// Everything known as one query.
    fn into_query(self) -> Query {
        match self.exact {
            Some(set) => Query::and(self.query, of_strings(&set)),
            None => self.query,
        }
    }
}

fn empty() -> BTreeSet<Vec<u8>> {
    BTreeSet::from([Vec::new()])
}

fn class_strings(c: &Class) -> Option<BTreeSet<Vec<u8>>> {
    let mut out = BTreeSet::new();
    match c {
        Class::Unicode(u) => {
            let mut n = 0usize;
            for r in u.ranges() {
                n += (r.end() as usize) - (r.start() as usize) + 1;
                if n > MAX_CLASS {
                    return None;
                }
                for ch in r.start()..=r.end() {
                    let mut b = [0u8; 4];
                    out.insert(ch.encode_utf8(&mut b).as_bytes().to_ascii_lowercase());
                }
            }
        }
        Class::Bytes(bc) => {
            let mut n = 0usize;
            for r in bc.ranges() {
                n += usize::from(r.end() - r.start()) + 1;
                if n > MAX_CLASS {
                    return None;
                }
                for b in r.start()..=r.end() {
                    out.insert(vec![b.to_ascii_lowercase()]);
                }
            }
        }
    }
    Some(out)
}

fn analyze(h: &Hir) -> Info {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::exact(empty()),
        HirKind::Literal(lit) => Info::exact(BTreeSet::from([lit.0.to_ascii_lowercase()])),
        HirKind::Class(c) => match class_strings(c) {
            Some(set) if !set.is_empty() => Info::exact(set),
            // a class that matches nothing: no file can match
            Some(_) => Info::exact(BTreeSet::new()),
            None => Info::open(Query::All),
        },
        HirKind::Capture(cap) => analyze(&cap.sub),
        HirKind::Repetition(rep) => {
            if rep.min == 0 {
                return Info::open(Query::All);
            }
            let inner = analyze(&rep.sub);
            if rep.min == 1 && rep.max == Some(1) {
                return inner;
            }
            // at least one copy is there
            Info::open(inner.into_query())
        }
        HirKind::Concat(parts) => {
            let mut query = Query::All;
            let mut exact: Option<BTreeSet<Vec<u8>>> = Some(empty());
            for p in parts {
                let info = analyze(p);
                match (exact.take(), info.exact) {
                    (Some(acc), Some(next))
                        if acc.len().saturating_mul(next.len()) <= MAX_EXACT =>
                    {
                        let mut product = BTreeSet::new();
                        for a in &acc {
                            for b in &next {
                                let mut s = a.clone();
                                s.extend_from_slice(b);
                                product.insert(s);
                            }
                        }
                        exact = Some(product);
                    }
                    (Some(acc), Some(next)) => {
                        // too many: what is known so far becomes a query
                        query = Query::and(query, of_strings(&acc));
                        exact = Some(next);
                    }
                    (Some(acc), None) => {
                        query = Query::and(query, of_strings(&acc));
                        exact = Some(empty());
                    }
                    (None, Some(next)) => exact = Some(next),
                    (None, None) => exact = Some(empty()),
                }
                query = Query::and(query, info.query);
            }
            Info { exact, query }
        }
        HirKind::Alternation(alts) => {
            let infos: Vec<Info> = alts.iter().map(analyze).collect();
            let all_exact = infos.iter().all(|i| i.exact.is_some() && i.query.is_all());
            if all_exact {
                let mut union = BTreeSet::new();
                for i in &infos {
                    union.extend(i.exact.iter().flatten().cloned());
                }
                if union.len() <= MAX_EXACT {
                    return Info::exact(union);
                }
            }
            Info::open(Query::or(infos.into_iter().map(Info::into_query).collect()))
        }
    }
}

/// The n-gram query of `pattern` as the content matcher reads it: a
/// literal unless `regex`, folding case when `ignore_case`, `^`/`$` at line
/// ends. `None` when the pattern does not parse (the matcher refused it
/// already, so this is never reached for a search that runs).
pub fn of_pattern(pattern: &str, regex: bool, ignore_case: bool) -> Option<Query> {
    let source = if regex {
        pattern.to_string()
    } else {
        regex_syntax::escape(pattern)
    };
    let hir = regex_syntax::ParserBuilder::new()
        .case_insensitive(ignore_case)
        .multi_line(true)
        .crlf(true)
        .utf8(false)
        .build()
        .parse(&source)
        .ok()?;
    Some(simplify(analyze(&hir).into_query()))
}

/// Drop repeated keys and collapse trivial nodes.
fn simplify(q: Query) -> Query {
    match q {
        Query::And(x) => {
            let mut parts: Vec<Query> = x
                .into_iter()
                .map(simplify)
                .filter(|q| !q.is_all())
                .collect();
            parts.dedup();
            match parts.len() {
                0 => Query::All,
                1 => parts.pop().unwrap_or(Query::All),
                _ => Query::And(parts),
            }
        }
        Query::Or(x) => Query::or(x.into_iter().map(simplify).collect()),
        q => q,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of `text`, as the filter holds them (exactly: no
    /// false positives).
    fn admits(q: &Query, text: &str) -> bool {
        let b = text.as_bytes();
        let have: BTreeSet<u64> = b
            .windows(3)
            .map(key3)
            .chain(b.windows(4).map(key4))
            .collect();
        q.admits(&|k| have.contains(&k))
    }

    #[test]
    fn a_literal_needs_all_its_ngrams() {
        let q = of_pattern("hello", false, false).unwrap();
        assert!(admits(&q, "say hello world"));
        assert!(!admits(&q, "say help low"));
        // "hell" and "ello" both there, but not "hello": the filter only
        // rules out, the matcher decides
        assert!(admits(&q, "hell ello"));
        assert!(!admits(&q, "hel llo"), "4-grams, not only trigrams");
        assert!(
            of_pattern("ab", false, false).unwrap().is_all(),
            "too short to filter"
        );
        let three = of_pattern("abc", false, false).unwrap();
        assert_eq!(three, Query::Key(key3(b"abc")), "three bytes: the 3-gram");
        assert!(admits(&three, "xabcx"));
        assert!(!admits(&three, "ab c"));
    }

    #[test]
    fn a_short_literal_asks_its_3grams_after_its_4grams() {
        let q = of_pattern("TODO", false, false).unwrap();
        assert_eq!(
            q,
            Query::And(vec![
                Query::Key(key4(b"todo")),
                Query::Key(key3(b"tod")),
                Query::Key(key3(b"odo")),
            ])
        );
        assert_eq!(q.first_key(), Some(key4(b"todo")), "the 4-gram first");
        assert!(admits(&q, "see the ToDo list") && admits(&q, "a todo item"));
        // a longer literal: its 4-grams are enough
        let long = of_pattern("impl Default", false, false).unwrap();
        let Query::And(parts) = &long else {
            panic!("{long:?}")
        };
        assert_eq!(parts.len(), 9, "{long:?}");
    }

    #[test]
    fn case_folding_admits_every_spelling() {
        let q = of_pattern("Hello", false, true).unwrap();
        for t in ["hello", "HELLO", "hElLo"] {
            assert!(admits(&q, t), "{t}");
        }
        assert!(!admits(&q, "hallo"));
        // a case-sensitive query asks for the fold too: every match holds it
        let cs = of_pattern("Hello", false, false).unwrap();
        assert!(admits(&cs, "Hello"));
        assert_eq!(q, cs, "one folded key per position, not every spelling");
        // a long case-insensitive literal stays one string: every 4-gram,
        // across what used to be the exact set's cut
        let long = of_pattern("deserialize_identifier", false, true).unwrap();
        // (Unicode folds `s` to the long s `ſ` too: the keys every spelling
        // needs come first, then one OR over the rest)
        let Query::And(parts) = &long else {
            panic!("{long:?}");
        };
        let (last, common) = parts.split_last().expect("parts");
        assert!(matches!(last, Query::Or(_)), "{long:?}");
        assert!(common.iter().all(|p| matches!(p, Query::Key(_))));
        assert!(common.len() >= 10, "{long:?}");
        assert!(admits(&long, "fn deſerialize_identifier()"));
        assert!(admits(&long, "fn DESERIALIZE_IDENTIFIER()"));
        assert!(!admits(&long, "deserialize identifier"));
        // Unicode folding: K also matches the Kelvin sign
        let k = of_pattern("kkkk", false, true).unwrap();
        assert!(admits(&k, "\u{212A}kKk"));
        assert!(admits(&k, "KKKK"));
    }

    #[test]
    fn keys_every_string_needs_are_asked_once_and_first() {
        let q = of_pattern("abcd(ef|xy)", true, false).unwrap();
        let k = |s: &[u8]| Query::Key(key4(s));
        let k3 = |s: &[u8]| Query::Key(key3(s));
        // six bytes, three 4-grams: their 3-grams are asked too, after them
        assert_eq!(
            q,
            Query::And(vec![
                k(b"abcd"),
                k3(b"abc"),
                k3(b"bcd"),
                Query::Or(vec![
                    Query::And(vec![k(b"bcde"), k(b"cdef"), k3(b"cde"), k3(b"def")]),
                    Query::And(vec![k(b"bcdx"), k(b"cdxy"), k3(b"cdx"), k3(b"dxy")]),
                ]),
            ])
        );
        assert!(admits(&q, "abcdxy") && admits(&q, "abcdef"));
        assert!(!admits(&q, "abcdzz") && !admits(&q, "bcdef"));
        // one string's keys all shared: the others' extra keys are not needed
        let q = of_pattern("abcd(e)?", true, false).unwrap();
        assert!(admits(&q, "abcd"));
    }

    #[test]
    fn regexes_keep_their_fragments() {
        let q = of_pattern(r"fn\s+parse_\w+\(", true, false).unwrap();
        assert!(admits(&q, "pub fn parse_config("));
        assert!(!admits(&q, "pub fn load_config("));
        let alt = of_pattern("(alpha|beta)_x", true, false).unwrap();
        assert!(admits(&alt, "beta_x"));
        assert!(admits(&alt, "alpha_x"));
        assert!(!admits(&alt, "gamma_x"));
        assert!(of_pattern(".*", true, false).unwrap().is_all());
        assert!(of_pattern(r"\w+", true, false).unwrap().is_all());
        let anchored = of_pattern("^use std", true, false).unwrap();
        assert!(admits(&anchored, "use std::io;"));
        assert!(!admits(&anchored, "use core::io;"));
        let class = of_pattern("[bc]at_file", true, false).unwrap();
        assert!(admits(&class, "cat_file"));
        assert!(!admits(&class, "rat_file"));
        let rep = of_pattern("(abc)+d", true, false).unwrap();
        assert!(admits(&rep, "abcabcd"));
        assert!(!admits(&rep, "abd"));
        assert!(of_pattern("(", true, false).is_none());
    }
}
