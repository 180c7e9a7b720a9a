// CodeMirror keeps a document as lines (it splits on "\n", "\r\n" and "\r"
// and joins with "\n"); this field keeps what that drops — the BOM and
// every line break whose terminator is not the file's usual one — and maps
// it through each edit, so the file's text is exact for every byte the user
// did not touch. A break the user deletes loses its terminator; undoing the
// deletion brings it back (the history stores the terminators it removed).

import { MapMode, StateEffect, StateField } from "@codemirror/state";
import { invertedEffects } from "@codemirror/commands";
import { readShape, writeShape } from "./models/shape.js";

/** @typedef {{bom: boolean, dominant: string, mixed: boolean, special: Map<number, string>}} Eol */

/** A break's terminator comes back (an undo of its deletion). */
const restore = StateEffect.define({
  /** @param {{pos: number, term: string}} v @param {import("@codemirror/state").ChangeDesc} m */
  map: (v, m) => {
    const pos = m.mapPos(v.pos, 1, MapMode.TrackDel);
    return pos === null ? undefined : { pos, term: v.term };
  },
});

/** The whole text was replaced (a read from disk): a new shape. */
const reset = StateEffect.define(/** @type {{map?: (v: Eol) => Eol}} */ ({}));

/** @param {import("./models/shape.js").Shape} s @returns {Eol} */
function fromShape(s) {
  return { bom: s.bom, dominant: s.dominant, mixed: s.mixed, special: new Map(s.special) };
}

/** The special breaks `changes` deletes, in start-document positions.
 * @param {Eol} v @param {import("@codemirror/state").ChangeSet} changes */
function deletedBreaks(v, changes) {
  /** @type {Array<[number, number]>} */
  const ranges = [];
  changes.iterChangedRanges((fromA, toA) => {
    if (toA > fromA) ranges.push([fromA, toA]);
  });
  /** @type {Array<[number, string]>} */
  const gone = [];
  if (ranges.length === 0 || v.special.size === 0) return gone;
  for (const [pos, term] of v.special) {
    // the break is the "\n" at [pos, pos + 1)
    if (ranges.some(([a, b]) => a <= pos && pos < b)) gone.push([pos, term]);
  }
  return gone;
}

const eolField = StateField.define({
  create: () => /** @type {Eol} */ ({ bom: false, dominant: "\n", mixed: false, special: new Map() }),
  update(v, tr) {
    for (const e of tr.effects) if (e.is(reset)) return e.value;
    let next = v;
    if (tr.docChanged && v.special.size > 0) {
      const gone = new Set(deletedBreaks(v, tr.changes).map(([p]) => p));
      const special = new Map();
      for (const [pos, term] of v.special) {
        if (!gone.has(pos)) special.set(tr.changes.mapPos(pos, 1), term);
      }
      next = { ...v, special };
    }
    for (const e of tr.effects) {
      if (!e.is(restore)) continue;
      if (next === v) next = { ...v, special: new Map(v.special) };
      next.special.set(e.value.pos, e.value.term);
    }
    return next;
  },
});

/** Deleting a special break stores its terminator with the undo step; a reset stores the shape before it. */
const undoable = invertedEffects.of((tr) => {
  const v = tr.startState.field(eolField, false);
  if (!v) return [];
  if (tr.effects.some((e) => e.is(reset))) return [reset.of(v)];
  if (!tr.docChanged) return [];
  return deletedBreaks(v, tr.changes).map(([pos, term]) => restore.of({ pos, term }));
});

/**
 * The editor's document for a file's text, and the extension that keeps its shape.
 * @param {string} text the file's text as read
 */
export function eolFor(text) {
  const shape = readShape(text);
  return { doc: shape.doc, extension: [eolField.init(() => fromShape(shape)), undoable], shape };
}

/** The transaction spec that replaces the whole document with a file's text. @param {import("@codemirror/state").EditorState} state @param {string} text */
export function replaceWith(state, text) {
  const shape = readShape(text);
  return { changes: { from: 0, to: state.doc.length, insert: shape.doc }, effects: reset.of(fromShape(shape)) };
}

/** The file's text the state holds: what a save writes. @param {import("@codemirror/state").EditorState} state */
export function fileText(state) {
  const v = state.field(eolField, false);
  if (!v) return state.doc.toString();
  // one terminator throughout (the usual file): the document's own join, as fast as reading it
  if (v.special.size === 0 && v.dominant !== "\r") return (v.bom ? "\uFEFF" : "") + state.doc.sliceString(0, state.doc.length, v.dominant);
  return writeShape(v, state.doc.iterLines(), v.special);
}
