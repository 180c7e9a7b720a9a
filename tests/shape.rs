//! The shape of the house, checked on every run: the layer order of the
//! source tree is written down once, here, and the test fails when a file
//! imports one of a higher layer, when files import each other in a circle,
//! when a file belongs to no layer (a new module must be placed), or when
//! long-lived state hides in a process global outside the few places that
//! are per-process by nature.
//!
//! What counts as an import: every path in a file's code that starts at
//! `crate::`, `super::` (any number), `self::` or a child module the file
//! declares — `use` lines, nested groups, and paths written inline — outside
//! comments, string literals and `#[cfg(test)]` items; test-only files (`tests.rs`,
//! `testkit.rs`) are not part of the shape. A path names the deepest module
//! file it reaches (`crate::jail::atomic::Staged` is `src/jail/atomic.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, from the bottom up. A file belongs to the layer of the
/// longest module prefix listed; it may import its own layer and those
/// below. Within a layer, the circle check keeps siblings honest.
const LAYERS: &[(&str, &[&str])] = &[
    // Plain values: the one error enum, byte streams, the config schema,
    // the registered schemas' dialect, batch answers' failure at the top.
    (
        "foundation",
        &["error", "stream", "config", "schema", "batch"],
    ),
    // The handle layer: every filesystem operation, atomic replacement,
    // and what a write tells its recorder.
    ("handles", &["jail"]),
    // The one path policy: wire path -> decision -> a jail location.
    ("policy", &["policy"]),
    // The immutable snapshot of config + policy, swapped on reload.
    ("runtime", &["runtime"]),
    // What the core needs from outside (the engine), as traits.
    ("ports", &["ports"]),
    // The change journal: records, blobs, the call's scope.
    ("journal", &["journal"]),
    // The owners of long-lived state: processes and jobs, terminal
    // sessions, the change feed's watchers.
    (
        "machinery",
        &[
            "exec", "pty", "watch",
            // code understanding (languages, outlines, occurrences) and
            // the content index of coder::search
            "code", "index",
            // the language servers ide runs for semantic answers
            "lsp",
            // the functions of those modules sit above, with the others
        ],
    ),
    // One per worker: every owner of long-lived state, and the ports.
    ("services", &["services"]),
    // What a function is: Ctx, the builder, trigger type definitions.
    ("framework", &["function"]),
    // The functions, one file each.
    (
        "functions",
        &[
            "coder",
            "fs",
            "control",
            "turns",
            "workspace",
            "ui",
            "sandbox",
            "exec::foreground",
            "exec::background",
            "exec::status",
            "exec::list",
            "exec::kill",
            "exec::job_finished",
            "exec::sandbox_target",
            "pty::open",
            "pty::write",
            "pty::resize",
            "pty::attach",
            "pty::detach",
            "pty::close",
            "pty::adopt",
            "pty::sessions",
            "pty::start",
            "pty::send",
            "pty::read",
            "pty::screen",
            "pty::stop",
            "pty::waiting",
            "pty::shared",
            "watch::changed",
        ],
    ),
    // The one table of every function.
    ("catalog", &["catalog"]),
    // The ways in: the engine connection (the only code that knows iii)
    // and MCP on stdio (`ide mcp`).
    ("transport", &["bus", "mcp"]),
];

/// Files that may keep process-wide mutable state, and why it is per
/// process rather than per worker.
const PROCESS_STATE: &[(&str, &str)] = &[
    (
        "exec/tree.rs",
        "the subreaper and SIGCHLD reaping are per process: every descendant of the process is tracked once",
    ),
    (
        "exec/process.rs",
        "a probe of what this kernel supports, taken once",
    ),
    (
        "exec/signals.rs",
        "signal dispositions are the process's: the inherited ignored ones are turned into caught ones once",
    ),
    (
        "jail/beside.rs",
        "idle flush helper threads, a thread pool like the blocking pool",
    ),
    (
        "fs/ls.rs",
        "a cache of user and group names of this machine",
    ),
    (
        "coder/search/revisions.rs",
        "the content hashes of this machine's files under an unchanged stamp, a fact of the file like fs/ls.rs's names: a worker only looks up a file it opened through its own policy",
    ),
    (
        "code/lang.rs",
        "each language's grammar and compiled queries, constants of the binary compiled once on first use",
    ),
    (
        "code/outline.rs",
        "one tree-sitter parser per thread and language, a scratch object like a read buffer: memory, not state",
    ),
    (
        "coder/outlines.rs",
        "the outlines of this machine's files under an unchanged stamp or by the revision of their bytes, facts of the bytes kept like the revision cache's hashes (at most 65 536 and 1 024 files)",
    ),
    (
        "coder/references.rs",
        "the occurrence facts of this machine's files under an unchanged stamp, kept like the revision cache's hashes (at most 64 MiB)",
    ),
    (
        "coder/search/scan.rs",
        "read buffers kept between searches (at most 8 of at most 1 MiB), an allocator's free list: memory, not state",
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file in the shape, by its path under `src/`.
fn files() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                let name = p.file_name().unwrap().to_string_lossy();
                if name == "tests.rs" || name == "testkit.rs" || rel == "main.rs" {
                    continue;
                }
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&src(), &src(), &mut out);
    out
}

/// The module path of a file (`jail/mod.rs` -> `jail`, `lib.rs` -> ``).
fn module_of(rel: &str) -> String {
    let p = rel.trim_end_matches(".rs");
    let p = p.strip_suffix("/mod").unwrap_or(p);
    if p == "lib" {
        String::new()
    } else {
        p.replace('/', "::")
    }
}

/// The code of a file with comments, string and char literals blanked
/// (newlines kept), so braces and paths inside them do not count.
fn code_only(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(b[i..j.min(b.len())].iter().map(|&c| blank(c)));
            i = j;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                if b[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = (j + 1).min(b.len());
            out.extend(b[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == b'\'' {
            // a char literal ('x', '\n', '\u{..}'), or a lifetime
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                let end = (j + 1).min(b.len());
                out.extend(b[i..end].iter().map(|&c| blank(c)));
                i = end;
            } else if let Some(len) = s[i + 1..].chars().next().map(char::len_utf8)
                && b.get(i + 1 + len) == Some(&b'\'')
            {
                out.extend(std::iter::repeat_n(b' ', 2 + len));
                i += 2 + len;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// `code` without `#[cfg(test)]` items.
fn without_test_items(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|k| k + from) {
        let b = out.as_bytes();
        let mut j = at + "#[cfg(test)]".len();
        // the item ends at its first `;` outside braces, or its block
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let blanked: String = out[at..j]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..j, &blanked);
        from = j;
    }
    out
}

/// The parent of a module path (`a::b` -> `a`, `a` -> ``).
fn parent(module: &str) -> String {
    module
        .rsplit_once("::")
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

/// The child modules a file declares (`mod x;`, `pub mod x;`,
/// `pub(crate) mod x;`): bare `x::` paths in it name them.
fn declared_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub(super) "))
                .or_else(|| l.strip_prefix("pub "))
                .unwrap_or(l);
            let rest = l.strip_prefix("mod ")?.trim_end();
            let name = rest.strip_suffix(';')?.trim();
            (!name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'))
                .then(|| name.to_string())
        })
        .collect()
}

/// Every module path a file's code names, absolute (from the crate root),
/// expanded from `use` groups: paths from `crate::`, `super::` (any number
/// of them), `self::`, and from the child modules the file declares —
/// in `use` lines and written inline alike. `module` is the file's own
/// module path.
fn module_paths(code: &str, module: &str) -> Vec<String> {
    fn ident(b: &[u8], mut i: usize) -> (String, usize) {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        (String::from_utf8_lossy(&b[start..i]).into_owned(), i)
    }
    fn skip_ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }
    /// Parse `seg::seg::{..}` at `i` under `prefix`; push leaves.
    fn tree(b: &[u8], mut i: usize, prefix: &str, out: &mut Vec<String>) -> usize {
        let mut path = prefix.to_string();
        loop {
            i = skip_ws(b, i);
            if b.get(i) == Some(&b'{') {
                i += 1;
                loop {
                    i = skip_ws(b, i);
                    match b.get(i) {
                        Some(b'}') => return i + 1,
                        Some(b',') => i += 1,
                        None => return i,
                        _ => i = tree(b, i, &path, out),
                    }
                }
            }
            let (seg, j) = ident(b, i);
            if seg.is_empty() {
                out.push(path);
                return i.max(j);
            }
            let joined = match seg.as_str() {
                // `super::super::x`: each one goes up a module
                "super" => parent(&path),
                _ if path.is_empty() => seg.clone(),
                _ => format!("{path}::{seg}"),
            };
            i = skip_ws(b, j);
            if b[i..].starts_with(b"::") {
                path = joined;
                i += 2;
                continue;
            }
            // `self` in a group names the group's own module
            out.push(if seg == "self" { path } else { joined });
            // `as alias`
            let k = skip_ws(b, i);
            if b[k..].starts_with(b"as ") {
                let (_, e) = ident(b, skip_ws(b, k + 3));
                return e;
            }
            return i;
        }
    }
    let b = code.as_bytes();
    let children = declared_modules(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        // a path's first segment: not the tail of `a::b` or of `x.y`
        let first = starts_word && !(i >= 1 && (b[i - 1] == b':' || b[i - 1] == b'.'));
        if !first || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
            i += 1;
            continue;
        }
        let (word, j) = ident(b, i);
        if !b[j..].starts_with(b"::") {
            i = j;
            continue;
        }
        let base = match word.as_str() {
            "crate" => Some(String::new()),
            "self" => Some(module.to_string()),
            "super" => Some(parent(module)),
            w if children.iter().any(|c| c == w) => Some(if module.is_empty() {
                w.to_string()
            } else {
                format!("{module}::{w}")
            }),
            _ => None,
        };
        match base {
            Some(base) => i = tree(b, j + 2, &base, &mut out).max(j + 2),
            None => i = j,
        }
    }
    out
}

/// The file a path reaches: its longest prefix that is a module.
fn resolve<'a>(path: &str, modules: &'a BTreeMap<String, String>) -> Option<&'a String> {
    let segs: Vec<&str> = path.split("::").collect();
    (1..=segs.len())
        .rev()
        .find_map(|n| modules.get(&segs[..n].join("::")))
}

/// The files a path reaches: the module file, and — when that file
/// re-exports the name the path goes on with (`pub use self::jobs::Jobs`)
/// — the file the name comes from, so a path through a facade's re-export
/// is an edge to the file that defines it.
fn reached<'a>(
    path: &str,
    modules: &'a BTreeMap<String, String>,
    reexports: &'a BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<&'a String> {
    let Some(file) = resolve(path, modules) else {
        return Vec::new();
    };
    let module = module_of(file);
    let next = path
        .strip_prefix(module.as_str())
        .map(|rest| rest.trim_start_matches("::"))
        .and_then(|rest| rest.split("::").next())
        .filter(|n| !n.is_empty());
    let mut out = vec![file];
    if let Some(from) = next.and_then(|n| reexports.get(file)?.get(n)) {
        out.push(from);
    }
    out
}

/// file -> (name it re-exports -> the file the name comes from), from its
/// `pub use` items.
fn reexports_of(
    files: &BTreeMap<String, String>,
    modules: &BTreeMap<String, String>,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (rel, text) in files {
        let code = without_test_items(&code_only(text));
        let mut names = BTreeMap::new();
        let mut from = 0;
        while let Some(at) = code[from..].find("pub use ").map(|k| k + from) {
            let end = code[at..].find(';').map_or(code.len(), |k| at + k);
            for leaf in module_paths(&code[at + "pub ".len()..end], &module_of(rel)) {
                let name = leaf.rsplit("::").next().unwrap_or_default().to_string();
                if let Some(f) = resolve(&leaf, modules).filter(|f| *f != rel) {
                    names.insert(name, f.clone());
                }
            }
            from = end;
        }
        if !names.is_empty() {
            out.insert(rel.clone(), names);
        }
    }
    out
}

fn layer_of(module: &str) -> Option<(usize, &'static str)> {
    let mut best: Option<(usize, usize, &'static str)> = None;
    for (n, (name, prefixes)) in LAYERS.iter().enumerate() {
        for p in *prefixes {
            let hit = module == *p || module.starts_with(&format!("{p}::"));
            if hit && best.is_none_or(|(len, _, _)| p.len() > len) {
                best = Some((p.len(), n, name));
            }
        }
    }
    best.map(|(_, n, name)| (n, name))
}

/// file -> the files it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of(&files())
}

/// file -> the files it imports, for a map of files (path under `src/` ->
/// text).
fn graph_of(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<String, String> =
        files.keys().map(|f| (module_of(f), f.clone())).collect();
    let reexports = reexports_of(files, &modules);
    let mut g = BTreeMap::new();
    for (rel, text) in files {
        if rel == "lib.rs" {
            continue;
        }
        let code = without_test_items(&code_only(text));
        let deps: BTreeSet<String> = module_paths(&code, &module_of(rel))
            .iter()
            .flat_map(|p| reached(p, &modules, &reexports))
            .filter(|f| *f != rel && f.as_str() != "lib.rs")
            .cloned()
            .collect();
        g.insert(rel.clone(), deps);
    }
    g
}

#[test]
fn every_file_has_a_layer_and_no_file_imports_a_higher_one() {
    let g = graph();
    let mut unplaced = Vec::new();
    let mut upward = Vec::new();
    for (file, deps) in &g {
        let Some((mine, my_name)) = layer_of(&module_of(file)) else {
            unplaced.push(file.clone());
            continue;
        };
        for d in deps {
            if let Some((theirs, their_name)) = layer_of(&module_of(d))
                && theirs > mine
            {
                upward.push(format!("{file} ({my_name}) imports {d} ({their_name})"));
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "files in no layer (add their module to LAYERS in tests/shape.rs): {unplaced:?}"
    );
    assert!(
        upward.is_empty(),
        "{} imports reach up a layer:\n{}",
        upward.len(),
        upward.join("\n")
    );
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let found = circles(&parts_apart(graph()));
    assert!(found.is_empty(), "import circles: {found:#?}");
}

/// The graph without a module root's edges to its own parts: a `mod.rs`
/// declares its children and is their facade (it re-exports them, and they
/// share its private helpers through `super::`, as Rust's visibility
/// intends), so the parent reaching into its parts is not coupling. Every
/// other edge stays: a part reaching its parent, a sibling reaching a
/// sibling, and any path across modules.
fn parts_apart(mut g: BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    for (file, deps) in g.iter_mut() {
        if let Some(dir) = file.strip_suffix("mod.rs") {
            deps.retain(|d| !d.starts_with(dir));
        }
    }
    g
}

/// A circle through `super::` and `self::` imports and inline paths is a
/// circle too — the kind that ran through exec/jobs.rs: a file reaches its
/// sibling by `super::`, the sibling reaches a module above, which reaches
/// back. The check sees every import form.
#[test]
fn a_circle_through_super_and_self_is_found() {
    let fixture: BTreeMap<String, String> = [
        (
            "lib.rs",
            "pub mod ex;\npub mod function;\npub mod services;",
        ),
        (
            "ex/mod.rs",
            "pub mod jobs;\npub mod finished;\npub use self::jobs::Jobs;",
        ),
        // a sibling by `super::`, in a nested group
        (
            "ex/jobs.rs",
            "use super::{finished::{self, Notify}};\npub struct Jobs;",
        ),
        // a module above by an inline path
        ("ex/finished.rs", "pub struct Notify(crate::function::Ctx);"),
        (
            "function.rs",
            "use crate::services::Services;\npub struct Ctx(Services);",
        ),
        // and back down, through the parent's re-export
        ("services.rs", "pub struct Services(crate::ex::Jobs);"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let g = graph_of(&fixture);
    assert_eq!(
        g["ex/jobs.rs"],
        BTreeSet::from(["ex/finished.rs".to_string()]),
        "{g:#?}"
    );
    let found = circles(&parts_apart(g));
    assert_eq!(found.len(), 1, "{found:#?}");
    for f in ["ex/finished.rs", "ex/jobs.rs", "function.rs", "services.rs"] {
        assert!(found[0].iter().any(|x| x == f), "{f}: {found:#?}");
    }
    // two siblings reaching each other by `super::` are a circle
    let siblings: BTreeMap<String, String> = [
        ("p/mod.rs", "mod read;\nmod screen;"),
        ("p/read.rs", "fn r() { super::screen::look() }"),
        ("p/screen.rs", "use super::read::compile;"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(circles(&parts_apart(graph_of(&siblings))).len(), 1);
    // a parent and its parts alone are not one
    let facade: BTreeMap<String, String> = [
        ("q/mod.rs", "mod a;\npub use a::A;\nfn helper() {}"),
        ("q/a.rs", "pub struct A;\nfn f() { super::helper() }"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let g = graph_of(&facade);
    assert!(g["q/mod.rs"].contains("q/a.rs"), "the edge is seen: {g:#?}");
    assert!(circles(&parts_apart(g)).is_empty());
}

/// The import circles of a graph (strongly connected components of more
/// than one file), each sorted.
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components.
    struct St<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        circles: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(st: &mut St<'a>, v: &'a str) {
        st.index.insert(v, st.next);
        st.low.insert(v, st.next);
        st.next += 1;
        st.stack.push(v);
        st.on.insert(v);
        let g = st.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !st.index.contains_key(w) {
                visit(st, w);
                let lw = st.low[w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if st.on.contains(w) {
                let iw = st.index[w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if st.low[v] == st.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = st.stack.pop() {
                st.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                st.circles.push(comp);
            }
        }
    }
    let mut st = St {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        circles: Vec::new(),
    };
    for v in g.keys() {
        if !st.index.contains_key(v.as_str()) {
            visit(&mut st, v);
        }
    }
    st.circles
        .into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

#[test]
fn long_lived_state_is_not_a_process_global() {
    let mut found = Vec::new();
    for (rel, text) in files() {
        let code = without_test_items(&code_only(&text));
        let global = code.lines().any(|l| {
            let l = l.trim_start();
            (l.starts_with("static ") || l.starts_with("pub static "))
                && [
                    "Mutex", "RwLock", "LazyLock", "OnceLock", "DashMap", "RefCell", "Cell<",
                ]
                .iter()
                .any(|t| l.contains(t))
        }) || code.contains("thread_local!")
            || code.contains("task_local!");
        if global && !PROCESS_STATE.iter().any(|(f, _)| *f == rel) {
            found.push(rel);
        }
    }
    assert!(
        found.is_empty(),
        "process globals outside the per-process allow-list (keep the state in Services, or \
         add the file to PROCESS_STATE with the reason): {found:?}"
    );
}

#[test]
fn the_parser_sees_what_rust_sees() {
    let code = without_test_items(&code_only(
        r#"
        use crate::a::{b, c::{d, self}, e as f};
        // use crate::commented::Out;
        let s = "crate::in_string::No";
        let c = '{';
        fn x<'a>(v: &'a crate::inline::Path) {}
        #[cfg(test)]
        mod tests { use crate::test_only::X; }
        #[cfg(test)]
        use crate::also_test_only::Y;
        pub use crate::g::H;
        use super::sib::{One, two::Two};
        use self::kid::K;
        mod kid;
        let k = kid::make();
        let no = std::kid::NotOurs;
        fn y() -> super::super::top::T { todo!() }
        "#,
    ));
    let mut got = module_paths(&code, "m::n");
    got.sort();
    assert_eq!(
        got,
        vec![
            "a::b",
            "a::c",
            "a::c::d",
            "a::e",
            "g::H",
            "inline::Path",
            "m::n::kid::K",
            "m::n::kid::make",
            "m::sib::One",
            "m::sib::two::Two",
            "top::T",
        ]
    );
}

/// Every top-level module is on the map: named in lib.rs's module map and
/// in ARCHITECTURE.md's layer diagram, so neither goes stale silently.
#[test]
fn every_module_is_on_both_maps() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let arch = std::fs::read_to_string(src().join("../ARCHITECTURE.md")).unwrap();
    let mods: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .filter(|m| *m != "testkit")
        .collect();
    assert!(mods.len() > 10, "{mods:?}");
    let doc: String = lib.lines().filter(|l| l.starts_with("//!")).collect();
    let off_lib: Vec<&&str> = mods
        .iter()
        .filter(|m| !doc.contains(&format!("[`{m}`]")))
        .collect();
    let off_arch: Vec<&&str> = mods
        .iter()
        .filter(|m| !arch.contains(&format!("src/{m}/")) && !arch.contains(&format!("src/{m}.rs")))
        .collect();
    assert!(off_lib.is_empty(), "not in lib.rs's map: {off_lib:?}");
    assert!(
        off_arch.is_empty(),
        "not in ARCHITECTURE.md's layers: {off_arch:?}"
    );
}
