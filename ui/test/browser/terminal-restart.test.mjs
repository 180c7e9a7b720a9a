// The terminal pane across restarts, driven by tests/ui_browser.rs like
// restart.test.mjs (plain `node`, `IDE-CONTROL …` lines on stdout answered on
// stdin): `stop-engine` / `start-engine` restart the engine on the same port;
// `restart-ide` kills the ide worker and starts a new one.
//
// What really happens: across an engine restart the worker keeps the shell
// and its output ring and reconnects on its own; the page's output handler is
// registered again with the tab's connection, so output flows again as soon as
// ide is back, and the page re-attaches with its lease once ide answers (a
// resize meanwhile waits for the re-attach, which carries the size). A crashed worker has lost the session: the page's periodic
// shell::pty::sessions no longer lists it, the pane says its lease is gone and
// offers a new shell.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { closeControl, control, env, launch, screenshot } from "./common.mjs";
import { lines, openWorkspace, pane, pressIn, typeIn, waitLine } from "./terminal-common.mjs";

const T = { timeout: 15_000 };

/** The ticks in the pane, in buffer order. @param {import("playwright-core").Page} page */
async function ticks(page) {
  return (await lines(page)).filter((l) => /^tick-\d+$/.test(l)).map((l) => Number(l.slice(5)));
}

describe("a terminal pane across an engine restart and a worker restart", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {import("playwright-core").Page} */
  let page;

  before(async () => {
    b = await launch();
    page = await b.openPage();
    await openWorkspace(page, env.root);
  });
  after(async () => {
    await b?.close();
    closeControl();
  });

  test("engine restart: the pane re-attaches by its lease and the shell's output goes on, nothing lost or repeated", async () => {
    await page.getByRole("button", { name: "Open a terminal" }).click();
    await pane(page, "live").waitFor(T);
    await typeIn(page, "echo ready-$((1+1))\n");
    await waitLine(page, /^ready-2$/);
    const session = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    await typeIn(page, "clear; n=0; while sleep 0.2; do n=$((n+1)); echo tick-$n; done\n");
    await waitLine(page, /^tick-2$/);

    const storedKey = () => page.evaluate(() => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]")[0]?.access_key);
    const keyBefore = await storedKey();
    await control("stop-engine", "stopped");
    await page.waitForFunction(() => /** @type {any} */ (window).__host.client.state === "disconnected", null, T);
    const beforeRestart = Math.max(...(await ticks(page)));
    await control("start-engine", "started");
    await page.waitForFunction(() => /** @type {any} */ (window).__host.client.state === "connected", null, { timeout: 30_000 });

    // the page re-attaches once ide answers on the new engine (the attach rotates the credentials);
    // calls made before that, while ide registers again, may fail and show on the pane until then
    await page.waitForFunction((k) => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]")[0]?.access_key !== k, keyBefore, { timeout: 30_000 });
    await pane(page, "live").waitFor(T);
    assert.equal(await page.locator(".ide-term-pane .ide-error").count(), 0, "no error left on the pane");
    // the shell ran on while the engine was away; the worker's ring brings what it wrote, then live frames
    await waitLine(page, new RegExp(`^tick-${beforeRestart + 10}$`), 30_000);
    const got = await ticks(page);
    assert.deepEqual(got, Array.from({ length: got.length }, (_, i) => i + 1), "every tick once, in order");
    assert.equal(await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session"), session, "the same session");
    assert.equal(await pane(page, "live").count(), 1);
    // and it takes input with the credentials the re-attach rotated
    await pressIn(page, "Control+c");
    await typeIn(page, "echo after-engine-restart\n");
    await waitLine(page, /^after-engine-restart$/);
    const leases = await page.evaluate(() => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]"));
    assert.equal(leases.length, 1);
    assert.equal(leases[0].session_id, session);
    await screenshot(page, "terminal-after-engine-restart-light");
  });

  test("worker restart: the session is gone with the worker; the pane shows its lost lease and a new shell works", async () => {
    const session = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    await typeIn(page, "echo before-worker-restart\n");
    await waitLine(page, /^before-worker-restart$/);
    await control("restart-ide", "restarted");

    const lost = page.locator('[data-testid="term-lost"]');
    await lost.waitFor({ timeout: 30_000 });
    assert.match(await lost.innerText(), /S211/);
    assert.equal(await pane(page, "lost").count(), 1);
    // the screen it had stays readable; the lease is forgotten
    assert.ok((await lines(page)).includes("before-worker-restart"));
    assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]")), []);
    await screenshot(page, "terminal-lost-after-worker-restart-light");

    await page.getByRole("button", { name: "Open a new shell" }).click();
    await pane(page, "live").waitFor(T);
    const fresh = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    assert.notEqual(fresh, session);
    const attaches = () => page.evaluate(() => /** @type {any} */ (window).__host.triggered().filter((/** @type {any} */ t) => t.id === "shell::pty::attach").length);
    const attachesBefore = await attaches();
    // the page learns of the other process (its periodic check): the new pane is of the new
    // process and stays as it is: no re-attach that rotates its credentials under the typing
    await page.locator('[data-testid="worker-restarted"]').waitFor({ timeout: 15_000 });
    await typeIn(page, "echo new-worker-$((3*3))\n");
    await waitLine(page, /^new-worker-9$/);
    assert.equal(await attaches(), attachesBefore, "the new process's pane was not re-attached");
    assert.equal(await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session"), fresh);
  });
});
