import { test } from "node:test";
import assert from "node:assert/strict";
import { App, CHANGED_HANDLER } from "../../src/app.js";
import { asCallError } from "../../src/api.js";
import setup from "../../dist/page.js";

/** A fake host.iii recording what the page registers. */
function fakeHost() {
  const handlers = new Map();
  const triggers = new Map();
  const states = new Set();
  let n = 0;
  const iii = {
    browserId: "console-test",
    calls: /** @type {any[]} */ ([]),
    trigger: async (id, payload, options) => {
      iii.calls.push([id, payload, options]);
      return {};
    },
    on: (id, h) => {
      handlers.set(`${id}::console-test`, h);
      return () => handlers.delete(`${id}::console-test`);
    },
    registerTrigger: (input) => {
      const id = ++n;
      triggers.set(id, input);
      return () => triggers.delete(id);
    },
    addConnectionStateListener: (fn) => {
      states.add(fn);
      return () => states.delete(fn);
    },
  };
  return { iii, handlers, triggers, states };
}

test("one handler per tab, one binding per browsed root, all gone on dispose", () => {
  const h = fakeHost();
  const app = new App({ iii: h.iii });
  assert.deepEqual([...h.handlers.keys()], [`${CHANGED_HANDLER}::console-test`]);
  app.bind("/r");
  app.bind("/r");
  assert.equal(h.triggers.size, 1);
  assert.deepEqual([...h.triggers.values()][0], { type: "shell::changed", function_id: `${CHANGED_HANDLER}::console-test`, config: { path: "/r" } });
  app.bind("/other");
  assert.equal(h.triggers.size, 1);
  assert.equal([...h.triggers.values()][0].config.path, "/other");
  app.dispose();
  assert.equal(h.triggers.size, 0);
  assert.equal(h.handlers.size, 0);
  assert.equal(h.states.size, 0);
});

test("events reach listeners for the bound root only; a reconnect rebinds", async () => {
  const h = fakeHost();
  const app = new App({ iii: h.iii });
  app.bind("/r");
  const seen = [];
  app.onChange((e) => seen.push(e.path));
  const handler = h.handlers.get(`${CHANGED_HANDLER}::console-test`);
  handler({ path: "a.rs", kind: "created", root: "/r" });
  handler({ path: "b.rs", kind: "created", root: "/elsewhere" });
  handler({ nonsense: true });
  assert.deepEqual(seen, ["a.rs"]);
  let reconnects = 0;
  app.onReconnect(() => reconnects++);
  const [listener] = h.states;
  listener("disconnected");
  listener("connected");
  assert.equal(h.triggers.size, 1, "the old binding was replaced, not doubled");
  await app.reconnectDone;
  assert.equal(reconnects, 1);
  app.dispose();
});

test("after a reconnect the page re-reads only once ide answers again", async () => {
  const h = fakeHost();
  let down = 2;
  h.iii.trigger = async (id) => {
    if (id === "shell::workspace::roots" && down-- > 0) throw { code: "function_not_found", message: "no ide yet" };
    return { roots: [] };
  };
  const app = new App({ iii: h.iii });
  app.bind("/r");
  let reconnects = 0;
  app.onReconnect(() => reconnects++);
  const [listener] = h.states;
  listener("disconnected");
  listener("connected");
  assert.equal(reconnects, 0, "not before ide is back");
  await app.reconnectDone;
  assert.equal(down, -1, "asked until it answered");
  assert.equal(reconnects, 1);
  app.dispose();
});

test("a console without registerTrigger or on still loads; the missing feature is reported", () => {
  const app = new App({ iii: { trigger: async () => ({}) } });
  app.bind("/r");
  assert.equal(app.bindError?.code, "unsupported");
  app.dispose();
});

test("wire errors keep their code and message, whatever shape the client rejects with", () => {
  assert.deepEqual({ ...asCallError({ code: "C221", message: "stale" }) }, { code: "C221" });
  assert.equal(asCallError({ code: "C221", message: "stale" }).message, "stale");
  assert.equal(asCallError(new Error("remote error (S210): bad path")).code, "S210");
  assert.equal(asCallError(new Error("C211: not found")).message, "not found");
  assert.equal(asCallError({ error: { code: "C213", message: "exists" } }).code, "C213");
  assert.equal(asCallError("boom").code, "error");
});

test("the built bundle's setup registers the ide page and its teardown disposes everything", () => {
  const h = fakeHost();
  const pages = [];
  const teardown = setup({
    iii: h.iii,
    pages: {
      register: (p) => {
        pages.push(p);
        return () => pages.splice(pages.indexOf(p), 1);
      },
    },
  });
  assert.equal(pages.length, 1);
  assert.equal(pages[0].id, "ide");
  assert.equal(pages[0].title, "IDE");
  assert.equal(pages[0].configurationId, "ide");
  assert.equal(typeof pages[0].render, "function");
  // the change handler, the terminals' output handler and the jobs' completion handler, one each per asset
  assert.deepEqual([...h.handlers.keys()].sort(), ["iii::ide-ui::changed::console-test", "iii::ide-ui::job-finished::console-test", "iii::ide-ui::pty-output::console-test"]);
  // one unfiltered shell::job-finished binding to the completion handler
  assert.deepEqual([...h.triggers.values()], [{ type: "shell::job-finished", function_id: "iii::ide-ui::job-finished::console-test", config: {} }]);
  teardown();
  assert.equal(pages.length, 0);
  assert.equal(h.handlers.size, 0);
  assert.equal(h.triggers.size, 0);
});

test("the built bundle registers one chat-card renderer, through either registrar name, and its teardown removes it", async () => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const { renderToStaticMarkup } = await import("react-dom/server");
  const dir = new URL("../fixtures/cards/", import.meta.url);
  for (const name of ["functionTriggers", "functionCalls"]) {
    const h = fakeHost();
    /** @type {any[]} */
    const renderers = [];
    const teardown = setup({
      iii: h.iii,
      pages: { register: () => () => {} },
      [name]: {
        register: (/** @type {any} */ r) => {
          renderers.push(r);
          return () => renderers.splice(renderers.indexOf(r), 1);
        },
      },
    });
    assert.equal(renderers.length, 1, name);
    const r = renderers[0];
    assert.equal(r.id, "ide/page.js#cards");
    assert.ok(r.isMatch("coder::update-file") && r.isMatch("shell::exec_bg") && !r.isMatch("coder::tree"));
    // every recorded call renders (on the server: no error boundary there, so a throw would surface)
    for (const f of readdirSync(dir).filter((x) => x.endsWith(".json"))) {
      const message = JSON.parse(readFileSync(new URL(f, dir), "utf8"));
      const node = r.tryRender(message);
      assert.ok(node, f);
      const html = renderToStaticMarkup(node);
      assert.match(html, /data-ide-card="/, f);
    }
    assert.equal(r.tryRender({ functionId: "shell::exec", output: { stdout: 1 } }), null);
    teardown();
    assert.equal(renderers.length, 0, name);
  }
});

test("another ide process answering is a restart: bind again, re-read, say so; no answer is away", async () => {
  const h = fakeHost();
  let instance = "one";
  let answering = true;
  h.iii.trigger = async (id, payload, options) => {
    h.iii.calls.push([id, payload, options]);
    if (!answering) throw { code: "timeout", message: "no answer" };
    return id === "shell::workspace::roots" ? { roots: ["/r"], host: { namespace: "default", worker_name: "ide", instance, started_ms: 1234 } } : {};
  };
  const app = new App({ iii: h.iii });
  app.bind("/r");
  let rereads = 0;
  /** @type {any[]} */
  const infos = [];
  app.onReconnect((info) => {
    rereads++;
    infos.push(info);
  });
  let changes = 0;
  app.onWorker(() => changes++);
  await app.checkWorker();
  assert.deepEqual(app.worker, { state: "up", instance: "one", restartedAt: null });
  await app.checkWorker();
  assert.equal(rereads, 0, "the same process: nothing to do");
  answering = false;
  await app.checkWorker();
  assert.equal(app.worker.state, "away");
  answering = true;
  instance = "two";
  const bindings = h.triggers.size;
  await app.checkWorker();
  assert.deepEqual(app.worker, { state: "up", instance: "two", restartedAt: 1234 });
  assert.equal(rereads, 1);
  assert.deepEqual(infos, [{ workerRestarted: true }], "the listeners learn it is another process (terminals do not re-attach)");
  assert.equal(h.triggers.size, bindings, "bound again, once");
  app.dismissRestart();
  assert.equal(app.worker.restartedAt, null);
  assert.equal(changes, 4);
  // another host is not a restart of this one
  app.useHost("other");
  assert.equal(app.worker.instance, null);
  app.dispose();
});

test("the identity check waits while the user types in a terminal", async () => {
  const h = fakeHost();
  h.iii.trigger = async (id, payload, options) => {
    h.iii.calls.push([id, payload, options]);
    return id === "shell::workspace::roots" ? { roots: ["/r"], host: { namespace: "default", worker_name: "ide", instance: "one", started_ms: 1 } } : {};
  };
  const app = new App({ iii: h.iii });
  const checks = () => h.iii.calls.filter(([id]) => id === "shell::workspace::roots").length;
  app.watchWorker(20);
  while (checks() < 1) await new Promise((r) => setTimeout(r, 5));
  // typing: a keystroke every 10 ms for 300 ms, no check meanwhile
  const before = checks();
  for (let i = 0; i < 30; i++) {
    await app.api.call("shell::pty::write", { session_id: "s", access_key: "k", data: "eA==" });
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(checks(), before, "no identity check while keystrokes flow");
  // quiet again: the checks resume within about a second
  const t0 = Date.now();
  while (checks() === before) {
    assert.ok(Date.now() - t0 < 3000, "the checks resume after the typing stops");
    await new Promise((r) => setTimeout(r, 20));
  }
  app.dispose();
});
