import { test } from "node:test";
import assert from "node:assert/strict";
import { Api } from "../../src/api.js";
import { App } from "../../src/app.js";

/** A host.iii answering `answers[id]` (a function of payload and options). */
function fake(answers) {
  const calls = [];
  const bound = [];
  return {
    calls,
    bound,
    browserId: "console-t",
    trigger: async (id, payload, options) => {
      calls.push({ id, payload, options });
      const a = answers[id];
      if (!a) throw { code: "function_not_found", message: id };
      return a(payload, options);
    },
    on: () => () => {},
    registerTrigger: (input) => {
      bound.push(input);
      return () => {};
    },
  };
}

test("hosts come from the engine's function list, one per namespace, the default first", async () => {
  const iii = fake({
    "engine::functions::list": () => ({
      functions: [
        { function_id: "shell::workspace::roots", namespace: "host-b", worker_name: "ide-b" },
        { function_id: "shell::workspace::roots-extra", namespace: "x", worker_name: "nope" },
        { function_id: "shell::workspace::roots", namespace: "default", worker_name: "ide" },
        { function_id: "shell::workspace::roots", namespace: "host-a", worker_name: "ide-a" },
      ],
    }),
  });
  const hosts = await new Api(iii).hosts();
  assert.deepEqual(hosts, [
    { namespace: "default", worker_name: "ide" },
    { namespace: "host-a", worker_name: "ide-a" },
    { namespace: "host-b", worker_name: "ide-b" },
  ]);
  // an engine that cannot list: no hosts, no error
  assert.deepEqual(await new Api(fake({})).hosts(), []);
});

test("calls carry the chosen namespace, and an answer from another host is refused", async () => {
  const iii = fake({
    "shell::workspace::roots": (_p, o) => ({ roots: ["/b"], host: { namespace: o?.namespace ?? "default", worker_name: "ide" } }),
  });
  const api = new Api(iii);
  await api.roots();
  assert.deepEqual(iii.calls[0].options, { timeoutMs: 30_000 });
  api.namespace = "host-b";
  assert.deepEqual((await api.roots()).roots, ["/b"]);
  assert.equal(iii.calls[1].options.namespace, "host-b");
  // a console whose client drops the namespace: the default ide answers
  const deaf = fake({ "shell::workspace::roots": () => ({ roots: ["/a"], host: { namespace: "default", worker_name: "ide" } }) });
  const api2 = new Api(deaf);
  api2.namespace = "host-b";
  await assert.rejects(api2.roots(), (e) => e.code === "wrong_host" && /does not route calls by namespace/.test(e.message));
});

test("choosing a host rebinds through that host's trigger types, and only on a change", async () => {
  const iii = fake({});
  const app = new App({ iii });
  let changed = 0;
  app.onHost(() => changed++);
  app.bind("/a");
  assert.equal(iii.bound[0].trigger_namespace, undefined);
  app.useHost("host-b");
  assert.equal(app.api.namespace, "host-b");
  assert.equal(app.binding, null, "the previous host's binding is dropped");
  app.bind("/b");
  assert.deepEqual(iii.bound[1], { type: "shell::changed", function_id: "iii::ide-ui::changed::console-t", config: { path: "/b" }, trigger_namespace: "host-b" });
  app.useHost("host-b");
  app.useHost("default");
  assert.equal(app.api.namespace, null);
  assert.equal(changed, 2);
  app.dispose();
});
