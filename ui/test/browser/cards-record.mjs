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
import { launch } from "./common.mjs";
import { CASES } from "../fixtures/cards/cases.mjs";

const out = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "cards");

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

