// One browsed root: the tree and tab models, the live binding on the root,
// opening (text, read-only, hex, image), saving with expected_revision and
// the conflict choices, the diff that follows the writer, quick-open, and
// what storage brings back on reload.

import { useEffect, useLayoutEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { TreeModel } from "./models/tree.js";
import { TabsModel } from "./models/tabs.js";
import { basename, imageType, join, relative, stealsView } from "./models/paths.js";
import { EditorPane, codeActions, forgetEditorState } from "./editor.jsx";
import { bottomPanes, sidePanes } from "./panes.jsx";
import { storage } from "./storage.js";
import { Button, ErrorLine } from "./ui.jsx";
import { QuickOpen } from "./quickopen.jsx";
import { describeShape, readShape } from "./models/shape.js";
import { changeLabel } from "./models/turns.js";
import { GitRepo } from "./ops/git.js";
import { CodeModel, extensionOf, isCode } from "./models/code.js";
import { revealPosition, wirePosition } from "./code/extensions.js";
import { CodeStatus, DefinitionPicker, RenameBox, SymbolOpen } from "./code/panels.jsx";

const PAGE_SIZE = 1000;
/** Text above this opens read-only. */
export const BIG_TEXT_BYTES = 2 << 20;
/** Largest text read at all (the worker caps reads at fs.max_read_bytes too). */
const MAX_TEXT_BYTES = 16 << 20;
const SNIFF_BYTES = 8192;
const HEX_BYTES = 64 << 10;
const MAX_IMAGE_BYTES = 16 << 20;
/** A change event this soon after the page's own save of the path is that save. */
const OWN_WRITE_MS = 3000;
/** Diagnostics are asked this long after the last save or change, for every open code file. */
const DIAGNOSE_SETTLE_MS = 100;

/** @param {string} b64 */
function decodeBase64(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Binary when a NUL shows up or the bytes are not UTF-8 (a cut last character is fine).
 * @param {Uint8Array} bytes @param {boolean} eof */
export function looksBinary(bytes, eof) {
  if (bytes.includes(0)) return true;
  const body = eof ? bytes : bytes.subarray(0, Math.max(0, bytes.length - 4));
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(body);
    return false;
  } catch {
    return true;
  }
}

/** @param {Uint8Array} bytes */
export function hexDump(bytes) {
  const lines = [];
  for (let off = 0; off < bytes.length; off += 16) {
    const row = bytes.subarray(off, off + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${off.toString(16).padStart(8, "0")}  ${hex.padEnd(47, " ")}  ${ascii}`);
  }
  return lines.join("\n");
}

/** @param {number} n */
function size(n) {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** The status line when nothing is wrong.
 * @param {string} root @param {import("./models/tabs.js").Tab | null} active @param {TreeModel} tree */
function statusText(root, active, tree) {
  if (!active) return `${tree.rows().length} rows`;
  const path = active.kind === "diff" ? active.extra?.path ?? active.path : active.path;
  const rel = relative(root, path) ?? path;
  if (active.kind === "diff") return `diff of ${rel}`;
  const shape = active.extra?.shape ? ` · ${active.extra.shape}` : "";
  return active.revision ? `${rel}${shape} · revision ${active.revision.slice(0, 12)}` : rel;
}

/**
 * @param {{app: import("./app.js").App, host: any, root: string, dark: boolean, onChangeRoot: () => void}} props
 */
export function Workspace({ app, host, root, dark, onChangeRoot }) {
  const api = app.api;
  const tree = useMemo(() => new TreeModel(root, (dir, page) => api.listFolder(dir, page, PAGE_SIZE)), [api, root]);
  const tabs = useMemo(() => new TabsModel(), [root]);
  useSyncExternalStore(
    (fn) => tabs.subscribe(fn),
    () => tabs.version,
  );
  const treeVersion = useSyncExternalStore(
    (fn) => tree.subscribe(fn),
    () => tree.version,
  );
  const git = useMemo(() => new GitRepo(api, root), [api, root]);
  useSyncExternalStore(git.subscribe, git.snapshot);
  const [pane, setPane] = useState(() => storage.get("pane") ?? "explorer");
  const [bottom, setBottom] = useState(() => storage.get("bottom") ?? "terminal");
  const [notice, setNotice] = useState(/** @type {any} */ (null));
  const [quickOpen, setQuickOpen] = useState(false);
  const [symbolOpen, setSymbolOpen] = useState(false);
  const [picker, setPicker] = useState(/** @type {any} */ (null));
  const [renameAt, setRenameAt] = useState(/** @type {any} */ (null));
  const [info, setInfo] = useState(/** @type {string | null} */ (null));
  /** @param {string} p */
  const abs = (p) => (p.startsWith("/") ? p : join(root, p));
  const code = useMemo(() => new CodeModel((id, payload) => api.call(id, payload), root, abs), [api, root]);
  useSyncExternalStore(code.subscribe, code.snapshot);
  const views = useMemo(() => /** @type {Map<string, any>} */ (new Map()), [root]);
  const diagnoseTimer = useRef(/** @type {ReturnType<typeof setTimeout> | null} */ (null));
  const ownWrites = useRef(/** @type {Map<string, number>} */ (new Map()));
  const refreshSeq = useRef(/** @type {Map<string, number>} */ (new Map()));
  const pendingLine = useRef(/** @type {null | {path: string, line: number, column?: number}} */ (null));
  const restored = useRef(false);
  const seenChanges = useRef(/** @type {Set<string>} */ (new Set()));
  const [follow, setFollow] = useState(() => storage.get("follow") === "true");
  const followRef = useRef(follow);
  followRef.current = follow;

  /** Read a file into its tab: text, read-only big text, hex or image. @param {string} path */
  const load = async (path) => {
    try {
      const sniff = await api.readBytes(path, 0, SNIFF_BYTES);
      const head = decodeBase64(sniff.content);
      const image = imageType(path);
      if (image && image !== "image/svg+xml") {
        if (sniff.size > MAX_IMAGE_BYTES) {
          tabs.loaded(path, { kind: "hex", content: hexDump(head), revision: null, note: `Image of ${size(sniff.size)}, too large to preview; the first bytes:` });
          return;
        }
        const chunks = [head];
        let offset = head.length;
        let eof = sniff.eof;
        while (!eof) {
          const c = await api.readBytes(path, offset, 4 << 20);
          const bytes = decodeBase64(c.content);
          chunks.push(bytes);
          offset += bytes.length;
          eof = c.eof || bytes.length === 0;
        }
        const url = URL.createObjectURL(new Blob(chunks, { type: image }));
        tabs.loaded(path, { kind: "image", content: "", revision: null, note: `${size(sniff.size)} image, preview`, extra: { url } });
        return;
      }
      if (looksBinary(head, sniff.eof)) {
        const r = sniff.size > head.length ? await api.readBytes(path, 0, HEX_BYTES) : sniff;
        const bytes = r === sniff ? head : decodeBase64(r.content);
        const shown = sniff.size > bytes.length ? `, the first ${size(bytes.length)}` : "";
        tabs.loaded(path, { kind: "hex", content: hexDump(bytes), revision: null, note: `Binary file, ${size(sniff.size)} (read-only hex${shown})` });
        return;
      }
      if (sniff.size > MAX_TEXT_BYTES) {
        tabs.loaded(path, {
          kind: "readonly",
          content: new TextDecoder().decode(head),
          revision: null,
          note: `${size(sniff.size)}: too large to open; showing the first ${size(head.length)}, read-only`,
        });
        return;
      }
      const text = await api.readText(path, Math.max(sniff.size + 4096, 65536));
      const big = sniff.size > BIG_TEXT_BYTES;
      tabs.loaded(path, {
        kind: big ? "readonly" : "text",
        content: text.content,
        revision: text.revision,
        note: big ? `Large file (${size(sniff.size)}), open read-only` : null,
        // a save keeps the mode (and eol.js every byte the user did not touch)
        extra: { mode: text.mode, shape: describeShape(readShape(text.content)) },
      });
      if (isCode(path)) rediagnose();
    } catch (e) {
      tabs.failed(path, /** @type {any} */ (e));
    }
  };

  /** Diagnostics of every open code file, a moment after the last save or change (CodeModel.diagnose: one call per file, all at once). */
  const rediagnose = () => {
    if (diagnoseTimer.current) clearTimeout(diagnoseTimer.current);
    diagnoseTimer.current = setTimeout(() => {
      diagnoseTimer.current = null;
      const open = tabs.tabs.filter((t) => t.kind !== "diff" && isCode(t.path)).map((t) => t.path);
      void code.diagnose(open);
    }, DIAGNOSE_SETTLE_MS);
  };

  /** Show `path` with the cursor at a wire position (1-based line, byte column). @param {string} path @param {number} line @param {number} [column] */
  const goTo = (path, line, column = 1) => {
    const view = views.get(path);
    if (tabs.active === path && view) {
      revealPosition(view, line, column);
      return;
    }
    openFile(path, { line, column });
  };

  /** F12 / Ctrl+click: one definition opens, several ask, none says so. @param {string} path @param {any} view @param {number} pos */
  const definitionAt = async (path, view, pos) => {
    const { line, column } = wirePosition(view, pos);
    try {
      const out = await code.definition(path, line, column);
      const locations = /** @type {any[]} */ (out.locations ?? []);
      const inside = locations.filter((l) => !l.outside_roots);
      if (locations.length === 0) setNotice({ code: "no definition", message: `No definition of ${out.name} was found${out.note ? ` (${out.note})` : ""}` });
      else if (locations.length === 1 && inside.length === 1) goTo(abs(inside[0].path), inside[0].line, inside[0].column);
      else setPicker(out);
    } catch (e) {
      setNotice(e);
    }
  };

  /** Shift+F12: the references panel. @param {string} path @param {any} view @param {number} pos */
  const referencesAt = async (path, view, pos) => {
    const { line, column } = wirePosition(view, pos);
    setBottom("references");
    await code.findReferences(path, line, column);
  };

  /** F2: the rename input at the symbol (a file with unsaved edits is saved first by the user). @param {string} path @param {any} view @param {number} pos */
  const renameAtCursor = (path, view, pos) => {
    const t = tabs.get(path);
    if (t?.dirty) {
      setNotice({ code: "unsaved", message: `Save ${relative(root, path) ?? path} before renaming: the rename changes the files on disk` });
      return;
    }
    const word = view.state.wordAt(pos);
    const at = word ? word.from : pos;
    const { line, column } = wirePosition(view, at);
    const coords = view.coordsAtPos(at) ?? { left: 100, bottom: 100 };
    setRenameAt({ path, line, column, name: word ? view.state.sliceDoc(word.from, word.to) : "", x: coords.left, y: coords.bottom + 4 });
  };

  /** The rename, applied: the page's own writes (no writer diff tabs), open tabs follow the disk. @param {any} at @param {string} newName @param {string[]} files */
  const applyRename = async (at, newName, files) => {
    const now = Date.now();
    for (const f of files) ownWrites.current.set(f, now);
    const out = await code.rename({ path: at.path, line: at.line, column: at.column, new_name: newName, dry_run: false });
    const written = /** @type {any[]} */ (out.files ?? []).map((f) => abs(f.path));
    for (const f of written) {
      ownWrites.current.set(f, Date.now());
      if (tabs.get(f)) void refreshTab(f);
    }
    setInfo(`Renamed ${at.name} to ${newName}: ${out.edits} edits in ${written.length} files, one change (${out.turn_id}); the History panel can revert it.`);
    rediagnose();
  };

  /** @param {string} path @param {any} view @param {number} pos */
  const hoverAt = async (path, view, pos) => {
    if (!isCode(path) || code.serverless.has(extensionOf(path))) return null;
    const { line, column } = wirePosition(view, pos);
    try {
      const out = await code.hover(path, line, column);
      return { contents: out.contents ?? "", server: out.language_server ?? "" };
    } catch {
      return null;
    }
  };

  codeActions.current = {
    definition: (path, view, pos) => void definitionAt(path, view, pos),
    references: (path, view, pos) => void referencesAt(path, view, pos),
    rename: renameAtCursor,
    hover: hoverAt,
    cursor: (path, line) => code.setCursor(path, line),
  };

  /** @param {string} path @param {{protected?: boolean, line?: number, column?: number, background?: boolean}} [o] */
  const openFile = (path, o = {}) => {
    if (o.protected) {
      setNotice({ code: "protected", message: `${relative(root, path) ?? path} matches the protected globs: ide does not read or write it, so it cannot be opened` });
      return;
    }
    setNotice(null);
    const active = tabs.active;
    const fresh = tabs.open(path);
    if (o.background && active) tabs.activate(active);
    if (o.line) pendingLine.current = { path, line: o.line, column: o.column };
    if (fresh) {
      load(path);
      // the outline is read beside the file, not after it
      if (isCode(path)) void code.loadOutline(path, null);
    }
  };

  /** @param {string} path */
  const save = async (path) => {
    const req = tabs.saveRequest(path);
    if (!req) return;
    await write(path, req.content, req.expected_revision);
  };

  /** @param {string} path @param {string} content @param {string | null} revision */
  const write = async (path, content, revision) => {
    tabs.saveStarted(path);
    ownWrites.current.set(path, Date.now());
    try {
      const r = await api.save(path, content, revision, tabs.get(path)?.extra?.mode ?? null);
      ownWrites.current.set(path, Date.now());
      tabs.saved(path, content, r.revision);
      rediagnose();
    } catch (e) {
      tabs.saveFailed(path, /** @type {any} */ (e));
    }
  };

  /** @param {string} path @param {"reload" | "compare" | "overwrite"} action */
  const resolve = async (path, action) => {
    try {
      const disk = await api.readText(path, MAX_TEXT_BYTES);
      if (action === "reload") tabs.reload(path, disk);
      else if (action === "compare") tabs.showCompare(path, disk);
      else {
        const req = tabs.overwriteRequest(path, disk.revision);
        if (req) await write(path, req.content, req.expected_revision);
      }
    } catch (e) {
      tabs.update(path, (t) => {
        t.error = /** @type {any} */ (e);
      });
    }
  };

  /** @param {string} path */
  const close = (path) => {
    const t = tabs.get(path);
    if (t?.kind === "image" && t.extra?.url) URL.revokeObjectURL(t.extra.url);
    forgetEditorState(path);
    tabs.close(path);
    code.forget(path);
  };

  /** A fresh read of an open tab after the disk moved. Reads of one path can overlap (a burst
   * of changes): only the last one started is applied, so an older read answered late never
   * puts older text back. @param {string} path */
  const refreshTab = async (path) => {
    const t = tabs.get(path);
    if (!t || t.state !== "ready" || (t.kind !== "text" && t.kind !== "readonly")) return;
    const mine = (refreshSeq.current.get(path) ?? 0) + 1;
    refreshSeq.current.set(path, mine);
    try {
      const disk = await api.readText(path, MAX_TEXT_BYTES);
      if (refreshSeq.current.get(path) !== mine) return;
      tabs.diskChanged(path, disk);
    } catch (e) {
      if (refreshSeq.current.get(path) !== mine) return;
      const err = /** @type {any} */ (e);
      if (err.code === "C211") tabs.diskChanged(path, { deleted: true });
      else tabs.update(path, (x) => (x.error = err));
    }
  };

  /** A writer's change opens (or updates) its diff tab in the background, labelled by what it
   * did and who did it; the active tab changes only when the user follows the writer.
   * @param {import("./app.js").ChangeEvent} e @param {string} abs */
  const followWriter = async (e, abs) => {
    const changeId = /** @type {string} */ (e.change_id);
    // a move is two events (the source gone, the destination created) of one change
    if (seenChanges.current.has(changeId)) return;
    seenChanges.current.add(changeId);
    if (seenChanges.current.size > 4096) seenChanges.current.delete(seenChanges.current.values().next().value);
    try {
      const d = await api.changeDiff(changeId);
      const path = typeof d.path === "string" ? d.path : abs;
      const note = changeLabel(d, (p) => relative(root, p) ?? p);
      const extra = { path, old: d.old_contents ?? "", new: d.new_contents ?? "", change_id: changeId, kind: d.kind ?? e.kind, time_ms: d.time_ms ?? Date.now() };
      tabs.writerChange(`diff:${path}`, { note, extra }, { follow: followRef.current });
    } catch (err) {
      setNotice(err);
    }
  };

  /** A diff in the editor's merge view, as its own tab. @param {string} key @param {{path: string, old: string, new: string, note: string}} d */
  const showDiff = (key, d) => {
    const id = `diff:${key}`;
    tabs.open(id, "diff");
    tabs.loaded(id, { kind: "diff", content: "", revision: null, note: d.note, extra: { path: d.path, old: d.old, new: d.new } });
  };

  // the repository the root is in (if any), refreshed by the feed's .git signal and worktree changes
  useEffect(() => {
    void git.detect();
    const offChange = app.onChange((e) => git.onChange(e));
    const offReconnect = app.onReconnect(() => void git.detect());
    return () => {
      offChange();
      offReconnect();
      git.dispose();
    };
  }, [app, git]);

  // whether ide answers and which process: a restart re-reads like a reconnect, and is said
  useSyncExternalStore(
    (fn) => app.onWorker(fn),
    () => app.worker,
  );
  useEffect(() => app.watchWorker(), [app]);

  // the live binding, storage restore, change events, reconnects
  useEffect(() => {
    app.bind(root);
    if (!restored.current) {
      restored.current = true;
      const saved = storage.getJson(`state:${root}`);
      tree.restore(Array.isArray(saved?.expanded) ? saved.expanded : []);
      for (const p of Array.isArray(saved?.tabs) ? saved.tabs : []) if (typeof p === "string") openFile(p, { background: true });
      if (typeof saved?.active === "string") tabs.activate(saved.active);
    }
    const offChange = app.onChange((e) => {
      tree.apply(e);
      if (e.kind === "rescan") {
        for (const t of tabs.tabs) refreshTab(t.path);
        return;
      }
      if (e.dir || e.path === ".git") return;
      const abs = join(root, e.path);
      if (tabs.get(abs)) {
        if (e.kind === "deleted") tabs.diskChanged(abs, { deleted: true });
        else refreshTab(abs);
      }
      // another writer's change can break (or fix) any open file: ask again for all of them
      if (isCode(abs) && tabs.tabs.some((t) => isCode(t.path))) rediagnose();
      const own = ownWrites.current.get(abs);
      const mine = own !== undefined && Date.now() - own < OWN_WRITE_MS;
      if (e.change_id && !mine && stealsView(e.path)) followWriter(e, abs);
    });
    const offReconnect = app.onReconnect(() => {
      for (const d of tree.listings.keys()) tree.load(d);
      for (const t of tabs.tabs) refreshTab(t.path);
      rediagnose();
    });
    return () => {
      offChange();
      offReconnect();
      app.unbind();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [app, root, tree, tabs]);

  // remember expanded folders, open tabs and the active one (a layout effect: stored before the
  // browser paints, so a reload right after any change finds it)
  useLayoutEffect(() => {
    if (!restored.current) return;
    storage.setJson(`state:${root}`, { expanded: tree.expandedList(), ...tabs.persisted() });
  }, [root, tree, tabs, tabs.version, treeVersion]);

  useEffect(() => storage.set("pane", pane), [pane]);
  useEffect(() => storage.set("follow", String(follow)), [follow]);
  useEffect(() => storage.set("bottom", bottom), [bottom]);

  useEffect(() => {
    /** @param {KeyboardEvent} e */
    const onKey = (e) => {
      if ((e.ctrlKey || e.metaKey) && !e.shiftKey && !e.altKey && e.key.toLowerCase() === "p") {
        e.preventDefault();
        setQuickOpen(true);
      } else if ((e.ctrlKey || e.metaKey) && !e.shiftKey && !e.altKey && e.key.toLowerCase() === "t") {
        e.preventDefault();
        setSymbolOpen(true);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const active = tabs.active ? tabs.get(tabs.active) : null;
  const unseen = tabs.unseen();
  const activeText = active && active.state === "ready" && (active.kind === "text" || active.kind === "readonly") ? active.path : null;

  // the active file's outline (breadcrumbs and the outline pane), read again at each new revision
  useEffect(() => {
    if (activeText) void code.loadOutline(activeText, active?.revision ?? null);
  }, [code, activeText, active?.revision]);
  const ctx = {
    app,
    api,
    host,
    root,
    rootName: basename(root) || root,
    tree,
    tabs,
    dark,
    activePath: active?.path ?? null,
    openFile,
    save,
    resolve,
    pendingLine,
    git,
    showDiff,
    notify: setNotice,
    code,
    views,
    abs,
    activeText,
    goTo,
    applyRename,
    showBottom: setBottom,
  };
  const shownSide = sidePanes.filter((p) => !p.when || p.when(ctx));
  const side = shownSide.find((p) => p.id === pane) ?? shownSide[0];
  const under = bottomPanes.find((p) => p.id === bottom) ?? bottomPanes[0];

  return (
    <div className="ide-workspace" data-git={git.inRepo === null ? "unknown" : String(git.inRepo)}>
      <header className="ide-header">
        <span className="ide-title">IDE</span>
        {app.api.namespace && (
          <span className="ide-host-badge" data-testid="host" title={`the ide in namespace ${app.api.namespace}`}>
            {app.api.namespace}
          </span>
        )}
        <span className="ide-root" data-testid="root" title={root}>
          {root}
        </span>
        <Button host={host} small onClick={onChangeRoot}>
          Change workspace
        </Button>
        <Button host={host} small onClick={() => setQuickOpen(true)} title="Quick open (Ctrl+P)">
          Go to file…
        </Button>
        <Button host={host} small onClick={() => setSymbolOpen(true)} title="Go to a symbol anywhere in the root (Ctrl+T)">
          Go to symbol…
        </Button>
        <label className="ide-follow" title="Show each change a writer (an agent, another tab) makes as it happens, instead of opening it in the background">
          <input type="checkbox" data-testid="follow" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />
          Follow the agent
        </label>
        {unseen > 0 && (
          <Button host={host} small onClick={() => tabs.activate(/** @type {string} */ (tabs.nextUnseen()))} title="Show the latest change you have not looked at">
            <span data-testid="unseen">{unseen === 1 ? "1 new change" : `${unseen} new changes`}</span>
          </Button>
        )}
        {active?.kind === "text" && (
          <Button host={host} small primary disabled={!active.dirty || active.saving} onClick={() => save(active.path)}>
            {active.saving ? "Saving…" : "Save"}
          </Button>
        )}
      </header>
      <div className="ide-body">
        <aside className="ide-side">
          <nav className="ide-pane-tabs" role="tablist">
            {shownSide.map((p) => (
              <button key={p.id} role="tab" aria-selected={p.id === side.id} className={p.id === side.id ? "active" : ""} onClick={() => setPane(p.id)}>
                {p.title}
              </button>
            ))}
          </nav>
          <div className="ide-pane">{side.render(ctx)}</div>
        </aside>
        <main className="ide-main">
          <div className="ide-tabs" role="tablist">
            {tabs.tabs.map((t) => (
              <div
                key={t.path}
                role="tab"
                aria-selected={t.path === tabs.active}
                className={`ide-tab${t.path === tabs.active ? " active" : ""}`}
                data-path={t.path}
                data-dirty={t.dirty ? "true" : "false"}
                onClick={() => tabs.activate(t.path)}
                title={t.kind === "diff" ? t.extra?.path : t.path}
              >
                {t.kind === "diff" ? `Δ ${basename(t.path.slice(5))}` : basename(t.path)}
                {t.dirty && <span className="ide-dot">●</span>}
                {t.unseen > 0 && (
                  <span className="ide-badge agent" data-unseen={t.unseen} title={`${t.unseen} change${t.unseen === 1 ? "" : "s"} you have not looked at`}>
                    {t.unseen}
                  </span>
                )}
                {t.changedOnDisk && <span className="ide-badge warn">disk</span>}
                <button
                  className="ide-close"
                  aria-label={`Close ${basename(t.path)}`}
                  onClick={(e) => {
                    e.stopPropagation();
                    close(t.path);
                  }}
                >
                  ×
                </button>
              </div>
            ))}
          </div>
          <div className="ide-editor">{active ? <EditorPane key={active.path} ctx={ctx} tab={active} /> : <div className="ide-empty">Open a file from the explorer, or press Ctrl+P.</div>}</div>
          <nav className="ide-bottom-tabs" role="tablist" aria-label="Panels">
            {bottomPanes.map((p) => (
              <button key={p.id} role="tab" aria-selected={p.id === under.id} className={p.id === under.id ? "active" : ""} onClick={() => setBottom(p.id)}>
                {p.title}
              </button>
            ))}
          </nav>
          {bottomPanes.map(
            (p) =>
              (p.keepMounted || p.id === under.id) && (
                <div key={p.id} className="ide-bottom" data-pane-id={p.id} hidden={p.id !== under.id}>
                  {p.render(ctx)}
                </div>
              ),
          )}
        </main>
      </div>
      <footer className="ide-status">
        <ErrorLine error={notice} />
        {app.bindError && <ErrorLine error={app.bindError} />}
        {app.worker.state === "away" && (
          <span className="ide-worker-away" role="status" data-testid="worker-away">
            ide is not answering (restarting, or its engine connection is down); retrying every second. Unsaved edits stay here.
          </span>
        )}
        {app.worker.state === "up" && app.worker.restartedAt !== null && (
          <span className="ide-worker-restarted" role="status" data-testid="worker-restarted">
            ide restarted at {new Date(app.worker.restartedAt).toLocaleTimeString()}: folders and open files were read again; terminals and jobs of the old process are gone.{" "}
            <button className="ide-button small" onClick={() => app.dismissRestart()}>
              OK
            </button>
          </span>
        )}
        {!notice && !app.bindError && app.worker.state !== "away" && app.worker.restartedAt === null && (
          <span className="ide-muted">{statusText(root, active, tree)}</span>
        )}
        {info && (
          <span className="ide-status-info" role="status" data-testid="code-info">
            {info}{" "}
            <button className="ide-link" onClick={() => setInfo(null)}>
              OK
            </button>
          </span>
        )}
        <CodeStatus ctx={ctx} />
      </footer>
      {symbolOpen && <SymbolOpen ctx={ctx} onClose={() => setSymbolOpen(false)} />}
      {picker && <DefinitionPicker ctx={ctx} answer={picker} onClose={() => setPicker(null)} />}
      {renameAt && <RenameBox ctx={ctx} at={renameAt} onClose={() => setRenameAt(null)} />}
      {quickOpen && (
        <QuickOpen
          ctx={ctx}
          onClose={() => setQuickOpen(false)}
          onPick={(/** @type {string} */ p) => {
            setQuickOpen(false);
            openFile(p);
          }}
        />
      )}
    </div>
  );
}
