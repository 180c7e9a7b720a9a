//! What a pattern needs from a file: a boolean query over trigrams.
//!
//! The analysis follows Russ Cox's trigram index (Google Code Search):
//! every string a node of the pattern can match is tracked exactly while the
//! set stays small, and turned into "one of these strings' trigrams must
//! all be present" when it grows. The pattern is parsed with the very flags
//! the content matcher uses (case folding expands into classes, `^`/`$`
//! match the empty string), so the query is implied by every match: a file
//! without the trigrams cannot match, and nothing is ever concluded from a
//! file that has them (the real matcher decides). [`Query::All`] means the
//! pattern has no usable fragment: every file is a candidate.

use regex_syntax::hir::{Class, Hir, HirKind};
use std::collections::BTreeSet;

/// A condition on a file's trigrams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// Every file passes.
    All,
    /// The file holds this trigram.
    Tri(u32),
    /// The file holds a trigram whose ASCII case fold is this one
    /// ([`super::filter::fold_key`]).
    Fold(u32),
    And(Vec<Query>),
    Or(Vec<Query>),
}

/// Strings tracked exactly up to this many (a case-insensitive literal
/// doubles them per letter).
const MAX_EXACT: usize = 64;
/// A class expands into its characters up to this many.
const MAX_CLASS: usize = 16;

/// The trigram of three bytes.
pub fn trigram(b: &[u8]) -> u32 {
    (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
}

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

    /// Whether a file whose trigrams `has` reports passes.
    pub fn admits(&self, has: &impl Fn(u32) -> bool) -> bool {
        match self {
            Query::All => true,
            Query::Tri(t) => has(*t),
            Query::Fold(t) => has(super::filter::fold_key(*t)),
            Query::And(x) => x.iter().all(|q| q.admits(has)),
            Query::Or(x) => x.iter().any(|q| q.admits(has)),
        }
    }

    /// The query rules nothing out.
    pub fn is_all(&self) -> bool {
        *self == Query::All
    }
}

/// Every string of `set` present: OR over the strings of AND over each
/// one's trigrams. A string shorter than three bytes leaves it open.
///
/// Strings that are ASCII spellings of one another (what case folding
/// makes of a literal) count as one: their folded trigrams, which every
/// spelling holds.
fn of_strings(set: &BTreeSet<Vec<u8>>) -> Query {
    let mut groups: std::collections::BTreeMap<Vec<u8>, usize> = Default::default();
    for s in set {
        if s.len() < 3 {
            return Query::All;
        }
        if s.is_ascii() {
            *groups.entry(s.to_ascii_lowercase()).or_default() += 1;
        }
    }
    let mut alts = Vec::new();
    let mut folded = BTreeSet::new();
    for s in set {
        let lower = s.to_ascii_lowercase();
        let spellings = if s.is_ascii() { groups[&lower] } else { 0 };
        if spellings > 1 {
            if folded.insert(lower.clone()) {
                alts.push(all_of(&lower, Query::Fold));
            }
        } else {
            alts.push(all_of(s, Query::Tri));
        }
    }
    Query::or(alts)
}

/// Every trigram of `s`, as `leaf` makes them.
fn all_of(s: &[u8], leaf: fn(u32) -> Query) -> Query {
    let mut q = Query::All;
    let mut seen = BTreeSet::new();
    for w in s.windows(3) {
        let t = trigram(w);
        if seen.insert(t) {
            q = Query::and(q, leaf(t));
        }
    }
    q
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
                    out.insert(ch.encode_utf8(&mut b).as_bytes().to_vec());
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
                    out.insert(vec![b]);
                }
            }
        }
    }
    Some(out)
}

fn analyze(h: &Hir) -> Info {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::exact(empty()),
        HirKind::Literal(lit) => Info::exact(BTreeSet::from([lit.0.to_vec()])),
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

/// The trigram query of `pattern` as the content matcher reads it: a
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

/// Drop repeated trigrams and collapse trivial nodes.
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

    fn tris(s: &str) -> Vec<u32> {
        s.as_bytes().windows(3).map(trigram).collect()
    }

    fn admits(q: &Query, text: &str) -> bool {
        let have: BTreeSet<u32> = tris(text)
            .into_iter()
            .flat_map(|t| [t, crate::index::filter::fold_key(t)])
            .collect();
        q.admits(&|t| have.contains(&t))
    }

    #[test]
    fn a_literal_needs_all_its_trigrams() {
        let q = of_pattern("hello", false, false).unwrap();
        assert!(admits(&q, "say hello world"));
        assert!(!admits(&q, "say help low"));
        assert!(
            of_pattern("ab", false, false).unwrap().is_all(),
            "too short to filter"
        );
    }

    #[test]
    fn case_folding_admits_every_spelling() {
        let q = of_pattern("Hello", false, true).unwrap();
        for t in ["hello", "HELLO", "hElLo"] {
            assert!(admits(&q, t), "{t}");
        }
        assert!(!admits(&q, "hallo"));
        assert!(
            matches!(&q, Query::And(x) if x.iter().all(|l| matches!(l, Query::Fold(_)))),
            "one folded trigram per position, not every spelling: {q:?}"
        );
        // Unicode folding: K also matches the Kelvin sign
        let k = of_pattern("kkk", false, true).unwrap();
        assert!(admits(&k, "\u{212A}kK"));
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
