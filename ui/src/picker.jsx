// The workspace picker: the roots the policy offers, their folders one level
// at a time (shell::workspace::list), a typed path checked by
// shell::workspace::validate. The pick is remembered per browser.

import { useEffect, useState } from "react";
import { ErrorLine } from "./ui.jsx";

/**
 * @param {{app: import("./app.js").App, host: string | null, current: string | null, initialError?: any,
 *   onHost: (namespace: string | null) => void, onPick: (root: string) => void, onCancel: null | (() => void)}} props
 */
export function Picker({ app, host, current, initialError = null, onHost, onPick, onCancel }) {
  const [roots, setRoots] = useState(/** @type {string[] | null} */ (null));
  const [hosts, setHosts] = useState(/** @type {import("./api.js").HostId[]} */ ([]));
  const [browsing, setBrowsing] = useState(/** @type {string | null} */ (null));
  const [entries, setEntries] = useState(/** @type {any[]} */ ([]));
  const [typed, setTyped] = useState(current ?? "");
  const [error, setError] = useState(/** @type {any} */ (initialError));

  // every ide the engine routes to, by namespace
  useEffect(() => {
    let live = true;
    app.api.hosts().then((h) => live && setHosts(h));
    return () => {
      live = false;
    };
  }, [app]);

  useEffect(() => {
    let live = true;
    setRoots(null);
    setBrowsing(null);
    app.api.roots().then(
      (r) => live && setRoots(r.roots ?? []),
      (e) => {
        if (!live) return;
        setRoots([]);
        setError(e);
      },
    );
    return () => {
      live = false;
    };
  }, [app, host]);

  useEffect(() => {
    if (!browsing) return;
    let live = true;
    app.api.listDirs(browsing).then(
      (r) => live && setEntries((r.entries ?? []).filter((/** @type {any} */ e) => e.kind === "dir" || e.kind === "directory")),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [app, browsing]);

  /** @param {string} path */
  const choose = async (path) => {
    setError(null);
    try {
      const r = await app.api.validate(path);
      onPick(r.path);
    } catch (e) {
      setError(e);
    }
  };

  return (
    <div className="ide-picker" data-testid="picker">
      <h2>Open a workspace</h2>
      {(hosts.length > 1 || hosts.some((h) => h.namespace !== (host ?? "default"))) && (
        <label className="ide-row ide-host">
          <span>Host</span>
          <select
            className="ide-input"
            aria-label="Host"
            value={host ?? "default"}
            onChange={(e) => {
              setError(null);
              onHost(e.target.value === "default" ? null : e.target.value);
            }}
          >
            {!hosts.some((h) => h.namespace === (host ?? "default")) && <option value={host ?? "default"}>{host ?? "default"} (not listed)</option>}
            {hosts.map((h) => (
              <option key={h.namespace} value={h.namespace}>
                {h.worker_name} — {h.namespace}
              </option>
            ))}
          </select>
        </label>
      )}
      <form
        className="ide-row"
        onSubmit={(e) => {
          e.preventDefault();
          choose(typed);
        }}
      >
        <input
          className="ide-input"
          aria-label="Workspace path"
          placeholder="/path/to/project"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
        />
        <button className="ide-button primary" type="submit">
          Open
        </button>
        {onCancel && (
          <button className="ide-button" type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </form>
      <ErrorLine error={error} />
      <div className="ide-picker-lists">
        <ul className="ide-list" aria-label="Roots">
          {roots === null && !error && <li className="ide-muted">Loading roots…</li>}
          {roots?.length === 0 && <li className="ide-muted">The policy offers no root.</li>}
          {roots?.map((r) => (
            <li key={r}>
              <button className="ide-link" data-root={r} onClick={() => setBrowsing(r)}>
                {r}
              </button>
              <button className="ide-button small" onClick={() => choose(r)}>
                Open
              </button>
            </li>
          ))}
        </ul>
        {browsing && (
          <ul className="ide-list" aria-label="Folders">
            <li className="ide-muted">{browsing}</li>
            {entries.map((e) => (
              <li key={e.path}>
                <button className="ide-link" onClick={() => setBrowsing(e.path)}>
                  {e.name}/
                </button>
                <button className="ide-button small" data-open-folder={e.path} onClick={() => choose(e.path)}>
                  Open
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
