// Quick-open: fuzzy path search (coder::search with fuzzy_paths) over the
// browsed root, files only; arrows move, Enter opens, Escape closes.

import { useEffect, useRef, useState } from "react";
import { ErrorLine, listKeys } from "./ui.jsx";
import { join, relative } from "./models/paths.js";

const DEBOUNCE_MS = 120;

/** @param {{ctx: any, onClose: () => void, onPick: (path: string) => void}} props */
export function QuickOpen({ ctx, onClose, onPick }) {
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState(/** @type {string[]} */ ([]));
  const [selected, setSelected] = useState(0);
  const [error, setError] = useState(/** @type {any} */ (null));
  const [truncated, setTruncated] = useState(false);
  const input = useRef(/** @type {HTMLInputElement | null} */ (null));
  const seq = useRef(0);

  useEffect(() => input.current?.focus(), []);

  useEffect(() => {
    if (!query.trim()) {
      setHits([]);
      return;
    }
    const mine = ++seq.current;
    const timer = setTimeout(async () => {
      try {
        const out = await ctx.api.search({
          path: ctx.root,
          query: query.trim(),
          fuzzy_paths: true,
          search_paths: true,
          search_content: false,
          max_matches: 50,
        });
        if (mine !== seq.current) return;
        const files = (out.path_matches ?? [])
          .filter((/** @type {any} */ m) => m.kind !== "dir")
          .map((/** @type {any} */ m) => (m.path.startsWith("/") ? m.path : join(ctx.root, m.path)));
        setHits(files);
        setTruncated(Boolean(out.truncated));
        setSelected(0);
        setError(null);
      } catch (e) {
        if (mine === seq.current) setError(e);
      }
    }, DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [query, ctx.api, ctx.root]);

  return (
    <div className="ide-overlay" onMouseDown={onClose}>
      <div className="ide-quickopen" role="dialog" aria-label="Go to file" onMouseDown={(e) => e.stopPropagation()}>
        <input
          ref={input}
          className="ide-input"
          aria-label="File name"
          placeholder="Type a file name"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          onKeyDown={(e) => listKeys(e, hits, selected, setSelected, onPick, onClose)}
        />
        <ErrorLine error={error} />
        <ul className="ide-list" role="listbox">
          {hits.map((p, i) => (
            <li key={p} role="option" aria-selected={i === selected} className={i === selected ? "selected" : ""} data-path={p} onClick={() => onPick(p)}>
              {relative(ctx.root, p) ?? p}
            </li>
          ))}
          {truncated && <li className="ide-muted">More matches: type more of the name.</li>}
        </ul>
      </div>
    </div>
  );
}
