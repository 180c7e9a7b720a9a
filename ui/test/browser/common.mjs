// Shared setup of the browser suites: the test host server, headless
// Chromium (Debian's, through playwright-core: no browser download), and an
// "outside" caller — a second engine connection in its own page — for
// writes the page did not make.

import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { startHost } from "../host/server.mjs";

export const env = {
  engine: must("IDE_ENGINE_URL"),
  root: must("IDE_TEST_ROOT"),
  chromium: must("IDE_CHROMIUM"),
  artifacts: process.env.IDE_ARTIFACTS ?? join(process.cwd(), "test-artifacts"),
};

/** @param {string} name */
function must(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the browser suites through \`cargo test --test ui_browser\``);
  return v;
}

export async function launch() {
  mkdirSync(env.artifacts, { recursive: true });
  const host = await startHost();
  const browser = await chromium.launch({
    executablePath: env.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  /** @type {string[]} */
  const consoleErrors = [];
  const hostUrl = `${host.url}/?engine=${encodeURIComponent(env.engine)}`;

  /** Open the host page (`query`: more of its parameters, `&view=chat`) and wait until the page module is set up. */
  const openPage = async (query = "") => {
    const page = await context.newPage();
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    await page.goto(hostUrl + query);
    await page.waitForFunction(() => /** @type {any} */ (window).__host?.booted !== undefined);
    await page.evaluate(() => /** @type {any} */ (window).__host.booted);
    return page;
  };

  const callerPage = await context.newPage();
  await callerPage.goto(`${host.url}/client.html?engine=${encodeURIComponent(env.engine)}`);
  await callerPage.waitForFunction(() => /** @type {any} */ (window).callerReady !== undefined);
  await callerPage.evaluate(() => /** @type {any} */ (window).callerReady);

  /** Call a function as a worker other than the page. @param {string} fn @param {any} payload */
  const outside = (fn, payload) =>
    callerPage.evaluate(([f, p]) => /** @type {any} */ (window).caller.trigger(f, p, { timeoutMs: 30000 }), [fn, payload]);

  /**
   * The same call, settled in the caller's page: `{output}` or `{error}` as the
   * engine answered (the wire error object, not a serialized Error).
   * @param {string} fn @param {any} payload @returns {Promise<{output?: any, error?: any}>}
   */
  const outsideSettled = (fn, payload) =>
    callerPage.evaluate(
      ([f, p]) =>
        /** @type {any} */ (window).caller.trigger(f, p, { timeoutMs: 30000 }).then(
          (/** @type {any} */ output) => ({ output }),
          (/** @type {any} */ error) => ({ error: error instanceof Error ? { name: error.name, message: error.message } : error }),
        ),
      [fn, payload],
    );

  const close = async () => {
    await browser.close();
    await host.close();
  };
  return { browser, context, origin: host.url, openPage, outside, outsideSettled, close, consoleErrors };
}

/** A row of the explorer tree. @param {import("playwright-core").Page} page @param {string} abs */
export function row(page, abs) {
  return page.locator(`.ide-tree [data-path="${abs}"]`);
}

/** @param {import("playwright-core").Page} page @param {string} name */
export async function screenshot(page, name) {
  const path = join(env.artifacts, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** @type {{answers: string[], waiters: Array<(l: string) => void>, input: import("node:readline").Interface} | null} */
let channel = null;

/**
 * Ask the Rust side of the suite to act on the engine or the worker
 * (`IDE-CONTROL <what>` on stdout) and wait for its answer on stdin.
 * @param {string} what @param {string} expect
 */
export async function control(what, expect) {
  if (!channel) {
    const { createInterface } = await import("node:readline");
    const c = { answers: /** @type {string[]} */ ([]), waiters: /** @type {Array<(l: string) => void>} */ ([]), input: createInterface({ input: process.stdin }) };
    c.input.on("line", (l) => {
      const w = c.waiters.shift();
      if (w) w(l.trim());
      else c.answers.push(l.trim());
    });
    channel = c;
  }
  const c = channel;
  process.stdout.write(`IDE-CONTROL ${what}\n`);
  const got = c.answers.shift() ?? (await new Promise((r) => c.waiters.push(r)));
  assert.equal(got, expect, `control ${what}`);
}

/** Stop listening for control answers (lets the test process end). */
export function closeControl() {
  channel?.input.close();
  channel = null;
}
