// The PTY output router: one per-tab handler, frames applied per session in
// sequence order whatever order they land in, duplicates dropped, each
// delivery answered only once its frame is applied, frames for a session
// not held yet queued (bounded), everything dropped on dispose.

import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_QUEUED_FRAMES, PTY_OUTPUT_HANDLER, PtyRouter } from "../../src/terminal/router.js";

function fakeIii() {
  /** @type {Map<string, (p: any) => any>} */
  const handlers = new Map();
  return {
    browserId: "console-abc",
    handlers,
    /** @param {string} id @param {(p: any) => any} h */
    on(id, h) {
      handlers.set(id, h);
      return () => handlers.delete(id);
    },
  };
}

/** @param {string} session_id @param {number} sequence */
const frame = (session_id, sequence) => ({ session_id, sequence, data: btoa(`f${sequence};`), eof: false, exit_code: null, signal: null, error: null });

test("registers one per-tab handler and names the contract's output target", () => {
  const iii = fakeIii();
  const r = new PtyRouter(iii);
  assert.deepEqual([...iii.handlers.keys()], [PTY_OUTPUT_HANDLER]);
  assert.equal(r.outputFunctionId, "iii::ide-ui::pty-output::console-abc");
  assert.equal(r.available, true);
  r.dispose();
  assert.equal(iii.handlers.size, 0);
  assert.equal(r.available, false);
});

test("without a per-tab handler terminals are unavailable", () => {
  const r = new PtyRouter({});
  assert.equal(r.available, false);
  assert.equal(r.outputFunctionId, null);
});

test("out-of-order frames are applied in sequence order; duplicates once", async () => {
  const iii = fakeIii();
  const r = new PtyRouter(iii);
  /** @type {number[]} */
  const applied = [];
  r.hold("s", (f) => {
    applied.push(f.sequence);
  });
  r.release("s", 0);
  const h = /** @type {(p: any) => Promise<any>} */ (iii.handlers.get(PTY_OUTPUT_HANDLER));
  const answers = [3, 1, 4, 2, 2, 1].map((n) => h(frame("s", n)));
  await Promise.all(answers);
  assert.deepEqual(applied, [1, 2, 3, 4]);
  assert.equal(r.lastApplied("s"), 4);
  r.dispose();
});

test("a delivery is answered only once its frame is applied", async () => {
  const r = new PtyRouter(fakeIii());
  /** @type {Array<() => void>} */
  const finish = [];
  r.hold("s", () => new Promise((resolve) => finish.push(() => resolve(undefined))));
  r.release("s", 0);
  let answered = false;
  const p = r.deliver(frame("s", 1)).then(() => (answered = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(answered, false, "still being written");
  assert.equal(finish.length, 1);
  finish[0]();
  await p;
  assert.equal(answered, true);
  r.dispose();
});

test("a frame ahead of a gap waits (its answer too) until the gap fills", async () => {
  const r = new PtyRouter(fakeIii());
  /** @type {number[]} */
  const applied = [];
  r.hold("s", (f) => {
    applied.push(f.sequence);
  });
  r.release("s", 0);
  let twoAnswered = false;
  const two = r.deliver(frame("s", 2)).then(() => (twoAnswered = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(applied, []);
  assert.equal(twoAnswered, false);
  await r.deliver(frame("s", 1));
  await two;
  assert.deepEqual(applied, [1, 2]);
  r.dispose();
});

test("frames racing the open reply are queued, then applied once held", async () => {
  const r = new PtyRouter(fakeIii());
  await r.deliver(frame("new", 2));
  await r.deliver(frame("new", 1));
  /** @type {number[]} */
  const applied = [];
  r.hold("new", (f) => {
    applied.push(f.sequence);
  });
  assert.deepEqual(applied, [], "held: nothing applied before release");
  r.release("new", 0);
  await r.deliver(frame("new", 3));
  assert.deepEqual(applied, [1, 2, 3]);
  r.dispose();
});

test("an attach reply sets where live frames go on: what it already covered is dropped", async () => {
  const r = new PtyRouter(fakeIii());
  /** @type {number[]} */
  const applied = [];
  r.hold("s", (f) => {
    applied.push(f.sequence);
  });
  // live frames land while the attach call is out
  const live = [r.deliver(frame("s", 11)), r.deliver(frame("s", 10))];
  // the reply's frames ran through 9 (applied by the pane itself)
  r.release("s", 9);
  await Promise.all(live);
  await r.deliver(frame("s", 9));
  assert.deepEqual(applied, [10, 11]);
  r.dispose();
});

test("the queue for an unheld session is bounded", async () => {
  const r = new PtyRouter(fakeIii());
  for (let i = 1; i <= MAX_QUEUED_FRAMES + 10; i++) await r.deliver(frame("q", i));
  /** @type {number[]} */
  const applied = [];
  r.hold("q", (f) => {
    applied.push(f.sequence);
  });
  r.release("q", 0);
  // the oldest went, so what is left starts past a gap and waits for it
  assert.deepEqual(applied, []);
  assert.equal(r.dropped.get("q"), 10);
  // a pane that re-attaches past the gap gets the rest in order
  r.release("q", 10);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(applied.length, MAX_QUEUED_FRAMES);
  assert.equal(applied[0], 11);
  r.dispose();
});

test("unholding answers what waits and stops applying; dispose drops everything", async () => {
  const r = new PtyRouter(fakeIii());
  /** @type {number[]} */
  const applied = [];
  const off = r.hold("s", (f) => {
    applied.push(f.sequence);
  });
  r.release("s", 0);
  const waiting = r.deliver(frame("s", 5));
  off();
  await waiting;
  assert.deepEqual(applied, []);
  await r.deliver(frame("s", 1));
  r.dispose();
  await r.deliver(frame("s", 2));
  assert.deepEqual(applied, []);
});
