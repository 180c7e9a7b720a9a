// The code-intelligence panes and dialogs: the outline (side), references
// and problems (under the editor), breadcrumbs, go to symbol (Ctrl+T), the
// definition picker, and rename with its preview. All of them read the
// workspace's CodeModel (ctx.code) and jump through ctx.goTo.

import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { ErrorLine, listKeys } from "../ui.jsx";
import { relative } from "../models/paths.js";
import { countSymbols, kindMark, splitMatch, symbolChain } from "../models/code.js";

/** @param {{ctx: any}} props */
function useCode({ ctx }) {
  useSyncExternalStore(ctx.code.subscribe, ctx.code.snapshot);
  return /** @type {import("../models/code.js").CodeModel} */ (ctx.code);
}

/** @param {{kind: string}} props */
export function KindIcon({ kind }) {
  return (
    <span className={`ide-kind ide-kind-${kind}`} title={kind} aria-label={kind}>
      {kindMark(kind)}
    </span>
  );
}

/** One outline row's height in pixels (the list is virtual: a 5 000-line file's 1 400 symbols render as the ~40 in view). */
const ROW_PX = 22;
const OVERSCAN = 10;

/** @param {import("../models/code.js").Sym[]} list @param {number} depth @param {Array<{s: import("../models/code.js").Sym, depth: number}>} out */
function flatten(list, depth, out) {
  for (const s of list) {
    out.push({ s, depth });
    if (s.children?.length) flatten(s.children, depth + 1, out);
  }
  return out;
}

/** @param {{ctx: any}} props */
export function OutlinePanel({ ctx }) {
  const code = useCode({ ctx });
  const path = ctx.activeText;
  const box = useRef(/** @type {HTMLDivElement | null} */ (null));
  const [view, setView] = useState({ top: 0, height: 600 });
  const outline = path ? code.outlines.get(path) : null;
  const rows = useMemo(() => (outline ? flatten(outline.symbols, 0, []) : []), [outline]);
  const line = code.cursor?.path === path ? code.cursor.line : 0;
  const chain = outline ? symbolChain(outline.symbols, line) : [];
  const here = chain.length ? chain[chain.length - 1] : null;
  const hereIndex = here ? rows.findIndex((r) => r.s === here) : -1;

  // follow the cursor: the marked symbol is scrolled into view
  useEffect(() => {
    const el = box.current;
    if (!el || hereIndex < 0) return;
    const y = hereIndex * ROW_PX;
    if (y < el.scrollTop || y + ROW_PX > el.scrollTop + el.clientHeight) el.scrollTop = Math.max(0, y - el.clientHeight / 3);
  }, [hereIndex, path]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setView({ top: el.scrollTop, height: el.clientHeight || 600 });
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [path, outline]);

  if (!path) return <div className="ide-empty">Open a file to see its outline.</div>;
  if (!outline) return <div className="ide-empty">Reading the outline…</div>;
  const first = Math.max(0, Math.floor(view.top / ROW_PX) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((view.top + view.height) / ROW_PX) + OVERSCAN);
  return (
    <div className="ide-outline" data-testid="outline" data-path={path} data-symbols={rows.length}>
      <div className="ide-outline-head ide-muted">
        {relative(ctx.root, path) ?? path}
        {outline.language ? ` · ${outline.language} · ${countSymbols(outline.symbols)} symbols` : ""}
      </div>
      <ErrorLine error={outline.error} />
      {outline.note && <div className="ide-muted ide-outline-note">{outline.note}</div>}
      {!outline.error && rows.length === 0 && <div className="ide-empty">{outline.language ? "No symbols in this file." : "No outline for this kind of file."}</div>}
      <div className="ide-outline-scroll" ref={box} onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight || 600 })}>
        <div className="ide-outline-tree" role="tree" style={{ height: rows.length * ROW_PX }}>
          {rows.slice(first, last).map(({ s, depth }, k) => (
            <button
              key={`${s.name_path}:${s.line}`}
              role="treeitem"
              className={`ide-outline-row${s === here ? " here" : ""}`}
              style={{ top: (first + k) * ROW_PX, height: ROW_PX, paddingLeft: 6 + depth * 14 }}
              data-name-path={s.name_path}
              data-line={s.line}
              data-depth={depth}
              aria-level={depth + 1}
              aria-current={s === here ? "location" : undefined}
              title={s.signature ?? s.name}
              onClick={() => ctx.goTo(path, s.line, s.column)}
            >
              <KindIcon kind={s.kind} />
              <span className="ide-outline-name">{s.name}</span>
              <span className="ide-muted ide-outline-line">{s.line}</span>
            </button>
          ))}
        </div>
      </div>
    </div>
  );
}

/** `Parser › parse_expr` above the editor. @param {{ctx: any, path: string}} props */
export function Breadcrumbs({ ctx, path }) {
  const code = useCode({ ctx });
  const outline = code.outlines.get(path);
  const line = code.cursor?.path === path ? code.cursor.line : 0;
  const chain = outline ? symbolChain(outline.symbols, line) : [];
  return (
    <nav className="ide-breadcrumbs" data-testid="breadcrumbs" aria-label="Where the cursor is">
      <span className="ide-muted">{relative(ctx.root, path) ?? path}</span>
      {chain.map((s) => (
        <span key={`${s.name_path}:${s.line}`} className="ide-crumb">
          <span className="ide-muted"> › </span>
          <button className="ide-link" onClick={() => ctx.goTo(path, s.line, s.column)} title={s.signature ?? s.name}>
            {s.name}
          </button>
        </span>
      ))}
    </nav>
  );
}

/** @param {{ctx: any}} props */
export function ReferencesPanel({ ctx }) {
  const code = useCode({ ctx });
  const r = code.references;
  if (code.referencesBusy) return <div className="ide-empty">Finding references…</div>;
  if (code.referencesError) return <ErrorLine error={code.referencesError} />;
  if (!r) return <div className="ide-empty">Put the cursor on a name and press Shift+F12.</div>;
  const shown = r.groups.reduce((n, g) => n + g.refs.length, 0);
  return (
    <section className="ide-refs" data-testid="references" aria-label="References">
      <div className="ide-refs-head">
        <span data-testid="references-count">
          <span className="ide-code">{r.name}</span> — {r.total} reference{r.total === 1 ? "" : "s"} in {r.groups.length} file{r.groups.length === 1 ? "" : "s"}
        </span>
        <Precision precision={r.precision} server={r.server} note={r.note} />
        {shown < r.total && <span className="ide-muted">the first {shown} shown ({r.stop ?? "budget"})</span>}
      </div>
      <div className="ide-refs-body">
        {r.groups.map((g) => (
          <div key={g.path} className="ide-refs-file" data-path={g.path}>
            <div className="ide-refs-path">
              {relative(ctx.root, g.path) ?? g.path} <span className="ide-muted">{g.refs.length}</span>
            </div>
            {g.refs.map((x) => {
              const [before, match, after] = splitMatch(x.text ?? "", x.column, r.name);
              return (
                <button
                  key={`${x.line}:${x.column}`}
                  className="ide-search-hit"
                  data-line={x.line}
                  data-role={x.role ?? ""}
                  disabled={Boolean(x.outside_roots)}
                  title={x.outside_roots ? "Outside the roots: not opened" : `${x.role ?? "reference"} at line ${x.line}`}
                  onClick={() => ctx.goTo(g.path, x.line, x.column)}
                >
                  <span className="ide-muted">{String(x.line).padStart(4)} </span>
                  {x.outside_roots ? (
                    <span className="ide-muted">outside the roots</span>
                  ) : (
                    <>
                      {before.trimStart()}
                      <mark>{match}</mark>
                      {after}
                    </>
                  )}
                  {x.role && x.role !== "reference" && <span className="ide-ref-role">{x.role}</span>}
                </button>
              );
            })}
          </div>
        ))}
      </div>
    </section>
  );
}

/** The semantic/structural mark. @param {{precision: string, server: string | null, note: string | null}} props */
export function Precision({ precision, server, note }) {
  const semantic = precision === "semantic";
  return (
    <span
      className={`ide-precision ${semantic ? "semantic" : "structural"}`}
      data-testid="precision"
      data-precision={semantic ? "semantic" : "structural"}
      title={note ?? (semantic ? `answered by ${server}` : "answered from the code's structure (tree-sitter), without a language server")}
    >
      {semantic ? `semantic · ${server}` : "structural"}
    </span>
  );
}

/** @param {{ctx: any}} props */
export function ProblemsPanel({ ctx }) {
  const code = useCode({ ctx });
  const list = code.problems();
  const c = code.counts();
  return (
    <section className="ide-problems" data-testid="problems" aria-label="Problems">
      <div className="ide-refs-head">
        <span>
          {c.error} error{c.error === 1 ? "" : "s"}, {c.warning} warning{c.warning === 1 ? "" : "s"}
          {c.info ? `, ${c.info} other` : ""} in the open files
        </span>
        {code.diagnosing.size > 0 && <span className="ide-muted">checking…</span>}
      </div>
      {list.length === 0 ? (
        <div className="ide-empty">No problems in the open files.</div>
      ) : (
        <ul className="ide-problems-list">
          {list.map((d, i) => (
            <li key={`${d.path}:${d.line}:${d.column}:${i}`}>
              <button className="ide-problem" data-severity={d.severity} data-path={d.path} data-line={d.line} onClick={() => ctx.goTo(d.path, d.line, d.column)}>
                <span className={`ide-sev ${d.severity}`}>{d.severity}</span>
                <span className="ide-code">
                  {relative(ctx.root, d.path) ?? d.path}:{d.line}:{d.column}
                </span>
                <span className="ide-problem-msg">{d.message}</span>
                {d.source && <span className="ide-muted">{d.source}</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

const SYMBOL_DEBOUNCE_MS = 120;

/** Ctrl+T: a symbol anywhere in the root. @param {{ctx: any, onClose: () => void}} props */
export function SymbolOpen({ ctx, onClose }) {
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState(/** @type {any[]} */ ([]));
  const [selected, setSelected] = useState(0);
  const [error, setError] = useState(/** @type {any} */ (null));
  const [more, setMore] = useState(/** @type {string | null} */ (null));
  const input = useRef(/** @type {HTMLInputElement | null} */ (null));
  const seq = useRef(0);

  useEffect(() => input.current?.focus(), []);
  useEffect(() => {
    const q = query.trim();
    if (!q) {
      setHits([]);
      return;
    }
    const mine = ++seq.current;
    const timer = setTimeout(async () => {
      try {
        const out = await ctx.code.findSymbols(q);
        if (mine !== seq.current) return;
        setHits(out.matches ?? []);
        setMore(out.stop_reason ?? (out.note || null));
        setSelected(0);
        setError(null);
      } catch (e) {
        if (mine === seq.current) setError(e);
      }
    }, SYMBOL_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [query, ctx.code]);

  /** @param {any} m */
  const pick = (m) => {
    onClose();
    ctx.goTo(ctx.abs(m.path), m.line, m.column);
  };
  return (
    <div className="ide-overlay" onMouseDown={onClose}>
      <div className="ide-quickopen" role="dialog" aria-label="Go to symbol" data-testid="symbol-open" onMouseDown={(e) => e.stopPropagation()}>
        <input
          ref={input}
          className="ide-input"
          aria-label="Symbol name"
          placeholder="Type a symbol name (Class/method for a name path)"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          onKeyDown={(e) => listKeys(e, hits, selected, setSelected, pick, onClose)}
        />
        <ErrorLine error={error} />
        <ul className="ide-list" role="listbox">
          {hits.map((m, i) => (
            <li
              key={`${m.path}:${m.line}:${m.name_path}`}
              role="option"
              aria-selected={i === selected}
              className={i === selected ? "selected" : ""}
              data-path={ctx.abs(m.path)}
              data-name-path={m.name_path}
              onClick={() => pick(m)}
            >
              <span className="ide-symbol-hit">
                <KindIcon kind={m.kind} />
                <span>{m.name_path}</span>
              </span>
              <span className="ide-muted">
                {relative(ctx.root, ctx.abs(m.path)) ?? m.path}:{m.line}
              </span>
            </li>
          ))}
          {query.trim() && !error && hits.length === 0 && <li className="ide-muted">No symbol matches.</li>}
          {more && <li className="ide-muted">{more}</li>}
        </ul>
      </div>
    </div>
  );
}

/** Several definitions: pick one. @param {{ctx: any, answer: any, onClose: () => void}} props */
export function DefinitionPicker({ ctx, answer, onClose }) {
  const [selected, setSelected] = useState(0);
  const list = /** @type {any[]} */ (answer.locations);
  const box = useRef(/** @type {HTMLDivElement | null} */ (null));
  useEffect(() => box.current?.focus(), []);
  /** @param {any} l */
  const pick = (l) => {
    if (l.outside_roots) return;
    onClose();
    ctx.goTo(ctx.abs(l.path), l.line, l.column);
  };
  return (
    <div className="ide-overlay" onMouseDown={onClose}>
      <div
        className="ide-quickopen"
        role="dialog"
        aria-label="Definitions"
        data-testid="definition-picker"
        tabIndex={-1}
        ref={box}
        onMouseDown={(e) => e.stopPropagation()}
        onKeyDown={(e) => listKeys(e, list, selected, setSelected, pick, onClose)}
      >
        <div className="ide-refs-head">
          <span>
            {list.length} definitions of <span className="ide-code">{answer.name}</span>
          </span>
          <Precision precision={answer.precision} server={answer.language_server ?? null} note={answer.note ?? null} />
        </div>
        <ul className="ide-list" role="listbox">
          {list.map((l, i) => (
            <li
              key={`${l.path}:${l.line}:${l.column}`}
              role="option"
              aria-selected={i === selected}
              aria-disabled={Boolean(l.outside_roots)}
              className={`${i === selected ? "selected" : ""}${l.outside_roots ? " outside" : ""}`}
              data-path={l.path}
              onClick={() => pick(l)}
            >
              <span className="ide-symbol-hit">
                {l.kind && <KindIcon kind={l.kind} />}
                <span>{l.signature || l.name_path || answer.name}</span>
              </span>
              <span className="ide-muted">
                {l.outside_roots ? `outside the roots: ${l.path}:${l.line}` : `${relative(ctx.root, ctx.abs(l.path)) ?? l.path}:${l.line}`}
              </span>
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}

/**
 * F2: the new name in an input at the symbol, then the preview of every
 * file (coder::rename with dry_run), then the rename as one change.
 * @param {{ctx: any, at: {path: string, line: number, column: number, name: string, x: number, y: number}, onClose: () => void}} props
 */
export function RenameBox({ ctx, at, onClose }) {
  const [name, setName] = useState(at.name);
  const [plan, setPlan] = useState(/** @type {any} */ (null));
  const [error, setError] = useState(/** @type {any} */ (null));
  const [busy, setBusy] = useState(false);
  const input = useRef(/** @type {HTMLInputElement | null} */ (null));
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);
  // the input was disabled while the server was asked: give the keyboard back (Escape, another name)
  useEffect(() => {
    if (!busy && !plan) input.current?.focus();
  }, [busy, plan]);

  const preview = async () => {
    if (!name.trim() || name === at.name) return;
    setBusy(true);
    setError(null);
    try {
      setPlan(await ctx.code.rename({ path: at.path, line: at.line, column: at.column, new_name: name.trim(), dry_run: true }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const files = /** @type {any[]} */ (plan?.files ?? []);
  const dirty = files.map((f) => ctx.abs(f.path)).filter((p) => ctx.tabs.get(p)?.dirty);
  const apply = async () => {
    setBusy(true);
    setError(null);
    try {
      await ctx.applyRename(at, name.trim(), files.map((f) => ctx.abs(f.path)));
      onClose();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };

  if (!plan) {
    return (
      <div className="ide-rename-input" data-testid="rename-input" style={{ left: at.x, top: at.y }} onMouseDown={(e) => e.stopPropagation()}>
        <input
          ref={input}
          className="ide-input"
          aria-label="New name"
          value={name}
          disabled={busy}
          onChange={(e) => setName(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Escape") onClose();
            else if (e.key === "Enter") void preview();
          }}
        />
        <div className="ide-muted">{busy ? "Asking the language server…" : "Enter: preview every change · Escape: cancel"}</div>
        <ErrorLine error={error} />
      </div>
    );
  }
  return (
    <div className="ide-overlay" onMouseDown={onClose}>
      <div className="ide-rename-preview" role="dialog" aria-label="Rename preview" data-testid="rename-preview" onMouseDown={(e) => e.stopPropagation()} onKeyDown={(e) => e.key === "Escape" && onClose()}>
        <div className="ide-refs-head">
          <span>
            Rename <span className="ide-code">{at.name}</span> to <span className="ide-code">{name}</span>: {plan.edits} edit{plan.edits === 1 ? "" : "s"} in {files.length} file
            {files.length === 1 ? "" : "s"}
          </span>
          <span className="ide-precision semantic">semantic · {plan.language_server}</span>
        </div>
        <div className="ide-rename-files">
          {files.map((f) => (
            <details key={f.path} open={files.length <= 6} data-path={ctx.abs(f.path)}>
              <summary>
                {relative(ctx.root, ctx.abs(f.path)) ?? f.path} <span className="ide-muted">{f.edits} edit{f.edits === 1 ? "" : "s"}</span>
              </summary>
              <pre className="ide-diff">
                {(f.diff ?? "").split("\n").map((l, i) => (
                  <span key={i} className={l.startsWith("+") && !l.startsWith("+++") ? "add" : l.startsWith("-") && !l.startsWith("---") ? "del" : ""}>
                    {l}
                    {"\n"}
                  </span>
                ))}
              </pre>
            </details>
          ))}
        </div>
        {dirty.length > 0 && (
          <div className="ide-banner warn" role="alert">
            Save or close {dirty.map((p) => relative(ctx.root, p) ?? p).join(", ")} first: the rename writes the files on disk, and unsaved edits there would conflict.
          </div>
        )}
        <ErrorLine error={error} />
        <div className="ide-banner-actions">
          <button className="ide-button small primary" disabled={busy || dirty.length > 0} onClick={() => void apply()}>
            {busy ? "Renaming…" : "Apply rename"}
          </button>
          <button className="ide-button small" onClick={onClose}>
            Cancel
          </button>
        </div>
        <div className="ide-muted">Applied as one change: the History panel can revert it whole.</div>
      </div>
    </div>
  );
}

/** The status bar's part: problem counts, the last answer's precision, the once-said server note. @param {{ctx: any}} props */
export function CodeStatus({ ctx }) {
  const code = useCode({ ctx });
  const c = code.counts();
  return (
    <span className="ide-status-code">
      {code.serverNote && (
        <span className="ide-server-note" data-testid="server-note" data-ext={code.serverNote.key}>
          <span className="ide-muted ide-server-note-text" title={code.serverNote.message}>
            {code.serverNote.message}
          </span>
          <button className="ide-link" onClick={() => code.dismissServerNote()}>
            OK
          </button>
        </span>
      )}
      {code.precision && <Precision precision={code.precision.precision} server={code.precision.server} note={code.precision.note} />}
      <button className="ide-link ide-problem-counts" data-testid="problem-counts" data-errors={c.error} data-warnings={c.warning} data-rounds={code.rounds} title="Problems in the open files" onClick={() => ctx.showBottom("problems")}>
        <span className="ide-sev error">⊗ {c.error}</span> <span className="ide-sev warning">⚠ {c.warning}</span>
      </button>
    </span>
  );
}
