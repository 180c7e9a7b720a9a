// The history pane's model: paging with the cursor, refresh from the top,
// and the revert that always dry-runs first and writes only on confirm.

import { test } from "node:test";
import assert from "node:assert/strict";
import { TurnsStore, mergeTurns, stepText } from "../../src/models/turns.js";

/** @param {Record<string, (p: any) => any>} answers */
function worker(answers) {
  /** @type {Array<{id: string, payload: any}>} */
  const calls = [];
  const call = async (/** @type {string} */ id, /** @type {any} */ payload) => {
    calls.push({ id, payload });
    const a = answers[id];
    if (!a) throw { code: "function_not_found", message: id };
    return a(payload);
  };
  return { calls, call };
}

/** @param {string} id */
const turn = (id, changes = 1) => ({
  turn_id: id,
  started_ms: 1,
  ended_ms: 2,
  changes_truncated: false,
  changes: Array.from({ length: changes }, (_, i) => ({ change_id: `${id}-c${i}`, time_ms: 1, function_id: "coder::create-file", kind: "created", path: `/r/${id}${i}`, diff_available: true })),
});

test("pages older turns with the cursor; a turn already shown is not repeated", async () => {
  const w = worker({
    "shell::turns::list": (p) => (p.cursor ? { turns: [turn("b"), turn("c")], next_cursor: null } : { turns: [turn("a"), turn("b")], next_cursor: "7" }),
  });
  const s = new TurnsStore(w.call);
  await s.refresh();
  assert.deepEqual(s.turns.map((t) => t.turn_id), ["a", "b"]);
  assert.equal(s.nextCursor, "7");
  await s.more();
  assert.deepEqual(w.calls[1].payload, { limit: 20, cursor: "7" });
  assert.deepEqual(s.turns.map((t) => t.turn_id), ["a", "b", "c"]);
  assert.equal(s.nextCursor, null);
});

test("a refresh re-reads from the newest turn as many turns as are shown", async () => {
  let page = 0;
  const many = Array.from({ length: 30 }, (_, i) => turn(`t${i}`));
  const w = worker({ "shell::turns::list": (p) => (p.cursor ? { turns: many.slice(20), next_cursor: null } : { turns: many.slice(0, p.limit), next_cursor: p.limit < 30 ? String(++page) : null }) });
  const s = new TurnsStore(w.call);
  await s.refresh();
  await s.more();
  assert.equal(s.turns.length, 30);
  await s.refresh();
  assert.equal(w.calls[2].payload.limit, 30);
  assert.equal(s.turns.length, 30);
});

test("revert is a dry run first; confirm reverts for real; a conflict offers no confirm", async () => {
  let conflict = true;
  const w = worker({
    "shell::turns::list": () => ({ turns: [turn("t", 2)], next_cursor: null }),
    "shell::turns::revert": (p) => ({
      reverted: !p.dry_run && !conflict,
      dry_run: !!p.dry_run,
      steps: [{ change_id: "t-c1", action: "restore", path: "/r/b" }],
      conflicts: conflict ? [{ path: "/r/b", expected_revision: "aaa", current_revision: "bbb", reason: "edited" }] : [],
      revert_turn_id: p.dry_run || conflict ? null : "revert-1",
    }),
  });
  const s = new TurnsStore(w.call);
  await s.preview({ turn_id: "t" });
  assert.deepEqual(w.calls[0], { id: "shell::turns::revert", payload: { turn_id: "t", dry_run: true } });
  assert.equal(s.pending?.result.conflicts.length, 1);
  await s.confirm(); // refused: the dry run conflicted
  assert.equal(w.calls.length, 1);
  conflict = false;
  await s.preview({ turn_id: "t" });
  assert.equal(s.pending?.result.conflicts.length, 0);
  await s.confirm();
  assert.deepEqual(w.calls[2], { id: "shell::turns::revert", payload: { turn_id: "t" } });
  assert.equal(s.outcome?.result?.revert_turn_id, "revert-1");
  assert.equal(s.pending, null);
  assert.equal(w.calls[3].id, "shell::turns::list", "the timeline follows the revert");
});

test("a failed revert is kept as the error, with its code", async () => {
  const w = worker({ "shell::turns::revert": () => Promise.reject({ code: "S211", message: "unknown change" }) });
  const s = new TurnsStore(w.call);
  await s.preview({ change_id: "x" });
  assert.deepEqual(s.outcome?.error, { code: "S211", message: "unknown change" });
  assert.equal(s.pending, null);
});

test("mergeTurns and step wording", () => {
  assert.deepEqual(mergeTurns([turn("a")], [turn("a"), turn("b")]).map((t) => t.turn_id), ["a", "b"]);
  assert.match(stepText({ action: "remove", path: "/r/x" }), /remove \/r\/x/);
  assert.match(stepText({ action: "restore", path: "/r/x" }), /write \/r\/x back/);
});

test("a refresh that overlaps a load of older turns does not undo it, whichever answers first", async () => {
  const many = Array.from({ length: 30 }, (_, i) => turn(`t${i}`));
  /** @type {Array<() => void>} */
  const held = [];
  const w = worker({
    "shell::turns::list": (p) =>
      new Promise((resolve) => {
        const start = p.cursor ? 20 : 0;
        const end = Math.min(30, start + p.limit);
        held.push(() => resolve({ turns: many.slice(start, end), next_cursor: end < 30 ? "c20" : null }));
      }),
  });
  const s = new TurnsStore(w.call);
  const tick = () => new Promise((r) => setImmediate(r));
  const first = s.refresh();
  await tick();
  held.shift()?.();
  await first;
  assert.equal(s.turns.length, 20);
  const older = s.more();
  const again = s.refresh();
  const third = s.refresh();
  assert.equal(again, third, "a waiting refresh is not asked twice");
  await tick();
  assert.equal(held.length, 1, "one read at a time");
  held.shift()?.(); // the older page
  await older;
  await tick();
  assert.deepEqual(w.calls.at(-1)?.payload, { limit: 30 }, "the refresh re-reads what is shown by then");
  held.shift()?.();
  await again;
  assert.equal(s.turns.length, 30);
  assert.equal(s.nextCursor, null);
});

test("a change is labelled by what happened and who did it", async () => {
  const { changeLabel } = await import("../../src/models/turns.js");
  const rel = (/** @type {string} */ p) => p.replace("/r/", "");
  assert.equal(changeLabel({ kind: "modified", function_id: "coder::update-file", session_id: "agent-1" }, rel), "Edited by coder::update-file · session agent-1");
  assert.equal(changeLabel({ kind: "created", function_id: "coder::create-file" }, rel), "Created by coder::create-file");
  assert.equal(changeLabel({ kind: "moved", from_path: "/r/a.rs", function_id: "coder::move" }, rel), "Moved from a.rs by coder::move");
  assert.equal(changeLabel({ kind: "deleted", function_id: "shell::fs::rm", is_binary: true }, rel), "Deleted by shell::fs::rm (binary: no text diff)");
});

test("the history is scoped to the browsed root: every list call carries it, a new scope starts over, a late answer of the old scope is dropped", async () => {
  /** @type {Array<() => void>} */
  const held = [];
  const w = worker({
    "shell::turns::list": (p) =>
      new Promise((resolve) => {
        const name = p.under ? `in-${p.under}` : "everywhere";
        held.push(() => resolve({ turns: [turn(name)], next_cursor: p.cursor ? null : "9" }));
      }),
  });
  const s = new TurnsStore(w.call);
  const tick = () => new Promise((r) => setImmediate(r));
  const a = s.setScope("/r/a");
  await tick();
  held.shift()?.();
  await a;
  assert.deepEqual(w.calls[0].payload, { limit: 20, under: "/r/a" });
  assert.deepEqual(s.turns.map((t) => t.turn_id), ["in-/r/a"]);
  const older = s.more();
  await tick();
  assert.deepEqual(w.calls[1].payload, { limit: 20, cursor: "9", under: "/r/a" });
  // the user turns on "All roots" while the older page of /r/a is in flight
  const all = s.setScope(null);
  assert.deepEqual(s.turns, [], "a new scope shows nothing of the old one");
  assert.equal(s.nextCursor, null);
  held.shift()?.(); // the old scope's page answers late
  await older;
  assert.deepEqual(s.turns, [], "the old scope's late answer is not shown");
  await tick();
  assert.deepEqual(w.calls[2].payload, { limit: 20 }, "all roots: no filter");
  held.shift()?.();
  await all;
  assert.deepEqual(s.turns.map((t) => t.turn_id), ["everywhere"]);
  assert.equal(await s.setScope(null), undefined, "the same scope again asks nothing");
  assert.equal(w.calls.length, 3);
});
