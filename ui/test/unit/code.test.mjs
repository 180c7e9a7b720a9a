import { test } from "node:test";
import assert from "node:assert/strict";
import {
  CodeModel,
  byteColumn,
  charIndex,
  diagnosticRange,
  groupByFile,
  hoverBlocks,
  isCode,
  severityCounts,
  splitMatch,
  symbolChain,
} from "../../src/models/code.js";

test("byte columns and editor indexes convert both ways, multi-byte characters included", () => {
  const line = "x = 'é€😀' + name";
  // every UTF-16 index that starts a character survives the round trip
  for (let i = 0; i <= line.length; i++) {
    const cp = line.codePointAt(i - 1) ?? 0;
    if (i > 0 && cp > 0xffff && line.charCodeAt(i - 1) >= 0xd800 && line.charCodeAt(i - 1) < 0xdc00) continue;
    assert.equal(charIndex(line, byteColumn(line, i)), i, `index ${i}`);
  }
  // `name` starts after 2+1+2+3+4+1+3 bytes: é is 2, € 3, 😀 4
  const nameAt = line.indexOf("name");
  assert.equal(byteColumn(line, nameAt), Buffer.byteLength(line.slice(0, nameAt)) + 1);
  // a column inside a character lands on it; past the end lands at the end
  assert.equal(charIndex("€x", 2), 0);
  assert.equal(charIndex("ab", 99), 2);
  assert.equal(charIndex("ab", 0), 0);
});

test("the symbol chain at a line is outermost first, and empty outside every symbol", () => {
  const syms = [
    { name: "Parser", name_path: "Parser", kind: "class", line: 3, column: 7, end_line: 20, children: [
      { name: "parse_expr", name_path: "Parser/parse_expr", kind: "method", line: 5, column: 9, end_line: 9, children: [] },
      { name: "parse_stmt", name_path: "Parser/parse_stmt", kind: "method", line: 11, column: 9, end_line: 19, children: [] },
    ] },
    { name: "main", name_path: "main", kind: "function", line: 22, column: 5, end_line: 25 },
  ];
  assert.deepEqual(symbolChain(syms, 7).map((s) => s.name), ["Parser", "parse_expr"]);
  assert.deepEqual(symbolChain(syms, 10).map((s) => s.name), ["Parser"]);
  assert.deepEqual(symbolChain(syms, 22).map((s) => s.name), ["main"]);
  assert.deepEqual(symbolChain(syms, 1), []);
  assert.deepEqual(symbolChain(syms, 21), []);
});

test("references group by file in answer order; a match splits at its byte column", () => {
  const abs = (/** @type {string} */ p) => (p.startsWith("/") ? p : `/r/${p}`);
  const g = groupByFile(
    [
      { path: "/r/a.py", line: 1, column: 1 },
      { path: "b.py", line: 4, column: 5 },
      { path: "/r/a.py", line: 9, column: 3 },
    ],
    abs,
  );
  assert.deepEqual(
    g.map((x) => [x.path, x.refs.map((r) => r.line)]),
    [
      ["/r/a.py", [1, 9]],
      ["/r/b.py", [4]],
    ],
  );
  assert.deepEqual(splitMatch("s = 'é'; parse(s)", 11, "parse"), ["s = 'é'; ", "parse", "(s)"]);
  assert.deepEqual(splitMatch("short", 40, "parse"), ["short", "", ""]);
});

test("a diagnostic's range is clamped to the text it is shown on", () => {
  const lines = ["def f():", "    return 'é' + 1", ""];
  const starts = [0];
  for (const l of lines) starts.push(starts[starts.length - 1] + l.length + 1);
  const at = (/** @type {any} */ d) => diagnosticRange((n) => lines[n - 1], (n) => starts[n - 1], lines.length, d);
  // `1` on line 2: byte column 19 ('é' is 2 bytes), UTF-16 index 17
  assert.deepEqual(at({ line: 2, column: 19, end_line: 2, end_column: 20 }), { from: starts[1] + 17, to: starts[1] + 18 });
  // past the last line: the end of the text, never an exception
  const past = at({ line: 9, column: 1, end_line: 9, end_column: 5 });
  assert.equal(past.from, starts[2]);
  assert.ok(past.to >= past.from);
  assert.deepEqual(severityCounts([{ severity: "error" }, { severity: "warning" }, { severity: "hint" }, { severity: "error" }].map((x) => /** @type {any} */ (x))), { error: 2, warning: 1, info: 1 });
});

test("hover markdown: code fences become code blocks, the rest text", () => {
  assert.deepEqual(hoverBlocks("```python\n(method) def parse(self, text: str) -> int\n```\n---\nParse the text."), [
    { code: true, text: "(method) def parse(self, text: str) -> int" },
    { code: false, text: "Parse the text." },
  ]);
  assert.deepEqual(hoverBlocks("plain words"), [{ code: false, text: "plain words" }]);
  assert.deepEqual(hoverBlocks(""), []);
});

test("the model asks diagnostics for code files only, notes a missing server once, and counts problems", async () => {
  /** @type {any[]} */
  const calls = [];
  const files = /** @type {Record<string, any>} */ ({
    "/r/a.py": { path: "/r/a.py", revision: "r1", language_server: "python", diagnostics: [{ severity: "error", line: 2, column: 1, end_line: 2, end_column: 4, message: "bad" }], stale: false },
    "/r/b.rs": { path: "/r/b.rs", revision: "r2", language_server: null, diagnostics: [], stale: false, error: "no language server for .rs files: install it" },
  });
  const model = new CodeModel(
    async (id, p) => {
      calls.push([id, p]);
      return { files: p.paths.map((/** @type {string} */ x) => files[x]) };
    },
    "/r",
    (p) => p,
  );
  await model.diagnose(["/r/a.py", "/r/README.md", "/r/b.rs", "/r/a.py"]);
  // one call per code file (README.md is not one), the duplicate asked once
  assert.deepEqual(calls, [
    ["coder::diagnostics", { paths: ["/r/a.py"], wait_ms: 5000 }],
    ["coder::diagnostics", { paths: ["/r/b.rs"], wait_ms: 5000 }],
  ]);
  assert.deepEqual(model.counts(), { error: 1, warning: 0, info: 0 });
  assert.equal(model.problems()[0].path, "/r/a.py");
  assert.equal(model.serverNote?.key, "rs");
  assert.ok(model.serverless.has("rs"));
  model.dismissServerNote();
  await model.diagnose(["/r/b.rs"]);
  assert.equal(model.serverNote, null, "said once");
  assert.ok(isCode("/x/y.tsx") && !isCode("/x/README.md") && !isCode("/x/Makefile"));
});

test("the outline is asked once per revision", async () => {
  let n = 0;
  const model = new CodeModel(
    async () => {
      n++;
      return { path: "/r/a.py", language: "python", revision: "r1", symbols: [{ name: "f", name_path: "f", kind: "function", line: 1, column: 5, end_line: 2 }] };
    },
    "/r",
    (p) => p,
  );
  // asked while opening (revision unknown), then for the revision the read found: one call
  await Promise.all([model.loadOutline("/r/a.py", null), model.loadOutline("/r/a.py", "r1")]);
  await model.loadOutline("/r/a.py", "r1");
  assert.equal(n, 1);
  // a new revision asks again (the fake answers r1 still: asked once more per call)
  await model.loadOutline("/r/a.py", "r2");
  assert.equal(n, 2);
  assert.equal(model.outlines.get("/r/a.py")?.symbols[0].name, "f");
});
