// The page across an engine restart, driven by tests/ui_browser.rs: this file
// runs under plain `node` (not `node --test`) so that it can talk to the Rust
// side over stdio — it prints `IDE-CONTROL stop-engine`, the Rust side stops
// the engine and answers `stopped`; `IDE-CONTROL start-engine` brings it back
// on the same port and answers `started`.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { closeControl, control, env, launch, row, screenshot } from "./common.mjs";

const T = { timeout: 10_000 };

/** Write `file` until its explorer row shows (the binding is live again). @param {any} page @param {string} file */
async function writeUntilShown(page, file) {
  for (let i = 0; i < 40; i++) {
    writeFileSync(file, `after ${i}\n`);
    const shown = await row(page, file)
      .waitFor({ timeout: 500 })
      .then(() => true, () => false);
    if (shown) return true;
  }
  return false;
}

describe("the ide console page across an engine restart", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {import("playwright-core").Page} */
  let page;
  const readme = join(env.root, "README.md");

  before(async () => {
    b = await launch();
    page = await b.openPage();
  });
  after(async () => {
    await b?.close();
    closeControl();
  });

  test("rebinds, re-reads the open file written while the engine was down, and follows the disk again", async () => {
    await page.locator('[aria-label="Roots"] li', { hasText: env.root }).getByRole("button", { name: "Open" }).click();
    await row(page, readme).click();
    await page.locator(`[data-testid="editor"][data-path="${readme}"] .cm-content`, { hasText: "A tree" }).waitFor(T);

    await control("stop-engine", "stopped");
    await page.waitForFunction(() => window.__host.client.state === "disconnected");
    writeFileSync(readme, "# Fixture\n\nwritten while the engine was down\n");
    await control("start-engine", "started");

    await page.waitForFunction(() => window.__host.client.state === "connected", null, { timeout: 30_000 });
    await page.locator(`[data-testid="editor"][data-path="${readme}"] .cm-content`, { hasText: "written while the engine was down" }).waitFor({ timeout: 30_000 });
    // the root's shell::changed binding and the jobs pane's shell::job-finished one
    assert.equal((await page.evaluate(() => window.__host.counts())).triggers, 2);

    // live again once ide holds the new binding: write until an event shows
    assert.ok(await writeUntilShown(page, join(env.root, "after-restart.md")), "no event after the restart");
  });

  test("a worker restart is shown, and the page re-reads and follows the disk again by itself", async () => {
    await control("restart-ide", "restarted");
    await page.locator('[data-testid="worker-restarted"]').waitFor({ timeout: 20_000 });
    await screenshot(page, "worker-restarted-light");
    // the open file, written meanwhile, and live events from the new process
    assert.ok(await writeUntilShown(page, join(env.root, "after-worker-restart.md")), "no event from the new worker");
    await page.locator('[data-testid="worker-restarted"] button', { hasText: "OK" }).click();
    assert.equal(await page.locator('[data-testid="worker-restarted"]').count(), 0);
  });
});
