// The history pane (under the editor): turns and their changes from
// shell::turns::list, newest first, paged with its cursor; a change's diff
// in the editor's merge view (coder::change-diff); revert of a change or a
// whole turn in two steps — a dry run that shows what would be written and
// every conflict (nothing is written when there is one), then, only on an
// explicit confirm, the revert. Refreshed by the root's shell::changed feed.

import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import { storage } from "../storage.js";
import { TurnsStore, shortRev, stepText } from "../models/turns.js";
import { relative } from "../models/paths.js";
import { ErrorLine } from "../ui.jsx";

const SETTLE_MS = 200;

/** @param {number} ms */
const when = (ms) => (ms ? new Date(ms).toLocaleString() : "");

/** @param {{ctx: any}} props */
export function HistoryPanel({ ctx }) {
  const app = ctx.app;
  // one store per asset (made in setup): the pane comes and goes with its tab
  const store = useMemo(() => /** @type {TurnsStore} */ (app.turns ?? new TurnsStore((id, p) => app.api.call(id, p))), [app]);
  useSyncExternalStore(store.subscribe, store.snapshot);
  // the browsed root's changes, or (the toggle) every root's
  const [all, setAll] = useState(() => storage.get("history-all") === "true");

  useEffect(() => {
    void store.setScope(all ? null : ctx.root);
  }, [store, all, ctx.root]);

  useEffect(() => {
    void store.refresh();
    /** @type {ReturnType<typeof setTimeout> | null} */
    let timer = null;
    const later = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        void store.refresh();
      }, SETTLE_MS);
    };
    const offChange = app.onChange((/** @type {any} */ e) => {
      if (e.path !== ".git") later();
    });
    const offReconnect = app.onReconnect(later);
    return () => {
      if (timer) clearTimeout(timer);
      offChange();
      offReconnect();
    };
  }, [app, store]);

  /** @param {string} path */
  const rel = (path) => relative(ctx.root, path) ?? path;

  /** @param {import("../models/turns.js").ChangeSummary} c */
  const openDiff = async (c) => {
    try {
      const d = await app.api.changeDiff(c.change_id);
      ctx.showDiff(`${c.path} · ${c.change_id.slice(0, 10)}`, {
        path: c.path,
        old: d.old_contents ?? "",
        new: d.new_contents ?? "",
        note: `${c.kind} by ${c.function_id} at ${when(c.time_ms)}${d.is_binary ? " (binary: no text diff)" : ""}`,
      });
    } catch (e) {
      ctx.notify(e);
    }
  };

  /** What a revert step would write: the change's after-side (what it left) against its before-side. @param {{change_id: string, action: string, path: string}} s */
  const showStep = async (s) => {
    try {
      const d = await app.api.changeDiff(s.change_id);
      ctx.showDiff(`${s.path} · revert ${s.change_id.slice(0, 10)}`, {
        path: s.path,
        old: d.new_contents ?? "",
        new: s.action === "remove" ? "" : (d.old_contents ?? ""),
        note: `The revert would ${stepText({ ...s, path: rel(s.path) })}${d.is_binary ? " (binary: no text diff)" : ""}: left, as the change left it; right, what is written`,
      });
    } catch (e) {
      ctx.notify(e);
    }
  };

  const pending = store.pending;
  const outcome = store.outcome;
  return (
    <section className="ide-history" aria-label="History">
      <div className="ide-history-bar">
        <span className="ide-muted">
          Changes made through ide {all ? "in every root" : "in this root"}, newest turn first
        </span>
        <label className="ide-follow" title="Show the changes of every root this worker serves, not only the browsed one">
          <input
            type="checkbox"
            data-testid="history-all"
            checked={all}
            onChange={(e) => {
              setAll(e.target.checked);
              storage.set("history-all", String(e.target.checked));
            }}
          />
          All roots
        </label>
        <button className="ide-button small" onClick={() => void store.refresh()}>
          Refresh
        </button>
      </div>
      <ErrorLine error={store.error} />
      <div className="ide-history-body">
        <div className="ide-history-list" data-testid="timeline">
          {store.loaded && store.turns.length === 0 && !store.error && <div className="ide-empty">No changes recorded yet.</div>}
          {store.turns.map((t) => (
            <div key={t.turn_id} className="ide-turn" data-turn={t.turn_id}>
              <div className="ide-turn-head">
                <span className="ide-code" title={t.turn_id}>
                  {t.turn_id.length > 28 ? `${t.turn_id.slice(0, 28)}…` : t.turn_id}
                </span>
                <span className="ide-muted">
                  {when(t.ended_ms)} · {t.changes.length} change{t.changes.length === 1 ? "" : "s"}
                  {t.changes_truncated ? " (more not listed)" : ""}
                  {t.session_id ? ` · session ${t.session_id}` : ""}
                </span>
                <button className="ide-button small" disabled={store.busy} onClick={() => void store.preview({ turn_id: t.turn_id })}>
                  Revert turn…
                </button>
              </div>
              <ul className="ide-turn-changes">
                {t.changes.map((c) => (
                  <li key={c.change_id} data-change={c.change_id} data-path={c.path}>
                    <span className={`ide-change-kind ${c.kind}`}>{c.kind}</span>
                    <button className="ide-link" disabled={!c.diff_available} title={c.diff_available ? "Show the diff" : "The bodies are no longer retained"} onClick={() => void openDiff(c)}>
                      {rel(c.path)}
                      {c.from_path ? ` ← ${rel(c.from_path)}` : ""}
                    </button>
                    <span className="ide-muted ide-change-fn">{c.function_id}</span>
                    <button className="ide-button small" disabled={store.busy} onClick={() => void store.preview({ change_id: c.change_id })}>
                      Revert…
                    </button>
                  </li>
                ))}
              </ul>
            </div>
          ))}
          {store.nextCursor && (
            <button className="ide-button small ide-history-more" onClick={() => void store.more()}>
              Load older turns
            </button>
          )}
        </div>
        {(pending || outcome) && (
          <div className="ide-revert" data-testid="revert">
            {pending && <Preview store={store} pending={pending} rel={rel} showStep={showStep} />}
            {outcome && <Outcome outcome={outcome} rel={rel} onClose={() => store.cancel()} />}
          </div>
        )}
      </div>
    </section>
  );
}

/** @param {{target: import("../models/turns.js").RevertTarget}} props */
function TargetName({ target }) {
  return "turn_id" in target ? (
    <>
      turn <span className="ide-code">{target.turn_id}</span>
    </>
  ) : (
    <>
      change <span className="ide-code">{target.change_id}</span>
    </>
  );
}

/** @param {{conflicts: import("../models/turns.js").Conflict[], rel: (p: string) => string}} props */
function Conflicts({ conflicts, rel }) {
  return (
    <ul className="ide-revert-conflicts" data-testid="revert-conflicts">
      {conflicts.map((c) => (
        <li key={c.path} data-path={c.path}>
          <span className="ide-code">{rel(c.path)}</span> — {c.reason}. Now <span className="ide-code">{shortRev(c.current_revision)}</span>, the change left{" "}
          <span className="ide-code">{shortRev(c.expected_revision)}</span>.
        </li>
      ))}
    </ul>
  );
}

/** @param {{store: TurnsStore, pending: NonNullable<TurnsStore["pending"]>, rel: (p: string) => string, showStep: (s: {change_id: string, action: string, path: string}) => Promise<void>}} props */
function Preview({ store, pending, rel, showStep }) {
  const { result, target } = pending;
  const conflicted = result.conflicts.length > 0;
  return (
    <div className={`ide-revert-box${conflicted ? " conflict" : ""}`} data-state={conflicted ? "conflict" : "ready"}>
      <div className="ide-revert-title">
        Dry run: reverting <TargetName target={target} /> would
      </div>
      <ol className="ide-revert-steps" data-testid="revert-steps">
        {result.steps.map((s) => (
          <li key={`${s.change_id}:${s.path}`} data-path={s.path}>
            {stepText({ ...s, path: rel(s.path) })}{" "}
            <button className="ide-link" title="What the file holds now (as the change left it) against what the revert writes" onClick={() => void showStep(s)}>
              show
            </button>
          </li>
        ))}
      </ol>
      {conflicted ? (
        <div className="ide-banner error" role="alert">
          <div>
            <strong>Conflict: nothing will be written.</strong> {result.conflicts.length === 1 ? "This file" : "These files"} no longer hold what the change left:
            <Conflicts conflicts={result.conflicts} rel={rel} />
          </div>
        </div>
      ) : (
        <div className="ide-muted">No conflicts: every file still holds what the change left. The revert is journaled as a new turn, so it can be reverted too.</div>
      )}
      <div className="ide-banner-actions">
        <button className="ide-button small primary" disabled={conflicted || store.busy} onClick={() => void store.confirm()}>
          {store.busy ? "Reverting…" : "Confirm revert"}
        </button>
        <button className="ide-button small" onClick={() => store.cancel()}>
          {conflicted ? "Close" : "Cancel"}
        </button>
        {conflicted && (
          <button className="ide-button small" onClick={() => void store.preview(target)}>
            Check again
          </button>
        )}
      </div>
    </div>
  );
}

/** @param {{outcome: NonNullable<TurnsStore["outcome"]>, rel: (p: string) => string, onClose: () => void}} props */
function Outcome({ outcome, rel, onClose }) {
  const r = outcome.result;
  const state = outcome.error ? "error" : r?.reverted ? "reverted" : "conflict";
  return (
    <div className={`ide-revert-box${state === "reverted" ? "" : " conflict"}`} data-state={state} role={state === "reverted" ? "status" : "alert"}>
      {outcome.error && <ErrorLine error={outcome.error} />}
      {r?.reverted && (
        <div>
          Reverted <TargetName target={outcome.target} />: {r.steps.length} step{r.steps.length === 1 ? "" : "s"} applied, journaled as turn{" "}
          <span className="ide-code">{r.revert_turn_id}</span>.
        </div>
      )}
      {r && !r.reverted && (
        <div>
          <strong>Conflict: nothing was written.</strong> The files moved since the dry run:
          <Conflicts conflicts={r.conflicts} rel={rel} />
        </div>
      )}
      <div className="ide-banner-actions">
        <button className="ide-button small" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
