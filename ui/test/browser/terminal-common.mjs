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

/** The active (left) pane; the split one is SPLIT. */
export const ACTIVE = ".ide-term-body > .ide-term-pane:nth-child(1)";
export const SPLIT = ".ide-term-body > .ide-term-pane:nth-child(2)";

/**
 * A pane's buffer (scrollback included), right-trimmed: one entry per row, or
 * with `joinWrapped` one per logical line (rows the terminal wrapped joined).
 * @param {Page} page @param {string} [sel] @param {{joinWrapped?: boolean}} [opts] @returns {Promise<string[]>}
 */
export function lines(page, sel = ACTIVE, { joinWrapped = false } = {}) {
  return page.evaluate(
    ([sel, joinWrapped]) => {
      const t = /** @type {any} */ (document.querySelector(`${sel} .ide-term-screen`))?.ideTerminal;
      if (!t) return [];
      const b = t.buffer.active;
      /** @type {string[]} */
      const out = [];
      for (let i = 0; i < b.length; i++) {
        const l = b.getLine(i);
        const text = l?.translateToString(true) ?? "";
        if (joinWrapped && l?.isWrapped && out.length) out[out.length - 1] += text;
        else out.push(text);
      }
      return out.map((l) => l.trimEnd());
    },
    /** @type {[string, boolean]} */ ([sel, joinWrapped]),
  );
}

/** The logical lines of a pane (wrapped rows joined). @param {Page} page @param {string} [sel] */
export const logicalLines = (page, sel = ACTIVE) => lines(page, sel, { joinWrapped: true });

/** Wait until a line of a pane matches `re`. @param {Page} page @param {RegExp} re @param {number} [timeout] @param {string} [sel] */
export async function waitLine(page, re, timeout = 15_000, sel = ACTIVE) {
  try {
    await page.waitForFunction(
      ([source, flags, sel]) => {
        const t = /** @type {any} */ (document.querySelector(`${sel} .ide-term-screen`))?.ideTerminal;
        if (!t) return false;
        const re = new RegExp(source, flags);
        const b = t.buffer.active;
        for (let i = b.length - 1; i >= 0; i--) if (re.test(b.getLine(i)?.translateToString(true).trimEnd() ?? "")) return true;
        return false;
      },
      [re.source, re.flags, sel],
      { timeout, polling: 50 },
    );
  } catch (e) {
    const got = (await lines(page, sel)).filter((l) => l.length).slice(-15).join("\n");
    const errors = await page.locator(".ide-term-pane .ide-error").allTextContents();
    const state = await page.evaluate((sel) => JSON.stringify({ ...(/** @type {any} */ (document.querySelector(`${sel} .ide-term-screen`))?.dataset ?? {}) }), sel);
    const shown = errors.length ? `\nerrors on the panes: ${errors.join(" | ")}` : "";
    const focused = await page.evaluate(() => document.activeElement?.className ?? "nothing");
    throw new Error(`no line matched ${re} within ${timeout} ms (focus: ${focused}; pane ${state}); the pane ends with:\n${got}${shown}`, { cause: e });
  }
}

/**
 * Focus a pane and press one key (`Control+c`): a pane that was re-rendered
 * (a re-attach after a reconnect) does not keep the keyboard focus.
 * @param {Page} page @param {string} key @param {string} [sel]
 */
export async function pressIn(page, key, sel = ACTIVE) {
  await page.locator(`${sel} .xterm-helper-textarea`).focus();
  await page.keyboard.press(key);
}

/** Focus a pane and type. @param {Page} page @param {string} text @param {string} [sel] */
export async function typeIn(page, text, sel = ACTIVE) {
  await page.locator(`${sel} .xterm-helper-textarea`).focus();
  for (const part of text.split(/(\n)/)) {
    if (part === "\n") await page.keyboard.press("Enter");
    else if (part) await page.keyboard.type(part);
  }
}
