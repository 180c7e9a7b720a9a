use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::WireError;
use crate::runtime::Runtime;
use crate::services::Services;
use serde_json::{Value, json};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

/// A jailed tree in a temp dir and the services to search it.
struct Tree {
    _dirs: Vec<TempDir>,
    root: PathBuf,
    /// A directory outside the jail.
    outside: PathBuf,
    services: Arc<Services>,
}

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn tree_with(files: &[(&str, &str)], tune: impl FnOnce(&mut Config, &Path)) -> Tree {
    let dir = TempDir::new().unwrap();
    let out = TempDir::new().unwrap();
    let journal = TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let outside = out.path().canonicalize().unwrap();
    for (rel, content) in files {
        write(&root, rel, content);
    }
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.turns.data_dir = journal.path().to_path_buf();
    tune(&mut cfg, &root);
    let services = Services::standalone(Runtime::build(cfg).unwrap());
    Tree {
        _dirs: vec![dir, out, journal],
        root,
        outside,
        services,
    }
}

fn tree(files: &[(&str, &str)]) -> Tree {
    tree_with(files, |_, _| {})
}

impl Tree {
    async fn call(&self, req: Value) -> Result<Value, WireError> {
        Catalog::standard()
            .call(&self.services, "coder::search", req)
            .await
    }

    /// Another catalog function on the same worker.
    async fn ok_fn(&self, id: &str, req: Value) -> Value {
        Catalog::standard()
            .call(&self.services, id, req.clone())
            .await
            .unwrap_or_else(|e| panic!("{id} {req} failed: {e}"))
    }

    async fn ok(&self, req: Value) -> Value {
        self.call(req.clone())
            .await
            .unwrap_or_else(|e| panic!("{req} failed: {e}"))
    }

    fn rel(&self, p: &Value) -> String {
        let p = p.as_str().unwrap();
        Path::new(p)
            .strip_prefix(&self.root)
            .unwrap_or_else(|_| panic!("{p} is outside the root"))
            .to_string_lossy()
            .into_owned()
    }

    /// `rel:line:column` of each content match.
    fn hits(&self, out: &Value) -> Vec<String> {
        out["content_matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| format!("{}:{}:{}", self.rel(&m["path"]), m["line"], m["column"]))
            .collect()
    }

    /// `rel` (with a trailing `/` for directories) of each path match.
    fn paths(&self, out: &Value) -> Vec<String> {
        out["path_matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let slash = if m["kind"] == "dir" { "/" } else { "" };
                format!("{}{slash}", self.rel(&m["path"]))
            })
            .collect()
    }
}

fn content(query: &str) -> Value {
    json!({"query": query, "search_paths": false})
}

#[tokio::test]
async fn literal_search_reports_the_first_match_per_line_with_line_and_column() {
    let t = tree(&[("a.txt", "foo foo\nbar\nxfoo\n"), ("b.txt", "nothing\n")]);
    let out = t.ok(content("foo")).await;
    assert_eq!(t.hits(&out), ["a.txt:1:1", "a.txt:3:2"]);
    assert_eq!(out["content_matches"][0]["text"], "foo foo");
    assert_eq!(out["truncated"], false);
    assert!(out.get("stop_reason").is_none());
    assert_eq!(out["files_scanned"], 2);
}

#[tokio::test]
async fn literal_queries_are_not_regexes_and_regex_queries_are() {
    let t = tree(&[("a.txt", "axb\na.b\nfn handle_x(\n")]);
    assert_eq!(t.hits(&t.ok(content("a.b")).await), ["a.txt:2:1"]);
    let re = t
        .ok(json!({"query": "a.b", "regex": true, "search_paths": false}))
        .await;
    assert_eq!(t.hits(&re), ["a.txt:1:1", "a.txt:2:1"]);
    let re = t
        .ok(json!({"query": r"fn \w+\(", "regex": true, "search_paths": false}))
        .await;
    assert_eq!(t.hits(&re), ["a.txt:3:1"]);
    // `(` is fine as a literal
    assert_eq!(t.hits(&t.ok(content("_x(")).await), ["a.txt:3:10"]);
}

#[tokio::test]
async fn line_anchors_match_at_every_line_in_lf_and_crlf_files() {
    let t = tree(&[
        (
            "lf.txt",
            "value = 512\nvalue = 5123\n  value = 599\nvalue = 500",
        ),
        (
            "crlf.txt",
            "value = 512\r\nvalue = 5123\r\n  value = 599\r\n",
        ),
    ]);
    let re = |q: &str| json!({"query": q, "regex": true, "search_paths": false});
    // `$` ends a line (before LF or CRLF), also the last one without a newline
    assert_eq!(
        t.hits(&t.ok(re(r"value = 5\d\d$")).await),
        [
            "crlf.txt:1:1",
            "crlf.txt:3:3",
            "lf.txt:1:1",
            "lf.txt:3:3",
            "lf.txt:4:1"
        ]
    );
    // `^` starts a line
    assert_eq!(
        t.hits(&t.ok(re(r"^value = 5\d\d$")).await),
        ["crlf.txt:1:1", "lf.txt:1:1", "lf.txt:4:1"]
    );
    // the terminator is never part of the line: a `\r` in the pattern is
    // refused (it could never match), and the text carries no `\r`
    let err = t.call(re(r"\r$")).await.unwrap_err();
    assert_eq!(err.code, "C210", "{err:?}");
    let out = t.ok(re(r"512$")).await;
    assert_eq!(out["content_matches"][0]["text"], "value = 512");
}

#[tokio::test]
async fn ignore_case_folds_case_for_content_and_paths() {
    let t = tree(&[("Readme.MD", "Hello World\n")]);
    assert!(t.hits(&t.ok(content("hello")).await).is_empty());
    let out = t.ok(json!({"query": "hello", "ignore_case": true})).await;
    assert_eq!(t.hits(&out), ["Readme.MD:1:1"]);
    let out = t.ok(json!({"query": "readme", "ignore_case": true})).await;
    assert_eq!(t.paths(&out), ["Readme.MD"]);
    let out = t.ok(json!({"query": "readme"})).await;
    assert!(t.paths(&out).is_empty());
}

#[tokio::test]
async fn a_bad_regex_is_c210_naming_the_literal_recovery() {
    let t = tree(&[("a.txt", "x\n")]);
    let err = t
        .call(json!({"query": "(", "regex": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
    assert!(err.message.contains("regex: false"), "{}", err.message);
    // one line at a time: a pattern that needs a newline is refused
    let err = t
        .call(json!({"query": "a\nb", "regex": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
    // a literal cannot span lines either, and the message says so
    let err = t.call(json!({"query": "a\nb"})).await.unwrap_err();
    assert_eq!(err.code, "C210");
    assert!(err.message.contains("single line"), "{}", err.message);
    assert!(!err.message.contains("regex: false"), "{}", err.message);
    // a path-only search validates its regex too
    let err = t
        .call(json!({"query": "[", "regex": true, "search_content": false}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
}

#[tokio::test]
async fn content_and_path_search_can_be_chosen_separately() {
    let t = tree(&[("needle.txt", "hay\n"), ("hay.txt", "needle\n")]);
    let both = t.ok(json!({"query": "needle"})).await;
    assert_eq!(t.hits(&both), ["hay.txt:1:1"]);
    assert_eq!(t.paths(&both), ["needle.txt"]);
    let paths_only = t
        .ok(json!({"query": "needle", "search_content": false}))
        .await;
    assert!(t.hits(&paths_only).is_empty());
    assert_eq!(paths_only["files_scanned"], 0);
    assert_eq!(t.paths(&paths_only), ["needle.txt"]);
    let content_only = t.ok(content("needle")).await;
    assert!(t.paths(&content_only).is_empty());
    let err = t
        .call(json!({"query": "x", "search_content": false, "search_paths": false}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
}

#[tokio::test]
async fn directories_match_by_name_and_a_slash_query_matches_the_relative_path() {
    let t = tree(&[
        ("handlers/mod.rs", "handlers\n"),
        ("src/handlers_test.rs", "\n"),
    ]);
    let out = t
        .ok(json!({"query": "handlers", "search_content": false}))
        .await;
    // the directory by its name; files inside it do not match through it
    assert_eq!(t.paths(&out), ["handlers/", "src/handlers_test.rs"]);
    let out = t
        .ok(json!({"query": "handlers/mod", "search_content": false}))
        .await;
    assert_eq!(t.paths(&out), ["handlers/mod.rs"]);
    // directories are never read for content
    let out = t.ok(content("handlers")).await;
    assert_eq!(t.hits(&out), ["handlers/mod.rs:1:1"]);
}

#[tokio::test]
async fn an_empty_query_is_only_for_path_listings() {
    let t = tree(&[("b.txt", ""), ("a/c.txt", "")]);
    let err = t.call(json!({"query": ""})).await.unwrap_err();
    assert_eq!(err.code, "C210");
    assert!(err.message.contains("search_content: false"));
    let out = t.ok(json!({"query": "", "search_content": false})).await;
    assert_eq!(t.paths(&out), ["a/", "a/c.txt", "b.txt"]);
}

#[tokio::test]
async fn globs_match_relative_to_the_searched_folder() {
    let t = tree(&[
        ("src/a.rs", "needle\n"),
        ("src/b.txt", "needle\n"),
        ("src/deep/c.rs", "needle\n"),
        ("docs/d.rs", "needle\n"),
    ]);
    let out = t
        .ok(json!({"query": "needle", "path": "src", "include_globs": ["deep/*.rs"], "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["src/deep/c.rs:1:1"]);
    assert!(out.get("note").is_none(), "{out}");
    // `*` crosses `/` (globset default), so src/deep/c.rs matches too
    let out = t
        .ok(json!({"query": "needle", "path": "src", "include_globs": ["*.rs"], "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["src/a.rs:1:1", "src/deep/c.rs:1:1"]);
    let out = t
        .ok(json!({"query": "needle", "path": "src", "include_globs": ["*.txt"], "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["src/b.txt:1:1"]);
    // excludes too: relative to `path`
    let out = t
        .ok(json!({"query": "needle", "path": "src", "exclude_globs": ["deep/**"], "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["src/a.rs:1:1", "src/b.txt:1:1"]);
    // a glob spelt from the root no longer matches below `path`: the answer
    // says so, names the folder and how a file there is spelt
    let out = t
        .ok(json!({"query": "needle", "path": "src", "include_globs": ["src/*.rs"], "search_paths": false}))
        .await;
    assert!(t.hits(&out).is_empty());
    assert_eq!(out["files_scanned"], 0);
    let note = out["note"].as_str().unwrap();
    let src = t.root.join("src").display().to_string();
    assert!(
        note.contains(&format!("relative to the searched folder {src}")),
        "{note}"
    );
    assert!(note.contains("matched as \"a.rs\""), "{note}");
    assert!(note.contains(r#"["src/*.rs"]"#), "{note}");
    // a file named as `path` is searched whatever the globs say
    let out = t
        .ok(json!({"query": "needle", "path": "src/a.rs", "include_globs": ["*.py"], "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["src/a.rs:1:1"]);
    assert!(out.get("note").is_none(), "{out}");
    let out = t
        .ok(json!({"query": "needle", "exclude_globs": ["src/deep/**", "**/*.txt"], "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["docs/d.rs:1:1", "src/a.rs:1:1"]);
    // an excluded directory is not descended into, and hides from paths
    let out = t
        .ok(json!({"query": "deep", "exclude_globs": ["src/deep"], "search_content": false}))
        .await;
    assert!(t.paths(&out).is_empty());
    let out = t
        .ok(json!({"query": "needle", "exclude_globs": ["src/deep"], "search_paths": false}))
        .await;
    assert!(!t.hits(&out).iter().any(|h| h.contains("deep")));
    let err = t
        .call(json!({"query": "x", "include_globs": ["a/**b["]}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
    assert!(err.message.contains("include_globs"), "{}", err.message);
}

#[tokio::test]
async fn default_excludes_hide_noise_unless_turned_off() {
    let t = tree(&[
        ("node_modules/pkg/index.js", "needle\n"),
        ("target/debug/out.txt", "needle\n"),
        ("src/lib.rs", "needle\n"),
    ]);
    let out = t.ok(json!({"query": "needle"})).await;
    assert_eq!(t.hits(&out), ["src/lib.rs:1:1"]);
    let out = t.ok(json!({"query": "pkg", "search_content": false})).await;
    assert!(t.paths(&out).is_empty());
    let all = t
        .ok(json!({"query": "needle", "use_default_excludes": false}))
        .await;
    assert_eq!(
        t.hits(&all),
        [
            "node_modules/pkg/index.js:1:1",
            "src/lib.rs:1:1",
            "target/debug/out.txt:1:1"
        ]
    );
    // a folder asked for by name is searched even inside a noise directory
    let inside = t
        .ok(json!({"query": "needle", "path": "node_modules/pkg"}))
        .await;
    assert_eq!(t.hits(&inside), ["node_modules/pkg/index.js:1:1"]);
}

#[tokio::test]
async fn hidden_entries_are_walked_by_default_and_left_out_on_request() {
    let t = tree(&[
        (".github/workflows/ci.yml", "needle\n"),
        (".hidden.txt", "needle\n"),
        ("shown.txt", "needle\n"),
    ]);
    let out = t.ok(json!({"query": "needle"})).await;
    assert_eq!(
        t.hits(&out),
        [
            ".github/workflows/ci.yml:1:1",
            ".hidden.txt:1:1",
            "shown.txt:1:1"
        ]
    );
    let out = t
        .ok(json!({"query": "needle", "include_hidden": false}))
        .await;
    assert_eq!(t.hits(&out), ["shown.txt:1:1"]);
    // the searched folder itself is exempt
    let out = t
        .ok(json!({"query": "needle", "path": ".github", "include_hidden": false}))
        .await;
    assert_eq!(t.hits(&out), [".github/workflows/ci.yml:1:1"]);
}

#[tokio::test]
async fn gitignore_is_honoured_only_on_request_and_only_inside_a_repository() {
    let t = tree(&[
        ("repo/.gitignore", "ignored.txt\nbuild/\n"),
        ("repo/ignored.txt", "needle\n"),
        ("repo/build/x.txt", "needle\n"),
        ("repo/kept.txt", "needle\n"),
        ("repo/sub/deeper.txt", "needle\n"),
        ("plain/.gitignore", "skip.txt\n"),
        ("plain/skip.txt", "needle\n"),
        ("plain/.ignore", "also.txt\n"),
        ("plain/also.txt", "needle\n"),
    ]);
    std::fs::create_dir_all(t.root.join("repo/.git")).unwrap();
    let all = t.ok(content("needle")).await;
    assert_eq!(t.hits(&all).len(), 6);
    let out = t
        .ok(json!({"query": "needle", "respect_gitignore": true, "search_paths": false}))
        .await;
    assert_eq!(
        t.hits(&out),
        [
            "plain/skip.txt:1:1",
            "repo/kept.txt:1:1",
            "repo/sub/deeper.txt:1:1"
        ]
    );
    // the repository's rules apply when searching a folder inside it
    let out = t
        .ok(json!({"query": "needle", "path": "repo/sub", "respect_gitignore": true}))
        .await;
    assert_eq!(t.hits(&out), ["repo/sub/deeper.txt:1:1"]);
    let out = t
        .ok(json!({"query": "ignored", "respect_gitignore": true, "search_content": false}))
        .await;
    assert!(t.paths(&out).is_empty());
}

#[tokio::test]
async fn fuzzy_paths_rank_best_first() {
    let t = tree(&[
        ("some/extra/archive.h", ""),
        ("src/research.md", ""),
        ("search.rs", ""),
        ("docs/unrelated.txt", ""),
        ("a/b/c/mod.rs", ""),
        ("src/mod.rs", ""),
        ("mod.rs", ""),
    ]);
    let out = t
        .ok(json!({"query": "search", "fuzzy_paths": true, "search_content": false}))
        .await;
    let got = t.paths(&out);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], "search.rs", "{got:?}");
    assert!(got.contains(&"src/research.md".to_string()), "{got:?}");
    assert!(got.contains(&"some/extra/archive.h".to_string()), "{got:?}");
    // equal scores: shallow and short first
    let out = t
        .ok(json!({"query": "mod.rs", "fuzzy_paths": true, "search_content": false}))
        .await;
    assert_eq!(t.paths(&out), ["mod.rs", "src/mod.rs", "a/b/c/mod.rs"]);
    // a plain substring search does not match scattered letters
    let out = t
        .ok(json!({"query": "search", "search_content": false}))
        .await;
    assert_eq!(t.paths(&out), ["search.rs", "src/research.md"]);
}

#[tokio::test]
async fn an_empty_fuzzy_query_lists_shallow_and_short_paths_first() {
    let t = tree(&[("a/b/c.txt", ""), ("zz.txt", ""), ("a/b.txt", "")]);
    let out = t
        .ok(json!({"query": "", "fuzzy_paths": true, "search_content": false}))
        .await;
    assert_eq!(
        t.paths(&out),
        ["a/", "zz.txt", "a/b/", "a/b.txt", "a/b/c.txt"]
    );
}

fn numbered(n: usize, hits: &[usize]) -> String {
    (1..=n)
        .map(|i| {
            if hits.contains(&i) {
                format!("l{i} hit\n")
            } else {
                format!("l{i}\n")
            }
        })
        .collect()
}

#[tokio::test]
async fn every_match_carries_its_own_context_lines() {
    let body = numbered(10, &[1, 5, 6, 10]);
    let t = tree(&[("f.txt", body.as_str())]);
    let out = t
        .ok(json!({"query": "hit", "context_lines_before": 2, "context_lines_after": 2, "search_paths": false}))
        .await;
    let m = out["content_matches"].as_array().unwrap();
    assert_eq!(m.len(), 4);
    // start of the file: no `before` at all
    assert!(m[0].get("before").is_none());
    assert_eq!(m[0]["after"], json!(["l2", "l3"]));
    assert_eq!(m[1]["before"], json!(["l3", "l4"]));
    assert_eq!(m[1]["after"], json!(["l6 hit", "l7"]));
    assert_eq!(m[2]["before"], json!(["l4", "l5 hit"]));
    assert_eq!(m[2]["after"], json!(["l7", "l8"]));
    // end of the file: no `after`
    assert_eq!(m[3]["before"], json!(["l8", "l9"]));
    assert!(m[3].get("after").is_none());
    // none requested: neither key
    let out = t.ok(content("hit")).await;
    assert!(out["content_matches"][1].get("before").is_none());
    assert!(out["content_matches"][1].get("after").is_none());
}

#[tokio::test]
async fn more_than_ten_context_lines_is_c210() {
    let t = tree(&[("f.txt", "x\n")]);
    let ok = t
        .ok(json!({"query": "x", "context_lines_before": 10, "context_lines_after": 10}))
        .await;
    assert_eq!(ok["content_matches"].as_array().unwrap().len(), 1);
    for key in ["context_lines_before", "context_lines_after"] {
        let err = t.call(json!({"query": "x", key: 11})).await.unwrap_err();
        assert_eq!(err.code, "C210");
        assert!(err.message.contains(key), "{}", err.message);
        assert!(err.message.contains("coder::read-file"), "{}", err.message);
    }
}

#[tokio::test]
async fn max_line_bytes_bounds_matching_and_cuts_the_snippet() {
    let long = format!("needle{}\n{}needle\n", "x".repeat(100), "y".repeat(100));
    let t = tree(&[("f.txt", long.as_str()), ("u.txt", "ééneedle\n")]);
    let out = t
        .ok(json!({"query": "needle", "max_line_bytes": 10, "search_paths": false}))
        .await;
    // only the first 10 bytes of each line are considered
    assert_eq!(t.hits(&out), ["f.txt:1:1", "u.txt:1:5"]);
    assert_eq!(out["content_matches"][0]["text"], "needlexxxx");
    // never split inside a character
    let out = t
        .ok(json!({"query": "é", "max_line_bytes": 3, "search_paths": false}))
        .await;
    assert_eq!(out["content_matches"][0]["text"], "é");
    // the default comes from the config
    let out = t.ok(content("needle")).await;
    assert_eq!(t.hits(&out), ["f.txt:1:1", "f.txt:2:101", "u.txt:1:5"]);
    let err = t
        .call(json!({"query": "needle", "max_line_bytes": 0}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
}

#[tokio::test]
async fn crlf_lines_lose_their_carriage_return_and_dollar_matches_before_it() {
    let t = tree(&[("w.txt", "one end\r\ntwo\r\n")]);
    let out = t
        .ok(json!({"query": "end$", "regex": true, "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["w.txt:1:5"]);
    assert_eq!(out["content_matches"][0]["text"], "one end");
}

#[tokio::test]
async fn max_matches_cuts_in_path_order_and_says_why() {
    let t = tree(&[
        ("c.txt", "hit\nhit\n"),
        ("a.txt", "hit\nhit\n"),
        ("b.txt", "hit\nhit\n"),
    ]);
    let out = t
        .ok(json!({"query": "hit", "max_matches": 3, "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["a.txt:1:1", "a.txt:2:1", "b.txt:1:1"]);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["stop_reason"], "max_matches");
    assert_eq!(out["files_scanned"], 2);
    // exactly at the cap is complete
    let out = t
        .ok(json!({"query": "hit", "max_matches": 6, "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out).len(), 6);
    assert_eq!(out["truncated"], false);
    assert!(out.get("stop_reason").is_none());
    assert_eq!(out["files_scanned"], 3);
    // each list has its own cap
    let out = t
        .ok(json!({"query": "txt", "max_matches": 2, "search_content": false}))
        .await;
    assert_eq!(t.paths(&out), ["a.txt", "b.txt"]);
    assert_eq!(out["stop_reason"], "max_matches");
}

#[tokio::test]
async fn path_matches_are_complete_when_the_content_scan_stops_early() {
    let files: Vec<(String, String)> = (0..200)
        .map(|i| (format!("a{i:03}.txt"), "zebra\n".to_string()))
        .chain([("z/zebra.txt".to_string(), "none\n".to_string())])
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let t = tree(&refs);
    for _ in 0..3 {
        let out = t.ok(json!({"query": "zebra", "max_matches": 3})).await;
        assert_eq!(
            t.hits(&out),
            ["a000.txt:1:1", "a001.txt:1:1", "a002.txt:1:1"]
        );
        assert_eq!(t.paths(&out), ["z/zebra.txt"]);
        assert_eq!(out["stop_reason"], "max_matches");
        assert_eq!(out["files_scanned"], 4);
    }
}

#[tokio::test]
async fn the_config_supplies_the_default_match_cap() {
    let t = tree_with(&[("a.txt", "hit\nhit\nhit\n")], |cfg, _| {
        cfg.code.search_default_max_matches = 2;
    });
    let out = t.ok(content("hit")).await;
    assert_eq!(t.hits(&out).len(), 2);
    assert_eq!(out["stop_reason"], "max_matches");
}

#[tokio::test]
async fn the_byte_budget_cuts_the_answer_and_says_budget() {
    let files: Vec<(String, String)> = (0..20)
        .map(|i| (format!("f{i:02}.txt"), "hit hit hit hit\n".repeat(5)))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let t = tree_with(&refs, |cfg, _| cfg.code.search_response_budget_bytes = 1000);
    let out = t.ok(content("hit")).await;
    assert_eq!(out["truncated"], true);
    assert_eq!(out["stop_reason"], "budget");
    let matches = out["content_matches"].as_array().unwrap();
    let used: usize = matches
        .iter()
        .map(|m| {
            m["path"].as_str().unwrap().len()
                + m["text"].as_str().unwrap().len()
                + m["revision"].as_str().unwrap().len()
        })
        .sum();
    assert!(used <= 1000, "{used}");
    assert!(!matches.is_empty());
    // the next match would not have fit
    let per = matches[0]["path"].as_str().unwrap().len() + "hit hit hit hit".len() + 64;
    assert!(used + per > 1000);
    // context lines count too
    let with_context = t
        .ok(json!({"query": "hit", "context_lines_after": 3, "search_paths": false}))
        .await;
    assert!(with_context["content_matches"].as_array().unwrap().len() < matches.len());
    assert_eq!(with_context["stop_reason"], "budget");
}

#[tokio::test]
async fn path_matches_spend_the_budget_first() {
    let t = tree_with(&[("hit.txt", "hit\n")], |cfg, root| {
        // room for the path match, not for the content match after it
        let path_len = root.join("hit.txt").to_string_lossy().len();
        cfg.code.search_response_budget_bytes = (path_len + 2) as u64;
    });
    let out = t.ok(json!({"query": "hit"})).await;
    assert_eq!(t.paths(&out), ["hit.txt"]);
    assert!(t.hits(&out).is_empty());
    assert_eq!(out["stop_reason"], "budget");
}

#[tokio::test]
async fn a_file_cut_by_the_cap_still_gives_complete_context_to_what_is_kept() {
    let body = numbered(8, &[1, 2, 3]);
    let t = tree(&[("f.txt", body.as_str())]);
    let out = t
        .ok(json!({"query": "hit", "max_matches": 2, "context_lines_after": 2, "search_paths": false}))
        .await;
    let m = out["content_matches"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[1]["after"], json!(["l3 hit", "l4"]));
    assert_eq!(out["stop_reason"], "max_matches");
}

#[tokio::test]
async fn binary_files_are_skipped_even_when_the_nul_comes_late() {
    let mut late = "needle\n".repeat(3);
    late.push_str(&"text line\n".repeat(30_000));
    late.push('\0');
    let t = tree(&[
        ("bin.dat", "needle\0\x01\x02"),
        ("late.dat", late.as_str()),
        ("text.txt", "needle\n"),
    ]);
    let out = t.ok(json!({"query": "needle"})).await;
    assert_eq!(t.hits(&out), ["text.txt:1:1"]);
    assert_eq!(out["files_scanned"], 1);
    // a binary file is still found by name
    let out = t.ok(json!({"query": "bin", "search_content": false})).await;
    assert_eq!(t.paths(&out), ["bin.dat"]);
}

#[tokio::test]
async fn files_over_max_read_bytes_are_skipped() {
    let big = format!("needle\n{}", "x".repeat(200));
    let t = tree_with(
        &[("big.txt", big.as_str()), ("small.txt", "needle\n")],
        |cfg, _| cfg.fs.max_read_bytes = 100,
    );
    let out = t.ok(content("needle")).await;
    assert_eq!(t.hits(&out), ["small.txt:1:1"]);
    assert_eq!(out["files_scanned"], 1);
    assert_eq!(out["truncated"], false);
}

#[tokio::test]
async fn protected_entries_never_appear_by_content_or_path() {
    let t = tree_with(
        &[
            (".env", "needle\n"),
            ("app/.env.local", "needle\n"),
            ("certs/server.pem", "needle\n"),
            ("secrets/token.txt", "needle\n"),
            ("blocked/needle.txt", "needle\n"),
            ("ok.txt", "needle\n"),
        ],
        |cfg, root| cfg.fs.denylist_paths = vec![root.join("blocked")],
    );
    let out = t.ok(json!({"query": "needle"})).await;
    assert_eq!(t.hits(&out), ["ok.txt:1:1"]);
    assert!(t.paths(&out).is_empty(), "{:?}", t.paths(&out));
    for q in ["env", "pem", "token", "blocked"] {
        let out = t.ok(json!({"query": q, "search_content": false})).await;
        assert!(t.paths(&out).is_empty(), "{q}: {:?}", t.paths(&out));
    }
    let out = t
        .ok(json!({"query": "", "search_content": false, "use_default_excludes": false}))
        .await;
    let listed = t.paths(&out);
    for hidden in [
        ".env",
        "app/.env.local",
        "certs/server.pem",
        "secrets/token.txt",
    ] {
        assert!(
            !listed.iter().any(|p| p == hidden),
            "{hidden} in {listed:?}"
        );
    }
    assert!(
        !listed.iter().any(|p| p.starts_with("blocked")),
        "{listed:?}"
    );
}

#[tokio::test]
async fn symlinks_are_not_followed_out_of_the_jail() {
    let t = tree(&[("src/lib.rs", "needle\n")]);
    write(&t.outside, "leak/needle.txt", "needle\n");
    symlink(t.outside.join("leak"), t.root.join("dirlink")).unwrap();
    symlink(t.outside.join("leak/needle.txt"), t.root.join("filelink")).unwrap();
    symlink(t.root.join("src"), t.root.join("srclink")).unwrap();
    write(&t.root, ".env", "needle\n");
    symlink(t.root.join(".env"), t.root.join("envlink")).unwrap();
    let out = t.ok(json!({"query": "needle"})).await;
    // inside the jail, content is found once, through the real path only
    assert_eq!(t.hits(&out), ["src/lib.rs:1:1"]);
    let out = t
        .ok(json!({"query": "link", "search_content": false}))
        .await;
    // only the link whose target the policy accepts is listed, under its own path
    assert_eq!(t.paths(&out), ["srclink/"]);
    // a link at the root of the search is resolved by the policy: out of the jail is C215
    let err = t
        .call(json!({"query": "needle", "path": "dirlink"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C215");
}

#[tokio::test]
async fn base_dir_scopes_the_search_and_anchors_globs() {
    let t = tree(&[
        ("sub/inner/a.rs", "needle\n"),
        ("sub/b.txt", "needle\n"),
        ("other/c.rs", "needle\n"),
    ]);
    let out = t
        .ok(json!({"query": "needle", "base_dir": "sub", "search_paths": false}))
        .await;
    assert_eq!(t.hits(&out), ["sub/b.txt:1:1", "sub/inner/a.rs:1:1"]);
    let out = t
        .ok(json!({"query": "needle", "base_dir": "sub", "include_globs": ["inner/*.rs"]}))
        .await;
    assert_eq!(t.hits(&out), ["sub/inner/a.rs:1:1"]);
    let err = t
        .call(json!({"query": "needle", "base_dir": "sub", "path": "../other"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C220");
    assert!(err.message.contains("base_dir"), "{}", err.message);
    let abs = t.root.join("other").to_string_lossy().into_owned();
    let err = t
        .call(json!({"query": "needle", "base_dir": "sub", "path": abs}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C220");
}

#[tokio::test]
async fn a_denied_search_root_reads_exactly_like_a_missing_one() {
    let t = tree_with(
        &[
            ("blocked/a.txt", "x\n"),
            ("secrets/k.txt", "x\n"),
            ("ok/a.txt", "x\n"),
        ],
        |cfg, root| cfg.fs.denylist_paths = vec![root.join("blocked")],
    );
    let missing = t
        .call(json!({"query": "x", "path": "nope/dir"}))
        .await
        .unwrap_err();
    assert_eq!(missing.code, "C211");
    for (denied, twin) in [
        ("blocked", "nope/dir"),
        ("secrets/k.txt", "nope/secrets/k.txt"),
        ("blocked/a.txt", "nope/dir"),
    ] {
        let missing = t
            .call(json!({"query": "x", "path": twin}))
            .await
            .unwrap_err();
        let got = t
            .call(json!({"query": "x", "path": denied}))
            .await
            .unwrap_err();
        assert_eq!(got.code, missing.code, "{denied}");
        assert_eq!(
            got.message.replace(&format!("{denied:?}"), "P"),
            missing.message.replace(&format!("{twin:?}"), "P"),
            "{denied}"
        );
    }
}

#[tokio::test]
async fn a_single_file_can_be_searched() {
    let t = tree(&[("a.txt", "x needle\n"), ("b.txt", "needle\n")]);
    let out = t.ok(json!({"query": "needle", "path": "a.txt"})).await;
    assert_eq!(t.hits(&out), ["a.txt:1:3"]);
}

#[tokio::test]
async fn unknown_fields_are_refused() {
    let t = tree(&[("a.txt", "x\n")]);
    let err = t
        .call(json!({"query": "x", "case_insensitive": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "C210");
    assert!(err.message.contains("ignore_case"), "{}", err.message);
}

#[tokio::test]
async fn answers_are_identical_across_runs_despite_the_parallel_scan() {
    let files: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("d{}/f{i:03}.txt", i % 7),
                format!("a\nhit {i}\nb\nhit\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let t = tree(&refs);
    let req = json!({"query": "hit", "max_matches": 101, "context_lines_before": 1});
    let first = t.ok(req.clone()).await;
    assert_eq!(first["content_matches"].as_array().unwrap().len(), 101);
    assert_eq!(first["files_scanned"], 51);
    let hits = t.hits(&first);
    let mut sorted = hits.clone();
    sorted.sort_by_key(|h| {
        let (p, rest) = h.split_once(':').unwrap();
        (
            p.to_string(),
            rest.split(':').next().unwrap().parse::<u32>().unwrap(),
        )
    });
    assert_eq!(hits, sorted);
    for _ in 0..5 {
        assert_eq!(t.ok(req.clone()).await, first);
    }
}

/// schemars writes `minimum: 0.0` where the contract prints `0`: the same
/// JSON number. Compare numbers by value.
fn numbers_as_f64(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(numbers_as_f64).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The 0.12.15 contract's request properties, plus `base_dir` (from the
/// coder contract), must come out of the schema exactly.
#[test]
fn request_schema_matches_the_contract() {
    let schema =
        crate::schema::of::<super::SearchInput>(crate::schema::Side::Request { strict: true });
    assert_eq!(schema["title"], "SearchInput");
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(schema["examples"], json!([super::search_example()]));
    let props = schema["properties"].as_object().unwrap();
    let expected: Value = serde_json::from_str(CONTRACT_REQUEST_PROPERTIES).unwrap();
    // the contract's draft-07 shapes, as registered in 2020-12
    let expected: serde_json::Map<String, Value> = expected
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), crate::testkit::as_registered(v.clone(), true)))
        .collect();
    let expected = &expected;
    for (k, v) in expected {
        let mut got = props.get(k).map(numbers_as_f64);
        let mut want = numbers_as_f64(v);
        // Deliberately reworded (same shape): the globs match relative to
        // `path`, not to the root as 0.12 documented.
        if ["path", "include_globs", "exclude_globs"].contains(&k.as_str()) {
            let got = got.as_mut().and_then(Value::as_object_mut).unwrap();
            let said = got.remove("description").unwrap();
            assert!(
                said.as_str().unwrap().contains("relative to"),
                "{k}: {said}"
            );
            want.as_object_mut().unwrap().remove("description");
        }
        assert_eq!(got, Some(want), "property {k}");
    }
    let mut extra: Vec<&String> = props
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    extra.sort();
    assert_eq!(extra, ["base_dir", "group_by_file"]);
    assert!(schema.get("description").is_none());
}

#[test]
fn response_schema_matches_the_contract_plus_honest_budgets() {
    let schema = crate::function::schema_of::<super::SearchOutput>();
    assert_eq!(schema["title"], "SearchOutput");
    let expected: Value = serde_json::from_str(CONTRACT_RESPONSE_DEFINITIONS).unwrap();
    let expected = crate::testkit::defs_as_registered(expected, false);
    let mut definitions = schema["$defs"].clone();
    // beyond the contract: each content match carries its file's revision
    let revision = definitions["ContentMatch"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("revision")
        .expect("ContentMatch.revision");
    assert_eq!(revision["type"], json!(["string", "null"]));
    assert!(
        revision["description"]
            .as_str()
            .unwrap()
            .contains("expected_revision")
    );
    for (k, v) in expected.as_object().unwrap() {
        assert_eq!(
            numbers_as_f64(&definitions[k]),
            numbers_as_f64(v),
            "definition {k}"
        );
    }
    assert_eq!(
        schema["properties"]["truncated"]["description"],
        "True if results were cut off — either match list hit the `max_matches` cap, or the \
         response hit the `search_response_budget_bytes` byte budget. When true, refine the \
         query or add include_globs rather than paginate."
    );
    assert_eq!(
        schema["properties"]["content_matches"],
        json!({"items": {"$ref": "#/$defs/ContentMatch"}, "type": "array"})
    );
    assert_eq!(
        schema["required"],
        json!([
            "content_matches",
            "files_scanned",
            "path_matches",
            "truncated"
        ])
    );
    assert!(schema["properties"]["stop_reason"].is_object());
}

const CONTRACT_REQUEST_PROPERTIES: &str = r#"{
  "context_lines_after": {"default": null, "description": "Lines of context after each content match; same rules as `context_lines_before`.", "format": "uint32", "minimum": 0, "type": ["integer", "null"]},
  "context_lines_before": {"default": null, "description": "Lines of context before each content match (max 10, C210 above); truncated to max_line_bytes and counted in the budget. Default 0.", "format": "uint32", "minimum": 0, "type": ["integer", "null"]},
  "exclude_globs": {"default": [], "description": "Glob patterns (same relative-to-root matching) that exclude paths.", "items": {"type": "string"}, "type": "array"},
  "fuzzy_paths": {"default": false, "description": "Rank path matches by fuzzy subsequence score (quick-open style) instead of substring/regex matching; `path_matches` then comes back best first. Content matching is unaffected.", "type": "boolean"},
  "ignore_case": {"default": false, "type": "boolean"},
  "include_globs": {"default": [], "description": "Root-relative glob patterns paths must match; empty = everything.", "items": {"type": "string"}, "type": "array"},
  "include_hidden": {"default": true, "description": "Walk dot-files and dot-folders (`.github`, `.env`, …); default true. `false` leaves them out, the way an editor's quick open does.", "type": "boolean"},
  "max_line_bytes": {"default": null, "description": "Bytes per line to consider when scanning content; longer lines are truncated for the match snippet.", "format": "uint32", "minimum": 0, "type": ["integer", "null"]},
  "max_matches": {"default": null, "description": "Optional explicit cap. Falls back to config when unset.", "format": "uint32", "minimum": 0, "type": ["integer", "null"]},
  "path": {"default": ".", "description": "Folder to search (default `.`); globs match relative to its root, result paths are absolute.", "type": "string"},
  "query": {"description": "Pattern to search for. Treated as a regex when `regex: true`, otherwise as a literal substring. May be empty only when `search_content` is false: a path-only search with no query lists every path (with `fuzzy_paths`, shallow and short paths first).", "type": "string"},
  "regex": {"default": false, "type": "boolean"},
  "respect_gitignore": {"default": false, "description": "Honour `.gitignore`/`.ignore` rules (inside a Git repository) while walking, the way an editor's search does; default false keeps every non-excluded file searchable.", "type": "boolean"},
  "search_content": {"default": true, "description": "Search file contents (default true).", "type": "boolean"},
  "search_paths": {"default": true, "description": "Search file paths (default true).", "type": "boolean"},
  "use_default_excludes": {"default": true, "description": "Skip paths matching default_exclude_globs (.git, node_modules, …; see coder::info) in content and path results; false searches inside them.", "type": "boolean"}
}"#;

const CONTRACT_RESPONSE_DEFINITIONS: &str = r##"{
  "ContentMatch": {
    "properties": {
      "after": {"description": "Context lines immediately after the matched line — same file only, in file order, each truncated to `max_line_bytes`. Omitted when empty (no `context_lines_after` requested, or the match is at the end of the file).", "items": {"type": "string"}, "type": ["array", "null"]},
      "before": {"description": "Context lines immediately before the matched line — same file only, in file order, each truncated to `max_line_bytes`. Omitted when empty (no `context_lines_before` requested, or the match is at the start of the file).", "items": {"type": "string"}, "type": ["array", "null"]},
      "column": {"format": "uint32", "minimum": 0, "type": "integer"},
      "line": {"format": "uint32", "minimum": 0, "type": "integer"},
      "path": {"description": "Absolute path under the canonical parent; symlinks at the entry itself are not resolved. Operations on it re-validate through the jail.", "type": "string"},
      "text": {"description": "Matched line; truncated to `max_line_bytes` and never spans newlines.", "type": "string"}
    },
    "required": ["column", "line", "path", "text"],
    "type": "object"
  },
  "PathMatch": {
    "properties": {
      "kind": {"allOf": [{"$ref": "#/definitions/PathMatchKind"}], "description": "What matched: `file` or `dir`. Directories match by NAME only — content search never reads them."},
      "path": {"description": "Absolute path under the canonical parent; symlinks at the entry itself are not resolved. Operations on it re-validate through the jail.", "type": "string"}
    },
    "required": ["kind", "path"],
    "type": "object"
  },
  "PathMatchKind": {"enum": ["file", "dir"], "type": "string"}
}"##;

#[test]
fn a_cancelled_search_stops_walking_and_scanning() {
    let t = tree(&[("a.txt", "hit\n"), ("b.txt", "hit\n")]);
    let rt = t.services.live.snapshot();
    let req: super::SearchInput = serde_json::from_value(json!({"query": "hit"})).unwrap();
    let cancel = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let out = super::run(&rt, None, req, cancel).unwrap();
    assert!(out.content_matches.is_empty());
    assert!(out.path_matches.is_empty());
    assert_eq!(out.files_scanned, 0);
}

/// Exclude globs that leave exactly one top-level name, `proc`, to walk,
/// and exclude nothing below it (`*` and `?` match `/` too).
fn only_proc(path: &str) -> Value {
    json!({"query": "cpuinfo", "path": path, "search_content": false,
           "exclude_globs": ["[!p]*", "p", "p[!r]*", "pr", "pr[!o]*", "pro", "pro[!c]*",
                             "proc[!/]*"]})
}

#[tokio::test]
async fn a_folder_named_proc_is_searched_below_the_filesystem_root() {
    // the globs leave `proc` to the walk, and only the filesystem root's
    // own `/proc` is left out: a tree's `proc` is searched like any folder
    let t = tree(&[
        ("proc/cpuinfo", "x\n"),
        ("sys/cpuinfo", "x\n"),
        ("procs/cpuinfo", "x\n"),
        ("pro/cpuinfo", "x\n"),
    ]);
    let out = t
        .call(only_proc(&t.root.display().to_string()))
        .await
        .unwrap();
    assert_eq!(
        out["path_matches"],
        json!([{"kind": "file", "path": t.root.join("proc/cpuinfo").display().to_string()}])
    );
}

#[tokio::test]
async fn a_search_from_the_filesystem_root_leaves_out_proc() {
    // The same request from `/`: `/proc/cpuinfo` (there on every Linux)
    // would match, and nothing else on the host is walked, as the globs
    // leave only `/proc` (the test above shows they do not exclude it).
    assert!(Path::new("/proc/cpuinfo").exists());
    let journal = TempDir::new().unwrap();
    let mut cfg = Config::zero_config();
    cfg.turns.data_dir = journal.path().to_path_buf();
    let services = Services::standalone(Runtime::build(cfg).unwrap());
    let out = Catalog::standard()
        .call(&services, "coder::search", only_proc("/"))
        .await
        .unwrap();
    assert_eq!(out["path_matches"], json!([]), "{out}");
}

#[tokio::test]
async fn every_content_match_carries_its_files_revision_for_an_edit_without_a_read() {
    let t = tree_with(
        &[("a.txt", "one\ntwo\none\n"), ("b.txt", "none\r\n")],
        |_, _| {},
    );
    let out = t.ok(content("one")).await;
    let matches = out["content_matches"].as_array().unwrap();
    assert_eq!(matches.len(), 3, "{out}");
    let rev_a = crate::coder::revision_of(b"one\ntwo\none\n");
    let rev_b = crate::coder::revision_of(b"none\r\n");
    for m in matches {
        let want = if m["path"].as_str().unwrap().ends_with("a.txt") {
            &rev_a
        } else {
            &rev_b
        };
        assert_eq!(m["revision"], json!(want), "{m}");
    }
    // the same revision coder::read-file reports, and it guards an edit
    let read = t
        .ok_fn(
            "coder::read-file",
            json!({"path": matches[0]["path"], "stat": true}),
        )
        .await;
    assert_eq!(read["revision"], matches[0]["revision"]);
    let edit = t
        .ok_fn(
            "coder::update-file",
            json!({"files": [{"path": matches[0]["path"], "expected_revision": matches[0]["revision"],
                   "ops": [{"op": "replace", "pattern": "two", "replacement": "2"}]}]}),
        )
        .await;
    assert_eq!(edit["results"][0]["success"], true, "{edit}");
}

/// A repeat search takes a settled file's revision from the cache of
/// revisions instead of hashing it again; a rewrite that keeps the size and
/// puts the modification time back still gets the new revision.
#[tokio::test]
async fn a_kept_revision_is_never_one_of_bytes_that_changed() {
    let t = tree(&[("k.txt", "keep TODO one\n")]);
    let p = t.root.join("k.txt");
    // settled: its change time older than the cache's racy window
    std::thread::sleep(super::revisions::RACY + std::time::Duration::from_millis(100));
    let first = t.ok(content("TODO")).await;
    let rev1 = crate::coder::revision_of(b"keep TODO one\n");
    assert_eq!(
        first["content_matches"][0]["revision"],
        json!(rev1),
        "{first}"
    );
    let md = std::fs::metadata(&p).unwrap();
    assert_eq!(
        super::revisions::REVISIONS.get(&md).as_deref(),
        Some(rev1.as_str()),
        "a settled file's revision is kept"
    );
    let again = t.ok(content("TODO")).await;
    assert_eq!(again["content_matches"][0]["revision"], json!(rev1));
    // same size, modification time put back: only the change time moves
    let mtime = md.modified().unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all(b"keep TODO two\n").unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(mtime))
            .unwrap();
    }
    let after = t.ok(content("TODO")).await;
    assert_eq!(
        after["content_matches"][0]["revision"],
        json!(crate::coder::revision_of(b"keep TODO two\n")),
        "{after}"
    );
    assert_eq!(after["content_matches"][0]["text"], "keep TODO two");
}

#[tokio::test]
async fn a_carriage_return_in_a_regex_says_dollar_already_ends_a_crlf_line() {
    let t = tree(&[("w.ini", "value = 512\r\nvalue = 5000\r\n")]);
    let e = t
        .call(json!({"query": "^value = 5[0-9]{2}\\r?$", "regex": true, "search_paths": false}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "C210");
    assert!(e.message.contains("drop the `\\r`"), "{}", e.message);
    // and without it the CRLF line is found, terminator excluded
    let out = t
        .ok(json!({"query": "^value = 5[0-9]{2}$", "regex": true, "search_paths": false}))
        .await;
    let m = out["content_matches"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{out}");
    assert_eq!(m[0]["text"], "value = 512");
}

#[tokio::test]
async fn grouped_matches_say_each_files_path_and_revision_once() {
    let body = |n: usize| {
        (0..n)
            .map(|i| format!("x = {i} # TODO\n"))
            .collect::<String>()
    };
    let (a, b, c) = (body(12), body(9), body(6));
    let t = tree(&[("pkg/a.py", &a), ("pkg/b.py", &b), ("pkg/c.py", &c)]);
    let mut req = content("TODO");
    let flat = t.ok(req.clone()).await;
    req["group_by_file"] = json!(true);
    let grouped = t.ok(req).await;
    assert_eq!(grouped["content_matches"], json!([]), "{grouped}");
    let files = grouped["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{grouped}");
    // the same matches, each file's path and revision said once
    let mut regrouped = Vec::new();
    for f in files {
        for m in f["matches"].as_array().unwrap() {
            assert!(
                m.get("path").is_none() && m.get("revision").is_none(),
                "{m}"
            );
            regrouped.push(json!({"path": f["path"], "revision": f["revision"],
                                  "line": m["line"], "column": m["column"], "text": m["text"]}));
        }
    }
    let mut flat_matches = flat["content_matches"].as_array().unwrap().clone();
    let key = |v: &Value| format!("{}:{}", v["path"], v["line"]);
    flat_matches.sort_by_key(key);
    regrouped.sort_by_key(key);
    assert_eq!(regrouped, flat_matches);
    let a_rev = files
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("a.py"))
        .unwrap()["revision"]
        .clone();
    assert_eq!(a_rev, crate::coder::revision_of(a.as_bytes()));
    // 27 matches: the grouped answer is well under the flat one
    let (f, g) = (flat.to_string().len(), grouped.to_string().len());
    assert!(g * 2 < f, "grouped {g} bytes vs flat {f}");
}

/// A process that ends with its one call (`ide call`) never starts an index
/// build beside its scan; a long-lived one starts one at its first search.
#[tokio::test]
async fn a_one_shot_process_builds_no_index() {
    let mut t = tree(&[("a.rs", "fn main() {}\n"), ("b.rs", "// TODO\n")]);
    let cfg = t.services.live.snapshot().config.clone();
    t.services = Services::one_shot(Runtime::build(cfg.clone()).unwrap());
    for _ in 0..2 {
        let out = t.ok(content("TODO")).await;
        assert_eq!(t.hits(&out), ["b.rs:1:4"]);
    }
    assert!(
        t.services.index.describe().is_empty(),
        "no root was indexed"
    );
    assert_eq!(t.services.index.served(), 0);
    // the same searches on a long-lived worker start a build at once
    t.services = Services::standalone(Runtime::build(cfg).unwrap());
    t.ok(content("TODO")).await;
    let services = t.services.clone();
    let (roots, settled) = tokio::task::spawn_blocking(move || {
        let roots = services.index.describe().len();
        (
            roots,
            services.index.settle(std::time::Duration::from_secs(300)),
        )
    })
    .await
    .unwrap();
    assert_eq!(roots, 1, "the first search started a build");
    assert!(settled);
}

/// The build thread gives way: the idle CPU class and the idle I/O class,
/// for that thread alone.
#[test]
fn an_index_build_runs_at_idle_priority() {
    let (policy, ioprio) = std::thread::spawn(|| {
        crate::index::at_idle_priority().expect("idle priority is open to any thread");
        // SAFETY: plain queries on the calling thread
        let policy = unsafe { libc::sched_getscheduler(0) };
        let ioprio =
            unsafe { libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_long, 0 as libc::c_long) };
        (policy, ioprio)
    })
    .join()
    .unwrap();
    assert_eq!(policy, libc::SCHED_IDLE);
    assert_eq!(ioprio >> 13, 3, "the idle I/O class");
    // the thread that asked is the only one changed
    assert_ne!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE);
}

/// A pattern the index cannot narrow says so; one it can does not.
#[tokio::test]
async fn a_pattern_with_no_literal_run_says_the_index_cannot_narrow_it() {
    let t = tree(&[("a.rs", "let AB_12 = 1;\n"), ("b.rs", "fn main() {}\n")]);
    let mut req = content(r"\b[A-Z]{2}_[0-9]{2}\b");
    req["regex"] = json!(true);
    let out = t.ok(req).await;
    assert_eq!(t.hits(&out), ["a.rs:1:5"]);
    let note = out["note"].as_str().unwrap();
    assert!(note.contains("cannot rule files out"), "{note}");
    assert!(note.contains("every file was read"), "{note}");
    for q in ["main", "AB_12"] {
        let out = t.ok(content(q)).await;
        assert!(out.get("note").is_none(), "{q}: {out}");
    }
}
