// The chat cards in headless Chromium: the test host's chat view renders
// function calls the way the console's FunctionCallCard does (injected
// renderers first, the JSON default when every one returns null). Every
// recorded fixture through ide's registered renderer, screenshotted in light
// and dark; the same calls made live against the real binary still get their
// card (the fixtures have not drifted from the wire); a background job's card
// follows the job to its end and stops asking when it goes; malformed
// payloads fall back to the host's default, a card that throws to its JSON.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { env, launch, screenshot } from "./common.mjs";
import { CASES } from "../fixtures/cards/cases.mjs";
import { cardModel } from "../../src/models/cards.js";

const T = { timeout: 10_000 };
const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "cards");
const fixtures = [...CASES.map(([name]) => name), "status.running", "status.finished"].map((name) => ({
  key: name,
  message: JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")),
}));
const KIND = { "update-file": "update", "create-file": "create", "read-file": "read", search: "search", exec: "exec", exec_bg: "exec_bg", status: "status" };
/** @param {string} name */
const kindOf = (name) => (name.endsWith(".error") ? "error" : KIND[/** @type {keyof typeof KIND} */ (name.split(".")[0])]);

/** @typedef {import("playwright-core").Page} Page */

/** @param {Page} page @param {Array<{key: string, message: any}>} calls */
const show = (page, calls) => page.evaluate((c) => /** @type {any} */ (window).__host.showCalls(c), calls);
/** @param {Page} page @param {string} key */
const call = (page, key) => page.locator(`.host-call[data-call="${key}"]`);
/** @param {Page} page @param {"light" | "dark"} theme */
async function setTheme(page, theme) {
  await page.evaluate((t) => (document.documentElement.dataset.theme = t), theme);
  await page.waitForFunction((t) => getComputedStyle(document.body).backgroundColor === (t === "dark" ? "rgb(17, 20, 24)" : "rgb(255, 255, 255)"), theme);
}

describe("ide's chat cards", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {Page} */
  let page;

  before(async () => {
    b = await launch();
    page = await b.openPage("&view=chat");
  });
  after(async () => {
    await b?.close();
  });

  test("one renderer, registered through the draft's host.functionCalls", async () => {
    assert.deepEqual(await page.evaluate(() => /** @type {any} */ (window).__host.renderers()), ["ide/page.js#cards"]);
    assert.equal(await page.evaluate(() => /** @type {any} */ (window).__host.registrar), "functionCalls");
  });

  test("every recorded call renders as its card, light and dark", async () => {
    await show(page, fixtures);
    for (const { key } of fixtures) {
      const card = call(page, key).locator(`[data-iii-ui="ide"] [data-ide-card="${kindOf(key)}"]`);
      await card.waitFor(T);
      assert.equal(await call(page, key).locator("[data-host-default]").count(), 0, `${key}: no default rendering`);
    }
    // what each card must say
    const text = async (/** @type {string} */ key) => call(page, key).innerText();
    assert.deepEqual(await call(page, "update-file.ok").locator(".ide-card-row.del .ide-card-text").allInnerTexts(), ["    a + b"]);
    assert.match(await call(page, "update-file.ok").locator(".ide-card-row.add").first().innerText(), /a\.wrapping_add\(b\)/);
    assert.match(await text("update-file.ok"), /change \S+/);
    assert.match(await call(page, "update-file.elided").locator(".ide-card-row.gap").innerText(), /8 lines not echoed/);
    assert.equal(await call(page, "update-file.elided").locator('.ide-card-row[data-line="15"]').innerText().then((t) => t.includes("row(12)")), true);
    assert.match(await text("update-file.batch-error"), /2 failed[\s\S]*C211[\s\S]*C210/);
    assert.match(await text("create-file.batch-error"), /1 failed[\s\S]*C213/);
    assert.match(await text("read-file.batch"), /1 failed[\s\S]*C211/);
    assert.deepEqual(await call(page, "read-file.window").locator(".ide-card-ln").allInnerTexts(), ["2", "3", "4", "5", "6"]);
    assert.match(await text("read-file.stat"), /stat · 17 lines · 248 B/);
    assert.match(await text("search.truncated"), /partial: max_matches/);
    assert.match(await call(page, "search.paths").locator(".ide-card-head").innerText(), /1 path$/);
    assert.ok((await call(page, "search.content").locator(".ide-card-file").count()) >= 2, "hits grouped by file");
    assert.match(await text("exec.ok"), /exit 0/);
    assert.match(await call(page, "exec.ok").locator(".ide-card-err").innerText(), /warning: unused variable/);
    assert.match(await text("exec.truncated"), /stdout truncated, 23\.3 KiB dropped/);
    assert.match(await text("status.finished"), /finished[\s\S]*exit 4/);
    for (const { key } of fixtures.filter((f) => f.key.endsWith(".error"))) {
      assert.equal(await call(page, key).locator('[data-ide-card="error"] .ide-card-error .ide-code').innerText(), fixtures.find((f) => f.key === key)?.message.output.code);
    }
    // the recorded job is not on this worker: its card says the record is gone
    await call(page, "exec_bg.ok").locator('[data-job-status="gone"]').waitFor(T);

    for (const theme of /** @type {const} */ (["light", "dark"])) {
      await setTheme(page, theme);
      for (const { key } of fixtures) await call(page, key).screenshot({ path: join(env.artifacts, `card-${key}-${theme}.png`) });
      await page.screenshot({ path: join(env.artifacts, `cards-${theme}.png`), fullPage: true });
    }
    await setTheme(page, "light");
  });

  test("the same calls made live against this binary still get their cards (the fixtures match the wire)", async () => {
    for (const [name, fn, input] of CASES) {
      const settled = await b.outsideSettled(fn, input);
      const output = "error" in settled ? settled.error : settled.output;
      const model = cardModel({ functionId: fn, input, output });
      assert.equal(model?.kind, kindOf(name), `${name}: ${JSON.stringify(output).slice(0, 300)}`);
      const recorded = fixtures.find((f) => f.key === name)?.message.output;
      assert.deepEqual(Object.keys(output).sort(), Object.keys(recorded).sort(), `${name}: the answer's fields`);
    }
  });

  test("a background job's card follows shell::status to the end, and stops asking once unmounted", async () => {
    const go = join(env.root, "go");
    const start = (/** @type {string} */ tag) =>
      b.outside("shell::exec_bg", { command: "sh", args: ["-c", `echo ${tag}-started; while [ ! -e go ]; do sleep 0.05; done; echo ${tag}-done; exit 3`], cwd: env.root });
    const a = await start("a");
    const message = (/** @type {any} */ out) => ({ role: "function-call", functionId: "shell::exec_bg", input: { command: "sh" }, output: out });
    await show(page, [{ key: "job-a", message: message(a) }]);
    const card = call(page, "job-a").locator('[data-ide-card="exec_bg"]');
    await card.locator(".ide-card-out", { hasText: "a-started" }).waitFor(T);
    assert.equal(await card.getAttribute("data-job-status"), "running");
    await screenshot(page, "card-exec_bg-live-running");
    writeFileSync(go, "");
    await call(page, "job-a").locator('[data-job-status="finished"]').waitFor(T);
    assert.match(await card.innerText(), /exit 3[\s\S]*a-done/);

    // unmounted while running: its polling stops (job b keeps being polled meanwhile)
    const { rmSync } = await import("node:fs");
    rmSync(go);
    const c = await start("c");
    await show(page, [{ key: "job-c", message: message(c) }]);
    await call(page, "job-c").locator(".ide-card-out", { hasText: "c-started" }).waitFor(T);
    await show(page, []);
    const polls = async (/** @type {string} */ id) =>
      (await page.evaluate(() => /** @type {any} */ (window).__host.triggered())).filter((/** @type {any} */ t) => t.id === "shell::status" && t.job_id === id).length;
    const cAtUnmount = await polls(c.job_id);
    const d = await start("d");
    await show(page, [{ key: "job-d", message: message(d) }]);
    await page.waitForFunction((id) => /** @type {any} */ (window).__host.triggered().filter((/** @type {any} */ t) => t.id === "shell::status" && t.job_id === id).length >= 4, d.job_id, T);
    assert.equal(await polls(c.job_id), cAtUnmount, "no shell::status for an unmounted card");
    await show(page, []);
    writeFileSync(go, "");
  });

  test("a shell::exec that outlived its timeout as a background job is followed to its end", async () => {
    const go = join(env.root, "go-exec");
    const input = { command: "sh", args: ["-c", "echo slow-start; while [ ! -e go-exec ]; do sleep 0.05; done; echo slow-end"], cwd: env.root, timeout_ms: 300, on_timeout: "background" };
    const output = await b.outside("shell::exec", input);
    assert.equal(output.timed_out, true);
    assert.match(output.job_id, /\S/);
    await show(page, [{ key: "handed-over", message: { role: "function-call", functionId: "shell::exec", input, output } }]);
    const job = call(page, "handed-over").locator(".ide-card-job");
    await call(page, "handed-over").locator('.ide-card-job[data-job-status="running"]').waitFor(T);
    assert.match(await call(page, "handed-over").innerText(), /timed out[\s\S]*slow-start[\s\S]*continues as background job/);
    writeFileSync(go, "");
    await call(page, "handed-over").locator('.ide-card-job[data-job-status="finished"]').waitFor(T);
    assert.match(await job.innerText(), /exit 0[\s\S]*slow-end/);
    await call(page, "handed-over").screenshot({ path: join(env.artifacts, "card-exec-handed-over-light.png") });
    await show(page, []);
  });

  test("a running shell::exec shows its command; other running calls get the host's rendering", async () => {
    await show(page, [
      { key: "run-exec", message: { functionId: "shell::exec", input: { command: "cargo", args: ["test"] }, running: true } },
      { key: "run-read", message: { functionId: "coder::read-file", input: { path: "a" }, running: true } },
    ]);
    await call(page, "run-exec").locator('[data-ide-card="running"]', { hasText: "cargo test" }).waitFor(T);
    await call(page, "run-read").locator("[data-host-default]").waitFor(T);
  });

  test("a payload the cards do not know falls back to the host's default rendering", async () => {
    const exec = fixtures.find((f) => f.key === "exec.ok")?.message;
    const read = fixtures.find((f) => f.key === "read-file.window")?.message;
    const upd = fixtures.find((f) => f.key === "update-file.ok")?.message;
    const bad = [
      { key: "bad-exec", message: { ...exec, output: { ...exec.output, stdout: 42 } } },
      { key: "bad-read", message: { ...read, output: { content: "x" } } },
      { key: "bad-update", message: { ...upd, output: { results: [{ path: "/x", success: true }] } } },
      { key: "bad-text", message: { ...exec, output: "not json at all" } },
      { key: "other-fn", message: { ...exec, functionId: "shell::kill" } },
    ];
    await show(page, bad);
    for (const { key } of bad) {
      await call(page, key).locator("[data-host-default]").waitFor(T);
      assert.equal(await call(page, key).locator('[data-iii-ui="ide"]').count(), 0, `${key}: no ide card`);
    }
    await screenshot(page, "cards-fallback-light");
  });

  test("a card that throws while rendering shows the call's output, not a broken card", async () => {
    assert.deepEqual(b.consoleErrors, [], "nothing went to the console so far");
    const exec = fixtures.find((f) => f.key === "exec.ok")?.message;
    await page.evaluate(() => (/** @type {any} */ (window).__host.faults.badge = true));
    await show(page, [{ key: "faulty", message: exec }]);
    const fallback = call(page, "faulty").locator('[data-iii-ui="ide"] [data-ide-card-fallback]');
    await fallback.waitFor(T);
    assert.match(await fallback.innerText(), /"stdout": "building\\ndone\\n"/);
    assert.equal(await call(page, "faulty").locator("[data-host-chip]").count(), 0, "the host's error chip is not needed");
    await page.evaluate(() => (/** @type {any} */ (window).__host.faults.badge = false));
    b.consoleErrors.splice(0); // React reports the caught error on the console
  });

  test("a hot reload replaces the renderer (one, not two) and the cards render again", async () => {
    await show(page, fixtures.filter((f) => f.key === "read-file.window"));
    await call(page, "read-file.window").locator('[data-ide-card="read"]').waitFor(T);
    await page.evaluate(() => /** @type {any} */ (window).__host.reload());
    assert.deepEqual(await page.evaluate(() => /** @type {any} */ (window).__host.renderers()), ["ide/page.js#cards"]);
    await call(page, "read-file.window").locator('[data-iii-ui="ide"] [data-ide-card="read"]').waitFor(T);
    await page.evaluate(() => /** @type {any} */ (window).__host.dispose());
    assert.deepEqual(await page.evaluate(() => /** @type {any} */ (window).__host.renderers()), []);
    // with no renderer the host's default takes the call
    await call(page, "read-file.window").locator("[data-host-default]").waitFor(T);
  });

  test("the shipped console's registrar name, host.functionTriggers, works the same", async () => {
    const other = await b.openPage("&view=chat&registrar=functionTriggers");
    assert.equal(await other.evaluate(() => /** @type {any} */ (window).__host.registrar), "functionTriggers");
    await show(other, fixtures.filter((f) => f.key === "search.content"));
    await call(other, "search.content").locator('[data-iii-ui="ide"] [data-ide-card="search"]').waitFor(T);
    await other.close();
  });
});
