// The explorer: a virtualized tree (fixed row height, only the rows in view
// are in the DOM), lazy folders, protected entries marked and refused, noise
// folders dimmed. A "more" row in view loads the folder's next page.

import { useEffect, useRef, useState, useSyncExternalStore } from "react";
import { ErrorLine } from "./ui.jsx";

export const ROW_HEIGHT = 22;
const OVERSCAN = 12;

/** @param {{ctx: any}} props */
export function Explorer({ ctx }) {
  /** @type {import("./models/tree.js").TreeModel} */
  const tree = ctx.tree;
  useSyncExternalStore(
    (fn) => tree.subscribe(fn),
    () => tree.version,
  );
  const rows = tree.rows();
  const scroller = useRef(/** @type {HTMLDivElement | null} */ (null));
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(600);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const measure = () => setHeight(el.clientHeight || 600);
    measure();
    if (typeof ResizeObserver === "function") {
      const ro = new ResizeObserver(measure);
      ro.observe(el);
      return () => ro.disconnect();
    }
  }, []);

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  const slice = rows.slice(first, last);

  useEffect(() => {
    for (const r of slice) if (r.type === "more") tree.loadMore(r.path);
  });

  return (
    <div className="ide-explorer">
      <div className="ide-pane-head">
        <span title={tree.root}>{ctx.rootName}</span>
        <button className="ide-button small" title="Refresh" onClick={() => tree.load(tree.root)}>
          ⟳
        </button>
      </div>
      <div
        className="ide-tree"
        role="tree"
        aria-label="Files"
        data-rows={rows.length}
        ref={scroller}
        onScroll={(e) => setScrollTop(/** @type {HTMLDivElement} */ (e.currentTarget).scrollTop)}
      >
        <div style={{ height: rows.length * ROW_HEIGHT, position: "relative" }}>
          {slice.map((r, i) => (
            <TreeRow key={`${r.type}:${r.path}`} row={r} top={(first + i) * ROW_HEIGHT} ctx={ctx} />
          ))}
        </div>
      </div>
    </div>
  );
}

/** @param {{row: import("./models/tree.js").Row, top: number, ctx: any}} props */
function TreeRow({ row, top, ctx }) {
  const style = { top, height: ROW_HEIGHT, paddingLeft: 8 + row.depth * 14 };
  if (row.type === "loading") {
    return (
      <div className="ide-row-item ide-muted" style={style}>
        Loading…
      </div>
    );
  }
  if (row.type === "more") {
    return (
      <div className="ide-row-item ide-muted" style={style}>
        Loading more…
      </div>
    );
  }
  if (row.type === "error") {
    return (
      <div className="ide-row-item" style={style}>
        <ErrorLine error={row.error} />
      </div>
    );
  }
  const isDir = row.kind === "dir";
  const active = ctx.activePath === row.path;
  const cls = ["ide-row-item", "entry", row.noise ? "noise" : "", row.protected ? "protected" : "", active ? "active" : ""]
    .filter(Boolean)
    .join(" ");
  return (
    <div
      className={cls}
      style={style}
      role="treeitem"
      aria-expanded={isDir ? row.expanded : undefined}
      data-path={row.path}
      data-kind={row.kind}
      title={row.protected ? `${row.path} is protected: ide will not read or write it` : row.path}
      onClick={() => (isDir ? ctx.tree.toggle(row.path) : ctx.openFile(row.path, { protected: row.protected }))}
    >
      <span className="ide-twisty">{isDir ? (row.expanded ? "▾" : "▸") : ""}</span>
      <span className="ide-name">{row.name}</span>
      {row.protected && <span className="ide-badge">protected</span>}
      {row.kind === "symlink" && <span className="ide-badge">link</span>}
    </div>
  );
}
