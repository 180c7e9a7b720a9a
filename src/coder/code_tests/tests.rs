//! The code-intelligence functions on a worker's services: answers, the
//! symbol index kept current by the disk's changes, errors, the policy,
//! and symbol edits with every guarantee of an edit.

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::WireError;
use crate::runtime::Runtime;
use crate::services::Services;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

struct Tree {
    _dirs: Vec<TempDir>,
    root: PathBuf,
    services: Arc<Services>,
}

const PARSER: &str = "\
import os
from .util import helper


class Parser:
    \"\"\"Parses.\"\"\"

    def __init__(self, text):
        self.text = text

    # the entry point
    @staticmethod
    def parse_expr(text):
        return helper(text)


def helper(x):
    return x
";

const USER: &str = "\
from pkg.parser import Parser, helper


def main():
    p = Parser('1')  # helper in a comment is no use
    return p.parse_expr('helper in a string is none either')
";

fn tree(files: &[(&str, &str)]) -> Tree {
    let dir = TempDir::new().unwrap();
    let journal = TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (rel, content) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    let mut cfg = Config::zero_config();
    cfg.fs.allow_unjailed = false;
    cfg.fs.host_roots = vec![root.clone()];
    cfg.turns.data_dir = journal.path().to_path_buf();
    cfg.code.non_accessible_globs = vec!["**/secret/**".into()];
    let services = Services::standalone(Runtime::build(cfg).unwrap());
    Tree {
        _dirs: vec![dir, journal],
        root,
        services,
    }
}

impl Tree {
    async fn call(&self, id: &str, req: Value) -> Result<Value, WireError> {
        Catalog::standard().call(&self.services, id, req).await
    }

    async fn ok(&self, id: &str, req: Value) -> Value {
        self.call(id, req.clone())
            .await
            .unwrap_or_else(|e| panic!("{id} {req}: {e}"))
    }

    fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    /// Wait for every index build of the worker to end (blocking work off
    /// the runtime).
    async fn settle(&self) {
        let s = self.services.clone();
        let ok = tokio::task::spawn_blocking(move || {
            s.index.settle(std::time::Duration::from_secs(120))
                && s.symbols.settle(std::time::Duration::from_secs(120))
        })
        .await
        .unwrap();
        assert!(ok, "index builds did not end");
    }

    /// find-symbol until the symbol index serves it (the first calls start
    /// the builds and scan).
    async fn find_indexed(&self, req: Value) -> Value {
        for _ in 0..4 {
            let out = self.ok("coder::find-symbol", req.clone()).await;
            if out["served_by"] == "symbol_index" {
                return out;
            }
            self.settle().await;
        }
        panic!("the symbol index never served {req}");
    }
}

fn rows(out: &Value, key: &str) -> Vec<String> {
    out[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let p = m["path"].as_str().unwrap_or("");
            let file = Path::new(p)
                .file_name()
                .map_or(String::new(), |f| f.to_string_lossy().into_owned());
            format!(
                "{file}:{}:{}:{}",
                m["line"],
                m["name_path"].as_str().or(m["role"].as_str()).unwrap_or(""),
                m["kind"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test]
async fn symbols_outline_a_file_with_its_revision_and_a_folder_by_depth() {
    let t = tree(&[
        ("pkg/parser.py", PARSER),
        ("pkg/user.py", USER),
        ("README.md", "# x\n"),
    ]);
    let out = t
        .ok("coder::symbols", json!({"path": "pkg/parser.py"}))
        .await;
    assert_eq!(out["language"], "python");
    assert_eq!(
        out["revision"],
        crate::coder::revision_of(PARSER.as_bytes())
    );
    let parser = &out["symbols"][0];
    assert_eq!(parser["name_path"], "Parser");
    assert_eq!(parser["children"][1]["name_path"], "Parser/parse_expr");
    assert_eq!(parser["children"][1]["line"], 13);
    let body = t
        .ok(
            "coder::symbols",
            json!({"path": "pkg/parser.py", "include_body": true, "kinds": ["method"]}),
        )
        .await;
    let m = &body["symbols"][0];
    assert_eq!(m["name"], "parse_expr");
    assert!(
        m["body"]
            .as_str()
            .unwrap()
            .starts_with("    # the entry point\n    @staticmethod\n"),
        "the body holds its comment and decorator: {m}"
    );
    let folder = t
        .ok("coder::symbols", json!({"path": "pkg", "depth": 0}))
        .await;
    let files = folder["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert!(
        files[0]["symbols"][0].get("children").is_none(),
        "depth 0: top level only"
    );
    let md = t.ok("coder::symbols", json!({"path": "README.md"})).await;
    assert_eq!(md["language"], Value::Null);
    assert!(md["note"].as_str().unwrap().contains("coder::info"));
    // a budget too small for everything degrades, never cuts JSON
    let small = t
        .ok(
            "coder::symbols",
            json!({"path": "pkg/parser.py", "max_answer_bytes": 400}),
        )
        .await;
    assert!(small["degraded"].is_string(), "{small}");
    assert!(serde_json::to_vec(&small).unwrap().len() <= 400);
}

#[tokio::test]
async fn the_symbol_index_answers_and_reflects_every_change_at_the_next_answer() {
    let t = tree(&[("pkg/parser.py", PARSER), ("pkg/user.py", USER)]);
    let first = t
        .ok(
            "coder::find-symbol",
            json!({"name_path": "Parser/parse_expr"}),
        )
        .await;
    assert_ne!(first["served_by"], "symbol_index");
    assert_eq!(
        rows(&first, "matches"),
        ["parser.py:13:Parser/parse_expr:method"]
    );
    let out = t
        .find_indexed(json!({"name_path": "Parser/parse_expr"}))
        .await;
    assert_eq!(
        rows(&out, "matches"),
        ["parser.py:13:Parser/parse_expr:method"]
    );
    assert_eq!(out["matches"][0]["signature"], "def parse_expr(text):");
    // written by another process: the next answer has it, at once
    std::fs::write(
        t.root.join("pkg/parser.py"),
        PARSER.replace("def parse_expr", "def parse_term"),
    )
    .unwrap();
    std::fs::write(
        t.root.join("pkg/more.py"),
        "class Parser:\n    def parse_expr(self): pass\n",
    )
    .unwrap();
    let out = t
        .ok(
            "coder::find-symbol",
            json!({"name_path": "Parser/parse_expr"}),
        )
        .await;
    assert_eq!(out["served_by"], "symbol_index");
    assert_eq!(
        rows(&out, "matches"),
        ["more.py:2:Parser/parse_expr:method"]
    );
    std::fs::remove_file(t.root.join("pkg/more.py")).unwrap();
    let out = t
        .ok("coder::find-symbol", json!({"name_path": "parse_expr"}))
        .await;
    assert!(out["matches"].as_array().unwrap().is_empty(), "{out}");
    // substring, absolute paths, kinds, overloads
    let out = t
        .ok(
            "coder::find-symbol",
            json!({"name_path": "PARSE_T", "substring": true}),
        )
        .await;
    assert_eq!(
        rows(&out, "matches"),
        ["parser.py:13:Parser/parse_term:method"]
    );
    let out = t
        .ok("coder::find-symbol", json!({"name_path": "/helper"}))
        .await;
    assert_eq!(rows(&out, "matches"), ["parser.py:17:helper:function"]);
    let out = t
        .ok(
            "coder::find-symbol",
            json!({"name_path": "Parser", "kinds": ["constructor"]}),
        )
        .await;
    assert!(out["matches"].as_array().unwrap().is_empty());
    // a protected file is never answered, by the index or otherwise
    std::fs::create_dir_all(t.root.join("secret")).unwrap();
    std::fs::write(t.root.join("secret/hidden.py"), "def parse_term(): pass\n").unwrap();
    let out = t
        .ok("coder::find-symbol", json!({"name_path": "parse_term"}))
        .await;
    assert_eq!(
        rows(&out, "matches"),
        ["parser.py:13:Parser/parse_term:method"]
    );
    let e = t
        .call("coder::symbols", json!({"path": "secret/hidden.py"}))
        .await
        .unwrap_err();
    let missing = t
        .call("coder::symbols", json!({"path": "secret/nothing.py"}))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code.as_str(), e.message.replace("hidden", "nothing")),
        (missing.code.as_str(), missing.message)
    );
}

#[tokio::test]
async fn references_and_definitions_by_role_never_in_comments_or_strings() {
    let t = tree(&[("pkg/parser.py", PARSER), ("pkg/user.py", USER)]);
    let out = t
        .ok(
            "coder::references",
            json!({"symbol": "helper", "path": "pkg"}),
        )
        .await;
    assert_eq!(
        rows(&out, "references"),
        [
            "parser.py:2:import:",
            "parser.py:14:reference:",
            "parser.py:17:definition:",
            "user.py:1:import:",
        ]
    );
    assert_eq!(out["precision"], "syntactic");
    // the call in user.py (line 5, column 9) leads to the class
    let out = t
        .ok(
            "coder::definition",
            json!({"path": "pkg/user.py", "line": 5, "column": 9}),
        )
        .await;
    assert_eq!(out["name"], "Parser");
    assert_eq!(out["locations"][0]["found_in"], "imported");
    assert_eq!(out["locations"][0]["line"], 5);
    assert_eq!(out["locations"][0]["kind"], "class");
    // by position, the same occurrences as by name
    let by_pos = t
        .ok(
            "coder::references",
            json!({"path": "pkg/parser.py", "line": 17, "column": 5, "scope": "pkg"}),
        )
        .await;
    assert_eq!(
        by_pos["references"],
        t.ok(
            "coder::references",
            json!({"symbol": "helper", "path": "pkg"})
        )
        .await["references"]
    );
    // positions on nothing, out of range, a folder: clear errors
    let e = t
        .call(
            "coder::definition",
            json!({"path": "pkg/user.py", "line": 3, "column": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "C210");
    assert!(e.message.contains("no identifier"), "{}", e.message);
    let e = t
        .call(
            "coder::definition",
            json!({"path": "pkg/user.py", "line": 99, "column": 1}),
        )
        .await
        .unwrap_err();
    assert!(
        e.code == "C210" && e.message.contains("6 lines"),
        "{}",
        e.message
    );
    let e = t
        .call(
            "coder::definition",
            json!({"path": "pkg", "line": 1, "column": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "C212");
    let e = t
        .call(
            "coder::references",
            json!({"path": "nope.py", "line": 1, "column": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "C211");
}

#[tokio::test]
async fn symbol_edits_keep_the_files_shape_are_guarded_journaled_and_refused_while_used() {
    let crlf = format!("\u{feff}{}", PARSER.replace('\n', "\r\n"));
    let t = tree(&[("pkg/parser.py", &crlf), ("pkg/user.py", USER)]);
    let path = t.p("pkg/parser.py");
    let rev = crate::coder::revision_of(crlf.as_bytes());
    let out = t
        .ok(
            "coder::update-file",
            json!({"files": [{"path": path, "expected_revision": rev, "ops": [
                {"op": "replace_symbol", "name_path": "Parser/parse_expr",
                 "body": "@staticmethod\ndef parse_expr(text):\n    return text.strip()\n"},
                {"op": "insert_after_symbol", "name_path": "/helper", "content": "\n\ndef other():\n    pass"}
            ]}]}),
        )
        .await;
    assert_eq!(out["results"][0]["success"], true, "{out}");
    let now = std::fs::read_to_string(t.root.join("pkg/parser.py")).unwrap();
    assert!(
        now.starts_with('\u{feff}') && !now.replace("\r\n", "").contains('\n'),
        "BOM and CRLF kept"
    );
    let lf = now.trim_start_matches('\u{feff}').replace("\r\n", "\n");
    assert!(lf.contains("    @staticmethod\n    def parse_expr(text):\n        return text.strip()\n\n\ndef helper"), "{lf}");
    assert!(
        !lf.contains("# the entry point"),
        "the comment went with the symbol it belongs to"
    );
    assert!(
        lf.ends_with("    return x\n\n\ndef other():\n    pass\n"),
        "{lf}"
    );
    // the stale revision writes nothing
    let e = t
        .call(
            "coder::update-file",
            json!({"files": [{"path": path, "expected_revision": rev, "ops": [
                {"op": "remove_symbol", "name_path": "other"}]}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "C221");
    assert_eq!(
        std::fs::read_to_string(t.root.join("pkg/parser.py")).unwrap(),
        now
    );
    // helper is used in user.py: refused, naming where; force removes it
    let e = t
        .call(
            "coder::update-file",
            json!({"files": [{"path": path, "ops": [{"op": "remove_symbol", "name_path": "helper"}]}]}),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("user.py:1"), "{}", e.message);
    let e = t
        .call(
            "coder::update-file",
            json!({"files": [{"path": path, "ops": [{"op": "replace_symbol", "name_path": "Parser/parse", "body": "x"}]}]}),
        )
        .await
        .unwrap_err();
    assert!(
        e.message.contains("Parser/parse_expr (line"),
        "closest names: {}",
        e.message
    );
    let out = t
        .ok(
            "coder::update-file",
            json!({"turn_id": "t-rm", "files": [{"path": path, "ops": [
                {"op": "remove_symbol", "name_path": "helper", "force": true}]}]}),
        )
        .await;
    assert_eq!(out["results"][0]["success"], true);
    assert!(
        !std::fs::read_to_string(t.root.join("pkg/parser.py"))
            .unwrap()
            .contains("def helper")
    );
    // one turn, revertable to the byte
    t.ok("shell::turns::revert", json!({"turn_id": "t-rm"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(t.root.join("pkg/parser.py")).unwrap(),
        now
    );
}

#[tokio::test]
async fn the_map_ranks_what_the_code_uses_and_fits_its_budget() {
    let t = tree(&[
        ("pkg/parser.py", PARSER),
        ("pkg/user.py", USER),
        (
            "pkg/unused.py",
            "def lonely_function_nobody_calls():\n    pass\n",
        ),
    ]);
    for _ in 0..3 {
        let out = t.ok("coder::map", json!({"budget_bytes": 4096})).await;
        let map = out["map"].as_str().unwrap();
        // Parser is used by user.py: its file comes before the unused one
        let parser = map.find("pkg/parser.py:").expect("parser listed");
        let unused = map.find("pkg/unused.py:").unwrap_or(usize::MAX);
        assert!(parser < unused, "{map}");
        assert!(map.contains("  5: class Parser:"), "{map}");
        assert!(out["served_by"] == "scan" || out["served_by"] == "symbol_index");
        t.settle().await;
    }
    let out = t.ok("coder::map", json!({})).await;
    assert_eq!(out["served_by"], "symbol_index", "{out}");
    let small = t.ok("coder::map", json!({"budget_bytes": 60})).await;
    assert!(small["map"].as_str().unwrap().len() <= 60, "{small}");
    assert!(small["listed"].as_u64().unwrap() < out["listed"].as_u64().unwrap());
    let focused = t
        .ok(
            "coder::map",
            json!({"budget_bytes": 4096, "focus": {"paths": ["pkg/unused.py"]}}),
        )
        .await;
    assert!(
        focused["map"]
            .as_str()
            .unwrap()
            .starts_with("pkg/unused.py:"),
        "{focused}"
    );
}

#[tokio::test]
async fn a_restarted_worker_takes_its_symbols_from_the_saved_index() {
    let t = tree(&[("pkg/parser.py", PARSER), ("pkg/user.py", USER)]);
    // only files whose change time was settled when read are saved (a
    // write in the same clock tick leaves a stamp as it was): the
    // fixture's must age past that window, which no event announces
    std::thread::sleep(crate::index::persist::RACY + std::time::Duration::from_millis(200));
    t.find_indexed(json!({"name_path": "helper"})).await;
    // a second worker on the same configuration and state directory
    let again = Tree {
        _dirs: Vec::new(),
        root: t.root.clone(),
        services: Services::standalone(
            Runtime::build(t.services.live.snapshot().config.clone()).unwrap(),
        ),
    };
    let out = again.find_indexed(json!({"name_path": "helper"})).await;
    assert_eq!(rows(&out, "matches"), ["parser.py:17:helper:function"]);
    let described = again.services.symbols.describe();
    assert_eq!(described[0].1.reused, 2, "{described:?}");
    // a damaged saved table is ignored, not trusted: every file is parsed
    let dir = t.services.live.snapshot().turns_dir.join("symbol-index");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let mut b = std::fs::read(&p).unwrap();
        let n = b.len() / 2;
        b[n] ^= 0xff;
        std::fs::write(&p, b).unwrap();
    }
    let third = Tree {
        _dirs: Vec::new(),
        root: t.root.clone(),
        services: Services::standalone(
            Runtime::build(t.services.live.snapshot().config.clone()).unwrap(),
        ),
    };
    let out = third.find_indexed(json!({"name_path": "helper"})).await;
    assert_eq!(rows(&out, "matches"), ["parser.py:17:helper:function"]);
    assert_eq!(third.services.symbols.describe()[0].1.reused, 0);
}

#[tokio::test]
async fn references_after_a_rewrite_are_those_of_the_new_bytes() {
    let t = tree(&[("a.py", "foo = 1\nbar = foo\n")]);
    let refs = |out: &Value| {
        out["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["line"].as_u64().unwrap(), r["column"].as_u64().unwrap()))
            .collect::<Vec<_>>()
    };
    let q = json!({"symbol": "foo", "path": "."});
    assert_eq!(
        refs(&t.ok("coder::references", q.clone()).await),
        [(1, 1), (2, 7)]
    );
    assert_eq!(
        refs(&t.ok("coder::references", q.clone()).await),
        [(1, 1), (2, 7)]
    );
    // the same size, the identifiers moved, the modification time put back
    let p = t.root.join("a.py");
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    std::fs::write(&p, "bar = 1\nfoo = bar\n").unwrap();
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
    assert_eq!(refs(&t.ok("coder::references", q).await), [(2, 1)]);
}
