import { Store } from "./store.js";
// The history pane's state: turns and their changes from shell::turns::list
// (newest first, paged by its cursor) and the two-step revert — a dry run
// that says what would be written and what conflicts, then, only on an
// explicit confirm, the revert itself. Pure: `call` is injected.

/**
 * @typedef {{change_id: string, time_ms: number, function_id: string, caller?: string | null, kind: string, path: string, from_path?: string | null, before_revision?: string | null, after_revision?: string | null, diff_available: boolean}} ChangeSummary
 * @typedef {{turn_id: string, session_id?: string | null, started_ms: number, ended_ms: number, changes: ChangeSummary[], changes_truncated: boolean}} Turn
 * @typedef {{turn_id: string} | {change_id: string}} RevertTarget
 * @typedef {{path: string, expected_revision?: string | null, current_revision?: string | null, reason: string}} Conflict
 * @typedef {{reverted: boolean, dry_run: boolean, steps: Array<{change_id: string, action: string, path: string}>, conflicts: Conflict[], revert_turn_id?: string | null}} RevertResult
 * @typedef {{code: string, message: string}} WireError
 */

export const PAGE = 20;
const MAX_LIMIT = 200;

/** Newer pages first; a turn listed twice (it moved up with a new change) is kept where it is newest. @param {Turn[]} a @param {Turn[]} b */
export function mergeTurns(a, b) {
  const seen = new Set();
  /** @type {Turn[]} */
  const out = [];
  for (const t of [...a, ...b]) {
    if (!t || seen.has(t.turn_id)) continue;
    seen.add(t.turn_id);
    out.push(t);
  }
  return out;
}

/** @param {RevertTarget} t */
export const targetKey = (t) => ("turn_id" in t ? `turn:${t.turn_id}` : `change:${t.change_id}`);

/** What a revert step does, in words. @param {{action: string, path: string}} s */
export function stepText(s) {
  if (s.action === "remove") return `remove ${s.path} (the change created it)`;
  if (s.action === "move_back") return `move ${s.path} back`;
  if (s.action === "restore") return `write ${s.path} back to its bytes before the change`;
  return `${s.action} ${s.path}`;
}

/**
 * What a change did and who did it, for a diff tab's banner: "Edited by
 * coder::update-file · session agent-1", "Moved from src/a.rs by coder::move".
 * @param {{kind?: string, from_path?: string | null, function_id?: string, session_id?: string | null, is_binary?: boolean}} d
 * @param {(abs: string) => string} rel how a path is shown
 */
export function changeLabel(d, rel) {
  const verb =
    d.kind === "created"
      ? "Created"
      : d.kind === "deleted"
        ? "Deleted"
        : d.kind === "moved"
          ? `Moved${d.from_path ? ` from ${rel(d.from_path)}` : ""}`
          : d.kind === "modified"
            ? "Edited"
            : "Changed";
  const who = d.function_id ? ` by ${d.function_id}` : "";
  const session = d.session_id ? ` · session ${d.session_id}` : "";
  return `${verb}${who}${session}${d.is_binary ? " (binary: no text diff)" : ""}`;
}

/** @param {string | null | undefined} r */
export const shortRev = (r) => (r ? r.slice(0, 12) : "absent");

export class TurnsStore extends Store {
  /** @param {(id: string, payload: any) => Promise<any>} call */
  constructor(call) {
    super();
    this.call = call;
    /** @type {Turn[]} */
    this.turns = [];
    /** @type {string | null} */
    this.nextCursor = null;
    this.loaded = false;
    /** @type {WireError | null} */
    this.error = null;
    /** The dry run waiting for a confirm. @type {null | {target: RevertTarget, result: RevertResult}} */
    this.pending = null;
    /** The last revert's answer (or failure). @type {null | {target: RevertTarget, result?: RevertResult, error?: WireError}} */
    this.outcome = null;
    this.busy = false;
    /** @type {Promise<void>} */
    this.tail = Promise.resolve();
    /** @type {Promise<void> | null} */
    this.refreshQueued = null;
    /** Only changes at or below this directory (the browsed root); null: every root. @type {string | null} */
    this.under = null;
  }

  /** The filter every list call carries. */
  filter() {
    return this.under ? { under: this.under } : {};
  }

  /**
   * Show the changes at or below `dir` (null: all). A new scope starts over
   * from the newest turn: the shown turns and the cursor belong to the old one.
   * @param {string | null} dir
   */
  setScope(dir) {
    if (dir === this.under) return Promise.resolve();
    this.under = dir;
    this.turns = [];
    this.nextCursor = null;
    this.loaded = false;
    this.changed();
    return this.refresh();
  }

  /**
   * List reads run one at a time, each on the state the one before left: a
   * refresh re-reads from the newest turn as many turns as are shown then,
   * an older page starts at the cursor in force then. So a refresh and a
   * "load older" that overlap cannot undo each other. A refresh asked for
   * while one is already waiting to run is that one.
   * @param {() => Promise<void>} op
   */
  queue(op) {
    const run = this.tail.then(op, op);
    this.tail = run.catch(() => {});
    return run;
  }

  /** Re-read from the newest turn, as many as are shown (one call). */
  refresh() {
    if (this.refreshQueued) return this.refreshQueued;
    const p = this.queue(async () => {
      this.refreshQueued = null;
      const limit = Math.min(MAX_LIMIT, Math.max(PAGE, this.turns.length));
      const under = this.under;
      try {
        const out = await this.call("shell::turns::list", { limit, ...this.filter() });
        if (under !== this.under) return; // the scope changed meanwhile: its own refresh follows
        this.turns = mergeTurns(out?.turns ?? [], []);
        this.nextCursor = out?.next_cursor ?? null;
        this.error = null;
      } catch (e) {
        this.error = /** @type {any} */ (e);
      }
      this.loaded = true;
      this.changed();
    });
    this.refreshQueued = p;
    return p;
  }

  /** The next (older) page. */
  more() {
    return this.queue(async () => {
      const cursor = this.nextCursor;
      if (!cursor) return;
      const under = this.under;
      try {
        const out = await this.call("shell::turns::list", { limit: PAGE, cursor, ...this.filter() });
        if (under !== this.under) return;
        this.turns = mergeTurns(this.turns, out?.turns ?? []);
        this.nextCursor = out?.next_cursor ?? null;
        this.error = null;
      } catch (e) {
        this.error = /** @type {any} */ (e);
      }
      this.changed();
    });
  }

  /** Step one: ask what a revert would do, writing nothing. @param {RevertTarget} target */
  async preview(target) {
    this.busy = true;
    this.outcome = null;
    this.pending = null;
    this.changed();
    try {
      const result = await this.call("shell::turns::revert", { ...target, dry_run: true });
      this.pending = { target, result };
    } catch (e) {
      this.outcome = { target, error: /** @type {any} */ (e) };
    }
    this.busy = false;
    this.changed();
  }

  /** Step two, only after a clean dry run: revert for real. */
  async confirm() {
    const p = this.pending;
    if (!p || p.result.conflicts.length > 0) return;
    this.busy = true;
    this.changed();
    try {
      const result = await this.call("shell::turns::revert", { ...p.target });
      this.outcome = { target: p.target, result };
    } catch (e) {
      this.outcome = { target: p.target, error: /** @type {any} */ (e) };
    }
    this.pending = null;
    this.busy = false;
    this.changed();
    await this.refresh();
  }

  cancel() {
    this.pending = null;
    this.outcome = null;
    this.changed();
  }
}
