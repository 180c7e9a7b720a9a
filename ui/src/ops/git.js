// One browsed root's git repository, through shell::exec with argv only
// (never a shell string): is the root inside one, its status, a file's two
// sides for the diff view, stage, unstage, commit. Failures keep git's own
// words: a non-zero exit becomes {code: "exit N", message: stderr (or
// stdout, where git says "nothing to commit")}.

import { CallError } from "../api.js";
import { gitArgs, parseStatus } from "../models/git.js";
import { Store } from "../models/store.js";

/** Worktree refreshes wait this long for a burst of changes to settle. */
const SETTLE_MS = 250;

export class GitRepo extends Store {
  /** @param {import("../api.js").Api} api @param {string} root */
  constructor(api, root) {
    super();
    this.api = api;
    this.root = root;
    /** null: not asked yet; false: not a repository. @type {null | boolean} */
    this.inRepo = null;
    /** @type {string | null} */
    this.toplevel = null;
    /** @type {import("../models/git.js").GitStatus | null} */
    this.status = null;
    /** The last action's failure; only the next action clears it. @type {null | {code: string, message: string}} */
    this.error = null;
    /**
     * Reading the repository failed. Kept apart from `error`: a status
     * refresh (the change feed starts them at any time) must not wipe what
     * an action just reported. @type {null | {code: string, message: string}}
     */
    this.statusError = null;
    /** The last action's result, shown under the commit box. @type {null | string} */
    this.notice = null;
    this.busy = false;
    this.asked = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** Mounted source-control panes. */
    this.shown = 0;
    /** A change arrived while no pane was shown. */
    this.stale = false;
  }

  /** Run git with `args` in the root; stdout, or a CallError with git's words. @param {string[]} args */
  async git(args) {
    const out = await this.api.call("shell::exec", { command: "git", args, cwd: this.root }, 60_000);
    if (out.timed_out) throw new CallError("timeout", `git ${args.join(" ")} timed out`);
    if (out.exit_code !== 0) {
      const words = (out.stderr || out.stdout || "").trim() || `git ${args.join(" ")} failed`;
      throw new CallError(out.exit_code == null ? "killed" : `exit ${out.exit_code}`, words);
    }
    return /** @type {{stdout: string, stdout_truncated: boolean}} */ (out);
  }

  /** Find out whether the root is inside a repository, then read its status. */
  async detect() {
    try {
      const out = await this.git(gitArgs.toplevel());
      this.toplevel = out.stdout.trim();
      this.inRepo = true;
    } catch (e) {
      const err = /** @type {CallError} */ (e);
      // "not a git repository" is git's exit 128; anything else is an error worth showing
      if (/^exit /.test(err.code)) {
        this.inRepo = false;
        this.toplevel = null;
        this.status = null;
        this.statusError = null;
      } else {
        this.statusError = err;
      }
      this.changed();
      return;
    }
    await this.refresh();
  }

  async refresh() {
    if (!this.inRepo) return this.detect();
    const n = ++this.asked;
    try {
      const out = await this.git(gitArgs.status());
      if (n !== this.asked) return;
      this.status = parseStatus(out.stdout);
      this.statusError = null;
    } catch (e) {
      if (n !== this.asked) return;
      this.statusError = /** @type {any} */ (e);
    }
    this.changed();
  }

  /**
   * A shell::changed event: `.git` (HEAD, index, refs) at once, worktree
   * changes once they settle. While the pane is not shown nothing runs git
   * (but a `.git` signal outside a repository: `git init` makes one); the
   * status is re-read when the pane shows again.
   * @param {{path: string, kind: string}} e
   */
  onChange(e) {
    if (this.inRepo === false && e.path !== ".git" && e.kind !== "rescan") return;
    if (this.inRepo && this.shown === 0) {
      this.stale = true;
      return;
    }
    const wait = e.path === ".git" ? 0 : SETTLE_MS;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void (this.inRepo ? this.refresh() : this.detect());
    }, wait);
  }

  /** The pane is on screen (counted: strict mode mounts twice); re-read if something moved meanwhile. */
  show() {
    this.shown += 1;
    if (this.stale) {
      this.stale = false;
      void this.refresh();
    }
    return () => {
      this.shown -= 1;
    };
  }

  dispose() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** @param {() => Promise<any>} fn @param {string} [done] */
  async act(fn, done) {
    this.busy = true;
    this.notice = null;
    this.changed();
    this.error = null;
    try {
      const out = await fn();
      this.notice = done ?? (out?.stdout ?? "").trim().split("\n")[0] ?? null;
      this.busy = false;
      await this.refresh();
      return true;
    } catch (e) {
      this.error = /** @type {any} */ (e);
      this.busy = false;
      await this.refresh().catch(() => {});
      return false;
    }
  }

  /** @param {string} path */
  stage(path) {
    return this.act(() => this.git(gitArgs.stage(path)), `staged ${path}`);
  }

  /** @param {string} path */
  unstage(path) {
    return this.act(() => this.git(gitArgs.unstage(path, !!this.status?.branch.initial)), `unstaged ${path}`);
  }

  stageAll() {
    return this.act(() => this.git(gitArgs.stageAll()), "staged every change");
  }

  unstageAll() {
    return this.act(() => this.git(gitArgs.unstageAll(!!this.status?.branch.initial)), "unstaged everything");
  }

  /** @param {string} message */
  commit(message) {
    if (!message.trim()) {
      this.error = { code: "empty message", message: "write a commit message first" };
      this.changed();
      return Promise.resolve(false);
    }
    return this.act(() => this.git(gitArgs.commit(message)));
  }

  /** Absolute path of a status path (status paths are relative to the top level). @param {string} path */
  abs(path) {
    return `${this.toplevel ?? this.root}/${path}`;
  }

  /**
   * The two sides of an entry's diff: staged = HEAD ↔ index, unstaged =
   * index ↔ worktree, untracked = nothing ↔ worktree.
   * @param {"staged" | "unstaged" | "untracked"} where @param {import("../models/git.js").GitEntry} entry
   */
  async sides(where, entry) {
    const show = async (/** @type {"HEAD" | "index"} */ from, /** @type {string} */ path) => (await this.git(gitArgs.show(from, path))).stdout;
    const worktree = async () => {
      if (entry.code === "D") return "";
      return (await this.api.readText(this.abs(entry.path), 16 << 20)).content;
    };
    if (where === "staged") {
      const old = entry.code === "A" || this.status?.branch.initial ? "" : await show("HEAD", entry.orig ?? entry.path);
      const neu = entry.code === "D" ? "" : await show("index", entry.path);
      return { old, new: neu, label: "HEAD ↔ index" };
    }
    if (where === "unstaged") return { old: await show("index", entry.path), new: await worktree(), label: "index ↔ working tree" };
    return { old: "", new: await worktree(), label: "untracked" };
  }
}
