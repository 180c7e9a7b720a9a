// The jobs pane's model: the view converges whatever order list answers and
// job-finished deliveries land in, and whether they repeat.

import { test } from "node:test";
import assert from "node:assert/strict";
import { JobsStore, newer, outcome } from "../../src/models/jobs.js";

/** A worker stand-in whose answers the test releases one by one. */
function worker() {
  /** @type {Array<{id: string, payload: any, resolve: (v: any) => void, reject: (e: any) => void}>} */
  const calls = [];
  const call = (/** @type {string} */ id, /** @type {any} */ payload) => new Promise((resolve, reject) => calls.push({ id, payload, resolve, reject }));
  return { calls, call };
}

const running = { id: "job-1", status: "running", exit_code: null, started_at_ms: 10, finished_at_ms: null, stdout_truncated: false, stderr_truncated: false };
const done = { ...running, status: "finished", exit_code: 0, finished_at_ms: 20 };
const ev = { job_id: "job-1", argv: ["sleep", "0"], status: "finished", exit_code: 0, started_at_ms: 10, finished_at_ms: 20, duration_ms: 10, _caller_worker_id: "w" };

const tick = () => new Promise((r) => setImmediate(r));

test("a list answer older than the event is not allowed to bring a finished job back to running", async () => {
  const w = worker();
  const s = new JobsStore(w.call);
  const first = s.refresh(); // asked before the job ended
  const second = s.event(ev); // the event lands while that read is out
  assert.equal(s.rows()[0].status, "finished");
  assert.deepEqual(s.rows()[0].argv, ["sleep", "0"]);
  assert.equal(w.calls.length, 1, "one read at a time");
  w.calls[0].resolve({ count: 1, jobs: [running] }); // the stale answer
  await tick();
  assert.equal(s.rows()[0].status, "finished", "the event's end wins over a list that did not see it");
  assert.equal(w.calls.length, 2, "the event's read follows the one in flight");
  w.calls[1].resolve({ count: 1, jobs: [done] });
  await Promise.all([first, second]);
  assert.equal(s.rows().length, 1);
  assert.equal(s.rows()[0].status, "finished");
  assert.equal(s.rows()[0].exit_code, 0);
});

test("a stale list that still says running does not undo the event even when it is the newest answer", async () => {
  const w = worker();
  const s = new JobsStore(w.call);
  const p = s.event(ev);
  w.calls[0].resolve({ count: 1, jobs: [running] });
  await p;
  assert.equal(s.rows()[0].status, "finished");
});

test("a burst of duplicate and out-of-order events costs two reads and converges to one row per job", async () => {
  const w = worker();
  const s = new JobsStore(w.call);
  const evB = { ...ev, job_id: "job-2", status: "killed", exit_code: null, started_at_ms: 30, argv: ["sleep", "30"] };
  const ps = [s.event(evB), s.event(ev), s.event(evB), s.event(ev)];
  const answer = { count: 2, jobs: [done, { ...running, id: "job-2", started_at_ms: 30, status: "killed" }] };
  w.calls[0].resolve(answer);
  await tick();
  assert.equal(w.calls.length, 2);
  w.calls[1].resolve(answer);
  await Promise.all(ps);
  assert.equal(w.calls.length, 2);
  assert.deepEqual(
    s.rows().map((r) => [r.id, r.status]),
    [
      ["job-2", "killed"],
      ["job-1", "finished"],
    ],
  );
  assert.deepEqual(s.rows()[0].argv, ["sleep", "30"]);
});

test("events without a terminal status or a job id are ignored; extra fields are fine", async () => {
  const w = worker();
  const s = new JobsStore(w.call);
  await s.event({ job_id: "x", status: "running" });
  await s.event({ status: "finished" });
  await s.event(null);
  assert.equal(w.calls.length, 0);
  assert.equal(s.rows().length, 0);
});

test("start sends argv (never a shell string) with the cwd, and the list follows", async () => {
  const w = worker();
  const s = new JobsStore(w.call);
  const p = s.start(["echo", "a b"], "/root");
  assert.deepEqual(w.calls[0], { ...w.calls[0], id: "shell::exec_bg", payload: { command: "echo", args: ["a b"], cwd: "/root" } });
  w.calls[0].resolve({ job_id: "job-9", argv: ["echo", "a b"], note: "no shell interprets the command" });
  await new Promise((r) => setImmediate(r));
  assert.equal(s.rows()[0].id, "job-9");
  assert.equal(s.selected, "job-9");
  assert.deepEqual(s.note, { job_id: "job-9", text: "no shell interprets the command" });
  assert.equal(w.calls[1].id, "shell::list");
  w.calls[1].resolve({ count: 1, jobs: [{ ...done, id: "job-9" }] });
  await new Promise((r) => setImmediate(r));
  assert.equal(w.calls[2].id, "shell::status");
  w.calls[2].resolve({ job: { ...done, id: "job-9", argv: ["echo", "a b"], stdout: "a b\n", stderr: "" } });
  await p;
  assert.equal(s.detail?.stdout, "a b\n");
});

test("a failed list is an error shown with its code, not an empty list", async () => {
  const w = worker();
  const s = new JobsStore(w.call);
  const p = s.refresh();
  w.calls[0].reject({ code: "S216", message: "boom" });
  await p;
  assert.deepEqual(s.error, { code: "S216", message: "boom" });
});

test("outcome and newer", () => {
  assert.equal(outcome({ status: "finished", exit_code: 0 }), "exit 0");
  assert.equal(outcome({ status: "killed", exit_code: null }), "killed");
  assert.equal(outcome({ status: "failed", exit_code: 2 }), "failed, exit 2");
  assert.equal(outcome({ status: "killed", exit_code: null, signal: "SIGTERM" }), "killed, signal SIGTERM");
  assert.equal(outcome({ status: "running" }), "running");
  assert.equal(newer(done, running).status, "finished");
  assert.equal(newer(running, done).status, "finished");
});
