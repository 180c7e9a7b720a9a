//! End to end: the code-intelligence functions through the engine (stand-in
//! or real) and the real `ide` binary, in each of the nine languages, on
//! fixtures with nested classes, impl blocks, overloads, decorators,
//! generics, JSX, macros, syntax errors, CRLF and BOM files; their errors;
//! and the symbol edits.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::harness::Engine;
use support::ide_process::IdeProcess;

const T: Duration = Duration::from_secs(30);

/// (file, source, name paths its outline must hold).
const FIXTURES: &[(&str, &str, &[&str])] = &[
    (
        "py/shapes.py",
        "import math\n\n\nclass Shape:\n    class Meta:\n        pass\n\n    @property\n    def area(self):\n        return math.pi\n\n\ndef make(kind):\n    return Shape()\n",
        &["Shape", "Shape/Meta", "Shape/area", "make"],
    ),
    (
        "py/broken.py",
        "def fine():\n    pass\n\ndef broken(:\n    pass\n\nclass After:\n    def m(self): pass\n",
        &["fine", "After", "After/m"],
    ),
    (
        "rs/lib.rs",
        "/// A parser.\n#[derive(Debug)]\npub struct Parser<T> { pos: T }\n\nimpl<T: Copy> Parser<T> {\n    pub fn parse_expr(&self) -> T { self.pos }\n}\n\nmacro_rules! square { ($x:expr) => { $x * $x }; }\n\npub trait Shape { fn area(&self) -> f64; }\n",
        &[
            "Parser",
            "Parser/pos",
            "Parser/parse_expr",
            "square",
            "Shape",
            "Shape/area",
        ],
    ),
    (
        "ts/box.ts",
        "export interface HasArea { area(): number }\nexport function pick(a: string): string;\nexport function pick(a: number): number;\nexport function pick(a: any) { return a; }\nexport class Box<T> implements HasArea {\n  constructor(private v: T) {}\n  area(): number { return 1; }\n}\n",
        &[
            "HasArea",
            "HasArea/area",
            "pick",
            "Box",
            "Box/constructor",
            "Box/area",
        ],
    ),
    (
        "ts/App.tsx",
        "import React from 'react';\nexport function App(props: { name: string }) {\n  return <div className=\"x\">{props.name}<Child /></div>;\n}\nclass Child extends React.Component { render() { return <span />; } }\n",
        &["App", "Child", "Child/render"],
    ),
    (
        "js/widget.jsx",
        "export const Widget = ({ label }) => <button>{label}</button>;\nexport class Store { get(key) { return key; } }\n",
        &["Widget", "Store", "Store/get"],
    ),
    (
        "go/parser.go",
        "package p\n\ntype Parser struct {\n\tpos int\n}\n\nfunc (p *Parser) Parse() int { return p.pos }\n\nfunc Map[T any, U any](xs []T, f func(T) U) []U { return nil }\n",
        &["Parser", "Parser/pos", "Parser/Parse", "Map"],
    ),
    (
        "java/A.java",
        "package a;\n\n@Deprecated\npublic class A<T> {\n  public A() {}\n  void f(int x) {}\n  void f(String s) {}\n  static class Inner { void g() {} }\n}\n",
        &["A", "A/A", "A/f", "A/Inner", "A/Inner/g"],
    ),
    (
        "c/point.c",
        "#include <stdio.h>\n#define SQUARE(x) ((x) * (x))\ntypedef struct Point { int x, y; } Point;\nstatic int norm(const Point *p) { return SQUARE(p->x); }\n",
        &["SQUARE", "Point", "Point/x", "Point/y", "norm"],
    ),
    (
        "cpp/parser.hpp",
        "namespace ns {\ntemplate <typename T>\nclass Parser {\n public:\n  T parse();\n  int size() const { return 0; }\n};\n}\n",
        &["ns", "ns/Parser", "ns/Parser/parse", "ns/Parser/size"],
    ),
];

struct World {
    engine: Engine,
    ide: IdeProcess,
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

async fn world() -> World {
    let engine = Engine::start().await;
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("proj");
    for (rel, src, _) in FIXTURES {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, src).unwrap();
    }
    // a CRLF file with a BOM, and a protected one
    std::fs::write(
        root.join("py/crlf.py"),
        "\u{feff}class Win:\r\n    def run(self):\r\n        return 1\r\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/keys.py"), "def make(): pass\n").unwrap();
    let root = root.canonicalize().unwrap();
    let seed = dir.path().join("seed.yaml");
    std::fs::write(
        &seed,
        format!(
            "fs:\n  host_roots: [{}]\ncode:\n  non_accessible_globs: [\"**/secret/**\"]\n",
            root.display()
        ),
    )
    .unwrap();
    let ide = IdeProcess::spawn(
        &["--url", &engine.url(), "--config", seed.to_str().unwrap()],
        &[],
    );
    assert!(ide.wait_for_log("ide serving", T).await, "{}", ide.logs());
    assert!(engine.wait_for_ide(T).await);
    World {
        engine,
        ide,
        _dir: dir,
        root,
    }
}

fn name_paths(symbols: &Value, out: &mut Vec<String>) {
    for s in symbols.as_array().unwrap() {
        out.push(s["name_path"].as_str().unwrap().to_string());
        if let Some(c) = s.get("children") {
            name_paths(c, out);
        }
    }
}

#[tokio::test]
async fn symbols_in_every_language_through_the_engine() {
    let w = world().await;
    for (rel, _, want) in FIXTURES {
        let out = w
            .engine
            .call("coder::symbols", json!({"path": rel}))
            .await
            .unwrap_or_else(|e| panic!("{rel}: {e:?}"));
        let mut got = Vec::new();
        name_paths(&out["symbols"], &mut got);
        for np in *want {
            assert!(got.iter().any(|g| g == np), "{rel}: no {np} in {got:?}");
        }
        assert_eq!(out["has_errors"], rel.contains("broken"), "{rel}");
    }
    let crlf = w
        .engine
        .call("coder::symbols", json!({"path": "py/crlf.py"}))
        .await
        .unwrap();
    assert_eq!(crlf["symbols"][0]["children"][0]["name_path"], "Win/run");
    assert_eq!(crlf["symbols"][0]["children"][0]["line"], 2);
    // a folder: every source file, protected ones never
    let folder = w
        .engine
        .call("coder::symbols", json!({"path": ".", "depth": 0}))
        .await
        .unwrap();
    let files = folder["files"].to_string();
    assert!(
        files.contains("parser.go") && !files.contains("keys.py"),
        "{files}"
    );
    // info lists the languages
    let info = w.engine.call("coder::info", json!({})).await.unwrap();
    let langs: Vec<&str> = info["code"]["languages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        langs,
        [
            "python",
            "rust",
            "typescript",
            "tsx",
            "javascript",
            "go",
            "java",
            "c",
            "cpp"
        ]
    );
}

#[tokio::test]
async fn find_references_definition_and_map_through_the_engine() {
    let w = world().await;
    let e = &w.engine;
    // a served worker: the first call starts the content index's build;
    // the first once it is ready starts the symbol index's; then it serves
    let find = || async {
        let out = e
            .call(
                "coder::find-symbol",
                json!({"name_path": "Parser/parse_expr"}),
            )
            .await
            .unwrap();
        let m = &out["matches"][0];
        assert_eq!(m["path"], w.root.join("rs/lib.rs").display().to_string());
        assert_eq!(m["line"], 6);
        out["served_by"].as_str().unwrap().to_string()
    };
    assert_ne!(find().await, "symbol_index");
    assert!(
        w.ide.wait_for_log("search index built", T).await,
        "{}",
        w.ide.logs()
    );
    find().await;
    assert!(
        w.ide.wait_for_log("symbol index built", T).await,
        "{}",
        w.ide.logs()
    );
    let served = find().await;
    assert_eq!(served, "symbol_index", "{}", w.ide.logs());
    let out = e
        .call("coder::find-symbol", json!({"name_path": "pick[2]"}))
        .await
        .unwrap();
    assert_eq!(out["matches"][0]["line"], 4, "the third overload: {out}");
    let out = e
        .call("coder::find-symbol", json!({"name_path": "make"}))
        .await
        .unwrap();
    assert_eq!(
        out["total"], 1,
        "the protected make() is never found: {out}"
    );
    let out = e
        .call(
            "coder::references",
            json!({"symbol": "Shape", "path": "py"}),
        )
        .await
        .unwrap();
    let roles: Vec<&str> = out["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["definition", "reference"]);
    assert_eq!(out["language"], Value::Null);
    let def = e
        .call(
            "coder::definition",
            json!({"path": "py/shapes.py", "line": 14, "column": 12}),
        )
        .await
        .unwrap();
    assert_eq!(def["name"], "Shape");
    assert_eq!(def["locations"][0]["line"], 4);
    assert_eq!(def["precision"], "syntactic");
    let map = e
        .call("coder::map", json!({"budget_bytes": 2048}))
        .await
        .unwrap();
    assert!(
        map["map"].as_str().unwrap().contains("class Shape:"),
        "{map}"
    );
}

#[tokio::test]
async fn code_errors_are_the_coder_c_codes_and_protected_reads_like_missing() {
    let w = world().await;
    let e = &w.engine;
    let code = |r: Result<Value, iii_sdk::protocol::ErrorBody>| r.unwrap_err();
    let missing = code(
        e.call("coder::symbols", json!({"path": "secret/none.py"}))
            .await,
    );
    let denied = code(
        e.call("coder::symbols", json!({"path": "secret/keys.py"}))
            .await,
    );
    assert_eq!(missing.code, "C211");
    assert_eq!(denied.code, "C211");
    assert_eq!(
        denied.message.replace("keys", "X"),
        missing.message.replace("none", "X")
    );
    let folder = code(
        e.call(
            "coder::definition",
            json!({"path": "py", "line": 1, "column": 1}),
        )
        .await,
    );
    assert_eq!(folder.code, "C212");
    let range = code(
        e.call(
            "coder::references",
            json!({"path": "py/shapes.py", "line": 1, "column": 99}),
        )
        .await,
    );
    assert_eq!(range.code, "C210");
    assert!(
        range.message.contains("past the end of line 1"),
        "{}",
        range.message
    );
    let bad = code(
        e.call("coder::find-symbol", json!({"name_path": "a//b"}))
            .await,
    );
    assert_eq!(bad.code, "C210");
    let kind = code(
        e.call("coder::symbols", json!({"path": "py", "kinds": ["klass"]}))
            .await,
    );
    assert!(
        kind.code == "C210" && kind.message.contains("class"),
        "{}",
        kind.message
    );
    let unknown = code(
        e.call(
            "coder::update-file",
            json!({"files": [{"path": "py/shapes.py", "ops": [
                {"op": "replace_symbol", "name_path": "Shape/aera", "body": "x"}]}]}),
        )
        .await,
    );
    assert!(
        unknown.message.contains("Shape/area"),
        "{}",
        unknown.message
    );
}

#[tokio::test]
async fn symbol_edits_through_the_engine_are_one_revertable_turn() {
    let w = world().await;
    let e = &w.engine;
    let before = std::fs::read(w.root.join("rs/lib.rs")).unwrap();
    let out = e
        .call(
            "coder::update-file",
            json!({"turn_id": "t-sym", "files": [{"path": "rs/lib.rs", "ops": [
                {"op": "replace_symbol", "name_path": "Parser/parse_expr",
                 "body": "pub fn parse_expr(&self) -> T {\n    self.pos\n}\n"},
                {"op": "insert_before_symbol", "name_path": "/Shape", "content": "/// Shapes.\n"}
            ]}]}),
        )
        .await
        .unwrap();
    assert_eq!(out["results"][0]["success"], true, "{out}");
    let now = std::fs::read_to_string(w.root.join("rs/lib.rs")).unwrap();
    assert!(
        now.contains("impl<T: Copy> Parser<T> {\n    pub fn parse_expr(&self) -> T {\n        self.pos\n    }\n}"),
        "{now}"
    );
    assert!(now.contains("/// Shapes.\npub trait Shape"), "{now}");
    e.call("shell::turns::revert", json!({"turn_id": "t-sym"}))
        .await
        .unwrap();
    assert_eq!(std::fs::read(w.root.join("rs/lib.rs")).unwrap(), before);
}
