// The jobs pane (under the editor): background jobs of this worker from
// shell::list, live from the asset's shell::job-finished feed; a job's
// output from shell::status; kill; and a form that starts a command line as
// a background job — split into argv here, quote-aware, never handed to a
// shell — in the browsed root.

import { useEffect, useState, useSyncExternalStore } from "react";
import { splitArgv, joinArgv } from "../models/argv.js";
import { duration, outcome } from "../models/jobs.js";
import { ErrorLine } from "../ui.jsx";

/** @param {number} ms */
const clock = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "");

/** @param {{ctx: any}} props */
export function JobsPanel({ ctx }) {
  /** @type {import("./feed.js").JobFeed | undefined} */
  const feed = ctx.app.jobs;
  if (!feed) return null;
  return <Jobs feed={feed} root={ctx.root} />;
}

/** @param {{feed: import("./feed.js").JobFeed, root: string}} props */
function Jobs({ feed, root }) {
  const store = feed.store;
  useSyncExternalStore(store.subscribe, store.snapshot);
  const [line, setLine] = useState("");
  const [formError, setFormError] = useState(/** @type {any} */ (null));
  const [starting, setStarting] = useState(false);
  useEffect(() => {
    void store.refresh();
  }, [store]);

  /** @param {import("react").FormEvent} e */
  const run = async (e) => {
    e.preventDefault();
    const split = splitArgv(line);
    if (!split.ok) {
      setFormError({ code: "argv", message: split.error });
      return;
    }
    setFormError(null);
    setStarting(true);
    try {
      await store.start(split.argv, root);
      setLine("");
    } catch (err) {
      setFormError(err);
    }
    setStarting(false);
  };

  const rows = store.rows();
  const detail = store.detail;
  const preview = splitArgv(line);
  return (
    <section className="ide-jobs" aria-label="Jobs">
      <form className="ide-jobs-form" onSubmit={run}>
        <input
          className="ide-input"
          aria-label="Command line"
          placeholder="Command to run in the background, e.g. cargo test -- --nocapture"
          value={line}
          onChange={(e) => {
            setLine(e.target.value);
            setFormError(null);
          }}
        />
        <button className="ide-button small primary" type="submit" disabled={starting || !line.trim()}>
          {starting ? "Starting…" : "Run"}
        </button>
        <span className="ide-muted ide-jobs-argv" data-testid="argv-preview" title="The argv the worker will be given (no shell)">
          {line.trim() && preview.ok ? `argv: ${JSON.stringify(preview.argv)}` : ""}
        </span>
      </form>
      <ErrorLine error={formError} />
      {store.note && (
        <div className="ide-banner warn" role="status" data-testid="job-note">
          <div className="ide-banner-text">{store.note.text}</div>
        </div>
      )}
      {feed.bindError && <ErrorLine error={feed.bindError} />}
      <ErrorLine error={store.error} />
      <div className="ide-jobs-body">
        <div className="ide-jobs-list" role="list" aria-label="Background jobs">
          {rows.length === 0 && <div className="ide-empty">No background jobs in this worker.</div>}
          {rows.map((j) => (
            <div
              key={j.id}
              role="listitem"
              className={`ide-job${store.selected === j.id ? " selected" : ""}`}
              data-job={j.id}
              data-status={j.status}
              onClick={() => void store.open(j.id)}
            >
              <span className={`ide-job-status ${j.status}`}>{j.status}</span>
              <span className="ide-job-cmd" title={j.id}>
                <span className="ide-job-cmd-text">{j.argv ? joinArgv(j.argv) : j.id}</span>
                {(j.stdout_truncated || j.stderr_truncated) && (
                  <span className="ide-badge warn" title="The worker kept only part of this job's output">
                    truncated
                  </span>
                )}
              </span>
              <span className="ide-muted ide-job-when">
                {clock(j.started_at_ms)}
                {j.finished_at_ms ? ` · ${duration(Math.max(0, j.finished_at_ms - j.started_at_ms))}` : ""}
              </span>
              {j.status !== "running" ? (
                <span className={`ide-job-outcome${j.status === "finished" && j.exit_code === 0 ? "" : " bad"}`}>{outcome(j)}</span>
              ) : (
                <button
                  className="ide-button small"
                  aria-label={`Kill ${j.id}`}
                  onClick={(e) => {
                    e.stopPropagation();
                    store
                      .kill(j.id)
                      .then((out) => {
                        // not killed: it had ended already, or a sandbox job runs on (the worker says why)
                        if (out && out.killed === false) setFormError({ code: out.status ?? "not killed", message: out.reason ?? `${j.id} was not killed` });
                      })
                      .catch((err) => setFormError(err));
                  }}
                >
                  Kill
                </button>
              )}
            </div>
          ))}
        </div>
        {store.selected && (
          <div className="ide-job-detail" data-testid="job-detail" data-job={store.selected} data-status={detail?.status ?? ""}>
            <div className="ide-job-detail-head">
              <span className="ide-code">{detail?.argv ? joinArgv(detail.argv) : store.selected}</span>
              {detail && (
                <span className={`ide-job-status ${detail.status}`} data-testid="job-outcome">
                  {outcome(detail)}
                </span>
              )}
              {detail?.status === "running" && (
                <button className="ide-button small" title="Read the output so far (shell::status)" onClick={() => void store.open(store.selected ?? "", false)}>
                  Refresh output
                </button>
              )}
              <button className="ide-close" aria-label="Close job output" onClick={() => store.close()}>
                ×
              </button>
            </div>
            <ErrorLine error={store.detailError} />
            {detail && (
              <div className="ide-job-streams">
                <Stream name="stdout" text={detail.stdout} truncated={detail.stdout_truncated} />
                <Stream name="stderr" text={detail.stderr} truncated={detail.stderr_truncated} />
              </div>
            )}
            {!detail && !store.detailError && <div className="ide-muted">Reading…</div>}
          </div>
        )}
      </div>
    </section>
  );
}

/** @param {{name: string, text: string, truncated?: boolean}} props */
function Stream({ name, text, truncated }) {
  return (
    <div className="ide-job-stream" data-stream={name}>
      <div className="ide-job-stream-head">
        {name}
        {truncated && <span className="ide-badge warn">truncated: the worker kept only part of it</span>}
        {!text && <span className="ide-muted"> (empty)</span>}
      </div>
      {text && <pre className="ide-job-output">{text}</pre>}
    </div>
  );
}
