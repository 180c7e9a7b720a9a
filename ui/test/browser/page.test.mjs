// The page in headless Chromium, loaded as the console loads it, against
// the real ide binary. The steps share one browser and build on each other
// (a workspace picked in the first is the one every later step browses).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { env, launch, row, screenshot } from "./common.mjs";

const root = env.root;
const main = join(root, "src/main.rs");
const strings = join(root, "src/util/strings.rs");
const T = { timeout: 10_000 };

describe("the ide console page", () => {
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

  test("registers one page, id ide, and picks a root from shell::workspace::roots", async () => {
    assert.deepEqual(await page.evaluate(() => window.__host.pages()), ["ide"]);
    await page.locator('[data-testid="picker"]').waitFor(T);
    await page.locator(`button[data-root="${root}"]`).click();
    await page.locator('[aria-label="Folders"]').waitFor(T);
    await page.locator('[aria-label="Roots"] li', { hasText: root }).getByRole("button", { name: "Open" }).click();
    await page.locator('[data-testid="root"]', { hasText: root }).waitFor(T);
    await row(page, join(root, "README.md")).waitFor(T);
    // not a git repository: no source-control pane
    await page.locator('.ide-workspace[data-git="false"]').waitFor(T);
    assert.equal(await page.getByRole("tab", { name: "Git", exact: true }).count(), 0);
  });

  test("expands folders lazily; protected entries and noise folders are marked", async () => {
    await row(page, join(root, "src")).click();
    await row(page, join(root, "src/util")).click();
    await row(page, strings).waitFor(T);
    await row(page, main).waitFor(T);
    assert.equal(await row(page, join(root, "src")).getAttribute("aria-expanded"), "true");
    const secret = row(page, join(root, "secret.key"));
    assert.match(await secret.getAttribute("class"), /protected/);
    assert.equal(await secret.locator(".ide-badge").textContent(), "protected");
    assert.match(await row(page, join(root, "target")).getAttribute("class"), /noise/);
  });

  test("a protected file cannot be opened", async () => {
    await row(page, join(root, "secret.key")).click();
    await page.locator('.ide-status [role="alert"]', { hasText: "protected" }).waitFor(T);
    assert.equal(await page.locator(`.ide-tab[data-path="${join(root, "secret.key")}"]`).count(), 0);
    // and the worker refuses it too, whatever the page does
    const err = await page.evaluate((p) => window.__host.client.trigger("coder::read-file", { path: p }).then(() => null, (e) => e), join(root, "secret.key"));
    assert.equal(err?.code, "C211");
  });

  test("opens a file with syntax, line numbers and its revision; edit and save writes it", async () => {
    await row(page, main).click();
    const editor = page.locator(`[data-testid="editor"][data-path="${main}"]`);
    await editor.locator(".cm-content", { hasText: "hello from the fixture" }).waitFor(T);
    assert.ok((await editor.locator(".cm-lineNumbers .cm-gutterElement").count()) >= 3, "line numbers");
    assert.ok((await editor.locator(".cm-content span[class]").count()) > 0, "syntax highlighting");
    // the editor's own search panel
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+f");
    await editor.locator(".cm-search input[main-field]").waitFor(T);
    await page.keyboard.press("Escape");
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("// saved from the page\n");
    await page.locator(`.ide-tab[data-path="${main}"][data-dirty="true"]`).waitFor(T);
    await page.keyboard.press("Control+s");
    await page.locator(`.ide-tab[data-path="${main}"][data-dirty="false"]`).waitFor(T);
    assert.match(readFileSync(main, "utf8"), /\/\/ saved from the page\n$/);
  });

  test("a save keeps the file's line endings and mode", async () => {
    const script = join(root, "run.sh");
    await row(page, script).click();
    const editor = page.locator(`[data-testid="editor"][data-path="${script}"]`);
    await editor.locator(".cm-content", { hasText: "echo crlf" }).waitFor(T);
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("echo more");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Control+s");
    await page.locator(`.ide-tab[data-path="${script}"][data-dirty="false"]`).waitFor(T);
    assert.equal(readFileSync(script, "utf8"), "#!/bin/sh\r\necho crlf\r\necho more\r\n");
    assert.equal(statSync(script).mode & 0o777, 0o755);
    await page.locator(`.ide-tab[data-path="${script}"] .ide-close`).click();
  });

  test("a concurrent write makes the next save a conflict, and nothing is overwritten", async () => {
    await row(page, main).click();
    const editor = page.locator(`[data-testid="editor"][data-path="${main}"]`);
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("// second edit in the page\n");
    await page.locator(`.ide-tab[data-path="${main}"][data-dirty="true"]`).waitFor(T);
    const theirs = "fn main() {\n    println!(\"written by someone else\");\n}\n";
    writeFileSync(main, theirs);
    // the dirty buffer keeps the edits and says the disk moved
    await page.locator('[data-testid="changed-on-disk"]').waitFor(T);
    await page.keyboard.press("Control+s");
    await page.locator('[data-testid="conflict"]', { hasText: "C221" }).waitFor(T);
    assert.equal(readFileSync(main, "utf8"), theirs, "the stale save wrote nothing");
    await screenshot(page, "conflict-light");
    await page.getByRole("button", { name: "Compare" }).first().click();
    await page.locator('[data-testid="compare-view"] .cm-mergeView', { hasText: "written by someone else" }).waitFor(T);
    await page.getByRole("button", { name: "Overwrite" }).click();
    await page.locator(`.ide-tab[data-path="${main}"][data-dirty="false"]`).waitFor(T);
    const now = readFileSync(main, "utf8");
    assert.match(now, /second edit in the page/);
    assert.doesNotMatch(now, /written by someone else/);
    // a successful save ends the comparison
    assert.equal(await page.locator('[data-testid="compare-view"]').count(), 0);
  });

  test("a clean buffer follows the disk", async () => {
    const next = "fn main() {}\n// followed\n";
    writeFileSync(main, next);
    await page.locator(`[data-testid="editor"][data-path="${main}"] .cm-content`, { hasText: "// followed" }).waitFor(T);
    assert.equal(await page.locator('[data-testid="changed-on-disk"]').count(), 0);
  });

  test("a file created by coder::create-file elsewhere appears in the explorer; its diff opens in the background", async () => {
    const fresh = join(root, "src/fresh.rs");
    const out = await b.outside("coder::create-file", { files: [{ path: fresh, content: "pub const FRESH: u32 = 7;\n" }], session_id: "agent-1" });
    assert.equal(out.results[0].success, true, JSON.stringify(out));
    // without a reload or a click: the change feed brings it (how fast is a
    // question for a benchmark, not for this functional check)
    await row(page, fresh).waitFor(T);
    // the user's file stays in view; the change waits in its own tab, counted
    const tab = page.locator(`.ide-tab[data-path="diff:${fresh}"]`);
    await tab.locator('.ide-badge.agent[data-unseen="1"]').waitFor(T);
    await page.locator(`.ide-tab.active[data-path="${main}"]`).waitFor(T);
    assert.equal(await page.locator('[data-testid="unseen"]').textContent(), "1 new change");
    await page.locator('[data-testid="unseen"]').click();
    const diff = page.locator(`[data-testid="diff-view"][data-path="${fresh}"]`);
    await diff.locator(".cm-mergeView", { hasText: "FRESH" }).waitFor(T);
    assert.match(await diff.locator(".ide-banner").textContent(), /Created by coder::create-file · session agent-1/);
    assert.equal(await page.locator('[data-testid="unseen"]').count(), 0, "looked at");
    await screenshot(page, "diff-light");
    // noise never opens a tab
    await b.outside("coder::create-file", { files: [{ path: join(root, "target/debug/out.rs"), content: "noise\n", parents: true }] });
    await b.outside("coder::create-file", { files: [{ path: join(root, "src/after.rs"), content: "// after\n" }] });
    await page.locator(`.ide-tab[data-path="diff:${join(root, "src/after.rs")}"]`).waitFor(T);
    assert.equal(await page.locator(`.ide-tab[data-path="diff:${join(root, "target/debug/out.rs")}"]`).count(), 0);
    await row(page, main).click();
  });

  test("an agent's edits never take the view; each is labelled by what it did; follow shows them", async () => {
    await row(page, main).click();
    await page.locator(`.ide-tab.active[data-path="${main}"]`).waitFor(T);
    const before = await page.locator(`[data-testid="editor"][data-path="${main}"] .cm-content`).textContent();
    // an edit of an existing file, then a move, by an agent session
    const fresh = join(root, "src/fresh.rs");
    const upd = await b.outside("coder::update-file", {
      files: [{ path: fresh, ops: [{ op: "replace", pattern: "7", replacement: "8" }] }],
      session_id: "agent-1",
    });
    assert.equal(upd.results[0].success, true, JSON.stringify(upd));
    const edited = page.locator(`.ide-tab[data-path="diff:${fresh}"]`);
    await edited.locator(".ide-badge.agent").waitFor(T);
    const moved = join(root, "src/moved.rs");
    await b.outside("coder::move", { files: [{ from: join(root, "src/after.rs"), to: moved }], session_id: "agent-1" });
    await page.locator(`.ide-tab[data-path="diff:${moved}"] .ide-badge.agent`).waitFor(T);
    // still the user's file, untouched, in view
    await page.locator(`.ide-tab.active[data-path="${main}"]`).waitFor(T);
    assert.equal(await page.locator(`[data-testid="editor"][data-path="${main}"] .cm-content`).textContent(), before);
    await screenshot(page, "agent-background-light");
    await edited.click();
    const banner = page.locator(`[data-testid="diff-view"][data-path="${fresh}"] .ide-banner`);
    await banner.waitFor(T);
    assert.match(await banner.textContent(), /^Edited by coder::update-file · session agent-1/);
    await page.locator(`.ide-tab[data-path="diff:${moved}"]`).click();
    assert.match(await page.locator(`[data-testid="diff-view"][data-path="${moved}"] .ide-banner`).textContent(), /^Moved from src\/after\.rs by coder::move/);
    // following the agent: its next change becomes the active tab
    await row(page, main).click();
    await page.locator('[data-testid="follow"]').check();
    await b.outside("coder::update-file", { files: [{ path: moved, ops: [{ op: "edit", old_text: "// after\n", new_text: "// after\n// more\n" }] }], session_id: "agent-1" });
    await page.locator(`.ide-tab.active[data-path="diff:${moved}"]`).waitFor(T);
    await page.locator(`[data-testid="diff-view"][data-path="${moved}"] .cm-mergeView`, { hasText: "// more" }).waitFor(T);
    await page.locator('[data-testid="follow"]').uncheck();
    for (const p of [moved, fresh, join(root, "src/after.rs")]) {
      const t = page.locator(`.ide-tab[data-path="diff:${p}"] .ide-close`);
      if (await t.count()) await t.click();
    }
    await row(page, main).click();
  });

  test("a save changes only the bytes the user typed: BOM, CRLF, no final newline, mixed endings", async () => {
    /** [name, bytes on disk, bytes after the edit: " edited" at the end of line 2, Enter, "new line", "!" at the very end] */
    const cases = [
      ["bom.txt", "\uFEFFfirst\nsecond\nthird\n", "\uFEFFfirst\nsecond edited\nnew line\nthird\n!"],
      ["crlf.txt", "one\r\ntwo\r\nthree\r\n", "one\r\ntwo edited\r\nnew line\r\nthree\r\n!"],
      ["nofinal.txt", "alpha\nbeta\ngamma", "alpha\nbeta edited\nnew line\ngamma!"],
      ["mixed.txt", "\uFEFFa\nb\r\nc\nd\re\n", "\uFEFFa\nb edited\nnew line\r\nc\nd\re\n!"],
    ];
    for (const [name, body] of cases) writeFileSync(join(root, name), body);
    for (const [name, , want] of cases) {
      const file = join(root, name);
      await row(page, file).click();
      const editor = page.locator(`[data-testid="editor"][data-path="${file}"]`);
      await editor.locator(".cm-line").nth(1).waitFor(T);
      if (name === "mixed.txt") await page.locator(".ide-status", { hasText: "UTF-8 with BOM · mixed line endings" }).waitFor(T);
      await editor.locator(".cm-content").click();
      await page.keyboard.press("Control+Home");
      await page.keyboard.press("ArrowDown");
      await page.keyboard.press("End");
      await page.keyboard.type(" edited");
      await page.keyboard.press("Enter");
      await page.keyboard.type("new line");
      await page.keyboard.press("Control+End");
      await page.keyboard.type("!");
      await page.keyboard.press("Control+s");
      await page.locator(`.ide-tab[data-path="${file}"][data-dirty="false"]`).waitFor(T);
      assert.deepEqual(readFileSync(file), Buffer.from(want, "utf8"), name);
      await page.locator(`.ide-tab[data-path="${file}"] .ide-close`).click();
    }
  });

  test("an outside edit to a file with unsaved edits shows the diff: keep mine, take theirs", async () => {
    const file = join(root, "notes.txt");
    writeFileSync(file, "line one\nline two\n");
    await row(page, file).click();
    const editor = page.locator(`[data-testid="editor"][data-path="${file}"]`);
    await editor.locator(".cm-content", { hasText: "line two" }).waitFor(T);
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("mine\n");
    await page.locator(`.ide-tab[data-path="${file}"][data-dirty="true"]`).waitFor(T);
    await b.outside("coder::update-file", { files: [{ path: file, ops: [{ op: "replace", pattern: "line one", replacement: "LINE ONE (theirs)" }] }] });
    // the editor keeps the user's text, and the diff says what the disk did
    const theirs = page.locator('[data-testid="theirs-view"] .cm-mergeView', { hasText: "LINE ONE (theirs)" });
    await theirs.waitFor(T);
    assert.match(await editor.locator(".cm-content").textContent(), /mine/);
    assert.match(await page.locator('[data-testid="changed-on-disk"]').textContent(), /\+1 −2 lines/);
    await screenshot(page, "theirs-light");
    // keep mine: the save replaces the version seen, nothing else
    await page.getByRole("button", { name: "Keep mine" }).click();
    assert.equal(await page.locator('[data-testid="theirs-view"]').count(), 0);
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+s");
    await page.locator(`.ide-tab[data-path="${file}"][data-dirty="false"]`).waitFor(T);
    assert.equal(readFileSync(file, "utf8"), "line one\nline two\nmine\n");
    // take theirs: the disk's text replaces the unsaved edits
    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("dropped\n");
    await page.locator(`.ide-tab[data-path="${file}"][data-dirty="true"]`).waitFor(T);
    writeFileSync(file, "from a shell\n");
    await page.locator('[data-testid="theirs-view"] .cm-mergeView', { hasText: "from a shell" }).waitFor(T);
    await page.getByRole("button", { name: "Take theirs" }).click();
    await page.locator(`.ide-tab[data-path="${file}"][data-dirty="false"]`).waitFor(T);
    await editor.locator(".cm-content", { hasText: "from a shell" }).waitFor(T);
    assert.doesNotMatch(await editor.locator(".cm-content").textContent(), /dropped/);
    assert.equal(readFileSync(file, "utf8"), "from a shell\n");
    await page.locator(`.ide-tab[data-path="${file}"] .ide-close`).click();
  });

  test("quick-open finds a file by fuzzy path", async () => {
    await page.locator(".ide-header").click();
    await page.keyboard.press("Control+p");
    await page.getByLabel("File name").fill("strngs");
    await page.locator(`[role="option"][data-path="${strings}"]`).waitFor(T);
    await screenshot(page, "quickopen-light");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowUp");
    await page.locator(`[role="option"][data-path="${strings}"]`).click();
    await page.locator(`[data-testid="editor"][data-path="${strings}"] .cm-content`, { hasText: "to_uppercase" }).waitFor(T);
  });

  test("search finds content with context and opens the hit", async () => {
    await page.getByRole("tab", { name: "Search" }).click();
    await page.getByLabel("Search text").fill("to_uppercase");
    await page.getByLabel("Search text").press("Enter");
    const hit = page.locator(`.ide-search-hit[data-path="${strings}"]`);
    await hit.waitFor(T);
    assert.match(await hit.textContent(), /pub fn shout/, "a context line before the hit");
    assert.match(await page.locator('[data-testid="search-summary"]').textContent(), /1 matches in 1 files/);
    await hit.click();
    await page.locator(`.ide-tab.active[data-path="${strings}"]`).waitFor(T);
    await page.getByRole("tab", { name: "Explorer" }).click();
  });

  test("images preview and binary files open as read-only hex", async () => {
    await row(page, join(root, "logo.png")).click();
    const img = page.locator('[data-testid="image-preview"]');
    await img.waitFor(T);
    await page.waitForFunction(() => /** @type {HTMLImageElement | null} */ (document.querySelector('[data-testid="image-preview"]'))?.naturalWidth === 8);
    await row(page, join(root, "data.bin")).click();
    await page.locator('[data-testid="hex-view"]', { hasText: "00 01 02 03 ff fe 00 07" }).waitFor(T);
  });

  test("a 10 000-entry folder is virtualized and pages in as it scrolls", async () => {
    const many = join(root, "many");
    await row(page, many).click();
    await row(page, join(many, "entry00000.txt")).waitFor(T);
    const tree = page.locator(".ide-tree");
    const inDom = await tree.locator("[data-path]").count();
    assert.ok(inDom < 200, `${inDom} rows in the DOM`);
    // scroll to the end until every page is in: the last entry shows up
    const last = row(page, join(many, "entry09999.txt"));
    for (let i = 0; i < 40 && !(await last.count()); i++) {
      await tree.evaluate((el) => (el.scrollTop = el.scrollHeight));
      await page.waitForTimeout(100);
    }
    await last.waitFor(T);
    assert.ok(Number(await tree.getAttribute("data-rows")) >= 10_000);
    assert.ok((await tree.locator("[data-path]").count()) < 200);
    await tree.evaluate((el) => (el.scrollTop = 0));
    await row(page, many).click();
  });

  test("a big text file opens read-only; search shows truncation and its reason", async () => {
    const big = join(root, "big.txt");
    await row(page, big).click();
    await page.locator(".ide-banner", { hasText: "open read-only" }).waitFor(T);
    const editor = page.locator(`[data-testid="editor"][data-path="${big}"]`);
    assert.equal(await editor.locator(".cm-content").getAttribute("contenteditable"), "false");
    await page.getByRole("tab", { name: "Search" }).click();
    await page.getByLabel("Search text").fill("needle");
    await page.getByLabel("Search text").press("Enter");
    await page.locator('[data-testid="search-truncated"]', { hasText: "match limit reached" }).waitFor(T);
    await screenshot(page, "search-light");
    await page.getByLabel("Include globs").fill("many/entry0000*.txt");
    await page.getByLabel("Search text").press("Enter");
    await page.locator('[data-testid="search-summary"]', { hasText: "10 matches in 10 files" }).waitFor(T);
    assert.equal(await page.locator('[data-testid="search-truncated"]').count(), 0);
    await page.getByRole("tab", { name: "Explorer" }).click();
    await page.locator(`.ide-tab[data-path="${big}"] .ide-close`).click();
  });

  test("reloading the page brings the workspace, folders and tabs back", async () => {
    await row(page, main).click();
    await page.locator(`.ide-tab.active[data-path="${main}"]`).waitFor(T);
    await page.reload();
    await page.evaluate(() => window.__host.booted);
    await page.locator('[data-testid="root"]', { hasText: root }).waitFor(T);
    await row(page, strings).waitFor(T);
    await page.locator(`.ide-tab[data-path="${strings}"]`).waitFor(T);
    await page.locator(`.ide-tab.active[data-path="${main}"]`).waitFor(T);
    await page.locator(`[data-testid="editor"][data-path="${main}"] .cm-content`, { hasText: "// followed" }).waitFor(T);
    await screenshot(page, "workspace-light");
    await page.evaluate(() => (document.documentElement.dataset.theme = "dark"));
    await page.waitForFunction(() => getComputedStyle(document.querySelector(".ide-page")).backgroundColor === "rgb(17, 20, 24)");
    await screenshot(page, "workspace-dark");
    await row(page, join(root, "src/fresh.rs")).waitFor(T);
    await page.evaluate(() => (document.documentElement.dataset.theme = "light"));
  });

  test("after the tab's connection drops, the page rebinds and re-reads its open files", async () => {
    await row(page, main).click();
    await page.locator(`.ide-tab.active[data-path="${main}"]`).waitFor(T);
    await page.evaluate(() => {
      window.__dropped = new Promise((resolve) => {
        const off = window.__host.client.addConnectionStateListener((s) => {
          if (s === "disconnected") {
            off();
            resolve(true);
          }
        });
      });
      window.__host.client.drop(true);
      return window.__dropped;
    });
    // written while the tab is away: no event can carry it, only the re-read after the reconnect
    writeFileSync(main, "fn main() {}\n// while away\n");
    await page.evaluate(() => window.__host.client.resume());
    await page.waitForFunction(() => window.__host.client.state === "connected");
    await page.locator(`[data-testid="editor"][data-path="${main}"] .cm-content`, { hasText: "// while away" }).waitFor(T);
    const counts = await page.evaluate(() => window.__host.counts());
    // the root's shell::changed binding and the jobs pane's shell::job-finished one
    assert.equal(counts.triggers, 2, JSON.stringify(counts));
    // and the new binding delivers, once ide holds it (its watch is set up after the
    // registration arrives; a write before that has no event): write until one shows
    const later = join(root, "src/after-reconnect.rs");
    let shown = false;
    for (let i = 0; i < 20 && !shown; i++) {
      writeFileSync(later, `// later ${i}\n`);
      shown = await row(page, later)
        .waitFor({ timeout: 500 })
        .then(() => true, () => false);
    }
    assert.ok(shown, "no event from the binding made after the reconnect");
  });

  test("a remembered root that is no longer allowed brings the picker back with the reason", async () => {
    const other = await b.openPage();
    // once this tab has rendered (and stored) the workspace, replace what it remembers
    await other.locator('[data-testid="root"]', { hasText: root }).waitFor(T);
    await other.evaluate(() => localStorage.setItem("ide:root", "/nonexistent-root-for-the-test"));
    await other.reload();
    await other.evaluate(() => window.__host.booted);
    await other.locator('[data-testid="picker"] [role="alert"]').waitFor(T);
    const code = await other.locator('[data-testid="picker"] [role="alert"]').getAttribute("data-code");
    assert.match(code, /^S21[15]$/);
    await other.locator('[aria-label="Roots"] li', { hasText: root }).getByRole("button", { name: "Open" }).click();
    await row(other, join(root, "README.md")).waitFor(T);
    await other.close();
  });

  test("hot reload and dispose leave exactly the page's own binding and handler", async () => {
    const before = await page.evaluate(() => window.__host.counts());
    const types = (/** @type {any} */ c) => c.triggerList.map((/** @type {any} */ t) => t.trigger_type).sort();
    assert.deepEqual(types(before), ["shell::changed", "shell::job-finished"], JSON.stringify(before));
    assert.equal(before.triggerList.find((/** @type {any} */ t) => t.trigger_type === "shell::changed").config.path, root);
    // unfiltered: every completion of this worker's background jobs
    assert.deepEqual(before.triggerList.find((/** @type {any} */ t) => t.trigger_type === "shell::job-finished").config, {});
    // the change handler, the terminals' output handler and the jobs' completion handler, one each
    assert.equal(before.functions, 3);
    await page.evaluate(() => window.__host.reload());
    await row(page, main).waitFor(T);
    const reloaded = await page.evaluate(() => window.__host.counts());
    assert.deepEqual(types(reloaded), ["shell::changed", "shell::job-finished"], JSON.stringify(reloaded));
    assert.equal(reloaded.functions, 3);
    // the reloaded module still follows the disk
    writeFileSync(join(root, "README.md"), "# Fixture\n\nafter the hot reload\n");
    await row(page, join(root, "README.md")).click();
    await page.locator(".cm-content", { hasText: "after the hot reload" }).waitFor(T);
    await page.evaluate(() => window.__host.dispose());
    const gone = await page.evaluate(() => window.__host.counts());
    assert.equal(gone.triggers, 0, JSON.stringify(gone));
    assert.equal(gone.functions, 0);
  });

  test("no page errors were logged", () => {
    const errors = b.consoleErrors.filter((e) => !/Failed to load resource/.test(e));
    assert.deepEqual(errors, []);
  });
});
