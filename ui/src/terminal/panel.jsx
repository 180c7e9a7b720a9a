// The terminal panel under the editor: a tab per pane, the font-size
// stepper (every pane, refitting), the pane's state (exit status, lost
// lease, errors with code and message) and this page's orphaned sessions,
// offered for adoption.

import { useEffect, useLayoutEffect, useRef, useState, useSyncExternalStore } from "react";
import { ErrorLine } from "../ui.jsx";
import { FONT_MAX, FONT_MIN } from "./leases.js";
import { ORPHAN_POLL_MS } from "./terminals.js";

/** @param {{ctx: any}} props */
export function TerminalPanel({ ctx }) {
  /** @type {import("./terminals.js").Terminals | undefined} */
  const terms = ctx.app.terminals;
  if (!terms) return null;
  return <Panel terms={terms} root={ctx.root} dark={ctx.dark} />;
}

/** @param {{terms: import("./terminals.js").Terminals, root: string, dark: boolean}} props */
function Panel({ terms, root, dark }) {
  useSyncExternalStore(terms.subscribe, terms.snapshot);
  useEffect(() => terms.restore(), [terms]);
  useEffect(() => terms.applyTheme(), [terms, dark]);

  // the orphan list refreshes while the panel is shown
  useEffect(() => {
    let live = true;
    const tick = () => {
      if (live) void terms.refreshOrphans();
    };
    tick();
    const timer = setInterval(tick, ORPHAN_POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [terms]);

  const active = terms.panes.find((p) => p.id === terms.active) ?? null;
  const split = terms.split && terms.split !== terms.active ? (terms.panes.find((p) => p.id === terms.split) ?? null) : null;
  return (
    <section className="ide-terminals" aria-label="Terminals">
      <div className="ide-term-bar">
        <div className="ide-term-tabs" role="tablist">
          {terms.panes.map((p) => (
            <div
              key={p.id}
              role="tab"
              aria-selected={p.id === terms.active}
              className={`ide-term-tab${p.id === terms.active ? " active" : ""}${p.id === split?.id ? " split" : ""}`}
              data-pane={p.id}
              data-status={p.status}
              onClick={() => terms.activate(p.id)}
              title={p.cwd}
            >
              <span>{p.title}</span>
              {p.status === "exited" && <span className="ide-badge">exited</span>}
              {p.status === "lost" && <span className="ide-badge warn">lost</span>}
              <button
                className="ide-close"
                aria-label={`Close terminal ${p.title}`}
                onClick={(e) => {
                  e.stopPropagation();
                  void terms.close(p.id);
                }}
              >
                ×
              </button>
            </div>
          ))}
          <button className="ide-term-new" aria-label="New terminal" title="New terminal (a login shell in the workspace root)" onClick={() => terms.openShell(root)}>
            +
          </button>
        </div>
        {active && <FindBox pane={active} />}
        <div className="ide-term-font" role="group" aria-label="Terminal font size">
          {split ? (
            <button className="ide-button small" onClick={() => terms.unsplit()} title="Show one terminal (the other keeps running in its tab)">
              Unsplit
            </button>
          ) : (
            <button className="ide-button small" disabled={!active} onClick={() => terms.splitShell(root)} title="A new shell beside this one">
              Split
            </button>
          )}
          <button className="ide-button small" aria-label="Smaller terminal font" disabled={terms.fontSize <= FONT_MIN} onClick={() => terms.setFontSize(terms.fontSize - 1)}>
            −
          </button>
          <span className="ide-term-font-size" data-testid="term-font-size" title="Ctrl or ⌘ + scroll on a terminal does the same">
            {terms.fontSize}px
          </span>
          <button className="ide-button small" aria-label="Larger terminal font" disabled={terms.fontSize >= FONT_MAX} onClick={() => terms.setFontSize(terms.fontSize + 1)}>
            +
          </button>
        </div>
      </div>
      {terms.notice && <ErrorLine error={terms.notice} />}
      {terms.orphans.length > 0 && (
        <div className="ide-banner info ide-term-orphans" role="status" data-testid="term-orphans">
          <div>
            <div>Detached terminal sessions of this page are still running; no pane here holds them:</div>
            <ul className="ide-term-orphan-list">
              {terms.orphans.map((o) => (
                <li key={o.session_id} data-session={o.session_id}>
                  <span className="ide-code">{o.program ?? "login shell"}</span> in {o.cwd} · {o.sequence} frames so far
                  <button className="ide-button small" onClick={() => terms.adopt(o)}>
                    Adopt
                  </button>
                </li>
              ))}
            </ul>
          </div>
        </div>
      )}
      {terms.orphanError && <ErrorLine error={terms.orphanError} />}
      <div className={`ide-term-body${split ? " split" : ""}`}>
        {terms.panes.length === 0 && (
          <div className="ide-empty">
            <button className="ide-button" onClick={() => terms.openShell(root)}>
              Open a terminal
            </button>
          </div>
        )}
        {active && <PaneView key={active.id} pane={active} terms={terms} />}
        {split && <PaneView key={split.id} pane={split} terms={terms} />}
      </div>
    </section>
  );
}

/** @param {{pane: import("./terminals.js").TermPane, terms: import("./terminals.js").Terminals}} props */
function PaneView({ pane, terms }) {
  const host = useRef(/** @type {HTMLDivElement | null} */ (null));
  useLayoutEffect(() => {
    const el = host.current;
    if (!el) return;
    pane.mount(el);
    if (pane.status === "live" || pane.status === "starting") pane.term.focus();
    return () => pane.unmount(el);
  }, [pane]);

  return (
    <div className="ide-term-pane" data-pane={pane.id} data-status={pane.status}>
      {pane.status === "lost" && (
        <div className="ide-banner warn" role="alert" data-testid="term-lost">
          <div>
            This terminal&apos;s lease is gone: the worker no longer accepts its credentials (it restarted, or another tab took the session).{" "}
            {pane.error && <span className="ide-code">{pane.error.code}</span>} {pane.error?.message}
          </div>
          <div className="ide-banner-actions">
            <button className="ide-button small" onClick={() => terms.replace(pane.id)}>
              Open a new shell
            </button>
          </div>
        </div>
      )}
      {pane.status === "error" && (
        <div className="ide-banner error" role="alert">
          <ErrorLine error={pane.error} />
          <div className="ide-banner-actions">
            <button className="ide-button small" onClick={() => terms.replace(pane.id)}>
              Try a new shell
            </button>
          </div>
        </div>
      )}
      {pane.status !== "lost" && pane.status !== "error" && pane.error && <ErrorLine error={pane.error} />}
      {pane.status === "exited" && pane.exit && (
        <div className="ide-banner info" role="status" data-testid="term-exit">
          <div>
            Process exited
            {pane.exit.exit_code != null && (
              <>
                {" "}
                with status <span className="ide-code">{pane.exit.exit_code}</span>
              </>
            )}
            {pane.exit.signal && (
              <>
                {" "}
                by signal <span className="ide-code">{pane.exit.signal}</span>
              </>
            )}
            {pane.exit.error && <> ({pane.exit.error})</>}
          </div>
          <div className="ide-banner-actions">
            <button className="ide-button small" onClick={() => terms.replace(pane.id)}>
              New shell here
            </button>
          </div>
        </div>
      )}
      {pane.truncated && <div className="ide-muted ide-term-note">Older output was dropped from the worker&apos;s buffer; the screen was redrawn.</div>}
      <div className="ide-term-host" ref={host} />
    </div>
  );
}

/** Find in the active terminal's buffer (the search addon): Enter finds the next match, Shift+Enter the previous. @param {{pane: import("./terminals.js").TermPane}} props */
function FindBox({ pane }) {
  const [query, setQuery] = useState("");
  const [missing, setMissing] = useState(false);
  /** @param {boolean} back */
  const find = (back) => {
    if (!query) return;
    const found = back ? pane.search.findPrevious(query) : pane.search.findNext(query);
    setMissing(!found);
  };
  return (
    <input
      className={`ide-input ide-term-find${missing ? " missing" : ""}`}
      aria-label="Find in terminal"
      placeholder="Find in terminal"
      value={query}
      onChange={(e) => {
        setQuery(e.target.value);
        setMissing(false);
      }}
      onKeyDown={(e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          find(e.shiftKey);
        } else if (e.key === "Escape") {
          pane.search.clearDecorations();
          pane.term.clearSelection();
          pane.term.focus();
        }
      }}
    />
  );
}
