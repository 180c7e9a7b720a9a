import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cardModel, commandLine, echoRows, findRun, isCardFunction, jobModel, runningModel, splitLines } from "../../src/models/cards.js";
import { registerCardRenderer } from "../../src/cards/register.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "cards");
/** @param {string} name */
const fixture = (name) => JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));

test("every recorded call gets a card of its kind; a recorded failure an error card", () => {
  const names = readdirSync(dir).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5));
  assert.ok(names.length >= 20, `fixtures: ${names}`);
  const kinds = { "update-file": "update", "create-file": "create", "read-file": "read", search: "search", exec: "exec", exec_bg: "exec_bg", status: "status" };
  for (const name of names) {
    const m = cardModel(fixture(name));
    assert.ok(m, `${name} has a card`);
    const expected = name.endsWith(".error") ? "error" : kinds[/** @type {keyof typeof kinds} */ (name.split(".")[0])];
    assert.equal(m.kind, expected, name);
  }
});

test("update-file: an inline edit is a unified diff (old line, new line), replace sites join into one block", () => {
  const m = cardModel(fixture("update-file.ok"));
  const f = m.files[0];
  assert.equal(f.success, true);
  assert.match(f.changeId, /\S/);
  assert.equal(f.echoes.length, 2, "one block per op");
  const edit = f.echoes[0].rows;
  const del = edit.findIndex((/** @type {any} */ r) => r.kind === "del");
  assert.deepEqual(edit[del], { kind: "del", text: "    a + b" });
  assert.deepEqual(edit[del + 1], { kind: "line", line: 3, text: "    a.wrapping_add(b)", added: true });
  assert.equal(edit.filter((/** @type {any} */ r) => r.kind === "line" && r.added).length, 1);
  const rep = f.echoes[1];
  assert.equal(rep.totalReplacements, 4);
  assert.ok(rep.rows.filter((/** @type {any} */ r) => r.kind === "line").every((/** @type {any} */ r) => r.added));
  // lines 6 and 7 are adjacent, 7 → 14 is a break of 6 lines
  assert.deepEqual(
    rep.rows.map((/** @type {any} */ r) => (r.kind === "gap" ? `gap ${r.count}` : r.line)),
    [6, 7, "gap 6", 14, 15],
  );
});

test("update-file: an elided echo numbers the lines after the gap from elided_after", () => {
  const m = cardModel(fixture("update-file.elided"));
  const rows = m.files[0].echoes[0].rows;
  const gap = rows.findIndex((/** @type {any} */ r) => r.kind === "gap");
  assert.equal(gap, 6);
  assert.equal(rows[gap].count, 8);
  assert.deepEqual(rows[gap - 1], { kind: "line", line: 6, text: "    row(3),", added: true });
  assert.deepEqual(rows[gap + 1], { kind: "line", line: 15, text: "    row(12),", added: true });
  // the 16 new rows are marked (the ones shown), the context is not
  assert.deepEqual(
    rows.filter((/** @type {any} */ r) => r.kind === "line" && !r.added).map((/** @type {any} */ r) => r.line),
    [1, 2, 19, 20],
  );
});

test("update-file: per-entry errors in a batch", () => {
  const m = cardModel(fixture("update-file.batch-error"));
  assert.equal(m.files.length, 3);
  assert.equal(m.failed, 2);
  assert.equal(m.files[1].error.code, "C211");
  assert.equal(m.files[0].echoes[0].rows.find((/** @type {any} */ r) => r.added)?.text, "Edited by an agent.");
});

test("echo gaps from the 0.12 wire (elided without elided_after) and a missing run", () => {
  const rows = echoRows({ op_index: 0, from_line: 10, lines: ["a", "b", "c", "d"], elided: 5 }, { op: "insert", at_line: 10, content: "zz\n" });
  assert.deepEqual(rows.map((r) => (r.kind === "line" ? r.line : r.kind)), [10, 11, "gap", 17, 18]);
  assert.ok(rows.every((r) => r.kind !== "line" || !r.added));
  assert.equal(findRun(new Map([[1, "x"]]), 1, 1, [""], true), null);
  // an edit whose new text is not in the echo: its old text goes on top
  const top = echoRows({ op_index: 0, from_line: 1, lines: ["p", "q"] }, { op: "edit", old_text: "gone\n", new_text: "" });
  assert.deepEqual(top[0], { kind: "del", text: "gone" });
});

test("create-file: content preview from the input, per-entry error", () => {
  const ok = cardModel(fixture("create-file.ok"));
  assert.equal(ok.files[0].bytesWritten, Buffer.byteLength(fixture("create-file.ok").input.files[0].content));
  assert.deepEqual(ok.files[0].lines, ["pub fn hello() -> &'static str {", '    "hello"', "}"]);
  const batch = cardModel(fixture("create-file.batch-error"));
  assert.equal(batch.failed, 1);
  assert.equal(batch.files[1].error.code, "C213");
  assert.deepEqual(batch.files[1].lines, []);
});

test("read-file: window numbering from line_from, numbered reads from their prefixes, stat, batch errors", () => {
  const w = cardModel(fixture("read-file.window")).entries[0];
  assert.equal(w.lines[0].line, 2);
  assert.equal(w.lines.length, 5);
  assert.equal(w.totalLines, 17);
  const n = cardModel(fixture("read-file.numbered")).entries[0];
  assert.deepEqual(n.lines[0], { line: 1, text: "/// Adds two numbers." });
  const s = cardModel(fixture("read-file.stat")).entries[0];
  assert.equal(s.stat, true);
  const b = cardModel(fixture("read-file.batch"));
  assert.equal(b.entries.length, 2);
  assert.equal(b.entries[1].error.code, "C211");
  assert.equal(b.failed, 1);
});

test("search: hits grouped by file with their context; stop reason; path matches", () => {
  const c = cardModel(fixture("search.content"));
  assert.ok(c.groups.length >= 2);
  const lib = c.groups.find((/** @type {any} */ g) => g.path.endsWith("src/lib.rs"));
  assert.ok(lib.total >= 3);
  assert.ok(lib.hits.every((/** @type {any} */ h) => Array.isArray(h.before) && Array.isArray(h.after)));
  const t = cardModel(fixture("search.truncated"));
  assert.equal(t.truncated, true);
  assert.equal(t.stopReason, "max_matches");
  const p = cardModel(fixture("search.paths"));
  assert.ok(p.paths.some((/** @type {any} */ x) => x.path.endsWith("lib.rs")));
  assert.equal(p.searchedContent, false);
  assert.equal(p.pathCount, p.paths.length);
});

test("exec: exit code, streams, truncation with the dropped bytes", () => {
  const ok = cardModel(fixture("exec.ok"));
  assert.equal(ok.exitCode, 0);
  assert.deepEqual(ok.stdout, ["building", "done"]);
  assert.deepEqual(ok.stderr, ["warning: unused variable"]);
  assert.equal(ok.command, "sh -c 'echo building; echo '\\''warning: unused variable'\\'' >&2; echo done'");
  assert.notEqual(cardModel(fixture("exec.exit")).exitCode, 0);
  const t = cardModel(fixture("exec.truncated"));
  assert.equal(t.stdoutTruncated, true);
  assert.ok(t.stdoutDropped > 20000);
  assert.equal(cardModel(fixture("exec.error")).code, "S216");
});

test("exec_bg and status: the job id and argv; a job record's state", () => {
  const bg = cardModel(fixture("exec_bg.ok"));
  assert.match(bg.jobId, /^job-/);
  assert.match(bg.command, /^sh -c /);
  assert.equal(cardModel(fixture("status.running")).done, false);
  const fin = cardModel(fixture("status.finished"));
  assert.equal(fin.done, true);
  assert.equal(fin.exitCode, 4);
  assert.deepEqual(fin.stdout, ["one", "two"]);
  assert.equal(jobModel({ id: "j" }), null);
});

test("anything else falls back (null): unknown function, missing or mistyped fields, unparsable output", () => {
  const ok = fixture("exec.ok");
  const bad = [
    null,
    {},
    { ...ok, functionId: "shell::kill" },
    { ...ok, output: undefined },
    { ...ok, output: null },
    { ...ok, output: "not json" },
    { ...ok, output: { ...ok.output, stdout: 42 } },
    { ...ok, output: { ...ok.output, exit_code: "0" } },
    { ...ok, output: [] },
    { ...fixture("update-file.ok"), output: { results: [{ path: "/x", success: true }] } },
    { ...fixture("update-file.ok"), output: { results: [] } },
    { ...fixture("update-file.ok"), output: { results: [{ ...fixture("update-file.ok").output.results[0], echoes: [{ from_line: "1" }] }] } },
    { ...fixture("update-file.batch-error"), output: { results: [{ ...fixture("update-file.batch-error").output.results[1], error: null }] } },
    { ...fixture("read-file.window"), output: { content: "x" } },
    { ...fixture("search.content"), output: { content_matches: [{ path: "/a", line: -1, text: "" }], truncated: false } },
    { ...fixture("status.finished"), output: { job: { ...fixture("status.finished").output.job, argv: "sh" } } },
    { ...fixture("exec_bg.ok"), output: { job_id: "", argv: [] } },
    { functionId: "shell::exec", output: { code: 5, message: "x" } },
  ];
  for (const m of bad) assert.equal(cardModel(m), null, JSON.stringify(m)?.slice(0, 200));
  // a JSON-text output parses
  assert.equal(cardModel({ ...ok, output: JSON.stringify(ok.output) })?.kind, "exec");
  // the error may come as the message's own error field
  assert.equal(cardModel({ functionId: "coder::search", input: { query: "q" }, error: { code: "C210", message: "bad" } })?.subject, "q");
});

test("running calls: shell::exec* shows its command, the rest falls back", () => {
  assert.deepEqual(runningModel({ functionId: "shell::exec", input: { command: "cargo", args: ["test", "a b"] }, running: true }), {
    kind: "running",
    functionId: "shell::exec",
    command: "cargo test 'a b'",
  });
  assert.equal(runningModel({ functionId: "coder::search", input: { query: "x" } }), null);
  assert.equal(runningModel({ functionId: "shell::exec", input: {} }), null);
});

test("splitting lines, quoting a command line, the carded functions", () => {
  assert.deepEqual(splitLines("a\r\nb\n"), ["a", "b"]);
  assert.deepEqual(splitLines(""), []);
  assert.equal(commandLine(["echo", "it's"]), "echo 'it'\\''s'");
  assert.ok(isCardFunction("coder::read-file") && !isCardFunction("coder::tree"));
});

test("the renderer goes through whichever registrar the console has", () => {
  /** @param {string} name */
  const registrar = (name) => {
    /** @type {any[]} */
    const got = [];
    return { got, host: { [name]: { register: (/** @type {any} */ r) => (got.push(r), () => got.splice(got.indexOf(r), 1)) } } };
  };
  for (const name of ["functionTriggers", "functionCalls"]) {
    const { got, host } = registrar(name);
    const r = registerCardRenderer(host, { id: "x" });
    assert.equal(r.registrar, name);
    assert.equal(got.length, 1);
    r.off();
    assert.equal(got.length, 0);
  }
  // the shipped console's name wins when both exist
  const both = { functionTriggers: { register: () => () => {} }, functionCalls: { register: () => assert.fail("draft registrar used") } };
  assert.equal(registerCardRenderer(both, {}).registrar, "functionTriggers");
  assert.equal(registerCardRenderer({}, {}).registrar, null);
});

test("a console's own error on the message: the wire error, wrapped, or text with the code", () => {
  const base = { functionId: "coder::read-file", input: { path: "src/x.rs" } };
  assert.deepEqual(
    [
      cardModel({ ...base, error: { code: "C211", message: "gone" } }),
      cardModel({ ...base, error: { error: { code: "C211", message: "gone" } } }),
      cardModel({ ...base, error: "C211: gone" }),
      cardModel({ ...base, error: "remote error (C211): gone" }),
    ].map((m) => m && [m.kind, m.code, m.message, m.subject]),
    Array(4).fill(["error", "C211", "gone", "src/x.rs"]),
  );
  assert.equal(cardModel({ ...base, error: "something odd" }), null);
});

test("a long stream shows its first lines, or its last ones when the call kept the tail", () => {
  const stdout = Array.from({ length: 500 }, (_, i) => `l${i + 1}`).join("\n") + "\n";
  const output = { stdout, stderr: "", exit_code: 0, timed_out: false, duration_ms: 1, stdout_truncated: false, stderr_truncated: false, stdout_dropped_bytes: 0, stderr_dropped_bytes: 0 };
  const head = cardModel({ functionId: "shell::exec", input: { command: "seq" }, output });
  assert.equal(head.stdout[0], "l1");
  assert.equal(head.stdoutMore, 300);
  const tail = cardModel({ functionId: "shell::exec", input: { command: "seq", keep: "tail" }, output });
  assert.equal(tail.stdout[0], "l301");
  assert.equal(tail.stdout.at(-1), "l500");
});
