import { test } from "node:test";
import assert from "node:assert/strict";
import { TabsModel } from "../../src/models/tabs.js";

function opened(content = "one\n", revision = "r1") {
  const m = new TabsModel();
  m.open("/r/a.rs");
  m.loaded("/r/a.rs", { content, revision });
  return m;
}

test("open, activate, close: the neighbour becomes active; storage keeps paths, not diffs", () => {
  const m = new TabsModel();
  assert.equal(m.open("/a"), true);
  assert.equal(m.open("/b"), true);
  assert.equal(m.open("/a"), false, "an open tab is focused, not reopened");
  m.open("diff:/c", "diff");
  assert.deepEqual(m.persisted(), { tabs: ["/a", "/b"], active: null });
  m.activate("/b");
  assert.deepEqual(m.persisted(), { tabs: ["/a", "/b"], active: "/b" });
  m.close("/b");
  assert.equal(m.active, "diff:/c");
  m.close("diff:/c");
  assert.equal(m.active, "/a");
});

test("editing marks dirty; typing back to the read content is clean again", () => {
  const m = opened();
  m.edit("/r/a.rs", "one\ntwo\n");
  assert.equal(m.get("/r/a.rs").dirty, true);
  m.edit("/r/a.rs", "one\n");
  assert.equal(m.get("/r/a.rs").dirty, false);
});

test("a save names the revision the buffer was read at; success moves the revision", () => {
  const m = opened();
  m.edit("/r/a.rs", "two\n");
  assert.deepEqual(m.saveRequest("/r/a.rs"), { path: "/r/a.rs", content: "two\n", expected_revision: "r1" });
  m.saveStarted("/r/a.rs");
  m.saved("/r/a.rs", "two\n", "r2");
  const t = m.get("/r/a.rs");
  assert.equal(t.revision, "r2");
  assert.equal(t.dirty, false);
  assert.equal(t.saving, false);
});

test("a clean buffer follows the disk; a dirty one keeps its edits and says so", () => {
  const m = opened();
  assert.equal(m.diskChanged("/r/a.rs", { content: "disk\n", revision: "r2" }), "followed");
  let t = m.get("/r/a.rs");
  assert.equal(t.buffer, "disk\n");
  assert.equal(t.revision, "r2");
  const replaced = t.replaced;
  m.edit("/r/a.rs", "mine\n");
  assert.equal(m.diskChanged("/r/a.rs", { content: "theirs\n", revision: "r3" }), "kept");
  t = m.get("/r/a.rs");
  assert.equal(t.buffer, "mine\n");
  assert.equal(t.revision, "r2", "the buffer still names what it was based on");
  assert.deepEqual(t.changedOnDisk, { content: "theirs\n", revision: "r3", mine: "mine\n" });
  assert.equal(t.replaced, replaced, "the editor keeps the user's text");
  assert.equal(m.diskChanged("/r/a.rs", { content: "mine\n", revision: "r4" }), "followed", "the disk caught up with the buffer");
  t = m.get("/r/a.rs");
  assert.equal(t.dirty, false);
  assert.equal(t.revision, "r4");
  assert.equal(m.diskChanged("/r/a.rs", { content: "mine\n", revision: "r4" }), "same");
});

test("a stale save (C221) is a conflict: nothing changes but the offer; other errors are errors", () => {
  const m = opened();
  m.edit("/r/a.rs", "mine\n");
  m.saveStarted("/r/a.rs");
  m.saveFailed("/r/a.rs", { code: "C221", message: "stale" });
  let t = m.get("/r/a.rs");
  assert.deepEqual(t.conflict, { error: { code: "C221", message: "stale" } });
  assert.equal(t.buffer, "mine\n");
  assert.equal(t.revision, "r1");
  assert.equal(t.error, null);
  m.saveFailed("/r/a.rs", { code: "C218", message: "too large" });
  t = m.get("/r/a.rs");
  assert.deepEqual(t.error, { code: "C218", message: "too large" });
});

test("conflict choices: compare shows both, overwrite names the revision just seen, reload takes the disk", () => {
  const m = opened();
  m.edit("/r/a.rs", "mine\n");
  m.saveFailed("/r/a.rs", { code: "C221", message: "stale" });
  m.showCompare("/r/a.rs", { content: "theirs\n", revision: "r9" });
  assert.deepEqual(m.get("/r/a.rs").compare, { mine: "mine\n", disk: "theirs\n", diskRevision: "r9" });
  assert.deepEqual(m.overwriteRequest("/r/a.rs", "r9"), { path: "/r/a.rs", content: "mine\n", expected_revision: "r9" });
  m.reload("/r/a.rs", { content: "theirs\n", revision: "r9" });
  const t = m.get("/r/a.rs");
  assert.equal(t.buffer, "theirs\n");
  assert.equal(t.dirty, false);
  assert.equal(t.conflict, null);
  assert.equal(t.compare, null);
});

test("read-only tabs never produce a save and always follow the disk", () => {
  const m = new TabsModel();
  m.open("/big.log", "readonly");
  m.loaded("/big.log", { kind: "readonly", content: "x", revision: "r1" });
  m.edit("/big.log", "typed");
  assert.equal(m.get("/big.log").dirty, false);
  assert.equal(m.saveRequest("/big.log"), null);
  assert.equal(m.diskChanged("/big.log", { content: "y", revision: "r2" }), "followed");
});

test("a file deleted on disk is reported, the buffer kept", () => {
  const m = opened();
  assert.equal(m.diskChanged("/r/a.rs", { deleted: true }), "kept");
  assert.equal(m.get("/r/a.rs").changedOnDisk.deleted, true);
  assert.equal(m.get("/r/a.rs").buffer, "one\n");
});

test("a writer's change opens or updates its diff tab in the background, counted; follow shows it", () => {
  const m = opened();
  const change = (/** @type {number} */ n) => ({ note: `Edited by coder::update-file`, extra: { path: "/r/b.rs", old: "", new: `v${n}`, time_ms: n } });
  m.writerChange("diff:/r/b.rs", change(1), { follow: false });
  assert.equal(m.active, "/r/a.rs", "the user's file stays in view");
  assert.equal(m.get("diff:/r/b.rs").unseen, 1);
  m.writerChange("diff:/r/b.rs", change(2), { follow: false });
  m.writerChange("diff:/r/c.rs", { ...change(3), extra: { ...change(3).extra, path: "/r/c.rs" } }, { follow: false });
  assert.equal(m.active, "/r/a.rs");
  assert.equal(m.get("diff:/r/b.rs").extra.new, "v2", "the tab shows the latest change");
  assert.equal(m.unseen(), 3);
  assert.equal(m.nextUnseen(), "diff:/r/c.rs", "the last one changed first");
  m.activate("diff:/r/c.rs");
  assert.equal(m.unseen(), 2);
  // opening it from anywhere counts as looking at it
  m.open("diff:/r/b.rs", "diff");
  assert.equal(m.unseen(), 0);
  // following: the change becomes the active tab, nothing unseen
  m.activate("/r/a.rs");
  m.writerChange("diff:/r/b.rs", change(4), { follow: true });
  assert.equal(m.active, "diff:/r/b.rs");
  assert.equal(m.unseen(), 0);
  // nothing open: the diff takes no view away and shows
  const empty = new TabsModel();
  empty.writerChange("diff:/r/b.rs", change(5), { follow: false });
  assert.equal(empty.active, "diff:/r/b.rs");
  assert.equal(empty.unseen(), 0);
});

test("keep mine: the unsaved edits stay and the next save replaces exactly the disk's version seen", () => {
  const m = opened();
  m.edit("/r/a.rs", "mine\n");
  m.diskChanged("/r/a.rs", { content: "theirs\n", revision: "r3" });
  m.keepMine("/r/a.rs");
  const t = m.get("/r/a.rs");
  assert.equal(t.changedOnDisk, null);
  assert.equal(t.dirty, true);
  assert.deepEqual(m.saveRequest("/r/a.rs"), { path: "/r/a.rs", content: "mine\n", expected_revision: "r3" });
  // take theirs instead: the disk's text, clean
  m.diskChanged("/r/a.rs", { content: "again\n", revision: "r4" });
  m.reload("/r/a.rs", { content: "again\n", revision: "r4" });
  assert.equal(m.get("/r/a.rs").buffer, "again\n");
  assert.equal(m.get("/r/a.rs").dirty, false);
});
