// The source-control model: git argv and the porcelain v2 status parse.

import { test } from "node:test";
import assert from "node:assert/strict";
import { branchLabel, gitArgs, isClean, parseStatus, pathspec } from "../../src/models/git.js";

const NUL = "\0";
const z = (/** @type {string[]} */ ...f) => f.join(NUL) + NUL;

test("branch headers, ordinary, renamed, unmerged and untracked entries", () => {
  const out = z(
    "# branch.oid 7c964f901d109110a5194f8541e067b8d16f9eb6",
    "# branch.head main",
    "# branch.upstream origin/main",
    "# branch.ab +2 -1",
    "1 AM N... 000000 100644 100644 0000000000000000000000000000000000000000 78981922613b2afb6025042ff6bd878ac1994e85 sub/x",
    "1 .M N... 100644 100644 100644 6178079822 6178079822 dir with space/y z.txt",
    "2 RM N... 100644 100644 100644 6178079822 6178079822 R100 new name.txt",
    "old name.txt",
    "u UU N... 100644 100644 100644 100644 aaaa bbbb cccc both.txt",
    "? sub/new file",
  );
  const s = parseStatus(out);
  assert.deepEqual(s.branch, { head: "main", oid: "7c964f901d109110a5194f8541e067b8d16f9eb6", upstream: "origin/main", ahead: 2, behind: 1, detached: false, initial: false });
  assert.deepEqual(s.staged, [
    { path: "sub/x", code: "A", kind: "ordinary" },
    { path: "new name.txt", code: "R", kind: "renamed", orig: "old name.txt" },
  ]);
  assert.deepEqual(s.unstaged, [
    { path: "sub/x", code: "M", kind: "ordinary" },
    { path: "dir with space/y z.txt", code: "M", kind: "ordinary" },
    { path: "new name.txt", code: "M", kind: "ordinary" },
  ]);
  assert.deepEqual(s.conflicted, [{ path: "both.txt", code: "UU", kind: "unmerged" }]);
  assert.deepEqual(s.untracked, [{ path: "sub/new file", code: "?", kind: "untracked" }]);
  assert.equal(isClean(s), false);
  assert.equal(branchLabel(s.branch), "main → origin/main ↑2 ↓1");
});

test("a fresh repository and a detached head", () => {
  const fresh = parseStatus(z("# branch.oid (initial)", "# branch.head master"));
  assert.equal(fresh.branch.initial, true);
  assert.equal(fresh.branch.oid, null);
  assert.equal(isClean(fresh), true);
  assert.equal(branchLabel(fresh.branch), "master (no commits yet)");
  const det = parseStatus(z("# branch.oid 0123456789abcdef", "# branch.head (detached)"));
  assert.equal(det.branch.detached, true);
  assert.equal(branchLabel(det.branch), "detached at 01234567");
  assert.equal(isClean(parseStatus("")), true);
});

test("a copy is told from a rename; a staged deletion is staged only", () => {
  const s = parseStatus(z("2 C. N... 100644 100644 100644 aa aa C75 copy.txt", "orig.txt", "1 D. N... 100644 000000 000000 aa 00 gone.txt"));
  assert.deepEqual(s.staged, [
    { path: "copy.txt", code: "C", kind: "copied", orig: "orig.txt" },
    { path: "gone.txt", code: "D", kind: "ordinary" },
  ]);
  assert.deepEqual(s.unstaged, []);
});

test("reads never take optional locks; paths are literal top-relative pathspecs after --", () => {
  for (const a of [gitArgs.status(), gitArgs.toplevel(), gitArgs.show("HEAD", "a.txt")]) assert.equal(a[0], "--no-optional-locks");
  assert.deepEqual(gitArgs.stage("*.rs"), ["add", "--", ":(top,literal)*.rs"]);
  assert.deepEqual(gitArgs.unstage("a b", false), ["restore", "--staged", "--", pathspec("a b")]);
  assert.deepEqual(gitArgs.unstage("a", true), ["rm", "--cached", "-q", "--", ":(top,literal)a"]);
  assert.deepEqual(gitArgs.commit("fix: it's done"), ["commit", "-m", "fix: it's done"]);
  assert.deepEqual(gitArgs.stageAll(), ["add", "--all"]);
  assert.deepEqual(gitArgs.unstageAll(false), ["reset", "-q"]);
  assert.deepEqual(gitArgs.unstageAll(true), ["rm", "--cached", "-r", "-q", "--", ":(top)"]);
  assert.deepEqual(gitArgs.show("index", "d/f"), ["--no-optional-locks", "show", ":d/f"]);
  assert.deepEqual(gitArgs.show("HEAD", "d/f"), ["--no-optional-locks", "show", "HEAD:d/f"]);
});
