// The command-line splitter of the jobs form: quote-aware, never a shell.

import { test } from "node:test";
import assert from "node:assert/strict";
import { joinArgv, splitArgv } from "../../src/models/argv.js";

/** @param {string} line */
const argv = (line) => {
  const r = splitArgv(line);
  assert.ok(r.ok, `${line}: ${r.ok ? "" : r.error}`);
  return r.argv;
};

test("splits on runs of whitespace", () => {
  assert.deepEqual(argv("ls  -la\tsrc "), ["ls", "-la", "src"]);
  assert.deepEqual(argv("  echo\n hi"), ["echo", "hi"]);
});

test("single quotes keep everything literally", () => {
  assert.deepEqual(argv("echo 'a  b' '$HOME' 'x\\y'"), ["echo", "a  b", "$HOME", "x\\y"]);
});

test("double quotes keep spaces and unescape only \\\" \\\\ \\$ \\`", () => {
  assert.deepEqual(argv('echo "a  b" "say \\"hi\\"" "c:\\\\d" "\\n"'), ["echo", "a  b", 'say "hi"', "c:\\d", "\\n"]);
});

test("quotes join with adjacent text into one word; empty quotes are empty words", () => {
  assert.deepEqual(argv(`grep -e"foo bar"baz 'it'"'"s`), ["grep", "-efoo barbaz", "it's"]);
  assert.deepEqual(argv(`printf '' "" x`), ["printf", "", "", "x"]);
});

test("a backslash outside quotes makes the next character literal", () => {
  assert.deepEqual(argv("touch a\\ b \\'q"), ["touch", "a b", "'q"]);
  assert.deepEqual(argv("echo one\\\ntwo"), ["echo", "onetwo"]);
});

test("shell syntax is not interpreted: pipes, redirections, globs and variables are words", () => {
  assert.deepEqual(argv("echo $HOME | cat > out *.rs; rm"), ["echo", "$HOME", "|", "cat", ">", "out", "*.rs;", "rm"]);
});

test("unterminated quotes, a trailing backslash and an empty line are refused with a reason", () => {
  for (const [line, want] of [
    ["echo 'abc", /single quote at column 6/],
    ['echo "abc', /double quote at column 6/],
    ["echo \\", /trailing backslash/],
    ["   ", /type a command/],
    ["", /type a command/],
  ]) {
    const r = splitArgv(/** @type {string} */ (line));
    assert.equal(r.ok, false, String(line));
    assert.match(r.ok ? "" : r.error, /** @type {RegExp} */ (want));
  }
});

test("joinArgv quotes what splitArgv needs to give the same argv back", () => {
  for (const a of [["ls"], ["echo", "a b", "it's", "", "$x", "|"], ["sh", "-c", "sleep 30"]]) {
    assert.deepEqual(argv(joinArgv(a)), a);
  }
  assert.equal(joinArgv(["git", "commit", "-m", "fix: a b"]), "git commit -m 'fix: a b'");
});
