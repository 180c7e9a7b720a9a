// The source-control pane's repository store: what it shows when an action
// fails and the change feed refreshes the status around it.

import { test } from "node:test";
import assert from "node:assert/strict";
import { GitRepo } from "../../src/ops/git.js";

const STATUS = ["# branch.oid (initial)", "# branch.head main", "? README.md"].join("\0") + "\0";

/** A worker that answers git's argv: status (held while `gate` is set), a failing commit. */
function fakeApi() {
  const api = {
    /** @type {Promise<void> | null} */
    gate: null,
    statusReads: 0,
    /** @param {string} _id @param {{args: string[]}} input */
    async call(_id, input) {
      const args = input.args;
      if (args.includes("--show-toplevel")) return { exit_code: 0, stdout: "/r\n", stderr: "" };
      if (args.includes("status")) {
        api.statusReads += 1;
        if (api.gate) await api.gate;
        return { exit_code: 0, stdout: STATUS, stderr: "" };
      }
      if (args.includes("commit")) {
        return { exit_code: 1, stdout: "nothing added to commit but untracked files present\n", stderr: "" };
      }
      throw new Error(`unexpected git ${args.join(" ")}`);
    },
  };
  return api;
}

/** A repository store on a fake worker, detected and shown in a pane. */
async function shownRepo() {
  const api = fakeApi();
  const repo = new GitRepo(/** @type {any} */ (api), "/r");
  await repo.detect();
  const hide = repo.show();
  const done = () => {
    hide();
    repo.dispose();
  };
  return { api, repo, done };
}

/** Resolves at the store's next change for which `ok` holds. @param {GitRepo} repo @param {() => boolean} ok */
function until(repo, ok) {
  return new Promise((resolve) => {
    const off = repo.subscribe(() => {
      if (ok()) {
        off();
        resolve(undefined);
      }
    });
  });
}

test("a failed action stays on screen when the change feed refreshes the status after it", async () => {
  const { api, repo, done } = await shownRepo();
  assert.equal(await repo.commit("nothing yet"), false);
  assert.equal(repo.error?.code, "exit 1");
  // the commit touched .git: the feed's signal re-reads the status
  const before = api.statusReads;
  const refreshed = until(repo, () => api.statusReads > before);
  repo.onChange({ path: ".git", kind: "modified" });
  await refreshed;
  assert.equal(repo.error?.code, "exit 1", "the refresh left the commit's failure alone");
  assert.match(repo.error?.message ?? "", /nothing added to commit/);
  assert.equal(repo.statusError, null);
  done();
});

test("a refresh in flight when the action fails does not hide the failure either", async () => {
  const { api, repo, done } = await shownRepo();
  /** @type {() => void} */
  let release = () => {};
  api.gate = new Promise((r) => {
    release = r;
  });
  const held = api.statusReads;
  repo.onChange({ path: ".git", kind: "modified" });
  // the feed's status read is out (and held) before the commit starts
  await new Promise((r) => {
    const poll = () => (api.statusReads > held ? r(undefined) : setImmediate(poll));
    poll();
  });
  const committed = repo.commit("nothing yet");
  release();
  api.gate = null;
  assert.equal(await committed, false);
  assert.equal(repo.error?.code, "exit 1");
  assert.equal(repo.busy, false);
  done();
});

test("the next action clears the last one's failure; a failed status read is shown apart", async () => {
  const api = fakeApi();
  const repo = new GitRepo(/** @type {any} */ (api), "/r");
  await repo.detect();
  assert.equal(await repo.commit("  "), false);
  assert.equal(repo.error?.code, "empty message");
  assert.equal(await repo.commit("nothing yet"), false);
  assert.equal(repo.error?.code, "exit 1", "the new failure replaced the old one");
  const call = api.call;
  api.call = async (id, input) => {
    if (input.args.includes("status")) return { exit_code: 128, stdout: "", stderr: "fatal: index file corrupt" };
    return call(id, input);
  };
  await repo.refresh();
  assert.equal(repo.statusError?.code, "exit 128");
  assert.equal(repo.error?.code, "exit 1");
});
