//! The languages ide understands, as data: each row names its file
//! extensions, the interpreters of its shebang lines, its tree-sitter
//! grammar and its query files (`queries/*.scm`). Adding a language is
//! adding a grammar crate, a row and a query file; no code path knows a
//! language by name.
//!
//! A query file says, with captures (see `queries/python.scm`), which
//! nodes are definitions (`@definition.<kind>`, their `@name`, an
//! explicit `@parent`), which nodes around a definition belong to it
//! (`@wrapper`, `@wrapper.single`, `@leading`), which are imports
//! (`@import`), which leaves are identifiers (`@identifier`) and which
//! nodes hold no occurrences (`@exclude`: string literals). The patterns
//! of `@definition.*` form the definitions query; the one-node patterns of
//! the other captures are read as sets of node kinds, which a walk of the
//! tree checks without running a query.

use std::path::Path;
use std::sync::{LazyLock, OnceLock};
use tree_sitter::{Language, Query};

/// One language's row.
pub struct Lang {
    /// The name answers carry (`language`).
    pub name: &'static str,
    /// File name extensions, without the dot, lower case.
    pub extensions: &'static [&'static str],
    /// Interpreters named by a `#!` line (`python3` counts as `python`).
    pub shebangs: &'static [&'static str],
    grammar: fn() -> Language,
    /// The query files, concatenated in this order.
    queries: &'static [&'static str],
}

const ECMA: &str = include_str!("queries/ecma.scm");

/// Every language, in the order `coder::info` lists them.
pub static LANGS: &[Lang] = &[
    Lang {
        name: "python",
        extensions: &["py", "pyi", "pyw"],
        shebangs: &["python", "python2", "python3", "pypy", "pypy3"],
        grammar: || tree_sitter_python::LANGUAGE.into(),
        queries: &[include_str!("queries/python.scm")],
    },
    Lang {
        name: "rust",
        extensions: &["rs"],
        shebangs: &[],
        grammar: || tree_sitter_rust::LANGUAGE.into(),
        queries: &[include_str!("queries/rust.scm")],
    },
    Lang {
        name: "typescript",
        extensions: &["ts", "mts", "cts"],
        shebangs: &["ts-node", "deno"],
        grammar: || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        queries: &[ECMA, include_str!("queries/typescript.scm")],
    },
    Lang {
        name: "tsx",
        extensions: &["tsx"],
        shebangs: &[],
        grammar: || tree_sitter_typescript::LANGUAGE_TSX.into(),
        queries: &[ECMA, include_str!("queries/typescript.scm")],
    },
    Lang {
        name: "javascript",
        extensions: &["js", "mjs", "cjs", "jsx"],
        shebangs: &["node", "nodejs"],
        grammar: || tree_sitter_javascript::LANGUAGE.into(),
        queries: &[ECMA, include_str!("queries/javascript.scm")],
    },
    Lang {
        name: "go",
        extensions: &["go"],
        shebangs: &[],
        grammar: || tree_sitter_go::LANGUAGE.into(),
        queries: &[include_str!("queries/go.scm")],
    },
    Lang {
        name: "java",
        extensions: &["java"],
        shebangs: &[],
        grammar: || tree_sitter_java::LANGUAGE.into(),
        queries: &[include_str!("queries/java.scm")],
    },
    Lang {
        name: "c",
        extensions: &["c", "h"],
        shebangs: &["tcc"],
        grammar: || tree_sitter_c::LANGUAGE.into(),
        queries: &[include_str!("queries/c.scm")],
    },
    Lang {
        name: "cpp",
        extensions: &[
            "cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "h++", "ipp", "inl", "tcc", "tpp",
        ],
        shebangs: &[],
        grammar: || tree_sitter_cpp::LANGUAGE.into(),
        queries: &[
            include_str!("queries/c.scm"),
            include_str!("queries/cpp.scm"),
        ],
    },
];

impl Lang {
    /// Its query files' text, in order.
    pub fn queries_source(&self) -> &'static [&'static str] {
        self.queries
    }
}

/// A language compiled: its grammar, its definitions query and the node
/// kinds its query files name.
pub struct Compiled {
    pub lang: &'static Lang,
    /// Index in [`LANGS`].
    pub id: u8,
    pub language: Language,
    /// The `@definition.*` patterns (with their `@name` and `@parent`).
    pub defs: Query,
    /// Per capture index of `defs`: the kind of a `@definition.<kind>`.
    pub def_kind: Vec<Option<&'static str>>,
    pub name_capture: u32,
    pub parent_capture: Option<u32>,
    pub wrapper: KindSet,
    pub wrapper_single: KindSet,
    pub leading: KindSet,
    pub import: KindSet,
    pub identifier: KindSet,
    pub exclude: KindSet,
}

/// A set of node kinds, as a bit per kind id: checked at every node of a
/// walk, so a lookup is one index, not a hash.
#[derive(Debug, Clone, Default)]
pub struct KindSet(Vec<bool>);

impl KindSet {
    pub fn insert(&mut self, kind: u16) {
        let i = usize::from(kind);
        if self.0.len() <= i {
            self.0.resize(i + 1, false);
        }
        self.0[i] = true;
    }

    pub fn contains(&self, kind: &u16) -> bool {
        self.0.get(usize::from(*kind)).copied().unwrap_or(false)
    }

    pub fn is_empty(&self) -> bool {
        !self.0.contains(&true)
    }
}

/// The kinds a definition may have (`@definition.<kind>`), as answers
/// name them.
pub const KINDS: &[&str] = &[
    "class",
    "struct",
    "union",
    "enum",
    "interface",
    "trait",
    "impl",
    "type",
    "function",
    "method",
    "constructor",
    "prototype",
    "field",
    "enum_member",
    "constant",
    "variable",
    "module",
    "namespace",
    "macro",
];

/// Kinds whose nodes never hold other definitions as children: what
/// their range holds (a C typedef's struct) sits beside them.
pub fn is_leaf_kind(kind: &str) -> bool {
    matches!(
        kind,
        "field" | "enum_member" | "constant" | "variable" | "macro" | "prototype" | "type"
    )
}

/// Kinds that make a function inside them a method.
pub fn is_type_kind(kind: &str) -> bool {
    matches!(
        kind,
        "class" | "struct" | "union" | "enum" | "interface" | "trait" | "impl"
    )
}

/// Each language compiled on first use (once per process: grammars and
/// queries are constants of the binary; compiling a query costs
/// milliseconds, so a call that needs one language compiles one).
static COMPILED: LazyLock<Vec<OnceLock<Compiled>>> =
    LazyLock::new(|| LANGS.iter().map(|_| OnceLock::new()).collect());

/// The language of row `i` of [`LANGS`], compiled.
pub fn get(i: usize) -> &'static Compiled {
    COMPILED[i].get_or_init(|| {
        compile(&LANGS[i], i as u8).unwrap_or_else(|e| panic!("{}: {e}", LANGS[i].name))
    })
}

/// Every language, compiled.
pub fn all() -> Vec<&'static Compiled> {
    (0..LANGS.len()).map(get).collect()
}

/// The compiled language named `name`.
pub fn by_name(name: &str) -> Option<&'static Compiled> {
    LANGS.iter().position(|l| l.name == name).map(get)
}

/// The language of the file at `path`, by its extension, or else by the
/// `#!` line that starts `head` (the file's first bytes, when known).
pub fn detect(path: &Path, head: Option<&[u8]>) -> Option<&'static Compiled> {
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        let ext = ext.to_ascii_lowercase();
        // a file with another extension is not guessed at by its #! line
        let i = LANGS
            .iter()
            .position(|l| l.extensions.contains(&ext.as_str()))?;
        // `.h` is C's and C++'s: a header that reads as C++ is C++
        if ext == "h" && head.is_some_and(reads_as_cpp) {
            return by_name("cpp");
        }
        return Some(get(i));
    }
    let interp = shebang(head?)?;
    LANGS
        .iter()
        .position(|l| l.shebangs.contains(&interp.as_str()))
        .map(get)
}

/// Whether a header's first 64 KiB use C++ only syntax: a namespace, a
/// template, an access specifier, `std::`.
fn reads_as_cpp(head: &[u8]) -> bool {
    let head = &head[..head.len().min(64 << 10)];
    const MARKS: [&[u8]; 7] = [
        b"namespace ",
        b"template<",
        b"template <",
        b"public:",
        b"private:",
        b"protected:",
        b"std::",
    ];
    MARKS
        .iter()
        .any(|m| memchr::memmem::find(head, m).is_some())
}

/// The interpreter a `#!` line names, without its version
/// (`#!/usr/bin/env -S python3.11 -u` → `python3`... → `python`).
fn shebang(head: &[u8]) -> Option<String> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|b| *b == b'\n').unwrap_or(line.len())];
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let mut prog = words.next()?.rsplit('/').next()?;
    if prog == "env" {
        prog = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    }
    // python3.11 -> python3, node18 -> node
    let trimmed = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let known = |p: &str| LANGS.iter().any(|l| l.shebangs.contains(&p));
    [prog, prog.split('.').next().unwrap_or(prog), trimmed]
        .into_iter()
        .find(|p| known(p))
        .map(str::to_string)
}

fn compile(lang: &'static Lang, id: u8) -> Result<Compiled, String> {
    let language = (lang.grammar)();
    let source: String = lang.queries.concat();
    // The definitions query: every pattern that captures a definition.
    let defs_src = patterns(&source)
        .into_iter()
        .filter(|p| p.contains("@definition."))
        .collect::<Vec<_>>()
        .join("\n");
    let defs = Query::new(&language, &defs_src).map_err(|e| format!("{e}"))?;
    let def_kind = defs
        .capture_names()
        .iter()
        .map(|n| {
            n.strip_prefix("definition.").map(|k| {
                *KINDS
                    .iter()
                    .find(|known| **known == k)
                    .unwrap_or_else(|| panic!("{}: unknown kind {k}", lang.name))
            })
        })
        .collect();
    let name_capture = defs
        .capture_index_for_name("name")
        .ok_or("no @name capture")?;
    let parent_capture = defs.capture_index_for_name("parent");
    // The other captures: one node kind per pattern.
    let mut sets: [KindSet; 6] = Default::default();
    let names = [
        "@wrapper.single",
        "@wrapper",
        "@leading",
        "@import",
        "@identifier",
        "@exclude",
    ];
    for p in patterns(&source) {
        if p.contains("@definition.") {
            continue;
        }
        let p = p.trim();
        let Some((node, capture)) = p.split_once(')') else {
            return Err(format!("not a one-node pattern: {p}"));
        };
        let kind = node.trim().trim_start_matches('(').trim();
        let capture = capture.trim();
        let slot = names
            .iter()
            .position(|n| *n == capture)
            .ok_or_else(|| format!("unknown capture in {p}"))?;
        let kid = language.id_for_node_kind(kind, true);
        if kid == 0 {
            return Err(format!("no node kind {kind:?} in the grammar"));
        }
        sets[slot].insert(kid);
        // a kind may have aliases with other ids: take them all
        for other in 0..language.node_kind_count() as u16 {
            if other != kid
                && language.node_kind_is_named(other)
                && language.node_kind_for_id(other) == Some(kind)
            {
                sets[slot].insert(other);
            }
        }
    }
    let [
        wrapper_single,
        wrapper,
        leading,
        import,
        identifier,
        exclude,
    ] = sets;
    // validate the whole file too: a typo in a one-node pattern is a
    // grammar error, not a silent empty set
    Query::new(&language, &source).map_err(|e| format!("{e}"))?;
    Ok(Compiled {
        lang,
        id,
        language,
        defs,
        def_kind,
        name_capture,
        parent_capture,
        wrapper,
        wrapper_single,
        leading,
        import,
        identifier,
        exclude,
    })
}

/// The top-level patterns of a query file (comments dropped), each as its
/// text: a pattern ends where its parentheses balance and its captures
/// and predicates end.
fn patterns(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    for line in source.lines() {
        let code = strip_comment(line);
        if code.trim().is_empty() {
            continue;
        }
        // a new pattern starts at depth 0 with an opening bracket
        if depth == 0 && !cur.trim().is_empty() && code.trim_start().starts_with(['(', '[']) {
            out.push(std::mem::take(&mut cur));
        }
        let mut in_str = false;
        for ch in code.chars() {
            match ch {
                '"' => in_str = !in_str,
                '(' | '[' if !in_str => depth += 1,
                ')' | ']' if !in_str => depth -= 1,
                _ => {}
            }
        }
        cur.push_str(code);
        cur.push('\n');
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    for (i, ch) in line.char_indices() {
        match ch {
            '"' => in_str = !in_str,
            ';' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.lang.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_compiles_and_names_identifiers() {
        for c in all() {
            assert!(!c.identifier.is_empty(), "{}", c.lang.name);
            assert!(c.defs.pattern_count() > 0, "{}", c.lang.name);
        }
        assert_eq!(all().len(), LANGS.len());
    }

    #[test]
    fn detection_by_extension_and_shebang() {
        let name = |p: &str, head: Option<&[u8]>| detect(Path::new(p), head).map(|c| c.lang.name);
        assert_eq!(name("a/b.py", None), Some("python"));
        assert_eq!(name("a/B.TSX", None), Some("tsx"));
        assert_eq!(name("x.hpp", None), Some("cpp"));
        assert_eq!(name("x.h", Some(b"int f(void);\n")), Some("c"));
        assert_eq!(
            name(
                "x.h",
                Some(b"namespace a { class B { public: int f(); }; }\n")
            ),
            Some("cpp")
        );
        assert_eq!(name("x.md", Some(b"#!/usr/bin/python3\n")), None);
        assert_eq!(
            name("tool", Some(b"#!/usr/bin/env python3.11\nx")),
            Some("python")
        );
        assert_eq!(
            name("tool", Some(b"#!/usr/bin/env -S node --x\n")),
            Some("javascript")
        );
        assert_eq!(name("tool", Some(b"#!/bin/sh\n")), None);
        assert_eq!(name("tool", None), None);
    }
}
