// The BENCHMARKS.md numbers of the page's code intelligence, in headless
// Chromium through the loopback engine: a 5 000-line file's outline after
// opening it (Enter in quick open -> its last symbol in the outline), and
// F12 on a call at its end (key -> the cursor on the definition at its top),
// semantic (pyright, Python) and structural (Go, no server). Medians and
// p90 of repeated rounds go to the artifacts folder as code-bench.json.

import { after, before, describe, test } from "node:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { env, launch } from "./common.mjs";

const root = env.root;
const ROUNDS = Number(process.env.IDE_BENCH_ROUNDS ?? 15);
const T = { timeout: 60_000 };
/** @type {Record<string, any>} */
const results = {};

/** @param {number[]} xs */
function summary(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (/** @type {number} */ q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { rounds: s.length, median_ms: at(0.5), p90_ms: at(0.9), min_ms: s[0], max_ms: s[s.length - 1] };
}

/** @param {import("playwright-core").Page} page @param {string} rel */
async function quickOpen(page, rel) {
  await page.keyboard.press("Control+p");
  const dialog = page.getByRole("dialog", { name: "Go to file" });
  await dialog.getByLabel("File name").fill(rel);
  await dialog.locator(`li[data-path="${join(root, rel)}"]`).waitFor(T);
}

/** The active line of the editor of `path` (1-based), read in the page. */
const activeLine = (/** @type {string} */ path) => {
  const el = document.querySelector(`[data-testid="editor"][data-path="${path}"]`);
  if (!el) return 0;
  const line = el.querySelector(".cm-activeLine");
  if (!line) return 0;
  // the line number from CodeMirror's own gutter: the active gutter element
  const g = el.querySelector(".cm-lineNumbers .cm-activeLineGutter");
  return g ? Number(g.textContent) : 0;
};

describe("code intelligence latency in the page", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {import("playwright-core").Page} */
  let page;

  before(async () => {
    b = await launch();
    page = await b.openPage();
    await page.locator('[data-testid="picker"]').waitFor(T);
    await page.locator(`button[data-root="${root}"]`).click();
    await page.locator('[aria-label="Roots"] li', { hasText: root }).getByRole("button", { name: "Open" }).click();
    await page.locator('[data-testid="root"]', { hasText: root }).waitFor(T);
    await page.locator(".ide-pane-tabs").getByRole("tab", { name: "Outline", exact: true }).click();
    await page.evaluate(`window.__activeLine = ${activeLine.toString()}`);
  });
  after(async () => {
    writeFileSync(join(env.artifacts, "code-bench.json"), JSON.stringify(results, null, 2));
    console.log(JSON.stringify(results, null, 2));
    await b?.close();
  });

  // [language, file, its symbols at every depth, the definition's line, the called name]
  for (const [lang, rel, symbols, defLine, callWord] of [
    ["python", "big.py", 230 * 6 + 1, 6, "method_0_1"],
    ["go", "big.go", 1001, 3, "f0000"],
  ]) {
    test(`${lang}: the outline of a 5 000-line file after opening it, and F12 from its end to its top`, async () => {
      const path = join(root, /** @type {string} */ (rel));
      /** @type {number[]} */
      const outline = [];
      for (let i = 0; i < ROUNDS; i++) {
        await quickOpen(page, /** @type {string} */ (rel));
        const t0 = Date.now();
        await page.keyboard.press("Enter");
        // every symbol in the outline (a virtual list: the rows in view are drawn)
        await page.locator(`[data-testid="outline"][data-path="${path}"][data-symbols="${symbols}"] [data-depth="0"]`).first().waitFor(T);
        outline.push(Date.now() - t0);
        await page.getByRole("button", { name: `Close ${rel}` }).click();
      }
      results[`${lang}_outline_after_open`] = summary(outline);
      // F12 from the call on the last line but one to the definition near the top
      await quickOpen(page, /** @type {string} */ (rel));
      await page.keyboard.press("Enter");
      const ed = page.locator(`[data-testid="editor"][data-path="${path}"]`);
      await ed.locator(".cm-content").waitFor(T);
      /** @type {number[]} */
      const f12 = [];
      let first = 0;
      for (let i = 0; i <= ROUNDS; i++) {
        // the cursor into the call: Ctrl+End, then the word on that line
        await ed.locator(".cm-content").click();
        await page.keyboard.press("Control+End");
        await page.keyboard.press("ArrowUp");
        await page.keyboard.press("End");
        for (let k = 0; k < 4; k++) await page.keyboard.press("ArrowLeft");
        await page.waitForFunction(([p, want]) => /** @type {any} */ (window).__activeLine(p) > want, [path, 4000], { timeout: T.timeout, polling: "raf" });
        const t0 = Date.now();
        await page.keyboard.press("F12");
        await page.waitForFunction(([p, want]) => /** @type {any} */ (window).__activeLine(p) === want, [path, defLine], { timeout: T.timeout, polling: "raf" });
        const ms = Date.now() - t0;
        if (i === 0) first = ms;
        else f12.push(ms);
      }
      results[`${lang}_f12_first_ms`] = first;
      results[`${lang}_f12`] = summary(f12);
      results[`${lang}_precision`] = await page.getByTestId("precision").getAttribute("data-precision");
      results[`${lang}_call_word`] = callWord;
      // the baseline, side by side: the same two calls made by a client directly (no page, no render)
      const text = readFileSync(path, "utf8").split("\n");
      const callLine = text.findLastIndex((l) => l.includes(/** @type {string} */ (callWord)));
      const req = { path, line: callLine + 1, column: text[callLine].indexOf(/** @type {string} */ (callWord)) + 1 };
      /** @type {Record<string, number[]>} */
      const direct = { definition: [], symbols: [] };
      for (let i = 0; i < ROUNDS; i++) {
        for (const [fn, payload, key] of /** @type {const} */ ([
          ["coder::definition", req, "definition"],
          ["coder::symbols", { path, max_answer_bytes: 4 << 20 }, "symbols"],
        ])) {
          const ms = await page.evaluate(
            async ([f, p]) => {
              const t0 = performance.now();
              await /** @type {any} */ (window).__host.client.trigger(f, p, { timeoutMs: 60000 });
              return performance.now() - t0;
            },
            [fn, payload],
          );
          direct[key].push(Math.round(ms));
        }
      }
      results[`${lang}_direct_definition_call`] = summary(direct.definition);
      results[`${lang}_direct_symbols_call`] = summary(direct.symbols);
      results[`${lang}_file`] = { lines: text.length - 1, bytes: Buffer.byteLength(text.join("\n")) };
      await page.getByRole("button", { name: `Close ${rel}` }).click();
    });
  }
});
