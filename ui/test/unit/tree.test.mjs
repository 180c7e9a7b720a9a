import { test } from "node:test";
import assert from "node:assert/strict";
import { TreeModel } from "../../src/models/tree.js";

/** A fake coder::list-folder over an in-memory tree, recording its calls. */
function fakeFs(tree, pageSize = 2) {
  const calls = [];
  const list = async (dir, page) => {
    calls.push([dir, page]);
    const node = tree[dir];
    if (!node) throw { code: "C211", message: `${dir} not found` };
    const names = Object.keys(node).sort();
    const slice = names.slice((page - 1) * pageSize, page * pageSize);
    return {
      entries: slice.map((name) => ({ name, kind: node[name] === "dir" ? "dir" : "file", non_accessible: node[name] === "protected" })),
      total: names.length,
      has_more: page * pageSize < names.length,
    };
  };
  return { list, calls };
}

const FS = {
  "/r": { "a.rs": "file", src: "dir", target: "dir", "x.key": "protected" },
  "/r/src": { "main.rs": "file", "lib.rs": "file", "mod.rs": "file" },
  "/r/target": {},
};

test("loads the root lazily, page by page, and marks protected and noise entries", async () => {
  const fs = fakeFs(FS);
  const t = new TreeModel("/r", fs.list);
  await t.load("/r");
  assert.deepEqual(fs.calls, [["/r", 1]]);
  let rows = t.rows();
  assert.deepEqual(rows.map((r) => r.type), ["entry", "entry", "more"]);
  await t.loadMore("/r");
  await t.loadMore("/r"); // nothing more: no call
  rows = t.rows();
  assert.deepEqual(rows.map((r) => r.type === "entry" && r.name), ["a.rs", "src", "target", "x.key"]);
  const byName = Object.fromEntries(rows.map((r) => [r.type === "entry" && r.name, r]));
  assert.equal(byName["x.key"].protected, true);
  assert.equal(byName.target.noise, true);
  assert.equal(byName.src.noise, false);
  // nothing below the root is listed until it is expanded
  assert.deepEqual(fs.calls, [["/r", 1], ["/r", 2]]);
});

test("expanding lists a folder once; collapsing keeps its listing", async () => {
  const fs = fakeFs(FS, 10);
  const t = new TreeModel("/r", fs.list);
  await t.load("/r");
  await t.toggle("/r/src");
  let names = t.rows().map((r) => r.type === "entry" && `${r.depth}:${r.name}`);
  assert.deepEqual(names, ["0:a.rs", "0:src", "1:lib.rs", "1:main.rs", "1:mod.rs", "0:target", "0:x.key"]);
  await t.toggle("/r/src");
  assert.equal(t.rows().length, 4);
  await t.toggle("/r/src");
  assert.equal(fs.calls.filter((c) => c[0] === "/r/src").length, 1);
  names = t.rows().map((r) => r.type === "entry" && r.name);
  assert.ok(names.includes("main.rs"));
});

test("a change event reloads only the folder that holds the path, with the pages it had", async () => {
  const fs = fakeFs(structuredClone(FS), 2);
  const t = new TreeModel("/r", fs.list);
  await t.load("/r");
  await t.loadMore("/r");
  await t.toggle("/r/src");
  fs.calls.length = 0;
  await t.apply({ path: "src/new.rs", kind: "created" });
  assert.deepEqual(fs.calls, [["/r/src", 1]]);
  fs.calls.length = 0;
  await t.apply({ path: "b.rs", kind: "created" });
  assert.deepEqual(fs.calls, [["/r", 1], ["/r", 2]]);
  fs.calls.length = 0;
  await t.apply({ path: "unloaded/deep/x.rs", kind: "modified" });
  assert.deepEqual(fs.calls, [], "a folder never listed is not fetched");
  await t.apply({ path: ".git", kind: "modified", dir: true });
  assert.deepEqual(fs.calls, []);
});

test("a deleted folder drops its listing and expansion; rescan reloads everything loaded", async () => {
  const fs = fakeFs(FS, 10);
  const t = new TreeModel("/r", fs.list);
  await t.load("/r");
  await t.toggle("/r/src");
  await t.apply({ path: "src", kind: "deleted", dir: true });
  assert.equal(t.listings.has("/r/src"), false);
  assert.equal(t.expanded.has("/r/src"), false);
  fs.calls.length = 0;
  await t.apply({ path: "", kind: "rescan", dir: true });
  assert.deepEqual(fs.calls, [["/r", 1]]);
});

test("a listing error is a row with its code and message; a late reload never overwrites a newer one", async () => {
  let fail = true;
  const t = new TreeModel("/r", async () => {
    if (fail) throw { code: "C211", message: "gone" };
    return { entries: [{ name: "ok", kind: "file" }], total: 1, has_more: false };
  });
  await t.load("/r");
  assert.deepEqual(t.rows()[0], { type: "error", path: "/r", depth: 0, error: { code: "C211", message: "gone" } });

  /** @type {Array<(v: any) => void>} */
  const resolvers = [];
  const slow = new TreeModel("/r", () => new Promise((r) => resolvers.push(r)));
  const first = slow.load("/r");
  const second = slow.load("/r");
  resolvers[1]({ entries: [{ name: "new", kind: "file" }], total: 1, has_more: false });
  await second;
  resolvers[0]({ entries: [{ name: "old", kind: "file" }], total: 1, has_more: false });
  await first;
  assert.deepEqual(slow.rows().map((r) => r.type === "entry" && r.name), ["new"]);
  fail = false;
});

test("restore expands only folders inside the root and keeps them for storage", async () => {
  const fs = fakeFs(FS, 10);
  const t = new TreeModel("/r", fs.list);
  await t.restore(["/r/src", "/elsewhere", "/r2/x"]);
  assert.deepEqual(t.expandedList().sort(), ["/r", "/r/src"]);
  assert.ok(t.rows().some((r) => r.type === "entry" && r.name === "main.rs"));
});

test("10 000 entries: rows are computed once per change, not per render", async () => {
  const names = Object.fromEntries(Array.from({ length: 10000 }, (_, i) => [`f${String(i).padStart(5, "0")}`, "file"]));
  const t = new TreeModel("/big", fakeFs({ "/big": names }, 1000).list);
  await t.load("/big");
  while (t.listings.get("/big").hasMore) await t.loadMore("/big");
  const rows = t.rows();
  assert.equal(rows.length, 10000);
  assert.equal(t.rows(), rows, "cached until the next change");
});
