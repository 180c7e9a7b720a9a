// One console page, two ide on one engine (two hosts, by namespace): the
// picker lists both, a workspace opens on the chosen one, and its explorer,
// live changes and terminal follow that host. Real engine only (the
// loopback stand-in routes no namespaces).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { env, launch, row, screenshot } from "./common.mjs";
import { pane, typeIn, waitLine } from "./terminal-common.mjs";

const T = { timeout: 15_000 };
const rootA = env.root;
const rootB = must("IDE_HOST_B_ROOT");
const nsB = must("IDE_HOST_B_NS");
const escape = (/** @type {string} */ s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** @param {string} name */
function must(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this suite through \`cargo test --test ui_browser\``);
  return v;
}

describe("one page, two hosts", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {import("playwright-core").Page} */
  let page;

  before(async () => {
    b = await launch();
    page = await b.openPage();
  });
  after(async () => {
    await b?.close();
  });

  test("the picker lists every ide the engine routes to, by namespace", async () => {
    await page.locator('[data-testid="picker"]').waitFor(T);
    const select = page.getByRole("combobox", { name: "Host" });
    await select.waitFor(T);
    const options = await select.locator("option").allTextContents();
    assert.equal(options.length, 2, options.join(" | "));
    assert.ok(options.some((o) => o.endsWith("— default")), options.join(" | "));
    assert.ok(options.some((o) => o.endsWith(`— ${nsB}`)), options.join(" | "));
    // the console's own host first, with its roots
    assert.equal(await select.inputValue(), "default");
    await page.locator(`button[data-root="${rootA}"]`).waitFor(T);
    await screenshot(page, "hosts-picker-light");
  });

  test("a workspace opens on the chosen host: its roots, its files, its badge", async () => {
    await page.getByRole("combobox", { name: "Host" }).selectOption(nsB);
    await page.locator(`button[data-root="${rootB}"]`).waitFor(T);
    assert.equal(await page.locator(`button[data-root="${rootA}"]`).count(), 0, "host A's root is not offered for host B");
    await page.locator('[aria-label="Roots"] li', { hasText: rootB }).getByRole("button", { name: "Open" }).click();
    await page.locator('[data-testid="root"]', { hasText: rootB }).waitFor(T);
    await page.locator('[data-testid="host"]', { hasText: nsB }).waitFor(T);
    await row(page, join(rootB, "only-on-b.txt")).waitFor(T);
    assert.equal(await row(page, join(rootA, "README.md")).count(), 0);
    // a file another writer creates on host B appears live (the page's
    // shell::changed binding is served by host B)
    await page.evaluate(
      ([p, ns]) => /** @type {any} */ (window).__host.client.trigger("coder::create-file", { files: [{ path: p, content: "new on b\n" }] }, { namespace: ns }),
      [join(rootB, "live-on-b.txt"), nsB],
    );
    await row(page, join(rootB, "live-on-b.txt")).waitFor(T);
    await screenshot(page, "hosts-workspace-b-light");
  });

  test("a terminal opens on the chosen host", async () => {
    await page.getByRole("button", { name: "Open a terminal" }).click();
    await pane(page, "live").waitFor(T);
    await typeIn(page, "pwd; echo host-$((20+3))\n");
    await waitLine(page, new RegExp(`^${escape(rootB)}$`));
    await waitLine(page, /^host-23$/);
    await screenshot(page, "hosts-terminal-b-light");
  });

  test("the choice is remembered across a reload, and switching back shows host A", async () => {
    await page.reload();
    await page.waitForFunction(() => /** @type {any} */ (window).__host?.booted !== undefined);
    await page.locator('[data-testid="host"]', { hasText: nsB }).waitFor(T);
    await page.locator('[data-testid="root"]', { hasText: rootB }).waitFor(T);
    await page.getByRole("button", { name: "Change workspace" }).click();
    await page.getByRole("combobox", { name: "Host" }).selectOption("default");
    await page.locator('[aria-label="Roots"] li', { hasText: rootA }).getByRole("button", { name: "Open" }).click();
    await page.locator('[data-testid="root"]', { hasText: rootA }).waitFor(T);
    assert.equal(await page.locator('[data-testid="host"]').count(), 0, "the console's own host has no badge");
    await row(page, join(rootA, "README.md")).waitFor(T);
    assert.deepEqual(b.consoleErrors, []);
  });
});
