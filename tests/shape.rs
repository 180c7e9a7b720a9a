//! The shape of the house, checked on every run: the layer order of the
//! source tree is written down once, here, and the test fails when a file
//! imports one of a higher layer, when files import each other in a circle,
//! when a file belongs to no layer (a new module must be placed), or when
//! long-lived state hides in a process global outside the few places that
//! are per-process by nature.
//!
//! What counts as an import: every `crate::` path in a file's code (`use`
//! lines, nested groups, and paths written inline), outside comments,
//! string literals and `#[cfg(test)]` items; test-only files (`tests.rs`,
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
            // the content index of coder::search
            "index",
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

/// Every `crate::` path a file's code names, expanded from `use` groups.
fn crate_paths(code: &str) -> Vec<String> {
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
            let joined = if path.is_empty() {
                seg.clone()
            } else {
                format!("{path}::{seg}")
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
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::").map(|k| k + from) {
        let word_start = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        if word_start {
            tree(b, at + "crate::".len(), "", &mut out);
        }
        from = at + "crate::".len();
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
    let files = files();
    let modules: BTreeMap<String, String> =
        files.keys().map(|f| (module_of(f), f.clone())).collect();
    let mut g = BTreeMap::new();
    for (rel, text) in &files {
        if rel == "lib.rs" {
            continue;
        }
        let code = without_test_items(&code_only(text));
        let deps: BTreeSet<String> = crate_paths(&code)
            .iter()
            .filter_map(|p| resolve(p, &modules))
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
    let g = graph();
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
        g: &g,
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
    assert!(st.circles.is_empty(), "import circles: {:#?}", st.circles);
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
        "#,
    ));
    let mut got = crate_paths(&code);
    got.sort();
    assert_eq!(
        got,
        vec!["a::b", "a::c", "a::c::d", "a::e", "g::H", "inline::Path"]
    );
}
