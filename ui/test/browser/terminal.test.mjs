// The terminal panes in headless Chromium, against the real ide binary: a
// login shell in the browsed root, typing, resizing (stty size), a reload
// mid-output that continues exactly, exit status, close, a lost lease, and
// a cleared storage whose orphan is adopted. The steps share one browser
// and build on each other.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { env, launch, screenshot } from "./common.mjs";
import { SPLIT, lines, logicalLines, openWorkspace, pane, pressIn, typeIn, waitLine } from "./terminal-common.mjs";

const T = { timeout: 15_000 };

/**
 * Wait until the worker no longer lists `id` (the pane goes at once, its
 * shell::pty::close answers after). @param {any} b @param {string | null} id
 */
async function sessionGone(b, id) {
  for (let i = 0; i < 200; i++) {
    const listed = await b.outside("shell::pty::sessions", {});
    if (!listed.sessions.some((/** @type {any} */ s) => s.session_id === id)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`session ${id} is still listed 10 s after its pane was closed`);
}

/**
 * Wait for the page to offer `id` for adoption; on a timeout say what the
 * worker lists. @param {import("playwright-core").Page} page @param {any} b @param {string | null} id
 */
async function orphanOffered(page, b, id) {
  const offer = page.locator(`[data-testid="term-orphans"] li[data-session="${id}"]`);
  try {
    await offer.waitFor(T);
  } catch (e) {
    const listed = await b.outside("shell::pty::sessions", {});
    throw new Error(`session ${id} was not offered; the worker lists ${JSON.stringify(listed)}`, { cause: e });
  }
  return offer;
}

/** The after_sequence of every shell::pty::attach the page made since it loaded. @param {import("playwright-core").Page} page */
function attachesAfter(page) {
  return page.evaluate(() =>
    /** @type {any} */ (window).__host
      .triggered()
      .filter((/** @type {any} */ t) => t.id === "shell::pty::attach")
      .map((/** @type {any} */ t) => t.after_sequence),
  );
}

/** Lines without the empty ones at the end (a buffer's unused rows). @param {string[]} l */
function trimmed(l) {
  const out = [...l];
  while (out.length && out[out.length - 1] === "") out.pop();
  return out;
}

/**
 * The active pane's lines once the shell's prompt is back and nothing has
 * arrived for a while (the sequence stands still over 10 polls).
 * @param {import("playwright-core").Page} page
 */
async function quietScreen(page) {
  await page.waitForFunction(
    () => {
      const el = /** @type {any} */ (document.querySelector(".ide-term-body > .ide-term-pane:nth-child(1) .ide-term-screen"));
      const w = /** @type {any} */ (window);
      const seq = el?.dataset.sequence;
      if (seq !== w.__quietSeq) {
        w.__quietSeq = seq;
        w.__quietPolls = 0;
        return false;
      }
      return ++w.__quietPolls >= 10;
    },
    undefined,
    { timeout: 15_000, polling: 50 },
  );
  return lines(page);
}

describe("the ide terminal panes", () => {
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
  });

  test("opens a login shell in the root; echo hi shows hi", async () => {
    await page.getByRole("button", { name: "Open a terminal" }).click();
    await pane(page, "live").waitFor(T);
    await typeIn(page, "echo hi\n");
    await waitLine(page, /^hi$/);
    await typeIn(page, "pwd\n");
    await waitLine(page, new RegExp(`^${env.root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
    // the lease is in storage
    const leases = await page.evaluate(() => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]"));
    assert.equal(leases.length, 1);
    assert.ok(leases[0].session_id && leases[0].access_key && leases[0].reconnect_token, JSON.stringify(leases));
    assert.ok(leases[0].sequence > 0);
    await screenshot(page, "terminal-light");
    await page.evaluate(() => (document.documentElement.dataset.theme = "dark"));
    await page.waitForFunction(() => {
      const t = /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen"))?.ideTerminal;
      return t && t.options.theme?.background === getComputedStyle(document.documentElement).getPropertyValue("--color-bg").trim();
    });
    await screenshot(page, "terminal-dark");
    await page.evaluate(() => (document.documentElement.dataset.theme = "light"));
  });

  test("a burst typed as fast as the keyboard goes is echoed exactly, in order", async () => {
    // "go" is printed after the shell gave the terminal back its echo (keys typed
    // while the shell's line editor still owns it are not echoed by the terminal)
    await typeIn(page, "echo go; cat > /dev/null\n");
    await waitLine(page, /^go$/);
    // writes queue behind the one in flight and go out batched: nothing lost, doubled or swapped
    const burst = Array.from({ length: 400 }, (_, i) => "abcdefghijklmnopqrstuvwxyz0123456789.,;:=+-_"[(i * 7) % 44]).join("");
    await page.keyboard.type(burst);
    await page.keyboard.press("Enter");
    const joined = () => logicalLines(page);
    const deadline = Date.now() + T.timeout;
    while (!(await joined()).includes(burst)) {
      if (Date.now() > deadline) assert.fail(`the burst did not come back as typed; the pane ends with:\n${(await joined()).filter((l) => l).slice(-6).join("\n")}\nwanted:\n${burst}`);
      await page.waitForTimeout(50);
    }
    await page.keyboard.press("Control+d");
    await typeIn(page, "clear\n");
  });

  test("stty size follows the pane, before and after resizing the window", async () => {
    const size = () => page.evaluate(() => {
      const t = /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen")).ideTerminal;
      return `${t.rows} ${t.cols}`;
    });
    const before = await size();
    await typeIn(page, "echo S=$(stty size)=\n");
    await waitLine(page, new RegExp(`^S=${before}=$`));
    await page.setViewportSize({ width: 900, height: 640 });
    await page.waitForFunction((prev) => {
      const t = /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen")).ideTerminal;
      return `${t.rows} ${t.cols}` !== prev;
    }, before);
    const after = await size();
    assert.notEqual(after, before);
    // the resize call is in order before the typed command's write
    await typeIn(page, "clear; echo S=$(stty size)=\n");
    await waitLine(page, new RegExp(`^S=${after}=$`));
  });

  test("the font stepper refits every pane and so resizes the PTY; stored per browser", async () => {
    const cols = () => page.evaluate(() => /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen")).ideTerminal.cols);
    const c0 = await cols();
    await page.getByRole("button", { name: "Larger terminal font" }).click();
    await page.getByRole("button", { name: "Larger terminal font" }).click();
    await page.locator('[data-testid="term-font-size"]', { hasText: "16px" }).waitFor(T);
    await page.waitForFunction((c) => /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen")).ideTerminal.cols < c, c0);
    const size = await page.evaluate(() => {
      const t = /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen")).ideTerminal;
      return { fs: t.options.fontSize, s: `${t.rows} ${t.cols}` };
    });
    assert.equal(size.fs, 16);
    await typeIn(page, "clear; echo S=$(stty size)=\n");
    await waitLine(page, new RegExp(`^S=${size.s}=$`));
    assert.equal(await page.evaluate(() => localStorage.getItem("ide:term:font-size")), "16");
    // Ctrl + scroll steps too
    await page.locator(".ide-term-host").hover();
    await page.keyboard.down("Control");
    await page.mouse.wheel(0, 100);
    await page.keyboard.up("Control");
    await page.locator('[data-testid="term-font-size"]', { hasText: "15px" }).waitFor(T);
  });

  test("split: a second shell beside the first, each with its own size", async () => {
    const size = (/** @type {string} */ sel) =>
      page.evaluate((sel) => {
        const t = /** @type {any} */ (document.querySelector(`${sel} .ide-term-screen`)).ideTerminal;
        return { rows: t.rows, cols: t.cols };
      }, sel);
    const whole = await size(".ide-term-body > .ide-term-pane:nth-child(1)");
    await page.getByRole("button", { name: "Split" }).click();
    await page.locator(`${SPLIT}[data-status="live"]`).waitFor(T);
    await page.waitForFunction((c) => /** @type {any} */ (document.querySelector(".ide-term-body > .ide-term-pane:nth-child(1) .ide-term-screen")).ideTerminal.cols < c, whole.cols);
    const right = await size(SPLIT);
    assert.ok(right.cols < whole.cols, `split pane is narrower: ${right.cols} < ${whole.cols}`);
    await typeIn(page, "echo R=$(stty size)=\n", SPLIT);
    await waitLine(page, new RegExp(`^R=${right.rows} ${right.cols}=$`), 15_000, SPLIT);
    await screenshot(page, "terminal-split-light");
    // the left pane still types on its own
    await typeIn(page, "echo left-side\n");
    await waitLine(page, /^left-side$/);
    assert.equal((await lines(page, SPLIT)).filter((l) => l === "left-side").length, 0);
    // closing the split pane closes its session and gives the panel back to one pane
    const id = await page.locator(`${SPLIT} .ide-term-screen`).getAttribute("data-session");
    await page.locator(".ide-term-tab.split .ide-close").click();
    await page.waitForFunction(() => document.querySelectorAll(".ide-term-pane").length === 1 && document.querySelectorAll(".ide-term-tab").length === 1);
    await sessionGone(b, id);
  });

  test("find in the terminal selects the match; a missing one is marked", async () => {
    await typeIn(page, "echo needle-$((40+2))\n");
    await waitLine(page, /^needle-42$/);
    const find = page.getByRole("textbox", { name: "Find in terminal" });
    await find.fill("needle-42");
    await find.press("Enter");
    await page.waitForFunction(() => /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen")).ideTerminal.getSelection() === "needle-42");
    await find.fill("no-such-text-here");
    await find.press("Enter");
    await page.locator(".ide-term-find.missing").waitFor(T);
    await find.press("Escape");
  });

  test("a reload brings the tabs back in their order, with the active pane and the split beside it", async () => {
    const first = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    await page.getByRole("button", { name: "New terminal" }).click();
    await page.locator(".ide-term-tab").nth(1).waitFor(T);
    await pane(page, "live").waitFor(T);
    await typeIn(page, "echo second-tab\n");
    await waitLine(page, /^second-tab$/);
    await page.getByRole("button", { name: "Split" }).click();
    await page.locator(`${SPLIT}[data-status="live"]`).waitFor(T);
    await typeIn(page, "echo split-side\n", SPLIT);
    await waitLine(page, /^split-side$/, 15_000, SPLIT);
    // the layout as it is: three tabs, the second active on the left, the third beside it
    const layout = () =>
      page.evaluate(() => ({
        tabs: [...document.querySelectorAll(".ide-term-tab")].map((t) => /** @type {HTMLElement} */ (t).dataset.pane),
        active: /** @type {HTMLElement | null} */ (document.querySelector(".ide-term-tab.active"))?.dataset.pane,
        split: /** @type {HTMLElement | null} */ (document.querySelector(".ide-term-tab.split"))?.dataset.pane,
        sessions: [...document.querySelectorAll(".ide-term-body > .ide-term-pane .ide-term-screen")].map((e) => /** @type {HTMLElement} */ (e).dataset.session),
      }));
    const before = await layout();
    assert.equal(before.tabs.length, 3);
    assert.equal(before.active, before.tabs[1]);
    assert.equal(before.split, before.tabs[2]);
    assert.equal(before.sessions.length, 2);
    // the leases are rewritten as frames arrive, so their stored order is no longer the tabs' order
    await typeIn(page, "echo left-again\n");
    await waitLine(page, /^left-again$/);

    await page.reload();
    await page.evaluate(() => /** @type {any} */ (window).__host.booted);
    await page.locator(`.ide-term-body > .ide-term-pane:nth-child(1)[data-status="live"]`).waitFor(T);
    await page.locator(`${SPLIT}[data-status="live"]`).waitFor(T);
    assert.deepEqual(await layout(), before);
    // both sides are their own shells still, with their screens back
    await waitLine(page, /^left-again$/);
    await waitLine(page, /^split-side$/, 15_000, SPLIT);
    await typeIn(page, "echo after-layout-reload\n", SPLIT);
    await waitLine(page, /^after-layout-reload$/, 15_000, SPLIT);
    await screenshot(page, "terminal-layout-restored-light");

    // back to the one first pane for the steps after this one
    const [, second, third] = before.tabs;
    const ids = before.sessions;
    await page.locator(`.ide-term-tab[data-pane="${third}"] .ide-close`).click();
    await page.locator(`.ide-term-tab[data-pane="${second}"] .ide-close`).click();
    await page.waitForFunction(() => document.querySelectorAll(".ide-term-tab").length === 1 && document.querySelectorAll(".ide-term-pane").length === 1);
    for (const id of ids) await sessionGone(b, id ?? null);
    // the first tab was not shown since the reload: it attaches now
    await pane(page, "live").waitFor(T);
    assert.equal(await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session"), first);
    await typeIn(page, "echo first-again\n");
    await waitLine(page, /^first-again$/);
  });

  test("a reload re-attaches after the sequence the pane had; the screen comes back identical", async () => {
    await typeIn(page, "clear; seq -f 'quiet-%g' 1 300; echo QUIET-END\n");
    await waitLine(page, /^QUIET-END$/);
    const before = await quietScreen(page);
    const screenEl = page.locator(".ide-term-pane .ide-term-screen");
    const sessionBefore = await screenEl.getAttribute("data-session");
    const seqBefore = Number(await screenEl.getAttribute("data-sequence"));
    await page.reload();
    await page.waitForFunction(() => /** @type {any} */ (window).__host?.booted !== undefined);
    await page.evaluate(() => /** @type {any} */ (window).__host.booted);
    await pane(page, "live").waitFor(T);
    assert.equal(await screenEl.getAttribute("data-session"), sessionBefore);
    assert.deepEqual(await attachesAfter(page), [seqBefore], "one attach, after the sequence the pane had (not 0)");
    assert.deepEqual(trimmed(await lines(page)), trimmed(before), "the screen and its scrollback, identical");
    await typeIn(page, "echo after-quiet-reload\n");
    await waitLine(page, /^after-quiet-reload$/);
    assert.equal((await lines(page)).filter((l) => l === "after-quiet-reload").length, 1);
    assert.equal((await lines(page)).filter((l) => l === "QUIET-END").length, 1, "nothing came twice");
  });

  test("a reload mid-output re-attaches by the lease and continues exactly", async () => {
    const N = 600;
    await typeIn(page, `clear; for i in $(seq 1 ${N}); do echo line-$i; sleep 0.005; done; echo END-MARK\n`);
    await waitLine(page, /^line-40$/);
    const sessionBefore = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    await page.reload();
    await page.waitForFunction(() => /** @type {any} */ (window).__host?.booted !== undefined);
    await page.evaluate(() => /** @type {any} */ (window).__host.booted);
    await pane(page, "live").waitFor(T);
    assert.equal(await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session"), sessionBefore);
    await waitLine(page, /^END-MARK$/, 30_000);
    const after = await attachesAfter(page);
    assert.equal(after.length, 1);
    assert.ok(after[0] > 0, `the reload went on from a kept screen, not from 0 (after_sequence ${after[0]})`);
    const got = (await lines(page)).filter((l) => /^line-\d+$/.test(l));
    assert.deepEqual(got, Array.from({ length: N }, (_, i) => `line-${i + 1}`), "every line once, in order");
    // and the same shell takes input with the rotated credentials
    await typeIn(page, "echo after-reload\n");
    await waitLine(page, /^after-reload$/);
  });

  test("exit status shows on the pane; closing a pane closes its session", async () => {
    await page.getByRole("button", { name: "New terminal" }).click();
    await page.locator(".ide-term-tab").nth(1).waitFor(T);
    await pane(page, "live").waitFor(T);
    const id = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    await typeIn(page, "exit 3\n");
    await page.locator('[data-testid="term-exit"]', { hasText: "status 3" }).waitFor(T);
    await page.locator(".ide-term-tab.active .ide-close").click();
    await page.waitForFunction(() => document.querySelectorAll(".ide-term-tab").length === 1);
    await sessionGone(b, id);
  });

  test("a lease whose credentials are invalid shows as lost, with a new shell on offer", async () => {
    await page.evaluate(() => {
      const leases = JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]");
      leases[0].reconnect_token = "0".repeat(32);
      localStorage.setItem("ide:term:leases", JSON.stringify(leases));
    });
    const kept = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    // the page's own pagehide detach must not matter: the stored token is wrong either way
    await page.reload();
    await page.evaluate(() => /** @type {any} */ (window).__host.booted);
    const lost = page.locator('[data-testid="term-lost"]');
    await lost.waitFor(T);
    assert.match(await lost.innerText(), /S211/);
    assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]")), [], "the lost lease is forgotten");
    // the session it named still runs, detached: an orphan of this page
    await orphanOffered(page, b, kept);
    await page.getByRole("button", { name: "Open a new shell" }).click();
    await pane(page, "live").waitFor(T);
    await typeIn(page, "echo fresh\n");
    await waitLine(page, /^fresh$/);
  });

  test("cleared storage: the running session is offered as an orphan and adopted", async () => {
    await typeIn(page, "clear; echo before-clear; n=0; while sleep 0.2; do n=$((n+1)); echo tick-$n; done\n");
    await waitLine(page, /^tick-2$/);
    const id = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await page.evaluate(() => /** @type {any} */ (window).__host.booted);
    await openWorkspace(page, env.root);
    const offer = await orphanOffered(page, b, id);
    await screenshot(page, "terminal-orphans-light");
    await offer.getByRole("button", { name: "Adopt" }).click();
    await pane(page, "live").waitFor(T);
    assert.equal(await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session"), id);
    // the replay brings back what ran before, and live output goes on
    await waitLine(page, /^before-clear$/);
    const last = Math.max(...(await lines(page)).filter((l) => /^tick-\d+$/.test(l)).map((l) => Number(l.slice(5))));
    await waitLine(page, new RegExp(`^tick-${last + 2}$`));
    const ticks = (await lines(page)).filter((l) => /^tick-\d+$/.test(l)).map((l) => Number(l.slice(5)));
    assert.deepEqual(ticks, Array.from({ length: ticks.length }, (_, i) => i + 1), "no tick lost or repeated");
    // input works with the adopted (rotated) credentials
    await pressIn(page, "Control+c");
    await typeIn(page, "echo adopted-$((6*7))\n");
    await waitLine(page, /^adopted-42$/);
    const leases = await page.evaluate(() => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]"));
    assert.ok(leases.some((/** @type {any} */ l) => l.session_id === id), "the adopted session has a lease again");
  });

  test("a hot reload of the page module keeps the panes and their sessions", async () => {
    const id = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    const before = await page.evaluate(() => /** @type {any} */ (window).__host.counts());
    await page.evaluate(() => /** @type {any} */ (window).__host.reload());
    await pane(page, "live").waitFor(T);
    assert.equal(await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session"), id);
    await typeIn(page, "echo hot-$((1+1))\n");
    await waitLine(page, /^hot-2$/);
    // one output handler per loaded asset: the reload replaced it, it did not add one
    const now = await page.evaluate(() => /** @type {any} */ (window).__host.counts());
    assert.equal(now.functions, before.functions);
    assert.deepEqual(b.consoleErrors, []);
  });

  test("a session that ends with the worker's knowledge of it shows as lost without a keystroke", async () => {
    const id = await page.locator(".ide-term-pane .ide-term-screen").getAttribute("data-session");
    const lease = await page.evaluate((sid) => JSON.parse(localStorage.getItem("ide:term:leases") ?? "[]").find((/** @type {any} */ l) => l.session_id === sid), id);
    // gone from the worker as after its restart, with no last frame to the pane: another
    // caller detaches it first (so nothing is delivered here), then closes it
    await b.outside("shell::pty::detach", { session_id: id, access_key: lease.access_key });
    await b.outside("shell::pty::close", { session_id: id, access_key: lease.access_key });
    const lost = page.locator('[data-testid="term-lost"]');
    await lost.waitFor(T);
    assert.match(await lost.innerText(), /no longer lists/);
  });
});
