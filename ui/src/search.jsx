// The search panel over coder::search: literal or regex, case, globs,
// context lines, the gitignore toggle; hits grouped by file; truncation and
// its reason shown, never hidden.

import { useState } from "react";
import { ErrorLine } from "./ui.jsx";
import { join, relative } from "./models/paths.js";

/** @param {string} s */
function globs(s) {
  return s
    .split(",")
    .map((g) => g.trim())
    .filter(Boolean);
}

/** @param {{ctx: any}} props */
export function SearchPanel({ ctx }) {
  const [query, setQuery] = useState("");
  const [regex, setRegex] = useState(false);
  const [ignoreCase, setIgnoreCase] = useState(true);
  const [gitignore, setGitignore] = useState(true);
  const [include, setInclude] = useState("");
  const [exclude, setExclude] = useState("");
  const [context, setContext] = useState(1);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null));
  const [result, setResult] = useState(/** @type {any} */ (null));

  const run = async () => {
    if (!query) return;
    setBusy(true);
    setError(null);
    try {
      const out = await ctx.api.search({
        path: ctx.root,
        query,
        regex,
        ignore_case: ignoreCase,
        respect_gitignore: gitignore,
        include_globs: globs(include),
        exclude_globs: globs(exclude),
        context_lines_before: context,
        context_lines_after: context,
        search_content: true,
        search_paths: false,
        max_matches: 500,
      });
      setResult(out);
    } catch (e) {
      setError(e);
      setResult(null);
    } finally {
      setBusy(false);
    }
  };

  /** @type {Map<string, any[]>} */
  const groups = new Map();
  for (const m of result?.content_matches ?? []) {
    const abs = m.path.startsWith("/") ? m.path : join(ctx.root, m.path);
    if (!groups.has(abs)) groups.set(abs, []);
    groups.get(abs)?.push(m);
  }

  return (
    <div className="ide-search" data-testid="search-panel">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          run();
        }}
      >
        <input className="ide-input" aria-label="Search text" placeholder="Search" value={query} onChange={(e) => setQuery(e.target.value)} />
        <div className="ide-search-options">
          <label>
            <input type="checkbox" checked={regex} onChange={(e) => setRegex(e.target.checked)} /> Regex
          </label>
          <label>
            <input type="checkbox" checked={ignoreCase} onChange={(e) => setIgnoreCase(e.target.checked)} /> Ignore case
          </label>
          <label>
            <input type="checkbox" aria-label="Respect .gitignore" checked={gitignore} onChange={(e) => setGitignore(e.target.checked)} /> .gitignore
          </label>
          <label>
            Context{" "}
            <input
              className="ide-input tiny"
              type="number"
              min={0}
              max={10}
              aria-label="Context lines"
              value={context}
              onChange={(e) => setContext(Math.max(0, Math.min(10, Number(e.target.value) || 0)))}
            />
          </label>
        </div>
        <input className="ide-input" aria-label="Include globs" placeholder="include globs, e.g. src/**, *.rs" value={include} onChange={(e) => setInclude(e.target.value)} />
        <input className="ide-input" aria-label="Exclude globs" placeholder="exclude globs" value={exclude} onChange={(e) => setExclude(e.target.value)} />
        <button className="ide-button primary" type="submit" disabled={busy}>
          {busy ? "Searching…" : "Search"}
        </button>
      </form>
      <ErrorLine error={error} />
      {result && (
        <div className="ide-search-summary" data-testid="search-summary">
          {result.content_matches.length} matches in {groups.size} files
          {typeof result.files_scanned === "number" ? `, ${result.files_scanned} files scanned` : ""}
          {result.truncated && (
            <span className="ide-warn" data-testid="search-truncated">
              {" "}
              — truncated ({result.stop_reason === "budget" ? "response size budget reached" : result.stop_reason === "max_matches" ? "match limit reached" : result.stop_reason ?? "limit reached"}); refine the query or add globs
            </span>
          )}
        </div>
      )}
      <div className="ide-search-results">
        {[...groups.entries()].map(([abs, hits]) => (
          <div key={abs} className="ide-search-file">
            <div className="ide-search-path" title={abs}>
              {relative(ctx.root, abs) ?? abs}
            </div>
            {hits.map((/** @type {any} */ h, i) => (
              <button key={i} className="ide-search-hit" data-path={abs} data-line={h.line} onClick={() => ctx.openFile(abs, { line: h.line })}>
                {(h.before ?? []).map((/** @type {string} */ l, j) => (
                  <div key={`b${j}`} className="ide-ctx">
                    {l}
                  </div>
                ))}
                <div>
                  <span className="ide-line-no">{h.line}</span> {h.text}
                </div>
                {(h.after ?? []).map((/** @type {string} */ l, j) => (
                  <div key={`a${j}`} className="ide-ctx">
                    {l}
                  </div>
                ))}
              </button>
            ))}
          </div>
        ))}
      </div>
    </div>
  );
}
