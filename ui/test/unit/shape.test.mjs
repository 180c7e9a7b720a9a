// The bytes the editor does not show (BOM, each line's terminator) survive
// edits: the pure shape and the CodeMirror field that maps it, with undo.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EditorState } from "@codemirror/state";
import { history, undo, redo } from "@codemirror/commands";
import { describeShape, readShape, writeShape } from "../../src/models/shape.js";
import { eolFor, fileText, replaceWith } from "../../src/eol.js";

/** An editor state over a file's text. @param {string} raw */
function editor(raw) {
  const e = eolFor(raw);
  let state = EditorState.create({ doc: e.doc, extensions: [e.extension, history()] });
  return {
    get state() {
      return state;
    },
    /** @param {any} spec */
    dispatch(spec) {
      state = state.update(spec).state;
    },
    /** @param {any} cmd */
    run(cmd) {
      return cmd({ state, dispatch: (/** @type {any} */ tr) => (state = tr.state) });
    },
    text: () => fileText(state),
  };
}

test("the editor sees lines joined by \\n and no BOM; untouched text writes back byte for byte", () => {
  for (const raw of ["", "a", "a\n", "\uFEFFa\r\nb\r\n", "a\r\nb\nc\rd", "\r\n\r\n", "x\r", "\uFEFF", "\n\r\n\r"]) {
    const s = readShape(raw);
    assert.equal(/\r/.test(s.doc), false, JSON.stringify(raw));
    assert.equal(s.doc.startsWith("\uFEFF"), false);
    assert.equal(writeShape(s, s.doc.split("\n"), new Map(s.special)), raw, JSON.stringify(raw));
    assert.equal(editor(raw).text(), raw, JSON.stringify(raw));
  }
  assert.equal(describeShape(readShape("\uFEFFa\r\nb\r\n")), "UTF-8 with BOM · CRLF");
  assert.equal(describeShape(readShape("a\r\nb\n")), "UTF-8 · mixed line endings");
  assert.equal(describeShape(readShape("a")), "UTF-8 · LF");
});

test("typed breaks take the file's usual ending; the others keep theirs; undo brings a deleted one back", () => {
  const raw = "\uFEFFone\r\ntwo\nthree\r\nfour";
  const ed = editor(raw);
  // "one\ntwo\nthree\nfour": the break after "two" (at 7) is the lone \n
  ed.dispatch({ changes: { from: 7, insert: "!" } });
  assert.equal(ed.text(), "\uFEFFone\r\ntwo!\nthree\r\nfour");
  // Enter in the middle of "two!": the new break is CRLF, the \n stays at the end of the line
  ed.dispatch({ changes: { from: 6, insert: "\n" } });
  assert.equal(ed.text(), "\uFEFFone\r\ntw\r\no!\nthree\r\nfour");
  // typing at the start goes after the BOM; at the end no final newline appears
  ed.dispatch({ changes: [{ from: 0, insert: "// hi\n" }, { from: ed.state.doc.length, insert: "!" }] });
  assert.equal(ed.text(), "\uFEFF// hi\r\none\r\ntw\r\no!\nthree\r\nfour!");
  // join "o!" and "three": the lone \n is gone ...
  const at = ed.state.doc.toString().indexOf("o!\n") + 2;
  ed.dispatch({ changes: { from: at, to: at + 1 } });
  assert.equal(ed.text(), "\uFEFF// hi\r\none\r\ntw\r\no!three\r\nfour!");
  // ... and undo gives it back, every byte as read after all the undos
  ed.run(undo);
  assert.equal(ed.text(), "\uFEFF// hi\r\none\r\ntw\r\no!\nthree\r\nfour!");
  while (ed.run(undo));
  assert.equal(ed.text(), raw);
  ed.run(redo);
  assert.equal(ed.text(), "\uFEFFone\r\ntwo!\nthree\r\nfour");
});

test("a replaced text (a read from disk) takes the new file's shape, and undo the old", () => {
  const ed = editor("a\r\nb\n");
  ed.dispatch(replaceWith(ed.state, "\uFEFFx\ny\r\n"));
  assert.equal(ed.text(), "\uFEFFx\ny\r\n");
  ed.run(undo);
  assert.equal(ed.text(), "a\r\nb\n");
});

test("deleting what stood between a lone CR and an empty line does not read back as one CRLF", () => {
  const ed = editor("a\rb\n\nc");
  // "a\nb\n\nc": delete "b"
  ed.dispatch({ changes: { from: 2, to: 3 } });
  assert.equal(readShape(ed.text()).doc, ed.state.doc.toString());
});

/** A seeded generator (mulberry32). @param {number} seed */
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test("random files, random edits: bytes outside every edit are kept; the text is the editor's; undo restores all", () => {
  const r = rng(7);
  const pick = (/** @type {any[]} */ xs) => xs[Math.floor(r() * xs.length)];
  for (let round = 0; round < 3000; round++) {
    let raw = r() < 0.3 ? "\uFEFF" : "";
    const nLines = Math.floor(r() * 10);
    for (let i = 0; i < nLines; i++) raw += pick(["a", "bb", "", "c c", "é"]) + pick(["\n", "\r\n", "\r\n", "\r"]);
    if (r() < 0.5) raw += pick(["tail", "x"]);
    const ed = editor(raw);
    // the raw text as [doc position, raw text] segments, to find what an edit left untouched
    const edits = 1 + Math.floor(r() * 4);
    /** @type {Array<{from: number, to: number, ins: string}>} */
    const done = [];
    for (let k = 0; k < edits; k++) {
      const len = ed.state.doc.length;
      const from = Math.floor(r() * (len + 1));
      const to = Math.min(len, from + Math.floor(r() * 3));
      const ins = pick(["", "z", "\n", "q\nw", "\n\n"]);
      ed.dispatch({ changes: { from, to, insert: ins } });
      done.push({ from, to, ins });
      const what = JSON.stringify({ raw, done, out: ed.text() });
      assert.equal(readShape(ed.text()).doc, ed.state.doc.toString(), what);
      assert.equal(ed.text().startsWith("\uFEFF"), raw.startsWith("\uFEFF"), what);
    }
    // one edit only: the bytes before it and after it are the file's own (lone-CR merges aside)
    if (edits === 1) {
      const { from, to, ins } = done[0];
      const s = readShape(raw);
      const rawAt = (/** @type {number} */ p) => rawOffset(raw, s, p);
      const out = ed.text();
      const what = JSON.stringify({ raw, from, to, ins, out });
      if (!/\r(?!\n)/.test(raw)) {
        assert.ok(out.startsWith(raw.slice(0, rawAt(from))), `before ${what}`);
        assert.ok(out.endsWith(raw.slice(rawAt(to))), `after ${what}`);
      }
    }
    while (ed.run(undo));
    assert.equal(ed.text(), raw, JSON.stringify({ raw, done }));
  }
});

/** The offset in `raw` of editor position `p` (a break counts as its whole terminator).
 * @param {string} raw @param {import("../../src/models/shape.js").Shape} s @param {number} p */
function rawOffset(raw, s, p) {
  let off = s.bom ? 1 : 0;
  const special = new Map(s.special);
  for (let i = 0; i < p; i++) off += s.doc[i] === "\n" ? (special.get(i) ?? s.dominant).length : 1;
  return off;
}
