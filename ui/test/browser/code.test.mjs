// The page as an IDE in headless Chromium, against the real ide binary with
// pyright and typescript-language-server (tests/lsp): outline and
// breadcrumbs, Ctrl+T, F12 and Ctrl+click, Shift+F12, F2 with its preview
// and the History panel's undo, squiggles and Problems after a save, hover,
// and a file no server serves. The steps share one page and build on each
// other. Screenshots at each step land in the artifacts folder.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { env, launch, screenshot } from "./common.mjs";

const root = env.root;
const calc = join(root, "py/calc.py");
const pyMain = join(root, "py/main.py");
const report = join(root, "py/report.py");
const shapes = join(root, "ts/shapes.ts");
const tsMain = join(root, "ts/main.ts");
const goMain = join(root, "go/main.go");
const T = { timeout: 10_000 };
/** Anything a language server answers: its first start and first analysis can take a while on a busy machine. */
const LS = { timeout: 90_000 };
/** Measured latencies, written beside the screenshots. @type {Record<string, number>} */
const measured = {};

/** @param {import("playwright-core").Page} page @param {string} path */
const editor = (page, path) => page.locator(`[data-testid="editor"][data-path="${path}"]`);

/** Open a file through quick open (Ctrl+P). @param {import("playwright-core").Page} page @param {string} rel */
async function openFile(page, rel) {
  await page.keyboard.press("Control+p");
  const dialog = page.getByRole("dialog", { name: "Go to file" });
  await dialog.getByLabel("File name").fill(rel);
  await dialog.locator(`li[data-path="${join(root, rel)}"]`).waitFor(T);
  await page.keyboard.press("Enter");
  await editor(page, join(root, rel)).locator(".cm-content").waitFor(T);
}

/**
 * The viewport point at the middle of the `nth` occurrence of `word` on a
 * 1-based line of the file's editor.
 * @param {import("playwright-core").Page} page @param {string} path @param {number} line @param {string} word @param {number} [nth]
 */
async function wordPoint(page, path, line, word, nth = 0) {
  const at = await editor(page, path).evaluate(
    (el, [line, word, nth]) => {
      const lines = el.querySelectorAll(".cm-line");
      const lineEl = lines[/** @type {number} */ (line) - 1];
      if (!lineEl) return null;
      const text = lineEl.textContent ?? "";
      let index = -1;
      for (let i = 0; i <= /** @type {number} */ (nth); i++) index = text.indexOf(/** @type {string} */ (word), index + 1);
      if (index < 0) return null;
      // the text node and offset of the word's middle character
      const want = index + Math.floor(/** @type {string} */ (word).length / 2);
      const walker = document.createTreeWalker(lineEl, NodeFilter.SHOW_TEXT);
      let seen = 0;
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const len = n.textContent?.length ?? 0;
        if (seen + len > want) {
          const range = document.createRange();
          range.setStart(n, want - seen);
          range.setEnd(n, want - seen + 1);
          const r = range.getBoundingClientRect();
          return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
        }
        seen += len;
      }
      return null;
    },
    [line, word, nth],
  );
  assert.ok(at, `"${word}" on line ${line} of ${path}`);
  return /** @type {{x: number, y: number}} */ (at);
}

/** Click inside a word (the cursor lands in it). @param {import("playwright-core").Page} page @param {string} path @param {number} line @param {string} word @param {{nth?: number, modifiers?: Array<"Control">}} [o] */
async function clickWord(page, path, line, word, o = {}) {
  const p = await wordPoint(page, path, line, word, o.nth ?? 0);
  for (const m of o.modifiers ?? []) await page.keyboard.down(m);
  await page.mouse.click(p.x, p.y);
  for (const m of o.modifiers ?? []) await page.keyboard.up(m);
}

/** The 1-based line the cursor is on in the active editor. @param {import("playwright-core").Page} page @param {string} path */
async function cursorLine(page, path) {
  return editor(page, path).evaluate((el) => {
    const lines = [...el.querySelectorAll(".cm-line")];
    return lines.findIndex((l) => l.classList.contains("cm-activeLine")) + 1;
  });
}

/** Wait until `path` is the active tab with the cursor on `line`. @param {import("playwright-core").Page} page @param {string} path @param {number} line */
async function landsOn(page, path, line, o = T) {
  await page.locator(`.ide-tab.active[data-path="${path}"]`).waitFor(o);
  await editor(page, path).locator(".cm-activeLine").waitFor(o);
  const deadline = Date.now() + o.timeout;
  let got = 0;
  while (Date.now() < deadline) {
    got = await cursorLine(page, path);
    if (got === line) return;
    await page.waitForTimeout(50);
  }
  assert.equal(got, line, `the cursor in ${path}`);
}

/** @param {import("playwright-core").Page} page @param {string} name */
async function bottomTab(page, name) {
  await page.locator(".ide-bottom-tabs").getByRole("tab", { name, exact: true }).click();
}

/** The editor's whole text. @param {import("playwright-core").Page} page @param {string} path */
async function editorText(page, path) {
  return editor(page, path).evaluate((el) => [...el.querySelectorAll(".cm-line")].map((l) => l.textContent).join("\n"));
}

describe("the page as an IDE, with language servers", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {import("playwright-core").Page} */
  let page;

  before(async () => {
    b = await launch();
    page = await b.openPage();
  });
  after(async () => {
    writeFileSync(join(env.artifacts, "code-latencies.json"), JSON.stringify(measured, null, 2));
    await b?.close();
  });

  test("opens the root and a Python file: the outline shows its classes and methods, nested", async () => {
    await page.locator('[data-testid="picker"]').waitFor(T);
    await page.locator(`button[data-root="${root}"]`).click();
    await page.locator('[aria-label="Roots"] li', { hasText: root }).getByRole("button", { name: "Open" }).click();
    await page.locator('[data-testid="root"]', { hasText: root }).waitFor(T);
    await openFile(page, "py/calc.py");
    await page.locator(".ide-pane-tabs").getByRole("tab", { name: "Outline", exact: true }).click();
    const outline = page.locator(`[data-testid="outline"][data-path="${calc}"]`);
    for (const np of ["Parser", "Parser/__init__", "Parser/parse_expr", "Parser/parse_term", "Other", "Other/parse_expr"]) {
      await outline.locator(`[data-name-path="${np}"]`).waitFor(T);
    }
    // nested: each method one level under its class, in the file's order
    const rows = await outline.locator("[data-name-path]").evaluateAll((els) => els.map((e) => `${e.getAttribute("data-depth")} ${e.getAttribute("data-name-path")}`));
    assert.deepEqual(rows, ["0 Parser", "1 Parser/__init__", "1 Parser/parse_expr", "1 Parser/parse_term", "0 Other", "1 Other/parse_expr"]);
    await screenshot(page, "code-01-outline");
  });

  test("a click in the outline jumps; the outline and breadcrumbs follow the cursor", async () => {
    const outline = page.locator(`[data-testid="outline"][data-path="${calc}"]`);
    await outline.locator('[data-name-path="Parser/parse_term"]').click();
    await landsOn(page, calc, 14);
    const crumbs = page.getByTestId("breadcrumbs");
    await crumbs.filter({ hasText: "Parser › parse_term" }).waitFor(T);
    await outline.locator('[data-name-path="Parser/parse_term"][aria-current="location"]').waitFor(T);
    // the keyboard moves the cursor up into parse_expr: both follow
    for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowUp");
    await landsOn(page, calc, 11);
    await crumbs.filter({ hasText: "Parser › parse_expr" }).waitFor(T);
    await outline.locator('[data-name-path="Parser/parse_expr"][aria-current="location"]').waitFor(T);
    await screenshot(page, "code-02-breadcrumbs");
  });

  test("Ctrl+T finds a function in another file and opens it there", async () => {
    await page.keyboard.press("Control+t");
    const dialog = page.getByTestId("symbol-open");
    await dialog.getByLabel("Symbol name").fill("helper_tot");
    await dialog.locator('li[data-name-path="helper_total"]').waitFor(T);
    assert.equal(await dialog.locator('li[data-name-path="helper_total"] .ide-kind').textContent(), "ƒ");
    await screenshot(page, "code-03-go-to-symbol");
    await page.keyboard.press("Enter");
    await landsOn(page, report, 9);
    await page.getByTestId("breadcrumbs").filter({ hasText: "helper_total" }).waitFor(T);
  });

  test("F12 on a call lands on its definition (a semantic answer), and so does Ctrl+click", async () => {
    await openFile(page, "py/main.py");
    await clickWord(page, pyMain, 6, "parse_expr");
    const t0 = Date.now();
    await page.keyboard.press("F12");
    await landsOn(page, calc, 10, LS);
    measured.python_f12_first_ms = Date.now() - t0;
    await page.locator('[data-testid="precision"][data-precision="semantic"]').waitFor(T);
    await screenshot(page, "code-04-definition");
    // Ctrl+click on the class name
    await page.locator(`.ide-tab[data-path="${pyMain}"]`).click();
    await editor(page, pyMain).locator(".cm-content").waitFor(T);
    await clickWord(page, pyMain, 5, "Parser", { modifiers: ["Control"] });
    await landsOn(page, calc, 4, LS);
    // a definition outside the roots (the builtin `sum`, in pyright's own stubs) is listed, not opened
    await clickWord(page, calc, 12, "sum");
    await page.keyboard.press("F12");
    const picker = page.getByTestId("definition-picker");
    await picker.locator("li.outside", { hasText: "outside the roots" }).first().waitFor(LS);
    await screenshot(page, "code-05-outside-roots");
    await picker.locator("li.outside").first().click({ force: true });
    assert.equal(await picker.count(), 1, "an outside location does not open");
    await page.keyboard.press("Escape");
    await picker.waitFor({ state: "detached", ...T });
    assert.equal(await page.locator(".ide-tab.active").getAttribute("data-path"), calc);
  });

  test("Shift+F12 lists the references grouped by file, never another class's method of that name", async () => {
    await page.locator(`.ide-tab[data-path="${pyMain}"]`).click();
    await editor(page, pyMain).locator(".cm-content").waitFor(T);
    await clickWord(page, pyMain, 6, "parse_expr");
    await page.keyboard.press("Shift+F12");
    const refs = page.getByTestId("references");
    await refs.getByTestId("references-count").filter({ hasText: "4 references in 3 files" }).waitFor(LS);
    await refs.locator('[data-testid="precision"][data-precision="semantic"]').waitFor(T);
    const reportGroup = refs.locator(`.ide-refs-file[data-path="${report}"]`);
    assert.deepEqual(await reportGroup.locator(".ide-search-hit").evaluateAll((els) => els.map((e) => e.getAttribute("data-line"))), ["5"]);
    assert.equal(await refs.locator(`.ide-refs-file[data-path="${pyMain}"] .ide-search-hit`).count(), 2);
    assert.equal(await refs.locator(`.ide-refs-file[data-path="${calc}"] .ide-search-hit[data-line="10"]`).count(), 1);
    assert.equal(await reportGroup.locator("mark").first().textContent(), "parse_expr");
    await screenshot(page, "code-06-references");
    await reportGroup.locator(".ide-search-hit").first().click();
    await landsOn(page, report, 5);
  });

  test("F2 renames across files with a preview; the History panel's undo restores every byte", async () => {
    const before = Object.fromEntries([calc, pyMain, report].map((p) => [p, readFileSync(p)]));
    // the cursor is on parse_expr in report.py (the reference clicked)
    await page.keyboard.press("F2");
    const input = page.getByTestId("rename-input").getByLabel("New name");
    await input.waitFor(T);
    assert.equal(await input.inputValue(), "parse_expr");
    await input.fill("evaluate");
    await screenshot(page, "code-07-rename-input");
    await page.keyboard.press("Enter");
    const preview = page.getByTestId("rename-preview");
    await preview.waitFor(LS);
    assert.deepEqual((await preview.locator("details[data-path]").evaluateAll((els) => els.map((e) => e.getAttribute("data-path")))).sort(), [calc, pyMain, report].sort());
    await preview.locator(".ide-diff .add", { hasText: "evaluate" }).first().waitFor(T);
    await screenshot(page, "code-08-rename-preview");
    await preview.getByRole("button", { name: "Apply rename" }).click();
    await page.getByTestId("code-info").filter({ hasText: "Renamed parse_expr to evaluate" }).waitFor(LS);
    const calcNow = readFileSync(calc, "utf8");
    assert.match(calcNow, /def evaluate\(self, depth/);
    assert.match(calcNow, /class Other:\n {4}def parse_expr/, "Other's method is not renamed");
    assert.equal((readFileSync(pyMain, "utf8").match(/\.evaluate\(/g) ?? []).length, 2);
    assert.match(readFileSync(report, "utf8"), /Parser\(text\)\.evaluate\(3\).*\n.*Other\(\)\.parse_expr\(1\)/);
    // the open tab follows the disk, and no writer-diff tab opened for the page's own change
    await page.waitForFunction((p) => document.querySelector(`[data-testid="editor"][data-path="${p}"] .cm-content`)?.textContent?.includes(".evaluate(3)"), report, T);
    assert.equal(await page.locator('.ide-tab[data-path^="diff:"]').count(), 0);
    // undo: the rename is one turn in the history
    await bottomTab(page, "History");
    const turn = page.locator('.ide-turn[data-turn^="rename-"]').first();
    await turn.waitFor(T);
    assert.equal(await turn.locator(".ide-turn-changes li").count(), 3);
    await turn.getByRole("button", { name: "Revert turn…" }).click();
    const ready = page.locator('[data-testid="revert"] [data-state="ready"]');
    await ready.waitFor(T);
    await screenshot(page, "code-09-rename-undo");
    await ready.getByRole("button", { name: "Confirm revert" }).click();
    await page.locator('[data-testid="revert"] [data-state="reverted"]').waitFor(T);
    for (const [p, bytes] of Object.entries(before)) assert.deepEqual(readFileSync(p), bytes, `${p} is back, byte for byte`);
    await page.waitForFunction((p) => document.querySelector(`[data-testid="editor"][data-path="${p}"] .cm-content`)?.textContent?.includes(".parse_expr(3)"), report, T);
  });

  test("a type error shows a squiggle and a Problems entry after the save, and goes away after the fix", async () => {
    await openFile(page, "py/main.py");
    const ed = editor(page, pyMain);
    // its tab followed the revert of the rename (the change feed's read may still be on its way)
    await page.waitForFunction((p) => document.querySelector(`[data-testid="editor"][data-path="${p}"] .cm-content`)?.textContent?.includes("p.parse_expr(1)"), pyMain, T);
    await ed.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type('bad: int = "text"');
    await page.keyboard.press("Control+s");
    const t0 = Date.now();
    await page.locator(`.ide-tab[data-path="${pyMain}"][data-dirty="false"]`).waitFor(T);
    await ed.locator(".cm-lintRange-error").first().waitFor(LS);
    measured.python_save_to_squiggle_ms = Date.now() - t0;
    await page.locator('[data-testid="problem-counts"][data-errors="1"]').waitFor(T);
    await page.getByTestId("problem-counts").click();
    const entry = page.locator(`[data-testid="problems"] .ide-problem[data-severity="error"][data-path="${pyMain}"]`);
    await entry.waitFor(T);
    assert.equal(await entry.getAttribute("data-line"), "8");
    assert.match((await entry.textContent()) ?? "", /str|int/);
    await screenshot(page, "code-10-problems");
    // the message on hover over the squiggle
    const mark = ed.locator(".cm-lintRange-error").first();
    await mark.hover();
    await page.locator(".cm-tooltip-lint").waitFor(T);
    await screenshot(page, "code-11-squiggle-tooltip");
    // click the entry: the cursor goes there
    await entry.click();
    await landsOn(page, pyMain, 8);
    // the fix: take the line out again, save
    await page.keyboard.press("Home");
    await page.keyboard.press("Shift+End");
    await page.keyboard.press("Delete");
    assert.equal(await editorText(page, pyMain), `${readFileSync(pyMain, "utf8").replace(/bad: int = "text"$/, "")}`);
    await page.keyboard.press("Control+s");
    await page.locator(`.ide-tab[data-path="${pyMain}"][data-dirty="false"]`).waitFor(T);
    await ed.locator(".cm-lintRange-error").first().waitFor({ state: "detached", ...LS });
    await page.locator('[data-testid="problem-counts"][data-errors="0"]').waitFor(T);
    await page.locator('[data-testid="problems"] .ide-empty', { hasText: "No problems" }).waitFor(T);
  });

  test("another writer's change to a code file shows its problems without a save, and its fix clears them", async () => {
    const original = readFileSync(report);
    // a writer outside ide entirely breaks report.py (its tab is open and clean: it follows the disk)
    writeFileSync(report, `${original.toString("utf8")}\n\nbroken: int = "not a number"\n`);
    const entry = page.locator(`[data-testid="problems"] .ide-problem[data-severity="error"][data-path="${report}"]`);
    await entry.waitFor(LS);
    assert.equal(await entry.getAttribute("data-line"), "13");
    await page.locator('[data-testid="problem-counts"][data-errors="1"]').waitFor(T);
    await page.locator(`.ide-tab[data-path="${report}"]`).click();
    await editor(page, report).locator(".cm-lintRange-error").first().waitFor(LS);
    await screenshot(page, "code-12a-another-writer");
    writeFileSync(report, original);
    await entry.waitFor({ state: "detached", ...LS });
    await page.locator('[data-testid="problem-counts"][data-errors="0"]').waitFor(T);
    await editor(page, report).locator(".cm-lintRange-error").first().waitFor({ state: "detached", ...LS });
    await page.locator(`.ide-tab[data-path="${pyMain}"]`).click();
    await editor(page, pyMain).locator(".cm-content").waitFor(T);
  });

  test("hover shows the signature and the doc", async () => {
    await clickWord(page, pyMain, 5, "Parser");
    const p = await wordPoint(page, pyMain, 6, "parse_expr");
    await page.mouse.move(p.x, p.y);
    const hover = page.getByTestId("hover");
    await hover.filter({ hasText: "depth: int" }).waitFor(LS);
    assert.match((await hover.textContent()) ?? "", /parse_expr/);
    await screenshot(page, "code-12-hover");
    await page.mouse.move(5, 5);
  });

  test("a rename that cannot be done is refused in the rename box, saying why, and writes nothing", async () => {
    const before = readFileSync(calc);
    await page.locator(`.ide-tab[data-path="${calc}"]`).click();
    await editor(page, calc).locator(".cm-content").waitFor(T);
    // the builtin `sum`: its definition is outside the roots
    await clickWord(page, calc, 12, "sum");
    await page.keyboard.press("F2");
    const box = page.getByTestId("rename-input");
    await box.getByLabel("New name").fill("total_of");
    await page.keyboard.press("Enter");
    const why = box.locator('[role="alert"]');
    await why.waitFor(LS);
    assert.ok(((await why.textContent()) ?? "").length > 10, "the refusal says why");
    await screenshot(page, "code-12b-rename-refused");
    assert.equal(await page.getByTestId("rename-preview").count(), 0);
    assert.deepEqual(readFileSync(calc), before);
    await page.keyboard.press("Escape");
    await box.waitFor({ state: "detached", ...T });
  });

  test("TypeScript: outline, F12, Shift+F12, F2 with undo, a type error, hover", async () => {
    await openFile(page, "ts/shapes.ts");
    const outline = page.locator(`[data-testid="outline"][data-path="${shapes}"]`);
    for (const np of ["Box", "Box/area", "describe"]) await outline.locator(`[data-name-path="${np}"]`).waitFor(T);
    await openFile(page, "ts/main.ts");
    // F12 on `area`
    await clickWord(page, tsMain, 4, "area");
    await page.keyboard.press("F12");
    await landsOn(page, shapes, 4, LS);
    await page.locator('[data-testid="precision"][data-precision="semantic"]').waitFor(T);
    await page.getByTestId("breadcrumbs").filter({ hasText: "Box › area" }).waitFor(T);
    await screenshot(page, "code-13-ts-definition");
    // Shift+F12 from the definition
    await page.keyboard.press("Shift+F12");
    const refs = page.getByTestId("references");
    await refs.getByTestId("references-count").filter({ hasText: "4 references in 2 files" }).waitFor(LS);
    assert.equal(await refs.locator(`.ide-refs-file[data-path="${tsMain}"] .ide-search-hit`).count(), 2);
    await screenshot(page, "code-14-ts-references");
    // F2: area -> surface, previewed, applied, undone
    const before = Object.fromEntries([shapes, tsMain].map((p) => [p, readFileSync(p)]));
    await clickWord(page, shapes, 4, "area");
    await page.keyboard.press("F2");
    const input = page.getByTestId("rename-input").getByLabel("New name");
    await input.fill("surface");
    await page.keyboard.press("Enter");
    const preview = page.getByTestId("rename-preview");
    await preview.waitFor(LS);
    assert.deepEqual((await preview.locator("details[data-path]").evaluateAll((els) => els.map((e) => e.getAttribute("data-path")))).sort(), [tsMain, shapes].sort());
    await screenshot(page, "code-15-ts-rename-preview");
    await preview.getByRole("button", { name: "Apply rename" }).click();
    await page.getByTestId("code-info").filter({ hasText: "Renamed area to surface" }).waitFor(LS);
    assert.equal((readFileSync(tsMain, "utf8").match(/\.surface\(\)/g) ?? []).length, 2);
    assert.match(readFileSync(shapes, "utf8"), / {2}surface\(\): number/);
    await bottomTab(page, "History");
    const turn = page.locator('.ide-turn[data-turn^="rename-"]').first();
    await turn.locator(`li[data-path="${tsMain}"]`).waitFor(T);
    await turn.getByRole("button", { name: "Revert turn…" }).click();
    await page.locator('[data-testid="revert"] [data-state="ready"]').getByRole("button", { name: "Confirm revert" }).click();
    await page.locator('[data-testid="revert"] [data-state="reverted"]').waitFor(T);
    for (const [p, bytes] of Object.entries(before)) assert.deepEqual(readFileSync(p), bytes, `${p} is back, byte for byte`);
    // a type error in main.ts, once its tab followed the revert
    await page.locator(`.ide-tab[data-path="${tsMain}"]`).click();
    await page.waitForFunction((p) => document.querySelector(`[data-testid="editor"][data-path="${p}"] .cm-content`)?.textContent?.includes("b.area()"), tsMain, T);
    const ed = editor(page, tsMain);
    await ed.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type('const oops: number = "x";');
    await screenshot(page, "code-16a-ts-typed");
    await page.locator(`.ide-tab[data-path="${tsMain}"][data-dirty="true"]`).waitFor(T);
    await page.keyboard.press("Control+s");
    const t0 = Date.now();
    await page.locator(`.ide-tab[data-path="${tsMain}"][data-dirty="false"]`).waitFor(T);
    await ed.locator(".cm-lintRange-error").first().waitFor(LS);
    measured.typescript_save_to_squiggle_ms = Date.now() - t0;
    await page.getByTestId("problem-counts").click();
    const entry = page.locator(`[data-testid="problems"] .ide-problem[data-severity="error"][data-path="${tsMain}"]`);
    await entry.filter({ hasText: "not assignable" }).waitFor(T);
    await screenshot(page, "code-16-ts-problems");
    await page.keyboard.press("Home");
    await ed.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Shift+Home");
    await page.keyboard.press("Delete");
    await page.keyboard.press("Control+s");
    await ed.locator(".cm-lintRange-error").first().waitFor({ state: "detached", ...LS });
    await page.locator('[data-testid="problem-counts"][data-errors="0"]').waitFor(T);
    // hover on `describe`
    const p = await wordPoint(page, tsMain, 5, "describe");
    await page.mouse.move(p.x, p.y);
    await page.getByTestId("hover").filter({ hasText: "b: Box" }).waitFor(LS);
    await screenshot(page, "code-17-ts-hover");
    await page.mouse.move(5, 5);
  });

  test("a file no language server serves: the structure still works, and the page says once which server would add diagnostics", async () => {
    await openFile(page, "go/main.go");
    const outline = page.locator(`[data-testid="outline"][data-path="${goMain}"]`);
    await outline.locator('[data-name-path="helper"]').waitFor(T);
    await outline.locator('[data-name-path="main"]').waitFor(T);
    const note = page.getByTestId("server-note");
    await note.filter({ hasText: "gopls" }).waitFor(T);
    await screenshot(page, "code-18-no-server");
    // F12 still answers, structurally
    await clickWord(page, goMain, 5, "helper");
    await page.keyboard.press("F12");
    await landsOn(page, goMain, 3);
    await page.locator('[data-testid="precision"][data-precision="structural"]').waitFor(T);
    // said once: dismissed, then the file closed and opened again
    await note.getByRole("button", { name: "OK" }).click();
    await note.waitFor({ state: "detached", ...T });
    const rounds = Number(await page.getByTestId("problem-counts").getAttribute("data-rounds"));
    await page.getByRole("button", { name: "Close main.go" }).click();
    await openFile(page, "go/main.go");
    await outline.locator('[data-name-path="helper"]').waitFor(T);
    // its diagnostics were asked again (and answered "no server") without a second note
    await page.waitForFunction((n) => Number(document.querySelector('[data-testid="problem-counts"]')?.getAttribute("data-rounds")) > n, rounds, T);
    assert.equal(await note.count(), 0);
    assert.deepEqual(b.consoleErrors, []);
  });
});
