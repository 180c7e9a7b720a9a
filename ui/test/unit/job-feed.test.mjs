// The jobs pane's feed: one per-tab handler and one unfiltered
// shell::job-finished binding per loaded asset, deliveries routed to the
// store, a fresh binding after a reconnect, everything gone on dispose.

import { test } from "node:test";
import assert from "node:assert/strict";
import { JOB_FINISHED_HANDLER, JobFeed } from "../../src/ops/feed.js";

function fakeApp() {
  /** @type {Map<string, (p: any) => any>} */
  const handlers = new Map();
  /** @type {Map<number, any>} */
  const triggers = new Map();
  /** @type {Set<() => void>} */
  const reconnects = new Set();
  /** @type {Set<() => void>} */
  const hosts = new Set();
  /** @type {any[]} */
  const calls = [];
  let n = 0;
  const app = {
    iii: {
      browserId: "console-t",
      on: (/** @type {string} */ id, /** @type {(p: any) => any} */ h) => {
        handlers.set(id, h);
        return () => handlers.delete(id);
      },
      registerTrigger: (/** @type {any} */ input) => {
        const id = ++n;
        triggers.set(id, input);
        return () => triggers.delete(id);
      },
    },
    api: {
      call: async (/** @type {string} */ id, /** @type {any} */ payload) => {
        calls.push([id, payload]);
        return id === "shell::list" ? { count: 1, jobs: [{ id: "job-1", status: "finished", exit_code: 0, started_at_ms: 1 }] } : {};
      },
    },
    onReconnect: (/** @type {() => void} */ fn) => {
      reconnects.add(fn);
      return () => reconnects.delete(fn);
    },
    onHost: (/** @type {() => void} */ fn) => {
      hosts.add(fn);
      return () => hosts.delete(fn);
    },
    triggerInput: (/** @type {string} */ type, /** @type {string} */ function_id, /** @type {any} */ config) => ({ type, function_id, config }),
  };
  return { app, handlers, triggers, reconnects, calls };
}

test("binds once, unfiltered, to the per-tab handler; a delivery re-reads the list", async () => {
  const f = fakeApp();
  const feed = new JobFeed(/** @type {any} */ (f.app));
  assert.deepEqual([...f.handlers.keys()], [JOB_FINISHED_HANDLER]);
  assert.deepEqual([...f.triggers.values()], [{ type: "shell::job-finished", function_id: `${JOB_FINISHED_HANDLER}::console-t`, config: {} }]);
  const answer = f.handlers.get(JOB_FINISHED_HANDLER)?.({ job_id: "job-1", argv: ["true"], status: "finished", exit_code: 0, started_at_ms: 1, finished_at_ms: 2, duration_ms: 1, _caller_worker_id: "w" });
  assert.deepEqual(answer, {});
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(f.calls[0], ["shell::list", {}]);
  assert.deepEqual(feed.store.rows()[0].argv, ["true"]);
  feed.dispose();
});

test("a reconnect binds afresh (one binding, not two) and re-reads; dispose leaves nothing", async () => {
  const f = fakeApp();
  const feed = new JobFeed(/** @type {any} */ (f.app));
  const first = [...f.triggers.keys()];
  for (const fn of f.reconnects) fn();
  assert.equal(f.triggers.size, 1);
  assert.notDeepEqual([...f.triggers.keys()], first);
  await new Promise((r) => setImmediate(r));
  assert.equal(f.calls.filter((c) => c[0] === "shell::list").length, 1);
  feed.dispose();
  assert.equal(f.triggers.size, 0);
  assert.equal(f.handlers.size, 0);
  assert.equal(f.reconnects.size, 0);
});

test("a console without registerTrigger says so instead of pretending to be live", () => {
  const f = fakeApp();
  /** @type {any} */ (f.app.iii).registerTrigger = undefined;
  const feed = new JobFeed(/** @type {any} */ (f.app));
  assert.equal(feed.bindError?.code, "unsupported");
  feed.dispose();
});
