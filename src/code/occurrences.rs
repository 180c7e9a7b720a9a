//! Where a name occurs in a file: the identifier tokens with that exact
//! text, never inside a comment or a string literal (a comment is no
//! token; a string literal's contents are `@exclude`d by the query file),
//! each with its role.

use super::lang::Compiled;
use super::outline::Outline;
use serde::Serialize;
use tree_sitter::{Node, Tree};

/// What an occurrence does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The name of a definition.
    Definition,
    /// Inside an import statement.
    Import,
    Reference,
}

/// One occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    /// 1-based line and 1-based byte column.
    pub line: u32,
    pub column: u32,
    /// Byte offset.
    pub at: usize,
    pub role: Role,
}

/// What a file's occurrences of any name are found from: its identifier
/// tokens (outside excluded nodes) by position, its import statements'
/// ranges, and where its definitions' names start. Kept per file by
/// callers that answer many names (a parse costs a hundred times a search
/// of the bytes).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// (start, length) of every identifier token, sorted.
    idents: Vec<(u32, u32)>,
    /// Import statements' ranges, sorted, disjoint.
    imports: Vec<(u32, u32)>,
    /// Where definitions' names start, sorted.
    defs: Vec<u32>,
}

impl Facts {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.idents.len() * 8 + self.imports.len() * 8 + self.defs.len() * 4 + 64
    }
}

/// The facts of a parsed file (its outline is of the same tree).
pub fn facts(lang: &Compiled, tree: &Tree, outline: &Outline) -> Facts {
    let mut idents = Vec::new();
    let mut imports = Vec::new();
    let mut in_import = 0usize;
    preorder(tree, |n| {
        let k = n.kind_id();
        if lang.exclude.contains(&k) {
            return false;
        }
        if lang.import.contains(&k) && n.end_byte() > in_import {
            imports.push((n.start_byte() as u32, n.end_byte() as u32));
            in_import = n.end_byte();
        }
        if lang.identifier.contains(&k) {
            idents.push((
                n.start_byte() as u32,
                (n.end_byte() - n.start_byte()) as u32,
            ));
        }
        true
    });
    idents.sort_unstable();
    let mut defs: Vec<u32> = outline.syms.iter().map(|s| s.name_start as u32).collect();
    defs.sort_unstable();
    Facts {
        idents,
        imports,
        defs,
    }
}

/// Every occurrence of `name` in a parsed file, in order. The outline
/// (of the same tree) tells definitions apart.
pub fn find(
    lang: &Compiled,
    tree: &Tree,
    text: &[u8],
    outline: &Outline,
    name: &str,
) -> Vec<Occurrence> {
    if name.is_empty() || memchr::memmem::find(text, name.as_bytes()).is_none() {
        return Vec::new();
    }
    find_in(&facts(lang, tree, outline), text, name)
}

/// Every occurrence of `name` in `text`, from its facts.
pub fn find_in(facts: &Facts, text: &[u8], name: &str) -> Vec<Occurrence> {
    let needle = name.as_bytes();
    if needle.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut line_start = 0usize;
    let mut counted = 0usize;
    for at in memchr::memmem::find_iter(text, needle) {
        let i = facts.idents.partition_point(|(s, _)| (*s as usize) < at);
        let Some((s, len)) = facts.idents.get(i) else {
            continue;
        };
        if *s as usize != at || *len as usize != needle.len() {
            continue;
        }
        let role = if facts.defs.binary_search(&(at as u32)).is_ok() {
            Role::Definition
        } else {
            let j = facts.imports.partition_point(|(s, _)| (*s as usize) <= at);
            if j > 0 && at < facts.imports[j - 1].1 as usize {
                Role::Import
            } else {
                Role::Reference
            }
        };
        // lines counted once, forward
        for nl in memchr::memchr_iter(b'\n', &text[counted..at]) {
            line += 1;
            line_start = counted + nl + 1;
        }
        counted = at;
        out.push(Occurrence {
            line,
            column: (at - line_start) as u32 + 1,
            at,
            role,
        });
    }
    out
}

/// Whether a node is inside an `@exclude` node (no occurrence there).
fn excluded(lang: &Compiled, node: Node<'_>) -> bool {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if lang.exclude.contains(&n.kind_id()) {
            return true;
        }
        cur = n.parent();
    }
    false
}

/// The identifier at a byte offset (a position on its first byte or just
/// past its last byte counts), with its byte range.
pub fn identifier_at<'t>(lang: &Compiled, tree: &'t Tree, at: usize) -> Option<Node<'t>> {
    let root = tree.root_node();
    [at, at.saturating_sub(1)].into_iter().find_map(|probe| {
        let n = root.descendant_for_byte_range(probe, probe)?;
        (lang.identifier.contains(&n.kind_id())
            && n.start_byte() <= at
            && at <= n.end_byte()
            && !excluded(lang, n))
        .then_some(n)
    })
}

/// Visit every node of a tree in document order; `visit` answers whether
/// to go below the node.
pub fn preorder<'t>(tree: &'t Tree, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut c = tree.walk();
    'walk: loop {
        if visit(c.node()) && c.goto_first_child() {
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                continue 'walk;
            }
            if !c.goto_parent() {
                break 'walk;
            }
        }
    }
}
