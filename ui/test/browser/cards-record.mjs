// Records the chat cards' fixtures: calls each carded function of the real
// ide binary (through the engine, as another worker would) with a success and
// a failure, and writes each call as the console's FunctionCallMessage would
// carry it — {role, functionId, input, output, durationMs} — to
// test/fixtures/cards/<name>.json. A failed call's output is the wire error
// {code, message} the engine answered with.
//
// Run it through tests/ui_browser.rs (it needs the engine and the binary):
//   IDE_UI_TESTS=required cargo test --test ui_browser record_card_fixtures -- --ignored
// and commit what changed under ui/test/fixtures/cards/.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { env, launch } from "./common.mjs";

const out = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "cards");

/** @type {Array<[string, string, any, (b: any) => Promise<void>] | [string, string, any]>} name, function, input, (optional) preparation */
const CASES = [
  ["update-file.ok", "coder::update-file", {
    files: [{
      path: "src/lib.rs",
      ops: [
        { op: "edit", old_text: "a + b", new_text: "a.wrapping_add(b)" },
        { op: "replace", pattern: "answer", replacement: "reply" },
      ],
    }],
  }],
  ["update-file.elided", "coder::update-file", {
    files: [{
      path: "src/table.rs",
      ops: [{ op: "update_lines", from_line: 3, to_line: 4, content: Array.from({ length: 16 }, (_, i) => `    row(${i}),\n`).join("") }],
    }],
  }],
  ["update-file.batch-error", "coder::update-file", {
    files: [
      { path: "README.md", ops: [{ op: "insert", at_line: 2, content: "Edited by an agent.\n" }] },
      { path: "src/missing.rs", ops: [{ op: "remove", from_line: 1, to_line: 2 }] },
      { path: "src/lib.rs", ops: [{ op: "edit", old_text: "no such text", new_text: "x" }] },
    ],
  }],
  ["update-file.error", "coder::update-file", { files: [] }],
  ["create-file.ok", "coder::create-file", {
    files: [{ path: "src/hello.rs", content: "pub fn hello() -> &'static str {\n    \"hello\"\n}\n" }],
  }],
  ["create-file.batch-error", "coder::create-file", {
    files: [
      { path: "notes/todo.md", content: "# TODO\n\n- cards\n- layout\n" },
      { path: "README.md", content: "overwritten?\n" },
    ],
  }],
  ["create-file.error", "coder::create-file", { files: [{ path: "a.txt" }] }],
  ["read-file.window", "coder::read-file", { path: "src/lib.rs", line_from: 2, line_to: 6 }],
  ["read-file.numbered", "coder::read-file", { path: "src/lib.rs", line_from: 1, line_to: 4, numbered: true }],
  ["read-file.full", "coder::read-file", { path: "README.md" }],
  ["read-file.stat", "coder::read-file", { path: "src/lib.rs", stat: true }],
  ["read-file.batch", "coder::read-file", { paths: ["README.md", "src/nope.rs"] }],
  ["read-file.error", "coder::read-file", { path: "src/nope.rs" }],
  ["search.content", "coder::search", { query: "fn ", path: ".", context_lines_before: 1, context_lines_after: 1 }],
  ["search.paths", "coder::search", { query: "lib", path: ".", search_paths: true, search_content: false }],
  ["search.truncated", "coder::search", { query: "row", path: ".", max_matches: 3 }],
  ["search.error", "coder::search", { query: "(unclosed", regex: true, path: "." }],
  ["exec.ok", "shell::exec", { command: "sh", args: ["-c", "echo building; echo 'warning: unused variable' >&2; echo done"], cwd: "." }],
  ["exec.exit", "shell::exec", { command: "ls", args: ["no-such-dir"] }],
  ["exec.truncated", "shell::exec", { command: "seq", args: ["1", "5000"], max_output_bytes: 64, keep: "tail" }],
  ["exec.error", "shell::exec", { command: "no-such-program-here" }],
  ["exec_bg.ok", "shell::exec_bg", { command: "sh", args: ["-c", "echo started; sleep 0.3; echo finished"] }],
  ["exec_bg.error", "shell::exec_bg", { command: "true", job_id: "   " }],
  ["status.error", "shell::status", { job_id: "job-that-never-was" }],
];

describe("record the chat cards' fixtures from the real binary", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  before(async () => {
    b = await launch();
    mkdirSync(out, { recursive: true });
  });
  after(async () => {
    await b?.close();
  });

  /** @param {string} name @param {string} fn @param {any} input */
  const record = async (name, fn, input) => {
    const started = Date.now();
    const settled = await b.outsideSettled(fn, input);
    const output = "error" in settled ? settled.error : settled.output;
    const message = { role: "function-call", functionId: fn, input, output, durationMs: Date.now() - started };
    writeFileSync(join(out, `${name}.json`), `${JSON.stringify(message, null, 2)}\n`);
    return message;
  };

  test("every case", async () => {
    for (const [name, fn, input] of CASES) {
      const m = await record(name, fn, input);
      const failed = m.output && typeof m.output.code === "string" && typeof m.output.message === "string";
      assert.equal(Boolean(failed), name.endsWith(".error"), `${name}: ${JSON.stringify(m.output)}`);
    }
    // a job's record while it runs and after it finished
    const started = await b.outside("shell::exec_bg", { command: "sh", args: ["-c", "echo one; sleep 1; echo two; exit 4"] });
    await record("status.running", "shell::status", { job_id: started.job_id });
    for (let i = 0; i < 100; i++) {
      const s = await b.outside("shell::status", { job_id: started.job_id });
      if (s.job.status !== "running") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await record("status.finished", "shell::status", { job_id: started.job_id });
  });
});

