//! Accuracy of code understanding, against oracles no one here wrote:
//! Python's own `ast` (definitions) and `tokenize` (occurrences) on the
//! Python standard library installed on the machine, and universal-ctags
//! on real sources of each language found on the machine.
//!
//! The test command runs them on a sample (every `IDE_ORACLE_STEP`-th
//! file, default 7); `IDE_ORACLE_STEP=1` runs the whole corpus (the
//! figures in BENCHMARKS.md). A missing oracle skips with a line on
//! stderr, unless `IDE_CODE_ORACLES=required` (CI), where it fails.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn required() -> bool {
    std::env::var("IDE_CODE_ORACLES").is_ok_and(|v| v == "required")
}

fn step() -> usize {
    std::env::var("IDE_ORACLE_STEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7)
}

fn oracle(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oracles")
        .join(script)
}

/// The Python standard library's folder, as the machine's `python3` says.
fn python_stdlib() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn skip(why: &str) {
    assert!(!required(), "oracle missing: {why}");
    eprintln!("skipped: {why}");
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("oracle line"))
        .collect()
}

/// (name, line) of every function, method and class ide finds in a file.
fn ide_defs(path: &Path) -> BTreeSet<(String, u64)> {
    let text = std::fs::read(path).unwrap();
    let lang = ide::code::lang::by_name("python").unwrap();
    let Ok(o) = ide::code::outline::outline(lang, &text) else {
        return BTreeSet::new();
    };
    o.syms
        .iter()
        .filter(|s| matches!(s.kind, "class" | "function" | "method" | "constructor"))
        .map(|s| (s.name.clone(), u64::from(s.line)))
        .collect()
}

/// `ide call <function> <json>` of the real binary, run in `dir`.
fn ide_call(dir: &Path, function: &str, payload: &Value) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ide"))
        .current_dir(dir)
        .args(["call", function, &payload.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{function} {payload}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Python keywords and soft keywords: tokenize calls them NAME, a parser
/// does not (they are not identifiers). `__future__` too: the grammar
/// reads `from __future__ import` as one statement of its own, whose
/// module name is a keyword of it, not an identifier.
const PY_KEYWORDS: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "match",
    "case",
    "_",
    "type",
    "print",
    "exec",
    "__future__",
];

#[test]
fn python_references_are_the_name_tokens_of_tokenize() {
    let Some(stdlib) = python_stdlib() else {
        return skip("no python3");
    };
    // a sample of files: every (5 × step)-th, at most 40
    let listing = Command::new("python3")
        .arg(oracle("py_defs.py"))
        .arg(&stdlib)
        .arg((step() * 5).to_string())
        .output()
        .unwrap();
    let files: Vec<String> = json_lines(&listing.stdout)
        .iter()
        .map(|f| f["file"].as_str().unwrap().to_string())
        .filter(|f| !f.contains("/test") && !f.contains("lib2to3"))
        .take(40)
        .collect();
    assert!(files.len() >= 10, "too few files: {}", files.len());
    let out = Command::new("python3")
        .arg(oracle("py_names.py"))
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut checked, mut positions) = (0usize, 0usize);
    for f in json_lines(&out.stdout) {
        let file = f["file"].as_str().unwrap();
        let mut counts: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
        for n in f["names"].as_array().unwrap() {
            let text = n[0].as_str().unwrap();
            if PY_KEYWORDS.contains(&text) {
                continue;
            }
            counts
                .entry(text.to_string())
                .or_default()
                .push((n[1].as_u64().unwrap(), n[2].as_u64().unwrap()));
        }
        if counts.is_empty() {
            continue;
        }
        // the most frequent identifier, a middling one and a rare one
        let mut by_freq: Vec<_> = counts.iter().collect();
        by_freq.sort_by_key(|(name, pos)| (std::cmp::Reverse(pos.len()), (*name).clone()));
        let picks = [0, by_freq.len() / 2, by_freq.len() - 1];
        for i in picks {
            let (name, truth) = by_freq[i];
            let got = ide_call(
                Path::new("/"),
                "coder::references",
                &serde_json::json!({
                    "symbol": name,
                    "path": file,
                    "max_results": 1_000_000,
                    "max_answer_bytes": 100_000_000u64,
                }),
            );
            let found: Vec<(u64, u64)> = got["references"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["line"].as_u64().unwrap(), r["column"].as_u64().unwrap()))
                .collect();
            assert_eq!(&found, truth, "{file}: occurrences of {name}");
            checked += 1;
            positions += truth.len();
        }
    }
    eprintln!(
        "python references vs tokenize: {checked} identifiers, {positions} positions, all equal"
    );
}

#[test]
fn python_definitions_match_pythons_own_ast() {
    let Some(stdlib) = python_stdlib() else {
        return skip("no python3");
    };
    let out = Command::new("python3")
        .arg(oracle("py_defs.py"))
        .arg(&stdlib)
        .arg(step().to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut truth_n, mut found_n, mut both) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    let mut extras = Vec::new();
    let files = json_lines(&out.stdout);
    for f in &files {
        let path = Path::new(f["file"].as_str().unwrap());
        let truth: BTreeSet<(String, u64)> = f["defs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d[0].as_str().unwrap().to_string(), d[1].as_u64().unwrap()))
            .collect();
        let found = ide_defs(path);
        truth_n += truth.len();
        found_n += found.len();
        both += truth.intersection(&found).count();
        for m in truth.difference(&found).take(3) {
            misses.push(format!("{}:{} {}", path.display(), m.1, m.0));
        }
        for m in found.difference(&truth).take(3) {
            extras.push(format!("{}:{} {}", path.display(), m.1, m.0));
        }
    }
    let recall = both as f64 / truth_n.max(1) as f64;
    let precision = both as f64 / found_n.max(1) as f64;
    eprintln!(
        "python vs ast: {} files, {truth_n} definitions, recall {:.4}, precision {:.4}",
        files.len(),
        recall,
        precision
    );
    assert!(files.len() > 50, "too few files: {}", files.len());
    assert!(
        recall >= 0.995 && precision >= 0.995,
        "recall {recall:.4} precision {precision:.4}\nmissed: {misses:#?}\nextra: {extras:#?}"
    );
}

// ---------------------------------------------------------------------
// universal-ctags, per language

/// How one language is compared with universal-ctags: the ctags parser
/// and the kinds it is asked for, which of ide's kinds stand for the
/// same definitions, and where the language's sources are.
struct CtagsSpec {
    /// ide's language name.
    lang: &'static str,
    /// ctags's name for the parser (`--language-force`).
    ctags: &'static str,
    /// ctags kind letters compared (`--kinds-<ctags>`).
    kinds: &'static str,
    /// ide kinds compared; `constant` counts at top level only.
    ide_kinds: &'static [&'static str],
    /// ctags kind names (as `--fields=+K` prints them) counted at top
    /// level only (no scope).
    top_only: &'static [&'static str],
    /// The recall and precision asserted: 0.98, or a floor under it where
    /// ARCHITECTURE.md ("Definitions against universal-ctags") says why.
    floor: (f64, f64),
    /// Whether ctags's top level is told by the line's indentation (its
    /// parser reports a function's local constants without a scope).
    top_at_column_1: bool,
    /// File name endings of the corpus.
    exts: &'static [&'static str],
    /// File name endings left out of it.
    not_exts: &'static [&'static str],
}

const CTAGS_SPECS: &[CtagsSpec] = &[
    CtagsSpec {
        lang: "rust",
        floor: (0.98, 0.98),
        ctags: "Rust",
        // function, method, implementation, struct, enum, trait, typedef
        // (ctags's Rust parser reports no `const` items and no unions)
        kinds: "fPcsgit",
        ide_kinds: &[
            "function", "method", "impl", "struct", "enum", "trait", "type",
        ],
        top_only: &[],
        top_at_column_1: false,
        exts: &[".rs"],
        not_exts: &[],
    },
    CtagsSpec {
        lang: "typescript",
        floor: (0.98, 0.98),
        ctags: "TypeScript",
        // class, function, method, generator, interface, enum, alias,
        // namespace, constant
        kinds: "cfmGigaC",
        ide_kinds: &[
            "class",
            "function",
            "method",
            "constructor",
            "interface",
            "enum",
            "type",
            "constant",
        ],
        top_only: &["constant", "function", "generator"],
        top_at_column_1: true,
        exts: &[".ts", ".mts", ".cts"],
        // declaration files: ctags's TypeScript parser does not read
        // `declare module`/`declare namespace` bodies (ARCHITECTURE.md)
        not_exts: &[".d.ts", ".d.mts", ".d.cts"],
    },
    CtagsSpec {
        lang: "javascript",
        // precision: ctags's parser loses its place inside files it does
        // not give up on (ARCHITECTURE.md)
        floor: (0.98, 0.97),
        ctags: "JavaScript",
        // class, function, method, generator, getter, setter, constant
        kinds: "cfmgGSC",
        ide_kinds: &["class", "function", "method", "constructor", "constant"],
        top_only: &["constant"],
        top_at_column_1: true,
        exts: &[".js", ".mjs", ".cjs"],
        not_exts: &[".min.js"],
    },
    CtagsSpec {
        lang: "go",
        floor: (0.98, 0.98),
        ctags: "Go",
        // func (and methods), struct, interface, type, alias, const,
        // interface method
        kinds: "fsitacn",
        ide_kinds: &[
            "function",
            "method",
            "struct",
            "interface",
            "type",
            "constant",
        ],
        top_only: &["const"],
        top_at_column_1: false,
        exts: &[".go"],
        not_exts: &[],
    },
    CtagsSpec {
        lang: "java",
        floor: (0.98, 0.98),
        ctags: "Java",
        // class, interface, enum, annotation, method (and constructor)
        kinds: "cigam",
        ide_kinds: &["class", "interface", "enum", "method", "constructor"],
        top_only: &[],
        top_at_column_1: false,
        exts: &[".java"],
        not_exts: &[],
    },
    CtagsSpec {
        lang: "c",
        // recall: macros tree-sitter cannot read (ARCHITECTURE.md)
        floor: (0.96, 0.98),
        ctags: "C",
        // function, struct, union, enum, typedef
        kinds: "fsugt",
        ide_kinds: &["function", "struct", "union", "enum", "type"],
        top_only: &[],
        top_at_column_1: false,
        exts: &[".c", ".h"],
        not_exts: &[],
    },
    CtagsSpec {
        lang: "cpp",
        // recall: macros tree-sitter cannot read (ARCHITECTURE.md)
        floor: (0.96, 0.98),
        ctags: "C++",
        // function, class, struct, union, enum, typedef, namespace
        kinds: "fcsugtn",
        ide_kinds: &[
            "function",
            "method",
            "constructor",
            "class",
            "struct",
            "union",
            "enum",
            "type",
            "namespace",
        ],
        top_only: &[],
        top_at_column_1: false,
        exts: &[".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".h"],
        not_exts: &[],
    },
];

/// Largest file of a ctags corpus: bigger ones are generated tables or
/// bundles, not sources anyone outlines.
const CTAGS_MAX_FILE: u64 = 256 << 10;
/// Files per language when `IDE_ORACLE_STEP` is not set (a debug build
/// on 2 cores stays under a minute).
const CTAGS_DEFAULT_CAP: usize = 150;

/// Every file under `dir` (symbolic links not followed) whose name ends
/// with one of `exts`, in sorted order.
fn walk(dir: &Path, spec: &CtagsSpec, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        let name = e.file_name().to_string_lossy().into_owned();
        if meta.is_dir() {
            // test data holds deliberately broken sources
            if name != "testdata" && name != ".git" {
                walk(&e.path(), spec, out);
            }
        } else if meta.is_file()
            && spec.exts.iter().any(|x| name.ends_with(x))
            && !spec.not_exts.iter().any(|x| name.ends_with(x))
            && meta.len() <= CTAGS_MAX_FILE
        {
            out.push(e.path());
        }
    }
}

fn home() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
}

/// The folders a language's corpus is gathered from, as they exist here.
fn corpus_roots(lang: &str) -> Vec<PathBuf> {
    let cargo = std::env::var("CARGO_HOME").map_or_else(|_| home().join(".cargo"), PathBuf::from);
    let registry = cargo.join("registry/src");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let node = vec![
        manifest.join("ui/node_modules"),
        manifest.join("tests/clients/node_modules"),
        PathBuf::from("/usr/lib/node_modules"),
        PathBuf::from("/usr/share/nodejs"),
    ];
    let roots = match lang {
        "rust" => vec![registry],
        "typescript" | "javascript" => node,
        "go" => ["/usr/lib", "/usr/share", "/usr/local"]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .filter(|e| e.file_name().to_string_lossy().starts_with("go"))
            .map(|e| e.path().join("src"))
            .collect(),
        "c" | "cpp" => vec![PathBuf::from("/usr/include"), registry],
        _ => vec![],
    };
    // each folder once (/usr/share/go is a link to /usr/share/go-1.19)
    let mut seen = BTreeSet::new();
    roots
        .into_iter()
        .filter_map(|r| r.canonicalize().ok())
        .filter(|r| r.is_dir() && seen.insert(r.clone()))
        .collect()
}

/// The language ide reads a file as (`.h`: C, or C++ when its first
/// 64 KiB use C++ only syntax), by its own rule.
fn detected(path: &Path) -> Option<&'static str> {
    let text = std::fs::read(path).ok()?;
    ide::code::lang::detect(path, Some(&text)).map(|l| l.lang.name)
}

/// Every `step`-th of `files`, thinned evenly to `cap`.
fn sample(files: Vec<PathBuf>, step: usize, cap: Option<usize>) -> Vec<PathBuf> {
    let picked: Vec<PathBuf> = files.into_iter().step_by(step.max(1)).collect();
    match cap {
        Some(cap) if picked.len() > cap => {
            let n = picked.len();
            (0..cap).map(|i| picked[i * n / cap].clone()).collect()
        }
        _ => picked,
    }
}

/// The Java standard library's sources: the sampled `.java` entries of
/// the first JDK's `lib/src.zip`, unpacked under the test's temporary
/// folder (ctags reads files, not archives).
fn java_corpus(step: usize, cap: Option<usize>) -> Result<Vec<PathBuf>, String> {
    let mut zips: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .map_err(|_| "no /usr/lib/jvm".to_string())?
        .flatten()
        .filter_map(|e| e.path().join("lib/src.zip").canonicalize().ok())
        .collect();
    zips.sort();
    zips.dedup();
    let zip = zips.first().ok_or("no JDK src.zip")?;
    let list = Command::new("unzip")
        .arg("-Z1")
        .arg(zip)
        .output()
        .map_err(|e| format!("unzip: {e}"))?;
    let mut entries: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| l.ends_with(".java"))
        .map(str::to_string)
        .collect();
    entries.sort();
    let picked = sample(entries.into_iter().map(PathBuf::from).collect(), step, cap);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ctags-java-src");
    for chunk in picked.chunks(400) {
        let out = Command::new("unzip")
            .args(["-o", "-q"])
            .arg(zip)
            .args(chunk)
            .arg("-d")
            .arg(&dir)
            .output()
            .map_err(|e| format!("unzip: {e}"))?;
        if !out.status.success() {
            return Err(format!("unzip: {}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    Ok(picked
        .iter()
        .map(|p| dir.join(p))
        .filter(|p| p.metadata().is_ok_and(|m| m.len() <= CTAGS_MAX_FILE))
        .collect())
}

/// A definition as compared: (file index, name without blanks, line).
type Def = (usize, String, u64);
/// Definitions, with the kind that reported each (for reading the
/// differences; the kind is not compared).
type Defs = std::collections::BTreeMap<Def, String>;

/// A name as compared: without blanks, and without the `#` of a
/// JavaScript private name (ctags drops it).
fn squeeze(name: &str) -> String {
    name.trim_start_matches('#')
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// Whether a language is JavaScript or TypeScript, whose comparison
/// leaves out what [`ctags_ecma_left_out`] and [`ide_ecma_left_out`] say.
fn is_ecma(spec: &CtagsSpec) -> bool {
    matches!(spec.lang, "javascript" | "typescript")
}

/// The source line of a ctags tag (its `pattern`, `/^…$/`, unescaped).
fn tag_line(v: &Value) -> String {
    let p = v["pattern"].as_str().unwrap_or_default();
    let p = p.strip_prefix("/^").unwrap_or(p);
    let p = p
        .strip_suffix("$/")
        .or_else(|| p.strip_suffix('/'))
        .unwrap_or(p);
    p.replace("\\/", "/").replace("\\\\", "\\")
}

/// A ctags JavaScript/TypeScript `class` that is an object literal:
/// `x = {`, `key: {`, `exports.default = {` on its line.
fn ctags_object_literal(v: &Value) -> bool {
    let name = regex::escape(v["name"].as_str().unwrap_or_default());
    v["kind"] == "class"
        && regex::Regex::new(&format!(r"(^|[^\w$]){name}(\.[\w$]+)*\s*[:=]\s*\{{"))
            .unwrap()
            .is_match(&tag_line(v))
}

/// A top-level `const X = {..}` (`export const` too): ctags's class, and
/// ide's constant, compared as one definition (its keys are not).
fn ctags_top_const(v: &Value) -> bool {
    let name = regex::escape(v["name"].as_str().unwrap_or_default());
    regex::Regex::new(&format!(r"^(export\s+)?const\s+{name}\s*="))
        .unwrap()
        .is_match(&tag_line(v))
}

/// What ctags reports in JavaScript and TypeScript that the comparison
/// leaves out (ARCHITECTURE.md, "Definitions against universal-ctags"):
/// object literals and their keys (`objects`: the full names of the
/// file's object literals), the class it makes of `X.prototype.m = ..`
/// lines, prototype properties that are no functions and prototype
/// members that are used, not defined, the own name of a
/// function expression, and a variable holding what an immediately
/// invoked function returns.
fn ctags_ecma_left_out(v: &Value, objects: &BTreeSet<String>) -> bool {
    let name = v["name"].as_str().unwrap_or_default();
    let kind = v["kind"].as_str().unwrap_or_default();
    let line = tag_line(v);
    if ctags_object_literal(v) && !ctags_top_const(v) {
        return true;
    }
    if let Some(scope) = v["scope"].as_str()
        && objects
            .iter()
            .any(|o| scope == o || scope.starts_with(&format!("{o}.")))
    {
        return true;
    }
    if kind == "class" && line.contains(".prototype") {
        return true;
    }
    // names ctags's lexer makes of keywords (`if (`, `const def: T = {`,
    // `export default def`, `import type X from`)
    const KEYWORDS: &[&str] = &[
        "if", "for", "while", "switch", "return", "const", "let", "var", "default", "export",
        "import", "from", "new", "case", "typeof", "await",
    ];
    if KEYWORDS.contains(&name) {
        return true;
    }
    let esc = regex::escape(name);
    let re = |p: &str| regex::Regex::new(&p.replace("NAME", &esc)).unwrap();
    // a constant or type alias its line does not declare (`gy`, the flags
    // of `const re = /../gy`; `symbol` of `const s: unique symbol = ..`;
    // `X` of `import type X from`)
    let declares = match kind {
        "constant" => re(r"((^\s*|\bconst\s+)NAME\s*[:=,]|,\s*NAME\s*[:=])").is_match(&line),
        "alias" => re(r"\btype\s+NAME\s*(<|=|$)").is_match(&line),
        _ => true,
    };
    if !declares {
        return true;
    }
    // `X.prototype.p = 0;` (a property) and `X.prototype.m.call(..)` (a
    // use), which ctags calls methods
    if let Some(m) = re(r"\.prototype\.NAME\b").find(&line) {
        let rest = line[m.end()..].trim_start();
        let assigned = rest
            .strip_prefix('=')
            .filter(|r| !r.starts_with('='))
            .map(str::trim_start);
        let function = assigned.is_some_and(|r| {
            ["function", "async", "(", "class"]
                .iter()
                .any(|f| r.starts_with(f))
                || re(r"^[\w$]+\s*=>").is_match(r)
        });
        if !function {
            return true;
        }
    }
    if kind == "function" || kind == "method" {
        // `return function f() {..}`, `x = function f() {..}`: the name is
        // bound inside the function only
        if let Some(m) = re(r"(^|[^\w$.])function\s*\*?\s*NAME\s*[(<]").find(&line) {
            let at = m.start() + m.as_str().find("function").unwrap_or(0);
            let before = line[..at].trim_end();
            let before = before.strip_suffix("async").unwrap_or(before).trim_end();
            let before = before.strip_suffix("default").unwrap_or(before).trim_end();
            let before = before.strip_suffix("export").unwrap_or(before).trim_end();
            let before = before.strip_suffix("declare").unwrap_or(before).trim_end();
            // (unless the function is assigned to the same name:
            // `X.prototype.add = function add(..)`)
            if !before.is_empty() && !re(r"(^|[^\w$])NAME\s*[=:]$").is_match(before) {
                return true;
            }
        }
        // `var X = /** @class */ (function () {..}())`: the value is what
        // the function returns (TypeScript's ES5 classes)
        if re(r"\bNAME\s*=\s*(/\*.*?\*/\s*)?\(\s*function\b").is_match(&line) {
            return true;
        }
    }
    false
}

/// What ide reports in JavaScript and TypeScript that the comparison
/// leaves out: object-literal methods (a method whose parent is no class
/// or interface and that names no owner), arrow functions held by a
/// variable inside a function (ctags reports no local variables) or by a
/// `let`/`var` anywhere (a variable to ctags), an
/// overloaded function after its first declaration (ctags reports some
/// overloads and not others: both sides count the first), constants (and
/// TypeScript functions) whose name's line does not start at column 1
/// (the rule ctags's output forces on its side), and class members
/// ctags's parser loses (after a method named `get`/`set`; TypeScript:
/// from a computed member name, after an optional field or one
/// initialised with a call).
fn ide_ecma_left_out(o: &ide::code::outline::Outline, i: usize, text: &[u8]) -> bool {
    let s = &o.syms[i];
    // whether the line holding byte `at` starts with a blank
    let indented = |at: usize| {
        let line_start = text[..at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        text.get(line_start)
            .is_some_and(|b| b.is_ascii_whitespace())
    };
    // the value after the first `=` (not an `=>` of a type annotation)
    let value_of = |t: &str| -> Option<String> {
        t.match_indices('=')
            .find(|(i, _)| !t[i + 1..].starts_with('>'))
            .map(|(i, _)| t[i + 1..].trim_start().to_string())
    };
    let parent_kind = s
        .parent
        .map(|p| o.syms[p as usize].kind)
        .unwrap_or_default();
    if matches!(s.kind, "method" | "constructor")
        && s.owner.is_none()
        && !matches!(parent_kind, "class" | "interface")
    {
        return true;
    }
    // the class s is in
    let mut class = s.parent;
    while let Some(c) = class.filter(|c| o.syms[*c as usize].kind != "class") {
        class = o.syms[c as usize].parent;
    }
    let before_in_class = |pred: &dyn Fn(&ide::code::outline::Sym) -> bool| {
        class.is_some_and(|c| {
            o.syms
                .iter()
                .any(|m| m.parent == Some(c) && m.name_start <= s.name_start && pred(m))
        })
    };
    // ctags's JavaScript parser does not report a method named `get` or
    // `set` (it reads the name as an accessor's keyword), nor anything of
    // a class after it
    let get_set = |m: &ide::code::outline::Sym| {
        m.kind == "method" && matches!(m.name.as_str(), "get" | "set")
    };
    if o.lang.lang.name == "javascript" && (get_set(s) || before_in_class(&|m| get_set(m))) {
        return true;
    }
    if o.lang.lang.name == "typescript" {
        // ctags's TypeScript parser loses the rest of a class after an
        // member with a computed name (`[Symbol.iterator]()`), an optional
        // field (`x?: T`), a definitely assigned one (`x!: T`) or a field
        // initialised with a call
        // (`x = f()`, `x = new Map<K, V>()`, `x = (a) => a`)
        let derails = |f: &ide::code::outline::Sym| {
            let t = String::from_utf8_lossy(&text[f.name_end..f.end]).into_owned();
            t.trim_start().starts_with(['?', '!']) || value_of(&t).is_some_and(|v| v.contains('('))
        };
        if before_in_class(&|f| {
            (f.kind == "field" && f.name_start < s.name_start && derails(f))
                || f.name.starts_with('[')
        }) {
            return true;
        }
        // functions: at column 1 only, as on ctags's side (its TypeScript
        // parser reports some functions declared in a function body, with
        // no scope, and not others)
        if s.kind == "function" && (s.parent.is_some() || indented(s.name_start)) {
            return true;
        }
    }
    let declared = ["", "export "]
        .iter()
        .flat_map(|e| ["let ", "const ", "var "].map(|k| format!("{e}{k}")))
        .collect::<Vec<_>>()
        .iter()
        .any(|k| s.signature.starts_with(k));
    // (a `let`/`var` holding an arrow function is a variable to ctags,
    // which the comparison leaves out, wherever it is)
    let variable = ["let ", "var ", "export let ", "export var "]
        .iter()
        .any(|k| s.signature.starts_with(k));
    if s.kind == "function"
        && declared
        && (variable || matches!(parent_kind, "function" | "method" | "constructor"))
    {
        let rest = String::from_utf8_lossy(&text[s.name_end..s.end.max(s.name_end)]).into_owned();
        if value_of(&rest)
            .is_some_and(|v| !v.starts_with("function") && !v.starts_with("async function"))
        {
            return true;
        }
    }
    // an arrow function assigned to a name or property (`f = () => ..`,
    // `a.b = () => ..`): ctags reports those only for `function`
    // expressions
    let statement = ["function", "async ", "export ", "let ", "const ", "var "]
        .iter()
        .any(|k| s.signature.starts_with(k));
    if s.kind == "function" && !statement {
        let rest = String::from_utf8_lossy(&text[s.name_end..s.end.max(s.name_end)]).into_owned();
        if value_of(&rest)
            .is_some_and(|v| !v.starts_with("function") && !v.starts_with("async function"))
        {
            return true;
        }
    }
    // an overloaded function or method (several of one name in one
    // scope), a getter with its setter: compared once, at the first
    let function_like = |k: &str| matches!(k, "function" | "method" | "constructor");
    if function_like(s.kind)
        && o.syms[..i].iter().any(|e| {
            e.name == s.name && e.parent == s.parent && e.owner == s.owner && e.kind == s.kind
        })
    {
        return true;
    }
    if s.kind == "constant" && indented(s.name_start) {
        return true;
    }
    false
}

/// A minified bundle: a line over 1 000 characters.
fn minified(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|t| t.split(|b| *b == b'\n').any(|l| l.len() > 1000))
}

/// ctags on `files` (JSON on stdout), with only `kinds` if given.
fn run_ctags(spec: &CtagsSpec, files: &[PathBuf], kinds: Option<&str>) -> std::process::Output {
    let mut cmd = Command::new("ctags");
    cmd.arg("--output-format=json")
        .args(["--fields=+nKZ", "--sort=no"])
        .arg(format!("--language-force={}", spec.ctags));
    if let Some(kinds) = kinds {
        // exactly these kinds (`-*` is not understood by ctags 5.9)
        cmd.arg(format!("--kinds-{}={kinds}", spec.ctags));
    }
    let mut child = cmd
        .args(["-f", "-", "-L", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ctags");
    let list: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(list.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// ctags's definitions of the compared kinds in `files`, and the files
/// where ctags warned that it ignored a tag with an empty name (its
/// parser read that file wrong: JavaScript's `for (a;;)`, a `#private;`
/// field declaration).
fn ctags_defs(spec: &CtagsSpec, files: &[PathBuf]) -> (Defs, BTreeSet<usize>) {
    let index: std::collections::HashMap<&Path, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.as_path(), i))
        .collect();
    let out = run_ctags(spec, files, Some(spec.kinds));
    let warned: BTreeSet<usize> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("ctags: Warning: ignoring null tag in "))
        .filter_map(|l| l.rsplit_once("(line:"))
        .filter_map(|(path, _)| index.get(Path::new(path)).copied())
        .collect();
    let tags: Vec<Value> = json_lines(&out.stdout)
        .into_iter()
        .filter(|v| v["_type"] == "tag")
        .collect();
    // per file, the full names of the object literals ctags calls classes
    let mut objects: std::collections::HashMap<&str, BTreeSet<String>> = Default::default();
    if is_ecma(spec) {
        for v in tags.iter().filter(|v| ctags_object_literal(v)) {
            let name = v["name"].as_str().unwrap_or_default();
            let full = match v["scope"].as_str() {
                Some(s) => format!("{s}.{name}"),
                None => name.to_string(),
            };
            objects
                .entry(v["path"].as_str().unwrap_or_default())
                .or_default()
                .insert(full);
        }
    }
    let none = BTreeSet::new();
    let mut defs = Defs::new();
    let mut first_of_name: std::collections::HashMap<(usize, String, String), u64> =
        Default::default();
    for v in &tags {
        let name = v["name"].as_str().unwrap_or_default();
        let kind = v["kind"].as_str().unwrap_or_default();
        // names ctags makes up for anonymous types
        if name.starts_with("__anon") || name.starts_with("AnonymousFunction") {
            continue;
        }
        // Go's top level is the package
        let top = v.get("scope").is_none() || v["scopeKind"] == "package";
        // ctags's JavaScript and TypeScript parsers give a function's
        // local `const` no scope: a top-level statement starts its line
        let indented = v["pattern"]
            .as_str()
            .is_some_and(|p| p.starts_with("/^") && p[2..].starts_with([' ', '\t']));
        if spec.top_only.contains(&kind) && (!top || (spec.top_at_column_1 && indented)) {
            continue;
        }
        let path = v["path"].as_str().unwrap_or_default();
        if is_ecma(spec) && ctags_ecma_left_out(v, objects.get(path).unwrap_or(&none)) {
            continue;
        }
        let Some(&file) = index.get(Path::new(v["path"].as_str().unwrap_or_default())) else {
            continue;
        };
        let line = v["line"].as_u64().unwrap_or(0);
        // JavaScript/TypeScript: an overloaded function or method, a
        // getter with its setter, once, at the first (as on ide's side)
        if is_ecma(spec) && matches!(kind, "function" | "method" | "getter" | "setter") {
            let scope = v["scope"].as_str().unwrap_or_default().to_string();
            let first = first_of_name
                .entry((file, scope, name.to_string()))
                .or_insert(line);
            if *first != line {
                defs.remove(&(file, squeeze(name), (*first).max(line)));
                *first = (*first).min(line);
                defs.insert((file, squeeze(name), *first), kind.to_string());
                continue;
            }
        }
        defs.insert((file, squeeze(name), line), kind.to_string());
    }
    (defs, warned)
}

/// ide's definitions of the compared kinds in `files`, and the files
/// tree-sitter parsed without an error.
fn ide_ctags_defs(spec: &CtagsSpec, files: &[PathBuf]) -> (Defs, BTreeSet<usize>) {
    let lang = ide::code::lang::by_name(spec.lang).unwrap();
    let mut defs = Defs::new();
    let mut clean = BTreeSet::new();
    for (i, f) in files.iter().enumerate() {
        let Ok(text) = std::fs::read(f) else {
            continue;
        };
        let Ok(o) = ide::code::outline::outline(lang, &text) else {
            continue;
        };
        if !o.has_errors {
            clean.insert(i);
        }
        for (j, s) in o.syms.iter().enumerate() {
            if !spec.ide_kinds.contains(&s.kind) || (s.kind == "constant" && s.parent.is_some()) {
                continue;
            }
            if is_ecma(spec) && ide_ecma_left_out(&o, j, &text) {
                continue;
            }
            defs.insert((i, squeeze(&s.name), u64::from(s.line)), s.kind.to_string());
        }
    }
    (defs, clean)
}

/// Definitions in a row, past the last one ctags reports in a file that
/// tree-sitter parses without an error, that say ctags lost its place
/// (a lexer bug that swallows the rest of the file).
const CTAGS_LOST_TAIL: usize = 5;

/// The files where ctags stopped early: tree-sitter parsed them cleanly
/// and ide finds at least [`CTAGS_LOST_TAIL`] definitions after the last
/// line ctags reports (or in a file where ctags reports nothing).
fn ctags_lost(truth: &Defs, found: &Defs, clean: &BTreeSet<usize>) -> BTreeSet<usize> {
    // constants left aside: ctags's JavaScript parser goes on reporting
    // them where it no longer sees classes and functions
    let mut last: std::collections::BTreeMap<usize, u64> = Default::default();
    for ((f, _, line), _) in truth.iter().filter(|(_, k)| !k.starts_with("const")) {
        let l = last.entry(*f).or_default();
        *l = (*l).max(*line);
    }
    let mut tail: std::collections::BTreeMap<usize, usize> = Default::default();
    for ((f, _, line), _) in found.iter().filter(|(_, k)| *k != "constant") {
        if *line > last.get(f).copied().unwrap_or(0) {
            *tail.entry(*f).or_default() += 1;
        }
    }
    tail.into_iter()
        .filter(|(f, n)| *n >= CTAGS_LOST_TAIL && clean.contains(f))
        .map(|(f, _)| f)
        .collect()
}

/// C and C++: ctags names an attribute macro after a typedef's name
/// (`typedef unsigned int T _GNUTLS_GCC_ATTR_DEPRECATED;` is a ctags
/// typedef `_GNUTLS_GCC_ATTR_DEPRECATED`). A ctags typedef whose name
/// the file `#define`s, on a line where ide has a type (or the line
/// after one), is one definition both report: it is left out of both
/// sides.
fn unname_attribute_macros(files: &[PathBuf], mut truth: Defs, mut found: Defs) -> (Defs, Defs) {
    let misnamed: Vec<Def> = truth
        .iter()
        .filter(|(_, k)| *k == "typedef")
        .map(|(d, _)| d.clone())
        .filter(|(f, name, _)| {
            let text = std::fs::read(&files[*f]).unwrap_or_default();
            let re =
                regex::Regex::new(&format!(r"#\s*define\s+{}\b", regex::escape(name))).unwrap();
            re.is_match(&String::from_utf8_lossy(&text))
        })
        .collect();
    for d in misnamed {
        let ide: Vec<Def> = found
            .iter()
            .filter(|((f, _, l), k)| *f == d.0 && *l == d.2 && *k == "type")
            .chain(
                // the macro on the line after the name
                found
                    .iter()
                    .filter(|((f, _, l), k)| *f == d.0 && *l + 1 == d.2 && *k == "type"),
            )
            .map(|(e, _)| e.clone())
            .collect();
        if let Some(one) = ide.first() {
            found.remove(one);
            truth.remove(&d);
        }
    }
    (truth, found)
}

/// Compares one language with ctags; its figures, or why it was skipped.
fn compare_with_ctags(spec: &CtagsSpec) -> Result<(usize, usize, f64, f64), String> {
    let explicit = std::env::var("IDE_ORACLE_STEP").is_ok();
    let cap = std::env::var("IDE_ORACLE_CAP")
        .ok()
        .and_then(|s| s.parse().ok())
        .or((!explicit).then_some(CTAGS_DEFAULT_CAP));
    let files = if spec.lang == "java" {
        java_corpus(step(), cap)?
    } else {
        let roots = corpus_roots(spec.lang);
        if roots.is_empty() {
            return Err(format!("no {} sources on this machine", spec.lang));
        }
        let mut all = Vec::new();
        for r in &roots {
            walk(r, spec, &mut all);
        }
        // a file is counted once however many copies of it there are
        // (node ships its OpenSSL headers once per target: 30 copies)
        let mut seen = std::collections::HashSet::new();
        all.retain(|f| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(f).unwrap_or_default().hash(&mut h);
            seen.insert(h.finish())
        });
        if matches!(spec.lang, "c" | "cpp") {
            // a header is C's or C++'s as ide reads it
            all.retain(|f| !f.to_string_lossy().ends_with(".h") || detected(f) == Some(spec.lang));
        }
        if is_ecma(spec) {
            // bundles no one outlines (as `.min.js`)
            all.retain(|f| !minified(f));
        }
        sample(all, step(), cap)
    };
    if files.is_empty() {
        return Err(format!("no {} sources on this machine", spec.lang));
    }
    let (truth_kinds, warned) = ctags_defs(spec, &files);
    let (found_kinds, clean) = ide_ctags_defs(spec, &files);
    let lost = ctags_lost(&truth_kinds, &found_kinds, &clean);
    let lost_defs = found_kinds.keys().filter(|d| lost.contains(&d.0)).count();
    let warned: BTreeSet<usize> = warned.difference(&lost).copied().collect();
    let warned_defs = found_kinds.keys().filter(|d| warned.contains(&d.0)).count();
    // both kinds of file are left out of both sides
    let lost: BTreeSet<usize> = lost.union(&warned).copied().collect();
    let (truth_kinds, found_kinds) = if matches!(spec.lang, "c" | "cpp") {
        unname_attribute_macros(&files, truth_kinds, found_kinds)
    } else {
        (truth_kinds, found_kinds)
    };
    let truth: BTreeSet<&Def> = truth_kinds
        .keys()
        .filter(|d| !lost.contains(&d.0))
        .collect();
    let found: BTreeSet<&Def> = found_kinds
        .keys()
        .filter(|d| !lost.contains(&d.0))
        .collect();
    let both = truth.intersection(&found).count();
    let recall = both as f64 / truth.len().max(1) as f64;
    let precision = both as f64 / found.len().max(1) as f64;
    eprintln!(
        "{} vs ctags: {} files, {} definitions (ide {}), recall {recall:.4}, precision {precision:.4}; \
         left out: {} files where ctags stopped early ({lost_defs} ide definitions), \
         {} where it warned of a null tag ({warned_defs} ide definitions)",
        spec.lang,
        files.len() - lost.len(),
        truth.len(),
        found.len(),
        lost.len() - warned.len(),
        warned.len(),
    );
    // IDE_ORACLE_DUMP=<folder>: every difference, for reading
    if let Ok(dir) = std::env::var("IDE_ORACLE_DUMP") {
        let mut text = String::new();
        for f in &lost {
            text.push_str(&format!("lost {}\n", files[*f].display()));
        }
        for (tag, set, kinds) in [
            ("missed", truth.difference(&found), &truth_kinds),
            ("extra", found.difference(&truth), &found_kinds),
        ] {
            for d in set {
                let (f, name, line) = d;
                text.push_str(&format!(
                    "{tag} {} {}:{line} {name}\n",
                    kinds[*d],
                    files[*f].display()
                ));
            }
        }
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(format!("{}.diff", spec.lang)), text).unwrap();
    }
    let show = |set: Vec<&&Def>| -> Vec<String> {
        set.into_iter()
            .take(10)
            .map(|(f, n, l)| format!("{}:{l} {n}", files[*f].display()))
            .collect()
    };
    assert!(
        recall >= spec.floor.0 && precision >= spec.floor.1,
        "{}: recall {recall:.4} precision {precision:.4}\nmissed: {:#?}\nextra: {:#?}",
        spec.lang,
        show(truth.difference(&found).collect()),
        show(found.difference(&truth).collect()),
    );
    Ok((files.len(), truth.len(), recall, precision))
}

fn ctags_available() -> bool {
    Command::new("ctags")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Universal")
        })
}

fn check_with_ctags(lang: &str) {
    if !ctags_available() {
        return skip("no universal-ctags");
    }
    let spec = CTAGS_SPECS.iter().find(|s| s.lang == lang).unwrap();
    if let Err(why) = compare_with_ctags(spec) {
        skip(&why);
    }
}

#[test]
fn rust_definitions_match_universal_ctags() {
    check_with_ctags("rust");
}

#[test]
fn typescript_definitions_match_universal_ctags() {
    check_with_ctags("typescript");
}

#[test]
fn javascript_definitions_match_universal_ctags() {
    check_with_ctags("javascript");
}

#[test]
fn go_definitions_match_universal_ctags() {
    check_with_ctags("go");
}

#[test]
fn java_definitions_match_universal_ctags() {
    check_with_ctags("java");
}

#[test]
fn c_definitions_match_universal_ctags() {
    check_with_ctags("c");
}

#[test]
fn cpp_definitions_match_universal_ctags() {
    check_with_ctags("cpp");
}
