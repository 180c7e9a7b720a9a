// CodeMirror 6, assembled once for the page: the editor's extensions, a
// language per file extension, a theme over the console's tokens, and the
// merge view for diffs.

import { Compartment, EditorState } from "@codemirror/state";
import {
  EditorView,
  crosshairCursor,
  drawSelection,
  dropCursor,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
  rectangularSelection,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  HighlightStyle,
  bracketMatching,
  defaultHighlightStyle,
  foldGutter,
  foldKeymap,
  indentOnInput,
  syntaxHighlighting,
} from "@codemirror/language";
import { highlightSelectionMatches, search, searchKeymap } from "@codemirror/search";
import { tags as t } from "@lezer/highlight";
import { MergeView } from "@codemirror/merge";
import { javascript } from "@codemirror/lang-javascript";
import { rust } from "@codemirror/lang-rust";
import { python } from "@codemirror/lang-python";
import { json } from "@codemirror/lang-json";
import { markdown } from "@codemirror/lang-markdown";
import { css } from "@codemirror/lang-css";
import { html } from "@codemirror/lang-html";
import { yaml } from "@codemirror/lang-yaml";
import { extension } from "./models/paths.js";

export { EditorState, EditorView, MergeView };

/** The language support for a path, by extension (none for unknown ones). @param {string} path */
export function languageFor(path) {
  switch (extension(path)) {
    case "js":
    case "mjs":
    case "cjs":
      return javascript();
    case "jsx":
      return javascript({ jsx: true });
    case "ts":
    case "mts":
    case "cts":
      return javascript({ typescript: true });
    case "tsx":
      return javascript({ jsx: true, typescript: true });
    case "rs":
      return rust();
    case "py":
    case "pyi":
      return python();
    case "json":
    case "jsonc":
      return json();
    case "md":
    case "markdown":
      return markdown();
    case "css":
    case "scss":
      return css();
    case "html":
    case "htm":
    case "svg":
    case "xml":
      return html();
    case "yaml":
    case "yml":
      return yaml();
    default:
      return [];
  }
}

const darkHighlight = HighlightStyle.define([
  { tag: [t.keyword, t.modifier, t.operatorKeyword, t.controlKeyword], color: "#c792ea" },
  { tag: [t.string, t.special(t.string), t.regexp], color: "#c3e88d" },
  { tag: [t.number, t.bool, t.null, t.atom], color: "#f78c6c" },
  { tag: [t.comment, t.lineComment, t.blockComment], color: "#7f8c98", fontStyle: "italic" },
  { tag: [t.function(t.variableName), t.function(t.propertyName)], color: "#82aaff" },
  { tag: [t.typeName, t.className, t.namespace], color: "#ffcb6b" },
  { tag: [t.propertyName, t.attributeName], color: "#89ddff" },
  { tag: [t.tagName, t.heading], color: "#f07178", fontWeight: "bold" },
  { tag: t.link, color: "#82aaff", textDecoration: "underline" },
  { tag: t.invalid, color: "#ff5370" },
]);

/** The editor chrome over the console's tokens. @param {boolean} dark */
export function themeFor(dark) {
  return [
    EditorView.theme(
      {
        "&": { color: "var(--color-ink)", backgroundColor: "var(--color-bg)", height: "100%" },
        ".cm-content": { caretColor: "var(--color-accent)" },
        ".cm-gutters": {
          backgroundColor: "var(--color-panel)",
          color: "var(--color-ink-faint)",
          borderRight: "1px solid var(--color-border)",
        },
        ".cm-activeLine": { backgroundColor: "var(--color-hover)" },
        ".cm-activeLineGutter": { backgroundColor: "var(--color-hover)" },
        ".cm-panels": { backgroundColor: "var(--color-panel)", color: "var(--color-ink)" },
        ".cm-searchMatch": { outline: "1px solid var(--color-accent)" },
        "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": {
          backgroundColor: "var(--color-selection)",
        },
        ".cm-scroller": { fontFamily: "var(--font-mono, ui-monospace, monospace)", fontSize: "13px" },
      },
      { dark },
    ),
    syntaxHighlighting(dark ? darkHighlight : defaultHighlightStyle, { fallback: true }),
  ];
}

/**
 * Everything an editor tab carries; the compartments let the page swap the
 * language, theme and read-only flag without rebuilding the state.
 * @param {{path: string, dark: boolean, readOnly: boolean, eol?: any, code?: any, onSave: () => void, onChange: (state: EditorState) => void}} o
 */
export function editorExtensions(o) {
  const language = new Compartment();
  const theme = new Compartment();
  const readOnly = new Compartment();
  const extensions = [
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    history(),
    foldGutter(),
    drawSelection(),
    dropCursor(),
    EditorState.allowMultipleSelections.of(true),
    indentOnInput(),
    bracketMatching(),
    rectangularSelection(),
    crosshairCursor(),
    highlightActiveLine(),
    highlightSelectionMatches(),
    search({ top: true }),
    // code intelligence (code/extensions.js): F12, Shift+F12, F2, hover, diagnostics
    o.code ?? [],
    keymap.of([
      {
        key: "Mod-s",
        preventDefault: true,
        run: () => {
          o.onSave();
          return true;
        },
      },
      ...defaultKeymap,
      ...searchKeymap,
      ...historyKeymap,
      ...foldKeymap,
      indentWithTab,
    ]),
    // the BOM and each line's own terminator (eol.js): a save writes back every untouched byte
    o.eol ?? [],
    language.of(languageFor(o.path)),
    theme.of(themeFor(o.dark)),
    readOnly.of(readOnlyExt(o.readOnly)),
    EditorView.updateListener.of((u) => {
      if (u.docChanged) o.onChange(u.state);
    }),
  ];
  return { extensions, language, theme, readOnly };
}

/** @param {boolean} on */
export function readOnlyExt(on) {
  return on ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : [];
}

/**
 * A side-by-side diff, both sides read-only.
 * @param {{parent: HTMLElement, a: string, b: string, path: string, dark: boolean}} o
 */
export function mergeView(o) {
  const common = [
    lineNumbers(),
    highlightSpecialChars(),
    drawSelection(),
    languageFor(o.path),
    themeFor(o.dark),
    readOnlyExt(true),
  ];
  return new MergeView({
    a: { doc: o.a, extensions: common },
    b: { doc: o.b, extensions: common },
    parent: o.parent,
    collapseUnchanged: { margin: 3, minSize: 6 },
    highlightChanges: true,
    gutter: true,
  });
}
