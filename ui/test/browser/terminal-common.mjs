// Helpers of the terminal suites: open the workspace, read the active
// pane's xterm buffer, type into it, wait for a line.

/** @typedef {import("playwright-core").Page} Page */

/** Pick `root` in the picker (a fresh storage) or find it remembered. @param {Page} page @param {string} root */
export async function openWorkspace(page, root) {
  const picker = page.locator('[data-testid="picker"]');
  const workspace = page.locator('[data-testid="root"]', { hasText: root });
  await picker.or(workspace).first().waitFor({ timeout: 15_000 });
  if (await workspace.count()) return;
  await page.locator(`button[data-root="${root}"]`).click();
  await page.locator('[aria-label="Roots"] li', { hasText: root }).getByRole("button", { name: "Open" }).click();
  await workspace.waitFor({ timeout: 15_000 });
}

/** The active pane, optionally in a status. @param {Page} page @param {string} [status] */
export function pane(page, status) {
  return page.locator(status ? `.ide-term-pane[data-status="${status}"]` : ".ide-term-pane");
}

/** Every line of the active pane's buffer (scrollback included), right-trimmed. @param {Page} page @returns {Promise<string[]>} */
export function lines(page) {
  return page.evaluate(() => {
    const t = /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen"))?.ideTerminal;
    if (!t) return [];
    const b = t.buffer.active;
    const out = [];
    for (let i = 0; i < b.length; i++) out.push(b.getLine(i)?.translateToString(true).trimEnd() ?? "");
    return out;
  });
}

/** Wait until a line of the active pane matches `re`. @param {Page} page @param {RegExp} re @param {number} [timeout] */
export async function waitLine(page, re, timeout = 15_000) {
  try {
    await page.waitForFunction(
      ([source, flags]) => {
        const t = /** @type {any} */ (document.querySelector(".ide-term-pane .ide-term-screen"))?.ideTerminal;
        if (!t) return false;
        const re = new RegExp(source, flags);
        const b = t.buffer.active;
        for (let i = b.length - 1; i >= 0; i--) if (re.test(b.getLine(i)?.translateToString(true).trimEnd() ?? "")) return true;
        return false;
      },
      [re.source, re.flags],
      { timeout, polling: 50 },
    );
  } catch (e) {
    const got = (await lines(page)).filter((l) => l.length).slice(-15).join("\n");
    throw new Error(`no line matched ${re} within ${timeout} ms; the pane ends with:\n${got}`, { cause: e });
  }
}

/** Focus the active pane and type. @param {Page} page @param {string} text */
export async function typeIn(page, text) {
  await page.locator(".ide-term-pane .xterm-helper-textarea").focus();
  for (const part of text.split(/(\n)/)) {
    if (part === "\n") await page.keyboard.press("Enter");
    else if (part) await page.keyboard.type(part);
  }
}
