import { test } from "node:test";
import assert from "node:assert/strict";
import { arrange } from "../../src/terminal/leases.js";

/** @param {string} pane */
const lease = (pane) => ({ pane, session_id: `s-${pane}`, access_key: "k", reconnect_token: "r", sequence: 1, cwd: "/r" });

test("a reload lays the panes out as they were: tab order, active, split", () => {
  // storage keeps leases in the order they were last written (every frame rewrites one)
  const got = arrange([lease("c"), lease("a"), lease("b")], { order: ["a", "b", "c"], active: "b", split: "c" });
  assert.deepEqual(got.leases.map((l) => l.pane), ["a", "b", "c"]);
  assert.equal(got.active, "b");
  assert.equal(got.split, "c");
});

test("panes the layout does not know go last; gone panes are skipped", () => {
  const got = arrange([lease("x"), lease("b"), lease("y")], { order: ["a", "b"], active: "a", split: "gone" });
  assert.deepEqual(got.leases.map((l) => l.pane), ["b", "x", "y"]);
  assert.equal(got.active, "b", "the stored active pane is gone: the first one");
  assert.equal(got.split, null);
});

test("no layout (an older page's storage): storage order, the first active, no split", () => {
  const got = arrange([lease("b"), lease("a")], null);
  assert.deepEqual(got.leases.map((l) => l.pane), ["b", "a"]);
  assert.equal(got.active, "b");
  assert.equal(got.split, null);
  assert.deepEqual(arrange([], { order: ["a"], active: "a", split: null }), { leases: [], active: null, split: null });
  // a split that is the active pane is not a split
  assert.equal(arrange([lease("a"), lease("b")], { order: ["a", "b"], active: "a", split: "a" }).split, null);
});
