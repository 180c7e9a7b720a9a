// The editor side of code intelligence: F12 / Ctrl+click (definition),
// Shift+F12 (references), F2 (rename), hover after a short rest, the cursor
// reported for the outline and breadcrumbs, and diagnostics as CodeMirror
// lint marks. What each key does is the workspace's (`actions`); this file
// only turns editor positions into wire positions and back.

import { EditorView, hoverTooltip, keymap } from "@codemirror/view";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { byteColumn, charIndex, diagnosticRange, hoverBlocks } from "../models/code.js";

/**
 * @typedef {{
 *   definition: (path: string, view: EditorView, pos: number) => void,
 *   references: (path: string, view: EditorView, pos: number) => void,
 *   rename: (path: string, view: EditorView, pos: number) => void,
 *   hover: (path: string, view: EditorView, pos: number) => Promise<{contents: string, server: string} | null>,
 *   cursor: (path: string, line: number) => void,
 * }} CodeActions
 */

/** The wire position (1-based line, 1-based byte column) of an editor offset. @param {EditorView} view @param {number} pos */
export function wirePosition(view, pos) {
  const line = view.state.doc.lineAt(pos);
  return { line: line.number, column: byteColumn(line.text, pos - line.from) };
}

/** The editor offset of a wire position, clamped to the document. @param {EditorView} view @param {number} line @param {number} [column] */
export function editorOffset(view, line, column = 1) {
  const doc = view.state.doc;
  const l = doc.line(Math.max(1, Math.min(line, doc.lines)));
  return l.from + charIndex(l.text, column);
}

/** Put the cursor at a wire position, centred, and focus the editor. @param {EditorView} view @param {number} line @param {number} [column] */
export function revealPosition(view, line, column = 1) {
  const pos = editorOffset(view, line, column);
  view.dispatch({ selection: { anchor: pos }, effects: EditorView.scrollIntoView(pos, { y: "center" }) });
  view.focus();
}

/**
 * The extensions, reading `actions.current` at each use (the workspace
 * swaps its callbacks on every render; the editor's state is built once).
 * @param {string} path the file the editor shows
 * @param {{current: CodeActions}} actions
 */
export function codeExtensions(path, actions) {
  const atCursor = (/** @type {(view: EditorView, pos: number) => void} */ fn) => (/** @type {EditorView} */ view) => {
    fn(view, view.state.selection.main.head);
    return true;
  };
  return [
    keymap.of([
      { key: "F12", preventDefault: true, run: atCursor((v, p) => actions.current.definition(path, v, p)) },
      { key: "Shift-F12", preventDefault: true, run: atCursor((v, p) => actions.current.references(path, v, p)) },
      { key: "F2", preventDefault: true, run: atCursor((v, p) => actions.current.rename(path, v, p)) },
    ]),
    EditorView.domEventHandlers({
      mousedown(event, view) {
        if (!(event.ctrlKey || event.metaKey) || event.button !== 0) return false;
        const pos = view.posAtCoords({ x: event.clientX, y: event.clientY });
        if (pos === null) return false;
        event.preventDefault();
        view.dispatch({ selection: { anchor: pos } });
        actions.current.definition(path, view, pos);
        return true;
      },
    }),
    EditorView.updateListener.of((u) => {
      if (u.selectionSet || u.docChanged) actions.current.cursor(path, u.state.doc.lineAt(u.state.selection.main.head).number);
    }),
    hoverTooltip(
      async (view, pos) => {
        const word = view.state.wordAt(pos);
        if (!word) return null;
        const answer = await actions.current.hover(path, view, pos);
        if (!answer || !answer.contents.trim()) return null;
        return {
          pos: word.from,
          end: word.to,
          above: true,
          create: () => ({ dom: hoverDom(answer.contents, answer.server) }),
        };
      },
      { hoverTime: 350 },
    ),
    lintGutter(),
  ];
}

/** @param {string} contents @param {string} server */
function hoverDom(contents, server) {
  const dom = document.createElement("div");
  dom.className = "ide-hover";
  dom.setAttribute("data-testid", "hover");
  for (const b of hoverBlocks(contents)) {
    const el = document.createElement(b.code ? "pre" : "div");
    el.className = b.code ? "ide-hover-code" : "ide-hover-text";
    el.textContent = b.text;
    dom.appendChild(el);
  }
  const from = document.createElement("div");
  from.className = "ide-hover-source";
  from.textContent = server;
  dom.appendChild(from);
  return dom;
}

const SEVERITY = /** @type {Record<string, "error" | "warning" | "info" | "hint">} */ ({ error: "error", warning: "warning", information: "info", hint: "hint" });

/**
 * Show a file's diagnostics as lint marks (squiggles, gutter markers, a
 * tooltip with the message on hover).
 * @param {EditorView} view @param {import("../models/code.js").Diag[]} list
 */
export function showDiagnostics(view, list) {
  const doc = view.state.doc;
  const marks = list.map((d) => {
    const { from, to } = diagnosticRange(
      (n) => doc.line(n).text,
      (n) => doc.line(n).from,
      doc.lines,
      d,
    );
    // an empty range still marks the character there (or the one before, at a line's end)
    const end = to > from ? to : Math.min(doc.length, from + 1);
    const start = end > from ? from : Math.max(0, from - 1);
    return {
      from: start,
      to: end,
      severity: SEVERITY[d.severity] ?? "info",
      source: d.source ?? undefined,
      message: d.code ? `${d.message} (${d.code})` : d.message,
    };
  });
  view.dispatch(setDiagnostics(view.state, marks));
}
