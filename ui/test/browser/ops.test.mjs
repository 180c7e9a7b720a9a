// The jobs, history and source-control panes in headless Chromium against
// the real ide binary. The root is a fresh git repository (made here, with a
// local identity); the steps share one browser and build on each other.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { env, launch, screenshot } from "./common.mjs";
import { pane, typeIn, waitLine } from "./terminal-common.mjs";

const root = env.root;
const readme = join(root, "README.md");
const T = { timeout: 15_000 };

/** @param {string[]} args */
const git = (args) => execFileSync("git", args, { cwd: root, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" } });

/**
 * The merge view of the diff tab `diff:<key>`, once it shows `text`. A write
 * the worker attributes to a writer opens that writer's diff and focuses it
 * (the page follows the writer), possibly after this tab was opened: the tab
 * is brought back until its view shows.
 * @param {import("playwright-core").Page} page @param {string} key @param {string | RegExp} text @param {string} [banner] the tab's note
 */
async function diffTab(page, key, text, banner) {
  const id = `diff:${key}`;
  const view = page.locator(`[data-testid="diff-view"][data-tab="${id}"]`, banner ? { hasText: banner } : {}).locator(".cm-mergeView", { hasText: text });
  const deadline = Date.now() + T.timeout;
  await page.locator(`.ide-tab[data-path="${id}"]`).waitFor(T);
  for (;;) {
    const shown = await view.waitFor({ timeout: 1000 }).then(
      () => true,
      () => false,
    );
    if (shown) return view;
    if (Date.now() > deadline) throw new Error(`the diff tab ${id} never showed ${text}`);
    await page.locator(`.ide-tab[data-path="${id}"]`).click();
  }
}

/** @param {import("playwright-core").Page} page @param {"light" | "dark"} theme */
const theme = (page, theme) => page.evaluate((t) => (document.documentElement.dataset.theme = t), theme);

describe("the jobs, history and source-control panes", () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  /** @type {import("playwright-core").Page} */
  let page;

  before(async () => {
    git(["init", "-q", "-b", "main"]);
    git(["config", "user.name", "Page Test"]);
    git(["config", "user.email", "page-test@example.invalid"]);
    git(["config", "commit.gpgsign", "false"]);
    writeFileSync(join(root, ".gitignore"), "scratch/\n");
    mkdirSync(join(root, "scratch"), { recursive: true });
    b = await launch();
    page = await b.openPage();
    await page.locator('[data-testid="picker"]').waitFor(T);
    await page.locator(`button[data-root="${root}"]`).click();
    await page.locator('[aria-label="Roots"] li', { hasText: root }).getByRole("button", { name: "Open" }).click();
    await page.locator('[data-testid="root"]', { hasText: root }).waitFor(T);
  });
  after(async () => {
    await b?.close();
  });

  test("the bottom panel's tabs keep the terminal alive, at its size, while another panel shows", async () => {
    await page.getByRole("button", { name: "Open a terminal" }).click();
    await pane(page, "live").waitFor(T);
    await typeIn(page, "echo A=$(stty size)=\n");
    await waitLine(page, /^A=\d+ \d+=$/);
    await page.getByRole("tab", { name: "Jobs", exact: true }).click();
    await page.locator(".ide-jobs").waitFor(T);
    assert.equal(await page.locator('.ide-bottom[data-pane-id="terminal"]').isHidden(), true);
    await page.getByRole("tab", { name: "Terminal", exact: true }).click();
    await typeIn(page, "echo B=$(stty size)=\n");
    await waitLine(page, /^B=\d+ \d+=$/);
    const seen = await page.evaluate(() => {
      const t = /** @type {any} */ (document.querySelector(".ide-term-screen"))?.ideTerminal;
      const out = [];
      for (let i = 0; i < t.buffer.active.length; i++) out.push(t.buffer.active.getLine(i)?.translateToString(true).trim() ?? "");
      return out.filter((l) => /^[AB]=/.test(l));
    });
    assert.equal(seen.length, 2, JSON.stringify(seen));
    assert.equal(seen[0].slice(2), seen[1].slice(2), "the same PTY size before and after");
  });

  test("a command line runs as a background job, split into argv, and finishes live", async () => {
    await page.getByRole("tab", { name: "Jobs", exact: true }).click();
    await page.getByLabel("Command line").fill(`sh -c 'echo "out $1"; echo oops >&2; sleep 2; exit 3' job "two words"`);
    await page.locator('[data-testid="argv-preview"]', { hasText: '["sh","-c","echo \\"out $1\\"; echo oops >&2; sleep 2; exit 3","job","two words"]' }).waitFor(T);
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const job = page.locator(".ide-job", { hasText: "two words" });
    await job.and(page.locator('[data-status="running"]')).waitFor(T);
    const id = await job.getAttribute("data-job");
    assert.ok(id, "the row names its job");
    // nothing polls: the row turns finished when shell::job-finished is delivered
    await page.locator(`.ide-job[data-job="${id}"][data-status="finished"]`).waitFor(T);
    const detail = page.locator(`[data-testid="job-detail"][data-job="${id}"][data-status="finished"]`);
    await detail.waitFor(T);
    assert.equal(await detail.locator('[data-testid="job-outcome"]').textContent(), "exit 3");
    assert.equal(await detail.locator('[data-stream="stdout"] pre').textContent(), "out two words\n");
    assert.equal(await detail.locator('[data-stream="stderr"] pre').textContent(), "oops\n");
    // what the worker ran is exactly that argv, in the browsed root
    const st = await b.outside("shell::status", { job_id: id });
    assert.deepEqual(st.job.argv.slice(-2), ["job", "two words"]);
    await screenshot(page, "jobs-light");
  });

  test("a long job is killed from its row", async () => {
    await page.getByLabel("Command line").fill("sh -c 'echo early; exec sleep 60'");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const job = page.locator('.ide-job[data-status="running"]', { hasText: "sleep 60" });
    await job.waitFor(T);
    const id = await job.getAttribute("data-job");
    // the output so far, read on demand while it runs
    const early = page.locator(`[data-testid="job-detail"][data-job="${id}"] [data-stream="stdout"] pre`, { hasText: "early" });
    for (const deadline = Date.now() + T.timeout; !(await early.count()); ) {
      assert.ok(Date.now() < deadline, "the running job's output never showed");
      await page.getByRole("button", { name: "Refresh output" }).click();
      await early.waitFor({ timeout: 500 }).catch(() => {});
    }
    await job.getByRole("button", { name: `Kill ${id}` }).click();
    await page.locator(`.ide-job[data-job="${id}"][data-status="killed"]`).waitFor(T);
    // the outcome names the signal that ended it
    await page.locator(`[data-testid="job-detail"][data-job="${id}"] [data-testid="job-outcome"]`, { hasText: "killed, signal SIGTERM" }).waitFor(T);
    const st = await b.outside("shell::status", { job_id: id });
    assert.equal(st.job.status, "killed");
    assert.equal(st.job.signal, "SIGTERM");
  });

  test("output over the worker's cap is flagged truncated, in the row and on the stream", async () => {
    await page.getByLabel("Command line").fill(`sh -c "head -c 1200000 /dev/zero | tr '\\0' x"`);
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const job = page.locator('.ide-job[data-status="finished"]', { hasText: "head -c 1200000" });
    await job.locator(".ide-badge", { hasText: "truncated" }).waitFor(T);
    await page.locator('[data-testid="job-detail"][data-status="finished"] [data-stream="stdout"] .ide-badge', { hasText: "truncated" }).waitFor(T);
    assert.equal(await page.locator('[data-testid="job-detail"] [data-stream="stderr"] .ide-badge').count(), 0);
  });

  test("a job started by another caller shows up when it finishes (the binding is unfiltered)", async () => {
    const started = await b.outside("shell::exec_bg", { command: "sh", args: ["-c", "echo from-outside"] });
    await page.locator(`.ide-job[data-job="${started.job_id}"][data-status="finished"]`, { hasText: "from-outside" }).waitFor(T);
    await theme(page, "dark");
    await page.locator(`.ide-job[data-job="${started.job_id}"]`).click();
    await page.locator(`[data-testid="job-detail"][data-job="${started.job_id}"] [data-stream="stdout"] pre`, { hasText: "from-outside" }).waitFor(T);
    await screenshot(page, "jobs-dark");
    await theme(page, "light");
  });

  test("a bad command line is refused before anything runs; a missing program and shell operators get the worker's words", async () => {
    const before = (await b.outside("shell::list", {})).count;
    await page.getByLabel("Command line").fill("echo 'unterminated");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.locator('.ide-jobs [role="alert"][data-code="argv"]', { hasText: "unterminated single quote" }).waitFor(T);
    assert.equal((await b.outside("shell::list", {})).count, before);
    // a program that is not there: the worker's refusal, with its code
    await page.getByLabel("Command line").fill("no-such-program-for-the-page-test --flag");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.locator('.ide-jobs [role="alert"]', { hasText: "no-such-program-for-the-page-test" }).waitFor(T);
    // shell operators are words, and the worker says so
    await page.getByLabel("Command line").fill("echo a | cat");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.locator('[data-testid="job-note"]', { hasText: "no shell interprets the command" }).waitFor(T);
    await page.locator('.ide-job[data-status="finished"]', { hasText: "echo a '|' cat" }).waitFor(T);
    await page.locator('[data-testid="job-detail"] [data-stream="stdout"] pre', { hasText: "a | cat" }).waitFor(T);
    await page.getByLabel("Command line").fill("");
  });

  const turn = `turn-ops-${Date.now()}`;
  const plan = join(root, "plan.md");
  const original = readFileSync(readme);
  let updateId = "";

  test("two changes under one turn show in the timeline, newest turn first, paged", async () => {
    // 21 older turns (no turn_id: each change is its own turn), in an ignored folder
    const scratch = Array.from({ length: 21 }, (_, i) => ({ path: join(root, `scratch/s${String(i).padStart(2, "0")}.txt`), content: `${i}\n` }));
    const s = await b.outside("coder::create-file", { files: scratch });
    assert.ok(s.results.every((/** @type {any} */ r) => r.success), JSON.stringify(s));
    const c = await b.outside("coder::create-file", { turn_id: turn, files: [{ path: plan, content: "the plan\n" }] });
    assert.equal(c.results[0].success, true, JSON.stringify(c));
    const u = await b.outside("coder::update-file", { turn_id: turn, files: [{ path: readme, ops: [{ op: "replace", pattern: "Fixture", replacement: "Fixture, edited by a turn" }] }] });
    assert.equal(u.results[0].success, true, JSON.stringify(u));
    updateId = u.results[0].change_id;

    await page.getByRole("tab", { name: "History", exact: true }).click();
    const t = page.locator(`.ide-turn[data-turn="${turn}"]`);
    await t.waitFor(T);
    assert.equal(await t.locator("li").count(), 2);
    assert.equal(await page.locator(".ide-turn").first().getAttribute("data-turn"), turn, "newest turn first");
    assert.equal(await page.locator(".ide-turn").count(), 20, "one page of 20 turns");
    await page.getByRole("button", { name: "Load older turns" }).click();
    await page.locator(".ide-turn").nth(21).waitFor(T);
    assert.equal(await page.locator(".ide-turn").count(), 22);
    assert.equal(await page.getByRole("button", { name: "Load older turns" }).count(), 0);

    // a change's diff opens in the editor's merge view
    await t.locator(`li[data-path="${readme}"] .ide-link`).click();
    await diffTab(page, `${readme} · ${u.results[0].change_id.slice(0, 10)}`, "edited by a turn");
  });

  test("reverting a turn whose file was edited by hand is a conflict, and nothing is written", async () => {
    const left = readFileSync(readme);
    writeFileSync(readme, "# edited by hand\n");
    await page.locator(`.ide-turn[data-turn="${turn}"]`).getByRole("button", { name: "Revert turn…" }).click();
    const box = page.locator('[data-testid="revert"] [data-state="conflict"]');
    await box.waitFor(T);
    assert.equal(await box.locator('[data-testid="revert-steps"] li').count(), 2);
    await box.locator(`[data-testid="revert-conflicts"] li[data-path="${readme}"]`).waitFor(T);
    assert.match(await box.locator('[role="alert"]').textContent(), /nothing will be written/);
    assert.equal(await box.getByRole("button", { name: "Confirm revert" }).isDisabled(), true);
    // what the revert would write to README.md, as a diff
    await box.locator(`[data-testid="revert-steps"] li[data-path="${readme}"]`).getByRole("button", { name: "show" }).click();
    await diffTab(page, `${readme} · revert ${updateId.slice(0, 10)}`, "edited by a turn", "The revert would write README.md back");
    assert.equal(readFileSync(readme, "utf8"), "# edited by hand\n", "the dry run wrote nothing");
    assert.ok(existsSync(plan), "the created file is still there");
    await screenshot(page, "history-conflict-light");

    // put back what the turn left: the revert goes through, byte for byte
    writeFileSync(readme, left);
    await box.getByRole("button", { name: "Check again" }).click();
    const ready = page.locator('[data-testid="revert"] [data-state="ready"]');
    await ready.waitFor(T);
    await theme(page, "dark");
    await screenshot(page, "history-dry-run-dark");
    await theme(page, "light");
    await ready.getByRole("button", { name: "Confirm revert" }).click();
    const done = page.locator('[data-testid="revert"] [data-state="reverted"]');
    await done.waitFor(T);
    assert.deepEqual(readFileSync(readme), original, "README.md is back to its bytes before the turn");
    assert.equal(existsSync(plan), false, "the file the turn created is gone");
    // the revert is a turn of its own, at the top of the timeline
    const revertTurn = (await done.locator(".ide-code").last().textContent()) ?? "";
    assert.match(revertTurn, /^revert-/);
    await page.locator(".ide-turn").first().and(page.locator(`[data-turn="${revertTurn}"]`)).waitFor(T);
    await theme(page, "dark");
    await screenshot(page, "history-dark");
    await theme(page, "light");
    await done.getByRole("button", { name: "Close" }).click();
  });

  test("reverting one change asks first and leaves the rest alone", async () => {
    const c = await b.outside("coder::create-file", { files: [{ path: join(root, "one.txt"), content: "one\n" }] });
    const id = c.results[0].change_id;
    const li = page.locator(`li[data-change="${id}"]`);
    await li.waitFor(T);
    await li.getByRole("button", { name: "Revert…" }).click();
    const ready = page.locator('[data-testid="revert"] [data-state="ready"]');
    await ready.locator('[data-testid="revert-steps"] li', { hasText: "remove one.txt" }).waitFor(T);
    assert.ok(existsSync(join(root, "one.txt")), "a dry run only");
    await ready.getByRole("button", { name: "Confirm revert" }).click();
    await page.locator('[data-testid="revert"] [data-state="reverted"]').waitFor(T);
    assert.equal(existsSync(join(root, "one.txt")), false);
    await page.locator('[data-testid="revert"]').getByRole("button", { name: "Close" }).click();
  });

  test("source control: status, a diff, stage and unstage", async () => {
    await page.getByRole("tab", { name: "Git", exact: true }).click();
    const scm = page.locator('[data-testid="scm"]');
    await scm.locator('[data-testid="scm-branch"]', { hasText: "main (no commits yet)" }).waitFor(T);
    const untracked = scm.locator('[data-section="untracked"]');
    await untracked.locator('li[data-path="README.md"]').waitFor(T);
    await untracked.locator('li[data-path="src/main.rs"]').waitFor(T);
    // ignored paths are not listed
    assert.equal(await scm.locator('li[data-path^="scratch/"]').count(), 0);
    await untracked.locator('li[data-path="README.md"] .ide-scm-path').click();
    await diffTab(page, `${readme} · untracked`, "A tree for the console page tests");

    await untracked.getByRole("button", { name: "Stage README.md" }).click();
    await scm.locator('[data-section="staged"] li[data-path="README.md"][data-code="A"]').waitFor(T);
    assert.match(git(["status", "--porcelain"]), /^A {2}README\.md$/m);
    await screenshot(page, "scm-light");
    await scm.getByRole("button", { name: "Unstage README.md" }).click();
    await untracked.locator('li[data-path="README.md"]').waitFor(T);
    assert.match(git(["status", "--porcelain"]), /^\?\? README\.md$/m);
  });

  test("source control: commit; errors are git's own words; the .git signal refreshes", async () => {
    const scm = page.locator('[data-testid="scm"]');
    await scm.getByRole("button", { name: /^Commit/ }).click();
    await scm.locator('[role="alert"]', { hasText: "write a commit message first" }).waitFor(T);
    // nothing staged: git says so, with its exit status
    await scm.getByLabel("Commit message").fill("nothing yet");
    await scm.getByRole("button", { name: /^Commit/ }).click();
    await scm.locator('[role="alert"][data-code="exit 1"]', { hasText: "nothing added to commit" }).waitFor(T);

    // stage everything, unstage it all, stage it all again
    const files = await scm.locator('[data-section="untracked"] li').count();
    await scm.locator('[data-section="untracked"]').getByRole("button", { name: "Stage all" }).click();
    await scm.locator('[data-section="staged"] .ide-pane-head', { hasText: `Staged (${files})` }).waitFor(T);
    assert.equal(await scm.locator('[data-section="untracked"]').count(), 0);
    await scm.getByRole("button", { name: "Unstage all" }).click();
    await scm.locator('[data-section="untracked"] .ide-pane-head', { hasText: `Untracked (${files})` }).waitFor(T);
    assert.equal(await scm.locator('[data-section="staged"]').count(), 0);
    await scm.locator('[data-section="untracked"]').getByRole("button", { name: "Stage all" }).click();
    await scm.locator('[data-section="staged"] .ide-pane-head', { hasText: `Staged (${files})` }).waitFor(T);
    await scm.getByLabel("Commit message").fill("first commit from the page");
    await scm.getByRole("button", { name: /^Commit \d+ files?$/ }).click();
    await scm.locator('[data-testid="scm-clean"]').waitFor(T);
    await scm.locator('[data-testid="scm-branch"]', { hasText: /^main$/ }).waitFor(T);
    assert.equal(git(["log", "-1", "--format=%s"]).trim(), "first commit from the page");
    assert.equal(git(["status", "--porcelain"]), "");
    // the box empties when the commit call answers, which may come after
    // the .git signal already showed the tree clean: awaited, not sampled
    await page.waitForFunction(
      () => /** @type {HTMLTextAreaElement | null} */ (document.querySelector('[data-testid="scm"] [aria-label="Commit message"]'))?.value === "",
      null,
      T,
    );

    // an edit while another pane is shown is picked up when the pane shows again
    await page.getByRole("tab", { name: "Explorer", exact: true }).click();
    writeFileSync(readme, "# changed after the commit\n");
    await page.getByRole("tab", { name: "Git", exact: true }).click();
    await scm.locator('[data-section="unstaged"] li[data-path="README.md"][data-code="M"]').waitFor(T);
    await theme(page, "dark");
    await screenshot(page, "scm-dark");
    await theme(page, "light");
    // staged, its diff is HEAD against the index
    await scm.getByRole("button", { name: "Stage README.md" }).click();
    await scm.locator('[data-section="staged"] li[data-path="README.md"][data-code="M"] .ide-scm-path').click();
    // both sides: HEAD (the first commit) and the index (the edit)
    await diffTab(page, `${readme} · HEAD ↔ index`, /A tree for the console page tests[\s\S]*changed after the commit/);
    // an edit while the pane is shown arrives live, on top of the staged one
    writeFileSync(readme, "# changed again, after staging\n");
    await scm.locator('[data-section="unstaged"] li[data-path="README.md"][data-code="M"]').waitFor(T);
    // a commit made outside the page clears it through the .git signal
    git(["commit", "-q", "-am", "second commit, from a terminal"]);
    await scm.locator('[data-testid="scm-clean"]').waitFor(T);
  });

  test("the history shows the browsed root's changes; a toggle shows every root's", async () => {
    const scratchDir = join(root, "scratch");
    await page.getByRole("button", { name: "Change workspace" }).click();
    await page.getByLabel("Workspace path").fill(scratchDir);
    await page.getByLabel("Workspace path").press("Enter");
    await page.locator('[data-testid="root"]', { hasText: scratchDir }).waitFor(T);
    await page.getByRole("tab", { name: "History", exact: true }).click();
    const all = page.getByTestId("history-all");
    if (await all.isChecked()) await all.uncheck();
    const listed = page.locator(".ide-history-list li[data-path]");
    await page.locator(`.ide-history-list li[data-path="${join(scratchDir, "s20.txt")}"]`).waitFor(T);
    const paths = await listed.evaluateAll((els) => els.map((e) => e.getAttribute("data-path") ?? ""));
    assert.equal(paths.length, 20, `one page of scratch's 21 turns: ${paths.join(", ")}`);
    assert.ok(
      paths.every((p) => p.startsWith(`${scratchDir}/`)),
      `only changes under the browsed root: ${paths.join(", ")}`,
    );
    await page.getByRole("button", { name: "Load older turns" }).click();
    await page.locator(`.ide-history-list li[data-path="${join(scratchDir, "s00.txt")}"]`).waitFor(T);
    assert.equal(await listed.count(), 21);
    assert.equal(await page.getByRole("button", { name: "Load older turns" }).count(), 0);
    await screenshot(page, "history-scoped-light");

    // every root: README.md's changes (made in the parent) are listed again, newest first
    await all.check();
    await page.locator(`.ide-history-list li[data-path="${readme}"]`).first().waitFor(T);
    assert.equal(await page.locator(".ide-turn").count(), 20, "a fresh first page");
    await all.uncheck();
    await page.locator(`.ide-history-list li[data-path="${readme}"]`).first().waitFor({ state: "detached", ...T });

    await page.getByRole("button", { name: "Change workspace" }).click();
    await page.getByLabel("Workspace path").fill(root);
    await page.getByLabel("Workspace path").press("Enter");
    await page.locator('[data-testid="root"]', { hasText: new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) }).waitFor(T);
  });

  test("no page errors were logged", () => {
    const errors = b.consoleErrors.filter((e) => !/Failed to load resource/.test(e));
    assert.deepEqual(errors, []);
  });
});
