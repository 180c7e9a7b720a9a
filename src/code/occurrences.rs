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

/// Every occurrence of `name` in a parsed file, in order. The outline
/// (of the same tree) tells definitions apart.
pub fn find(
    lang: &Compiled,
    tree: &Tree,
    text: &[u8],
    outline: &Outline,
    name: &str,
) -> Vec<Occurrence> {
    let needle = name.as_bytes();
    if needle.is_empty() {
        return Vec::new();
    }
    let root = tree.root_node();
    let hits: Vec<usize> = memchr::memmem::find_iter(text, needle).collect();
    if hits.is_empty() {
        return Vec::new();
    }
    let regions = Regions::of(lang, tree);
    let mut out = Vec::new();
    for at in hits {
        let end = at + needle.len();
        let Some(node) = root.descendant_for_byte_range(at, end) else {
            continue;
        };
        if node.start_byte() != at
            || node.end_byte() != end
            || !lang.identifier.contains(&node.kind_id())
            || Regions::holds(&regions.exclude, at)
        {
            continue;
        }
        let role = if outline
            .syms
            .iter()
            .any(|s| s.name_start == at && s.name_end == end)
        {
            Role::Definition
        } else if Regions::holds(&regions.import, at) {
            Role::Import
        } else {
            Role::Reference
        };
        let p = node.start_position();
        out.push(Occurrence {
            line: p.row as u32 + 1,
            column: p.column as u32 + 1,
            at,
            role,
        });
    }
    out
}

/// The byte ranges of a file's `@exclude` nodes (outermost) and `@import`
/// nodes, from one walk (asking each occurrence's ancestors costs a
/// descent from the root per `parent()`).
struct Regions {
    exclude: Vec<(usize, usize)>,
    import: Vec<(usize, usize)>,
}

impl Regions {
    fn of(lang: &Compiled, tree: &Tree) -> Regions {
        let (mut exclude, mut import) = (Vec::new(), Vec::new());
        preorder(tree, |n| {
            let k = n.kind_id();
            if lang.exclude.contains(&k) {
                exclude.push((n.start_byte(), n.end_byte()));
                return false;
            }
            if lang.import.contains(&k) {
                import.push((n.start_byte(), n.end_byte()));
                return false;
            }
            true
        });
        Regions { exclude, import }
    }

    /// Whether one of `ranges` (sorted, disjoint) holds byte `at`.
    fn holds(ranges: &[(usize, usize)], at: usize) -> bool {
        let i = ranges.partition_point(|(start, _)| *start <= at);
        i > 0 && at < ranges[i - 1].1
    }
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
