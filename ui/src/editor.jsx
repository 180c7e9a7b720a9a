// The editor area: one CodeMirror view for the active tab (its state, undo
// history included, kept per path while the tab is open), a merge view for
// diffs and comparisons, hex and image previews, and the banners that say
// what the disk did.

import { useEffect, useRef, useSyncExternalStore } from "react";
import { EditorView, EditorState, editorExtensions, mergeView, themeFor, readOnlyExt } from "./codemirror.js";
import { codeExtensions, revealPosition, showDiagnostics } from "./code/extensions.js";
import { Breadcrumbs } from "./code/panels.jsx";
import { Banner, ErrorLine } from "./ui.jsx";
import { eolFor, fileText, replaceWith } from "./eol.js";

/**
 * What F12, Shift+F12, F2, hover and the cursor do: the mounted workspace
 * sets `current` on every render (editor states outlive a render, and a
 * cached state must reach the workspace that shows it now).
 * @type {{current: import("./code/extensions.js").CodeActions}}
 */
export const codeActions = {
  current: {
    definition: () => {},
    references: () => {},
    rename: () => {},
    hover: async () => null,
    cursor: () => {},
  },
};

/** Editor states of open tabs, by path (the tab model keeps text; this keeps history). */
const states = new Map();

/** @param {string} path */
export function forgetEditorState(path) {
  states.delete(path);
}

/** @param {{ctx: any, tab: import("./models/tabs.js").Tab}} props */
export function EditorPane({ ctx, tab }) {
  if (tab.state === "loading") return <div className="ide-empty">Opening {tab.path}…</div>;
  if (tab.state === "error")
    return (
      <div className="ide-empty">
        <ErrorLine error={tab.error} />
      </div>
    );
  if (tab.kind === "diff") {
    return (
      <div className="ide-editor-wrap" data-testid="diff-view" data-path={tab.extra?.path} data-tab={tab.path}>
        <Banner kind="info">
          {tab.note ?? "Change"} — {tab.extra?.path}
        </Banner>
        <Merge a={tab.extra?.old ?? ""} b={tab.extra?.new ?? ""} path={tab.extra?.path ?? tab.path} dark={ctx.dark} />
      </div>
    );
  }
  if (tab.kind === "image") {
    return (
      <div className="ide-editor-wrap ide-preview">
        {tab.note && <Banner kind="info">{tab.note}</Banner>}
        <img alt={tab.path} src={tab.extra?.url} data-testid="image-preview" />
      </div>
    );
  }
  if (tab.kind === "hex") {
    return (
      <div className="ide-editor-wrap">
        {tab.note && <Banner kind="info">{tab.note}</Banner>}
        <pre className="ide-hex" data-testid="hex-view">
          {tab.buffer}
        </pre>
      </div>
    );
  }
  return (
    <div className="ide-editor-wrap">
      {tab.note && <Banner kind="info">{tab.note}</Banner>}
      {tab.error && <ErrorLine error={tab.error} />}
      {tab.conflict && (
        <Banner
          kind="error"
          actions={[
            { label: "Reload", onClick: () => ctx.resolve(tab.path, "reload") },
            { label: "Compare", onClick: () => ctx.resolve(tab.path, "compare") },
            { label: "Overwrite", onClick: () => ctx.resolve(tab.path, "overwrite") },
          ]}
        >
          <span data-testid="conflict">
            Not saved: the file changed on disk since it was read ({tab.conflict.error.code}: {tab.conflict.error.message}). Nothing was
            overwritten.
          </span>
        </Banner>
      )}
      {!tab.conflict && tab.changedOnDisk?.deleted && (
        <Banner kind="warn">
          <span data-testid="changed-on-disk">Deleted on disk. Your edits are kept in this tab.</span>
        </Banner>
      )}
      {!tab.conflict && tab.changedOnDisk && !tab.changedOnDisk.deleted && (
        <Banner
          kind="warn"
          actions={[
            { label: "Keep mine", onClick: () => ctx.tabs.keepMine(tab.path) },
            { label: "Take theirs", onClick: () => ctx.tabs.reload(tab.path, /** @type {any} */ (tab.changedOnDisk)) },
          ]}
        >
          <span data-testid="changed-on-disk">
            Changed on disk while you have unsaved edits ({lineDelta(tab.changedOnDisk.mine ?? tab.buffer, tab.changedOnDisk.content)}). Below: yours against the
            disk. Keep mine: the next save replaces the disk&apos;s version. Take theirs: your edits are dropped.
          </span>
        </Banner>
      )}
      {!tab.compare && <Breadcrumbs ctx={ctx} path={tab.path} />}
      {tab.compare ? (
        <div className="ide-compare" data-testid="compare-view">
          <div className="ide-compare-head">
            <span>Yours</span>
            <span>On disk</span>
            <button className="ide-button small" onClick={() => ctx.tabs.hideCompare(tab.path)}>
              Close compare
            </button>
          </div>
          <Merge a={tab.compare.mine} b={tab.compare.disk} path={tab.path} dark={ctx.dark} />
        </div>
      ) : (
        <CodeEditor ctx={ctx} tab={tab} />
      )}
      {!tab.compare && !tab.conflict && tab.changedOnDisk && !tab.changedOnDisk.deleted && (
        <div className="ide-compare ide-theirs" data-testid="theirs-view">
          <div className="ide-compare-head">
            <span>Yours (unsaved)</span>
            <span>On disk now</span>
          </div>
          <Merge a={tab.changedOnDisk.mine ?? tab.buffer} b={tab.changedOnDisk.content} path={tab.path} dark={ctx.dark} />
        </div>
      )}
    </div>
  );
}

/** "3 lines differ", roughly: lines of one side missing from the other. @param {string} a @param {string} b */
function lineDelta(a, b) {
  const count = (/** @type {string[]} */ xs) => {
    const m = new Map();
    for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
    return m;
  };
  const ma = count(a.split(/\r?\n/));
  const mb = count(b.split(/\r?\n/));
  let added = 0;
  let removed = 0;
  for (const [k, n] of mb) added += Math.max(0, n - (ma.get(k) ?? 0));
  for (const [k, n] of ma) removed += Math.max(0, n - (mb.get(k) ?? 0));
  return `disk: +${added} −${removed} lines`;
}

/** @param {{ctx: any, tab: import("./models/tabs.js").Tab}} props */
function CodeEditor({ ctx, tab }) {
  const host = useRef(/** @type {HTMLDivElement | null} */ (null));
  const view = useRef(/** @type {any} */ (null));
  const parts = useRef(/** @type {any} */ (null));
  const readOnly = tab.kind !== "text";
  const currentReplaced = useRef(tab.replaced);
  const shownDiagnostics = useRef(/** @type {any} */ (null));
  useSyncExternalStore(ctx.code.subscribe, ctx.code.snapshot);
  const diagnostics = ctx.code.diagnostics.get(tab.path) ?? null;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const path = tab.path;
    const cached = states.get(path);
    const reuse = cached && cached.replaced === tab.replaced;
    const shaped = reuse ? null : eolFor(tab.buffer);
    const o = reuse
      ? cached.parts
      : editorExtensions({
          path,
          dark: ctx.dark,
          readOnly,
          eol: shaped?.extension,
          code: codeExtensions(path, codeActions),
          onSave: () => ctx.save(path),
          onChange: (s) => ctx.tabs.edit(path, fileText(s)),
        });
    parts.current = o;
    const state = reuse ? cached.state : EditorState.create({ doc: shaped?.doc ?? "", extensions: o.extensions });
    const v = new EditorView({ state, parent: el });
    if (reuse) {
      v.dispatch({ effects: [o.theme.reconfigure(themeFor(ctx.dark)), o.readOnly.reconfigure(readOnlyExt(readOnly))] });
    }
    view.current = v;
    ctx.views.set(path, v);
    shownDiagnostics.current = null;
    if (ctx.pendingLine.current?.path === path) {
      revealPosition(v, ctx.pendingLine.current.line, ctx.pendingLine.current.column);
      ctx.pendingLine.current = null;
    }
    codeActions.current.cursor(path, v.state.doc.lineAt(v.state.selection.main.head).number);
    return () => {
      states.set(path, { state: v.state, parts: o, replaced: currentReplaced.current });
      if (ctx.views.get(path) === v) ctx.views.delete(path);
      v.destroy();
      view.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tab.path]);

  // the model replaced the buffer (a read, a reload, a clean follow of the disk)
  useEffect(() => {
    currentReplaced.current = tab.replaced;
    const v = view.current;
    if (!v) return;
    if (fileText(v.state) !== tab.buffer) v.dispatch(replaceWith(v.state, tab.buffer));
  }, [tab.replaced]);

  useEffect(() => {
    const v = view.current;
    if (!v || !parts.current) return;
    v.dispatch({ effects: parts.current.theme.reconfigure(themeFor(ctx.dark)) });
  }, [ctx.dark]);

  useEffect(() => {
    const v = view.current;
    if (!v || !parts.current) return;
    v.dispatch({ effects: parts.current.readOnly.reconfigure(readOnlyExt(readOnly)) });
  }, [readOnly]);

  useEffect(() => {
    const p = ctx.pendingLine.current;
    if (p && p.path === tab.path && view.current) {
      revealPosition(view.current, p.line, p.column);
      ctx.pendingLine.current = null;
    }
  });

  // the file's diagnostics as squiggles (each answer once; they follow later edits as CodeMirror maps them)
  useEffect(() => {
    const v = view.current;
    if (!v || shownDiagnostics.current === diagnostics) return;
    shownDiagnostics.current = diagnostics;
    showDiagnostics(v, diagnostics?.list ?? []);
  });

  return <div className="ide-cm" data-testid="editor" data-path={tab.path} ref={host} />;
}

/** @param {{a: string, b: string, path: string, dark: boolean}} props */
function Merge({ a, b, path, dark }) {
  const host = useRef(/** @type {HTMLDivElement | null} */ (null));
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const m = mergeView({ parent: el, a, b, path, dark });
    return () => m.destroy();
  }, [a, b, path, dark]);
  return <div className="ide-merge" ref={host} />;
}
