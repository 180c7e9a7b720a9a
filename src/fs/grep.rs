//! `shell::fs::grep`: regex search over file contents, line by line.
//!
//! Built on ripgrep's own crates: `grep-regex` compiles the Rust regex with
//! `\n` as the line terminator (a match never spans lines), `grep-searcher`
//! streams each file in bounded memory, and the [`super::tree`] walk runs
//! in parallel. What is searched: regular files under `path` (or `path`
//! itself), never through a symlink, never a protected entry; a file with a
//! NUL byte anywhere is binary and contributes no matches at all.
//!
//! Limits: a matching line longer than `max_line_bytes` is returned cut at
//! a character boundary to at most that many bytes, and sets `truncated`; after `max_matches` matches the walk stops and sets
//! `truncated`. Matches are sorted by path then line; when the cap cuts the
//! result short, which matches were found first depends on the parallel
//! walk. Paths are reported as the caller spelt `path` joined with the
//! file's path below it.

use super::tree::{Filter, Tree};
use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::sandbox::Target;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepRequest {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// Rust regex (RE2-like) matched against each line.
    pub pattern: String,
    /// Descend into subdirectories (default true).
    #[serde(default = "yes")]
    pub recursive: bool,
    /// Match pattern case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
    /// Glob filters restricting which file paths are searched, matched relative to `path` (e.g. `path: "py"` with `calcpkg/**/*.py`); when they match no file, `note` says so.
    #[serde(default)]
    pub include_glob: Vec<String>,
    /// Glob filters excluding file paths from the search, matched relative to `path`; an excluded directory is not descended into.
    #[serde(default)]
    pub exclude_glob: Vec<String>,
    /// Stop collecting matches after this many results (default 10 000).
    #[serde(default = "default_max_matches")]
    pub max_matches: u64,
    /// Skip lines longer than this many bytes (default 4 096).
    #[serde(default = "default_max_line_bytes")]
    pub max_line_bytes: u64,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

fn yes() -> bool {
    true
}
fn default_max_matches() -> u64 {
    10_000
}
fn default_max_line_bytes() -> u64 {
    4096
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct FsMatch {
    pub path: String,
    pub line: u64,
    pub content: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct GrepResponse {
    /// All collected match locations up to `max_matches`.
    pub matches: Vec<FsMatch>,
    /// True when the result was capped by `max_matches` or `max_line_bytes`.
    pub truncated: bool,
    /// Present when `include_glob` matched no file: names the folder the globs were matched against (`path`) and how a file there is spelt for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::grep",
        "Takes `pattern` and `path` (a file or a directory searched recursively). Search file contents for a pattern (Rust regex, RE2-like); `include_glob`/`exclude_glob` \
         filter paths. Returns { matches, truncated }. Errors return { code, message }; common: \
         S217 bad regex, S215 jail escape. coder::search adds context lines and noise filtering.",
        Flags::NONE,
        grep,
    )
}

/// Compile a line regex; S210 for an empty one, S217 for a bad one.
pub fn line_matcher(pattern: &str, ignore_case: bool) -> Result<grep_regex::RegexMatcher, Failure> {
    if pattern.is_empty() {
        return Err(Failure::bad_input(
            "pattern is empty; pass a Rust regex such as \"fn \\\\w+\"",
        ));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        // `^` and `$` anchor at every line's start and end (the searcher
        // hands the matcher whole buffers), and `$` matches before a CRLF
        // line end too: a line's terminator is never part of the line.
        .multi_line(true)
        .crlf(true)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| bad_regex(pattern, &e.to_string()))
}

/// The S217 failure for a pattern that does not compile.
pub fn bad_regex(pattern: &str, why: &str) -> Failure {
    Failure::new(
        Class::BadRegex,
        format!(
            "invalid regex {pattern:?}: {why}. Patterns use Rust regex syntax (RE2-like: no \
             look-around or backreferences); escape metacharacters such as ( [ . * with a \
             backslash to match them literally"
        ),
    )
}

pub async fn grep(ctx: Ctx, req: GrepRequest) -> Result<GrepResponse, Failure> {
    let matcher = line_matcher(&req.pattern, req.ignore_case)?;
    let filter = Filter::new(&req.include_glob, &req.exclude_glob)?;
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        return grep_sandbox(&ctx, id, &req).await;
    }
    let resolved =
        ctx.runtime
            .policy
            .resolve_existing(&req.path, Surface::Shell, Tail::Follow, None)?;
    let tree = Tree {
        root: resolved,
        recursive: req.recursive,
        filter,
        runtime: ctx.runtime.clone(),
    };
    let raw = req.path.clone();
    // Server-side ceilings keep one answer's memory bounded whatever the
    // caller asks; hitting them sets `truncated` like the caller's own caps.
    let max_matches = req.max_matches.min(MAX_MATCHES_CEILING);
    let max_line = req.max_line_bytes.min(MAX_LINE_CEILING);
    let max_file = ctx.runtime.config.fs.max_read_bytes;
    let index = ctx.services.index.clone();
    let ngrams = crate::index::query::of_pattern(&req.pattern, true, req.ignore_case)
        .filter(|q| !q.is_all());
    super::blocking(move || {
        // an index build pauses while this search runs
        let _searching = index.searching();
        // The content index rules out files the pattern cannot match (it
        // never adds any: the walk below is the disk's).
        let lease = match &ngrams {
            Some(_) if tree.recursive => index.lease(&tree.runtime, &tree.root),
            _ => None,
        };
        let skip = |abs: &std::path::Path| match (&lease, &ngrams) {
            (Some((l, _)), Some(q)) => l.verdict(abs, q, max_file) != crate::index::Verdict::Read,
            _ => false,
        };
        Ok(search(
            &tree,
            &raw,
            matcher,
            Limits {
                max_matches,
                max_line,
                max_file,
            },
            &skip,
        ))
    })
    .await
}

struct Shared {
    found: Mutex<Vec<FsMatch>>,
    truncated: AtomicBool,
    max_matches: usize,
}

impl Shared {
    /// Add one file's matches; false once the cap is passed.
    fn add(&self, mut file: Vec<FsMatch>) -> bool {
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        let room = self.max_matches.saturating_sub(found.len());
        if file.len() > room {
            file.truncate(room);
            found.append(&mut file);
            self.truncated.store(true, Ordering::Relaxed);
            return false;
        }
        found.append(&mut file);
        true
    }

    fn full(&self) -> bool {
        self.truncated.load(Ordering::Relaxed)
    }
}

/// Collects one file's matches; dropped whole if the file turns out binary.
struct FileSink<'a> {
    display: String,
    max_line: u64,
    /// Stop once this many are held (one past the room left).
    limit: usize,
    matches: Vec<FsMatch>,
    binary: bool,
    long_line: &'a AtomicBool,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _s: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let mut line = mat.bytes();
        if let Some(stripped) = line.strip_suffix(b"\n") {
            line = stripped;
        }
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        if line.len() as u64 > self.max_line {
            // as the original did: the line, cut at a character boundary at
            // most `max_line_bytes` long, and the answer says `truncated`
            self.long_line.store(true, Ordering::Relaxed);
            let mut cut = usize::try_from(self.max_line).unwrap_or(usize::MAX);
            while cut > 0 && (line[cut] & 0xC0) == 0x80 {
                cut -= 1;
            }
            line = &line[..cut];
        }
        self.matches.push(FsMatch {
            path: self.display.clone(),
            line: mat.line_number().unwrap_or(0),
            content: String::from_utf8_lossy(line).into_owned(),
        });
        Ok(self.matches.len() < self.limit)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Most matches one answer holds, whatever `max_matches` says.
const MAX_MATCHES_CEILING: u64 = 100_000;
/// Longest line one match may carry, whatever `max_line_bytes` says.
const MAX_LINE_CEILING: u64 = 1 << 20;
/// Most memory the searcher may buffer for one file (a file without
/// newlines is one line): past it the file is skipped.
const HEAP_LIMIT: usize = 64 << 20;

/// One grep's caps.
struct Limits {
    max_matches: u64,
    max_line: u64,
    max_file: u64,
}

fn search(
    tree: &Tree,
    raw: &str,
    matcher: grep_regex::RegexMatcher,
    limits: Limits,
    skip: &(dyn Fn(&std::path::Path) -> bool + Sync),
) -> GrepResponse {
    let Limits {
        max_matches,
        max_line,
        max_file,
    } = limits;
    let shared = Shared {
        found: Mutex::new(Vec::new()),
        truncated: AtomicBool::new(false),
        max_matches: usize::try_from(max_matches).unwrap_or(usize::MAX),
    };
    let long_line = AtomicBool::new(false);
    tree.for_each_parallel(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .heap_limit(Some(HEAP_LIMIT))
            .build();
        let (shared, long_line) = (&shared, &long_line);
        move |found: super::tree::Found| {
            if shared.full() {
                return false;
            }
            // proven to hold no match (or skipped unread by the scan anyway)
            if skip(&found.abs) {
                return true;
            }
            // Regular files only (a FIFO would block the walk), and none over
            // fs.max_read_bytes (0 = unlimited), like coder::search.
            let file = match found.at.loc().open_read() {
                Ok(f) => f,
                Err(_) => return true,
            };
            match file.metadata() {
                Ok(md) if md.is_file() && (max_file == 0 || md.len() <= max_file) => {}
                _ => return true,
            }
            let room = {
                let held = shared.found.lock().unwrap_or_else(|p| p.into_inner()).len();
                shared.max_matches.saturating_sub(held)
            };
            let mut sink = FileSink {
                display: super::display_path(raw, &found.rel),
                max_line,
                limit: room.saturating_add(1),
                matches: Vec::new(),
                binary: false,
                long_line,
            };
            // Unreadable files (gone, permission) are skipped like binary ones.
            if searcher.search_file(&matcher, &file, &mut sink).is_err() || sink.binary {
                return true;
            }
            sink.matches.is_empty() || shared.add(sink.matches)
        }
    });
    let mut matches = shared.found.into_inner().unwrap_or_else(|p| p.into_inner());
    matches.sort();
    GrepResponse {
        matches,
        truncated: shared.truncated.into_inner() || long_line.into_inner(),
        note: tree.filter.include_note(raw, &tree.root.path),
    }
}

async fn grep_sandbox(ctx: &Ctx, id: &str, req: &GrepRequest) -> Result<GrepResponse, Failure> {
    // The sandbox names match fields `line_no`/`line`; accept either shape.
    #[derive(Deserialize)]
    struct RemoteMatch {
        path: String,
        line: u64,
        #[serde(default)]
        content: String,
    }
    #[derive(Deserialize)]
    struct Remote {
        matches: Vec<serde_json::Value>,
        #[serde(default)]
        truncated: bool,
    }
    let remote: Remote = super::forward(
        ctx,
        "sandbox::fs::grep",
        serde_json::json!({
            "sandbox_id": id,
            "path": req.path,
            "pattern": req.pattern,
            "recursive": req.recursive,
            "ignore_case": req.ignore_case,
            "include_glob": req.include_glob,
            "exclude_glob": req.exclude_glob,
            "max_matches": req.max_matches,
            "max_line_bytes": req.max_line_bytes,
        }),
    )
    .await?;
    let mut matches = Vec::with_capacity(remote.matches.len());
    for m in remote.matches {
        let m = normalize_remote_match(m);
        let r: RemoteMatch = serde_json::from_value(m.clone()).map_err(|e| {
            Failure::io(format!(
                "sandbox::fs::grep answered a match of unexpected shape ({e}): {m}"
            ))
        })?;
        matches.push(FsMatch {
            path: r.path,
            line: r.line,
            content: r.content,
        });
    }
    Ok(GrepResponse {
        matches,
        truncated: remote.truncated,
        note: None,
    })
}

/// `{path, line_no, byte_offset, line}` (sandbox) → `{path, line, content}`.
fn normalize_remote_match(mut m: serde_json::Value) -> serde_json::Value {
    if let Some(obj) = m.as_object_mut() {
        if let Some(no) = obj.remove("line_no") {
            if let Some(text) = obj.remove("line") {
                obj.insert("content".into(), text);
            }
            obj.insert("line".into(), no);
        }
        obj.remove("byte_offset");
    }
    m
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::{Value, json};

    fn tree(k: &Kit) {
        k.file("src/a.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n");
        k.file("src/b.txt", "FN upper\nnothing\n");
        k.file("src/deep/c.rs", "fn deep() {}\n");
        k.file("top.rs", "fn top() {}\r\n");
    }

    #[tokio::test]
    async fn line_anchors_match_at_every_line_in_lf_and_crlf_files() {
        let k = Kit::jailed();
        k.file("lf.txt", "value = 512\nvalue = 5123\nvalue = 599");
        k.file(
            "crlf.txt",
            "value = 512\r\nvalue = 5123\r\n  value = 599\r\n",
        );
        let lines = |r: &Value| -> Vec<String> {
            r["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    format!(
                        "{}:{}:{}",
                        m["path"].as_str().unwrap(),
                        m["line"],
                        m["content"]
                    )
                })
                .collect()
        };
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": ".", "pattern": r"5\d\d$"}),
            )
            .await;
        assert_eq!(
            lines(&r),
            [
                "./crlf.txt:1:\"value = 512\"",
                "./crlf.txt:3:\"  value = 599\"",
                "./lf.txt:1:\"value = 512\"",
                "./lf.txt:3:\"value = 599\"",
            ]
        );
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": ".", "pattern": r"^value = 5\d\d$"}),
            )
            .await;
        assert_eq!(lines(&r).len(), 3, "{r}");
        let r = k
            .ok("shell::fs::grep", json!({"path": ".", "pattern": r"\r$"}))
            .await;
        assert_eq!(r["matches"], json!([]));
    }

    #[tokio::test]
    async fn finds_matches_sorted_with_paths_as_given() {
        let k = Kit::jailed();
        tree(&k);
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "src", "pattern": "^fn \\w+"}),
            )
            .await;
        assert_eq!(
            r,
            json!({"matches": [
                {"path": "src/a.rs", "line": 1, "content": "fn main() {}"},
                {"path": "src/a.rs", "line": 3, "content": "fn helper() {}"},
                {"path": "src/deep/c.rs", "line": 1, "content": "fn deep() {}"},
            ], "truncated": false})
        );
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": ".", "pattern": "^fn", "ignore_case": true, "recursive": false}),
            )
            .await;
        assert_eq!(
            r["matches"],
            json!([{"path": "./top.rs", "line": 1, "content": "fn top() {}"}])
        );
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "src", "pattern": "fn", "ignore_case": true}),
            )
            .await;
        assert_eq!(r["matches"].as_array().unwrap().len(), 4);
        // a single file
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "src/a.rs", "pattern": "let"}),
            )
            .await;
        assert_eq!(r["matches"][0]["path"], "src/a.rs");
        assert_eq!(r["matches"][0]["line"], 2);
    }

    #[tokio::test]
    async fn globs_match_relative_to_path_and_say_when_they_match_nothing() {
        let k = Kit::jailed();
        k.file("py/calcpkg/core.py", "def add():\n");
        k.file("py/calcpkg/sub/more.py", "def sub():\n");
        k.file("py/setup.py", "def setup():\n");
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "py", "pattern": "def", "include_glob": ["calcpkg/**/*.py"]}),
            )
            .await;
        let paths: Vec<&str> = r["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["py/calcpkg/core.py", "py/calcpkg/sub/more.py"]);
        assert!(r.get("note").is_none(), "{r}");
        // spelt from the root, the glob matches nothing below `path`: said so
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "py", "pattern": "def", "include_glob": ["py/calcpkg/**"]}),
            )
            .await;
        assert_eq!(r["matches"], json!([]));
        let note = r["note"].as_str().unwrap();
        assert!(note.contains("relative to `path`"), "{note}");
        assert!(
            note.contains(&k.root.join("py").display().to_string()),
            "{note}"
        );
        assert!(note.contains("matched as \"calcpkg/core.py\""), "{note}");
        // no matches but the globs did match a file: no note
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "py", "pattern": "nothing", "include_glob": ["*.py"]}),
            )
            .await;
        assert!(r.get("note").is_none(), "{r}");
    }

    #[tokio::test]
    async fn globs_filter_paths() {
        let k = Kit::jailed();
        tree(&k);
        let r = k.ok("shell::fs::grep", json!({"path": ".", "pattern": "fn", "include_glob": ["*.rs"], "exclude_glob": ["src/deep/**"]})).await;
        let paths: Vec<&str> = r["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["./src/a.rs", "./src/a.rs", "./top.rs"]);
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": ".", "pattern": "fn", "exclude_glob": ["src"]}),
            )
            .await;
        assert_eq!(r["matches"].as_array().unwrap().len(), 1);
        assert_eq!(
            k.err(
                "shell::fs::grep",
                json!({"path": ".", "pattern": "x", "include_glob": ["a{"]})
            )
            .await
            .code,
            "S210"
        );
    }

    #[tokio::test]
    async fn caps_set_truncated() {
        let k = Kit::jailed();
        let many: String = (0..50).map(|i| format!("hit {i}\n")).collect();
        k.file("m.txt", &many);
        k.file(
            "long.txt",
            &format!("hit {}\nhit short\n", "x".repeat(5000)),
        );
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "m.txt", "pattern": "hit", "max_matches": 10}),
            )
            .await;
        assert_eq!(r["matches"].as_array().unwrap().len(), 10);
        assert_eq!(r["truncated"], true);
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "m.txt", "pattern": "hit", "max_matches": 50}),
            )
            .await;
        assert_eq!(r["matches"].as_array().unwrap().len(), 50);
        assert_eq!(r["truncated"], false);
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "long.txt", "pattern": "hit"}),
            )
            .await;
        // the long line comes back cut to max_line_bytes (4096), and says so
        assert_eq!(r["truncated"], true);
        assert_eq!(
            r["matches"][0]["content"],
            format!("hit {}", "x".repeat(4092))
        );
        assert_eq!(r["matches"][1]["content"], "hit short");
        // never inside a character
        k.file("wide.txt", "hit ééé\n");
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "wide.txt", "pattern": "hit", "max_line_bytes": 5}),
            )
            .await;
        assert_eq!(r["matches"][0]["content"], "hit ");
        assert_eq!(r["truncated"], true);
    }

    #[tokio::test]
    async fn skips_binary_protected_and_symlinked_files() {
        let k = Kit::jailed();
        let mut bin = b"needle\n".repeat(10);
        bin.extend_from_slice(&[0u8; 4]);
        bin.extend_from_slice(b"needle\n");
        std::fs::write(k.root.join("bin.dat"), bin).unwrap();
        k.file(".env", "needle");
        k.file("secrets/s", "needle");
        std::fs::write(k.outside.path().join("o"), "needle").unwrap();
        std::os::unix::fs::symlink(k.outside.path().join("o"), k.root.join("link")).unwrap();
        std::os::unix::fs::symlink(k.outside.path(), k.root.join("dirlink")).unwrap();
        k.file("ok.txt", "needle");
        let r = k
            .ok("shell::fs::grep", json!({"path": ".", "pattern": "needle"}))
            .await;
        assert_eq!(
            r["matches"],
            json!([{"path": "./ok.txt", "line": 1, "content": "needle"}])
        );
    }

    #[tokio::test]
    async fn grep_errors() {
        let k = Kit::jailed();
        k.file("f", "x");
        assert_eq!(
            k.err("shell::fs::grep", json!({"path": ".", "pattern": "("}))
                .await
                .code,
            "S217"
        );
        assert_eq!(
            k.err("shell::fs::grep", json!({"path": ".", "pattern": "a(?=b)"}))
                .await
                .code,
            "S217"
        );
        assert_eq!(
            k.err("shell::fs::grep", json!({"path": ".", "pattern": ""}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::grep", json!({"path": "nope", "pattern": "x"}))
                .await
                .code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::grep", json!({"path": "/", "pattern": "x"}))
                .await
                .code,
            "S215"
        );
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::grep", |p| json!({"path": p, "pattern": "x"})).await;
    }

    #[tokio::test]
    async fn sandbox_matches_are_mapped_to_the_wire_shape() {
        let k = Kit::jailed();
        k.sandbox_answers(
            "sandbox::fs::grep",
            Ok(json!({"matches": [{"path": "/a", "line_no": 3, "byte_offset": 10, "line": "hit"}], "truncated": true})),
        );
        let r = k
            .ok(
                "shell::fs::grep",
                json!({"path": "/w", "pattern": "hit", "target": sandbox_target()}),
            )
            .await;
        assert_eq!(
            r,
            json!({"matches": [{"path": "/a", "line": 3, "content": "hit"}], "truncated": true})
        );
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "path": "/w", "pattern": "hit", "recursive": true,
                   "ignore_case": false, "include_glob": [], "exclude_glob": [],
                   "max_matches": 10000, "max_line_bytes": 4096})
        );
    }
}
