//! A file's definitions, as tree-sitter and its language's query file see
//! them: parsed off the async runtime by the caller, bounded in size and
//! time, exact for what the query claims.

use super::lang::{self, Compiled};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, Tree};

/// Largest file parsed; a larger one gets a note and no symbols.
pub const MAX_PARSE_BYTES: usize = 4 << 20;
/// Longest one file's parse may take.
pub const MAX_PARSE_TIME: std::time::Duration = std::time::Duration::from_secs(5);
/// Longest signature kept (cut at a character boundary, with `…`).
const MAX_SIGNATURE: usize = 200;

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sym {
    pub name: String,
    pub kind: &'static str,
    /// Index of the enclosing definition in the outline's list.
    pub parent: Option<u32>,
    /// The parent a query names when it is not the enclosing definition
    /// (a Go method's receiver type, `Type::method` in C++).
    pub owner: Option<String>,
    /// 1-based line and 1-based byte column of the name.
    pub line: u32,
    pub column: u32,
    /// 1-based last line of the definition.
    pub end_line: u32,
    /// Byte range of the definition with the nodes around it that belong
    /// to it (decorators, `export`, a `template<>` head).
    pub start: usize,
    pub end: usize,
    /// Where the definition starts with its leading comments and
    /// attributes (≤ `start`).
    pub lead: usize,
    /// Byte range of the name.
    pub name_start: usize,
    pub name_end: usize,
    /// The declaration's first line, trimmed.
    pub signature: String,
    /// Byte where that line's text starts (the definition's own node,
    /// after its decorators).
    pub signature_at: usize,
}

/// What a parse found.
#[derive(Debug)]
pub struct Outline {
    pub lang: &'static Compiled,
    /// In document order; a parent before its children.
    pub syms: Vec<Sym>,
    pub has_errors: bool,
}

/// Why a file has no outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unparsed {
    TooLarge(usize),
    TimedOut,
}

impl Unparsed {
    pub fn note(&self) -> String {
        match self {
            Unparsed::TooLarge(n) => format!(
                "{n} bytes, over the {MAX_PARSE_BYTES} bytes a file is parsed up to: no symbols; \
                 coder::search finds text in it"
            ),
            Unparsed::TimedOut => format!(
                "parsing took longer than {} s: no symbols; coder::search finds text in it",
                MAX_PARSE_TIME.as_secs()
            ),
        }
    }
}

thread_local! {
    /// One parser per thread and language (a parser is not `Sync`; making
    /// one costs more than a small file's parse).
    static PARSERS: RefCell<HashMap<u8, Parser>> = RefCell::new(HashMap::new());
}

/// Parse `text` as `lang`. Blocking: call it off the async runtime.
pub fn parse(lang: &'static Compiled, text: &[u8]) -> Result<Tree, Unparsed> {
    if text.len() > MAX_PARSE_BYTES {
        return Err(Unparsed::TooLarge(text.len()));
    }
    PARSERS.with(|p| {
        let mut parsers = p.borrow_mut();
        let parser = parsers.entry(lang.id).or_insert_with(|| {
            let mut p = Parser::new();
            p.set_language(&lang.language)
                .expect("grammar ABI checked by the language table's test");
            p
        });
        parser.reset();
        let deadline = std::time::Instant::now() + MAX_PARSE_TIME;
        let mut cb = |_: &tree_sitter::ParseState| {
            if std::time::Instant::now() > deadline {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let opts = tree_sitter::ParseOptions::new().progress_callback(&mut cb);
        let len = text.len();
        parser
            .parse_with_options(
                &mut |i, _| if i < len { &text[i..] } else { &[] },
                None,
                Some(opts),
            )
            .ok_or(Unparsed::TimedOut)
    })
}

/// The outline of `text` as `lang`.
pub fn outline(lang: &'static Compiled, text: &[u8]) -> Result<Outline, Unparsed> {
    let tree = parse(lang, text)?;
    Ok(of_tree(lang, &tree, text))
}

/// How a pattern read a definition: (pattern index, definition node, name
/// node, kind, the parent it names).
type Reading<'t> = (usize, Node<'t>, Node<'t>, &'static str, Option<Node<'t>>);

/// The outline of a parsed tree.
pub fn of_tree(lang: &'static Compiled, tree: &Tree, text: &[u8]) -> Outline {
    walk_tree(lang, tree, text, false).0
}

/// The outline of a parsed tree and the distinct identifiers the file
/// uses (sorted), from the same walk of the tree (the symbol index needs
/// both; a walk of a large tree costs about a third of its parse).
pub fn of_tree_and_identifiers(
    lang: &'static Compiled,
    tree: &Tree,
    text: &[u8],
) -> (Outline, Vec<String>) {
    walk_tree(lang, tree, text, true)
}

fn walk_tree(
    lang: &'static Compiled,
    tree: &Tree,
    text: &[u8],
    identifiers: bool,
) -> (Outline, Vec<String>) {
    let root = tree.root_node();
    let mut cursor = tree_sitter::QueryCursor::new();
    cursor.set_match_limit(4096);
    // per (definition node, name node), the first pattern's reading: one
    // node may define several names (`int a, b;`), each once
    let mut found: HashMap<(usize, usize), Reading<'_>> = HashMap::new();
    let mut matches = cursor.matches(&lang.defs, root, text);
    while let Some(m) = matches.next() {
        let mut def = None;
        let mut name = None;
        let mut owner = None;
        for c in m.captures() {
            if c.index == lang.name_capture {
                name = Some(c.node);
            } else if Some(c.index) == lang.parent_capture {
                owner = Some(c.node);
            } else if let Some(kind) = lang.def_kind[c.index as usize] {
                def = Some((c.node, kind));
            }
        }
        let (Some((node, kind)), Some(name)) = (def, name) else {
            continue;
        };
        let e = found.entry((node.id(), name.id())).or_insert((
            m.pattern_index,
            node,
            name,
            kind,
            owner,
        ));
        if m.pattern_index < e.0 {
            *e = (m.pattern_index, node, name, kind, owner);
        }
    }
    let mut defs: Vec<_> = found.into_values().collect();
    defs.sort_by_key(|(_, n, name, ..)| {
        (
            n.start_byte(),
            std::cmp::Reverse(n.end_byte()),
            name.start_byte(),
        )
    });
    let walked = Walked::of(
        lang,
        tree,
        text,
        defs.iter().map(|(_, n, ..)| n.id()).collect(),
        identifiers,
    );
    let mut syms: Vec<Sym> = Vec::with_capacity(defs.len());
    // enclosing definitions: (end byte, index)
    // enclosing definitions: (start, end byte, index)
    let mut stack: Vec<(usize, usize, u32)> = Vec::new();
    for (_, node, name_node, kind, owner) in defs {
        while stack
            .last()
            .is_some_and(|(_, end, _)| *end <= node.start_byte())
        {
            stack.pop();
        }
        // a type alias holds members, not the type it names (C's
        // `typedef struct P {..} P;`): that sits beside it
        let parent = stack
            .iter()
            .rev()
            // a node defining several names is none of their parents
            .filter(|(start, end, _)| (*start, *end) != (node.start_byte(), node.end_byte()))
            .map(|(_, _, i)| *i)
            .find(|i| !(syms[*i as usize].kind == "type" && lang::is_type_kind(kind)));
        let mut kind = kind;
        if kind == "function" && parent.is_some_and(|p| lang::is_type_kind(syms[p as usize].kind)) {
            kind = "method";
        }
        let (start, end) = walked.extent(lang, node);
        let lead = walked.leading(start, text);
        let name_pos = name_node.start_position();
        let sym = Sym {
            name: String::from_utf8_lossy(&text[name_node.byte_range()]).into_owned(),
            kind,
            parent,
            owner: owner.map(|o| String::from_utf8_lossy(&text[o.byte_range()]).into_owned()),
            line: name_pos.row as u32 + 1,
            column: name_pos.column as u32 + 1,
            end_line: node.end_position().row as u32 + 1,
            start,
            end,
            lead,
            name_start: name_node.start_byte(),
            name_end: name_node.end_byte(),
            signature: signature(text, node.start_byte()),
            signature_at: node.start_byte(),
        };
        let i = syms.len() as u32;
        if !lang::is_leaf_kind(kind) {
            stack.push((node.start_byte(), node.end_byte(), i));
        }
        syms.push(sym);
    }
    let mut idents: Vec<String> = walked
        .identifiers
        .iter()
        .filter_map(|b| std::str::from_utf8(b).ok().map(str::to_string))
        .collect();
    idents.sort_unstable();
    idents.dedup();
    (
        Outline {
            lang,
            syms,
            has_errors: root.has_error(),
        },
        idents,
    )
}

/// What one walk of the tree tells about the definitions: their nearest
/// ancestors, and the comments and attributes that may lead them. Found in
/// one pass: tree-sitter finds a node's parent by descending from the
/// root, which over a file of thousands of top-level items made every
/// `parent()` cost thousands of steps.
struct Walked<'t> {
    /// Per definition node: its ancestors, nearest first (a few).
    ancestors: HashMap<usize, Vec<Node<'t>>>,
    /// Leading-kind nodes that start their own line: (end without
    /// trailing whitespace, start), sorted.
    leads: Vec<(usize, usize)>,
    /// The text of every identifier outside excluded nodes (when asked).
    identifiers: Vec<&'t [u8]>,
}

/// Ancestors kept per definition (wrappers nest shallowly).
const ANCESTORS: usize = 4;

impl<'t> Walked<'t> {
    fn of(
        lang: &Compiled,
        tree: &'t Tree,
        text: &'t [u8],
        defs: std::collections::HashSet<usize>,
        want_identifiers: bool,
    ) -> Walked<'t> {
        let mut ancestors = HashMap::with_capacity(defs.len());
        let mut leads = Vec::new();
        let mut identifiers = Vec::new();
        let mut stack: Vec<Node<'t>> = Vec::new();
        let mut c = tree.walk();
        'walk: loop {
            let n = c.node();
            let k = n.kind_id();
            // nothing of a string literal is a definition or an occurrence
            let skip = lang.exclude.contains(&k);
            if want_identifiers && !skip && lang.identifier.contains(&k) {
                identifiers.push(&text[n.byte_range()]);
            }
            if defs.contains(&n.id()) {
                ancestors.insert(
                    n.id(),
                    stack.iter().rev().take(ANCESTORS).copied().collect(),
                );
            }
            if lang.leading.contains(&k) {
                let line_start = text[..n.start_byte()]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1);
                let alone = text[line_start..n.start_byte()]
                    .iter()
                    .all(|b| b.is_ascii_whitespace());
                if alone {
                    let end = text[..n.end_byte()]
                        .iter()
                        .rposition(|b| !b.is_ascii_whitespace())
                        .map_or(n.start_byte(), |i| i + 1);
                    leads.push((end, n.start_byte()));
                }
            }
            if !skip && c.goto_first_child() {
                stack.push(n);
                continue;
            }
            loop {
                if c.goto_next_sibling() {
                    continue 'walk;
                }
                if !c.goto_parent() {
                    break 'walk;
                }
                stack.pop();
            }
        }
        leads.sort_unstable();
        Walked {
            ancestors,
            leads,
            identifiers,
        }
    }

    /// The range of a definition with the wrappers that belong to it.
    fn extent(&self, lang: &Compiled, node: Node<'t>) -> (usize, usize) {
        let mut cur = node;
        for p in self.ancestors.get(&node.id()).into_iter().flatten() {
            let k = p.kind_id();
            let single = lang.wrapper_single.contains(&k) && {
                let mut c = p.walk();
                p.named_children(&mut c)
                    .filter(|n| !lang.leading.contains(&n.kind_id()))
                    .count()
                    == 1
            };
            if lang.wrapper.contains(&k) || single {
                cur = *p;
            } else {
                break;
            }
        }
        (cur.start_byte(), cur.end_byte())
    }

    /// Where a definition starting at `start` starts with the comments and
    /// attributes right before it: each starting its own line, on the
    /// line(s) just above, with no blank line between. Found by position,
    /// not by sibling: a grammar may hang a comment on another parent
    /// (Python puts a comment before a class body's first statement
    /// outside the body).
    fn leading(&self, start: usize, text: &[u8]) -> usize {
        let mut lead = start;
        loop {
            let before = &text[..lead];
            let Some(last) = before.iter().rposition(|b| !b.is_ascii_whitespace()) else {
                return lead;
            };
            if before[last + 1..].iter().filter(|b| **b == b'\n').count() != 1 {
                return lead;
            }
            // the largest leading node ending there
            let i = self.leads.partition_point(|(end, _)| *end < last + 1);
            let found = self.leads[i..]
                .iter()
                .take_while(|(end, _)| *end == last + 1)
                .map(|(_, s)| *s)
                .min();
            match found {
                Some(s) if s < lead => lead = s,
                _ => return lead,
            }
        }
    }
}

/// The first line of `text` from `start`, trimmed, at most 200 bytes.
pub fn signature(text: &[u8], start: usize) -> String {
    let rest = &text[start..];
    let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
    let s = String::from_utf8_lossy(line);
    let s = s.trim();
    if s.len() <= MAX_SIGNATURE {
        return s.to_string();
    }
    let mut cut = MAX_SIGNATURE;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}

impl Outline {
    /// The name path of symbol `i`: its ancestors' names (and the parent a
    /// query named) joined by `/`.
    pub fn name_path(&self, i: usize) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(i);
        while let Some(j) = cur {
            let s = &self.syms[j];
            parts.push(s.name.as_str());
            if let Some(o) = &s.owner {
                parts.push(o.as_str());
            }
            cur = s.parent.map(|p| p as usize);
        }
        parts.reverse();
        parts.join("/")
    }

    /// The symbols `pattern` names, in document order, of the `kinds`
    /// given (empty: every kind): each one's index, name path and overload
    /// number (its place among the symbols of the same name path, every
    /// kind counted, so `foo[1]` names one symbol whatever the filter).
    pub fn matching(
        &self,
        pattern: &super::names::Pattern,
        substring: bool,
        kinds: &[String],
    ) -> Vec<(usize, String, usize)> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::new();
        for i in 0..self.syms.len() {
            let np = self.name_path(i);
            let parts: Vec<&str> = np.split('/').collect();
            if !pattern.matches(&parts, substring) {
                continue;
            }
            let nth = seen.entry(np.clone()).or_insert(0);
            let this = *nth;
            *nth += 1;
            let kind_ok = kinds.is_empty() || kinds.iter().any(|k| k == self.syms[i].kind);
            if kind_ok && pattern.overload.is_none_or(|n| n == this) {
                out.push((i, np, this));
            }
        }
        out
    }

    /// Depth of symbol `i` (0: top level).
    pub fn depth(&self, i: usize) -> usize {
        let mut d = 0;
        let mut cur = self.syms[i].parent;
        while let Some(p) = cur {
            d += 1;
            cur = self.syms[p as usize].parent;
        }
        d
    }
}

#[cfg(test)]
mod tests;
