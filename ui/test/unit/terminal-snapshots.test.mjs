import { beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { SNAPSHOT_MAX_CHARS, dropSnapshot, loadSnapshot, pruneSnapshots, saveSnapshot } from "../../src/terminal/snapshots.js";

/** A sessionStorage with a quota in characters (keys and values, like a browser's). */
class Store {
  /** @param {number} quota */
  constructor(quota) {
    this.quota = quota;
    /** @type {Map<string, string>} */
    this.m = new Map();
  }
  get length() {
    return this.m.size;
  }
  /** @param {number} i */
  key(i) {
    return [...this.m.keys()][i] ?? null;
  }
  /** @param {string} k */
  getItem(k) {
    return this.m.get(k) ?? null;
  }
  /** @param {string} k @param {string} v */
  setItem(k, v) {
    let used = k.length + v.length;
    for (const [ok, ov] of this.m) if (ok !== k) used += ok.length + ov.length;
    if (used > this.quota) throw new Error("QuotaExceededError");
    this.m.set(k, v);
  }
  /** @param {string} k */
  removeItem(k) {
    this.m.delete(k);
  }
}

/** @type {Store} */
let store;
beforeEach(() => {
  store = new Store(4 * SNAPSHOT_MAX_CHARS);
  Object.defineProperty(globalThis, "sessionStorage", { value: store, configurable: true });
});

const size = { cols: 80, rows: 24 };
/** A serializer whose output grows with the scrollback it is given. @param {number} perLine @param {number[]} asked */
const screen = (perLine, asked) => (/** @type {number} */ lines) => {
  asked.push(lines);
  return "x".repeat(100 + lines * perLine);
};

test("a kept screen comes back with its sequence and size", () => {
  const asked = [];
  assert.equal(saveSnapshot("s1", 42, size, screen(10, asked), 5000), true);
  assert.deepEqual(asked, [5000], "the whole scrollback fits");
  const got = loadSnapshot("s1");
  assert.equal(got?.sequence, 42);
  assert.deepEqual([got?.cols, got?.rows], [80, 24]);
  assert.equal(got?.data.length, 100 + 5000 * 10);
  assert.equal(loadSnapshot("other"), null);
});

test("a screen over the size bound is taken again with less scrollback", () => {
  const asked = [];
  // 5000 lines at 1000 chars is 5 M: over; 1250 lines is 1.25 M: fits
  assert.equal(saveSnapshot("s1", 7, size, screen(1000, asked), 5000), true);
  assert.deepEqual(asked, [5000, 1250]);
  assert.ok(/** @type {any} */ (loadSnapshot("s1")).data.length <= SNAPSHOT_MAX_CHARS);
});

test("over the tab's quota: smaller, and when nothing fits the older snapshot goes too", () => {
  store.quota = 50_000;
  const asked = [];
  assert.equal(saveSnapshot("s1", 3, size, screen(10, asked), 5000), true);
  assert.deepEqual(asked, [5000, 1250], "50 k chars did not fit the quota, 12.6 k did");
  assert.equal(loadSnapshot("s1")?.sequence, 3);
  // the next one cannot fit even without scrollback: the stale one is dropped
  store.quota = 100;
  const again = [];
  assert.equal(saveSnapshot("s1", 9, size, screen(10, again), 5000), false);
  assert.equal(again.at(-1), 0, "it tried without scrollback last");
  assert.equal(loadSnapshot("s1"), null, "no snapshot rather than a wrong one");
});

test("no sequence yet, or a damaged entry: nothing kept, nothing loaded", () => {
  assert.equal(saveSnapshot("s1", 0, size, () => "x", 10), false);
  store.setItem("ide:term:screen:s2", "{not json");
  store.setItem("ide:term:screen:s3", JSON.stringify({ sequence: -1, cols: 80, rows: 24, data: "x" }));
  store.setItem("ide:term:screen:s4", JSON.stringify({ sequence: 5, cols: 80, rows: 24 }));
  assert.equal(loadSnapshot("s2"), null);
  assert.equal(loadSnapshot("s3"), null);
  assert.equal(loadSnapshot("s4"), null);
});

test("pruning keeps the named sessions' screens and nothing else of ours", () => {
  for (const id of ["a", "b", "c"]) saveSnapshot(id, 1, size, () => id, 0);
  store.setItem("ide:term:layout", "theirs");
  pruneSnapshots(new Set(["b"]));
  assert.equal(loadSnapshot("a"), null);
  assert.equal(loadSnapshot("b")?.data, "b");
  assert.equal(loadSnapshot("c"), null);
  assert.equal(store.getItem("ide:term:layout"), "theirs");
  dropSnapshot("b");
  assert.equal(loadSnapshot("b"), null);
});
