// The source-control pane (a side pane, shown only when the browsed root is
// inside a git repository): branch, staged / unstaged / untracked files,
// a file's diff against HEAD or the index in the editor's merge view,
// stage, unstage and commit — all git through shell::exec with argv.
// Refreshed by the `.git` signal of shell::changed and after each action;
// git's own error words are shown, never swallowed.

import { useEffect, useState, useSyncExternalStore } from "react";
import { branchLabel, codeName, isClean } from "../models/git.js";
import { ErrorLine } from "../ui.jsx";

/** @param {{ctx: any}} props */
export function ScmPanel({ ctx }) {
  /** @type {import("./git.js").GitRepo} */
  const repo = ctx.git;
  useSyncExternalStore(repo.subscribe, repo.snapshot);
  useEffect(() => repo.show(), [repo]);
  const [message, setMessage] = useState("");
  const s = repo.status;

  /** @param {"staged" | "unstaged" | "untracked"} where @param {import("../models/git.js").GitEntry} entry */
  const diff = async (where, entry) => {
    try {
      const d = await repo.sides(where, entry);
      ctx.showDiff(`${repo.abs(entry.path)} · ${d.label}`, { path: repo.abs(entry.path), old: d.old, new: d.new, note: where === "untracked" ? "untracked: no baseline in git" : `${codeName(entry.code)}, ${d.label}` });
    } catch (e) {
      ctx.notify(e);
    }
  };

  /** @param {{title: string, where: "staged" | "unstaged" | "untracked" | "conflicted", entries: import("../models/git.js").GitEntry[], all?: {label: string, run: () => Promise<boolean>}}} p */
  const section = ({ title, where, entries, all }) =>
    entries.length > 0 && (
      <div className="ide-scm-section" data-section={where}>
        <div className="ide-pane-head">
          <span>
            {title} ({entries.length})
          </span>
          {all && (
            <button className="ide-button small" disabled={repo.busy} onClick={() => void all.run()}>
              {all.label}
            </button>
          )}
        </div>
        <ul className="ide-scm-files">
          {entries.map((e) => (
            <li key={`${where}:${e.path}`} data-path={e.path} data-code={e.code}>
              <button className="ide-link ide-scm-path" title={`${e.path}: ${codeName(e.code)}`} onClick={() => where !== "conflicted" && void diff(where, e)}>
                {e.path}
                {e.orig ? <span className="ide-muted"> ← {e.orig}</span> : null}
              </button>
              <span className={`ide-scm-code c-${e.code[0] === "?" ? "u" : e.code[0]}`}>{e.code}</span>
              {where === "staged" ? (
                <button className="ide-button small" aria-label={`Unstage ${e.path}`} title="Unstage" disabled={repo.busy} onClick={() => void repo.unstage(e.path)}>
                  −
                </button>
              ) : (
                <button className="ide-button small" aria-label={`Stage ${e.path}`} title="Stage" disabled={repo.busy} onClick={() => void repo.stage(e.path)}>
                  +
                </button>
              )}
            </li>
          ))}
        </ul>
      </div>
    );

  return (
    <div className="ide-scm" data-testid="scm">
      <div className="ide-pane-head">
        <span data-testid="scm-branch" title={repo.toplevel ?? ""}>
          {s ? branchLabel(s.branch) : "…"}
        </span>
        <button className="ide-button small" title="Refresh" onClick={() => void repo.refresh()}>
          ⟳
        </button>
      </div>
      <form
        className="ide-scm-commit"
        onSubmit={async (e) => {
          e.preventDefault();
          if (await repo.commit(message)) setMessage("");
        }}
      >
        <textarea
          className="ide-input"
          aria-label="Commit message"
          placeholder="Commit message"
          rows={3}
          value={message}
          onChange={(e) => setMessage(e.target.value)}
          onKeyDown={(e) => {
            if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <button className="ide-button small primary" type="submit" disabled={repo.busy || !s}>
          Commit{s && s.staged.length ? ` ${s.staged.length} file${s.staged.length === 1 ? "" : "s"}` : ""}
        </button>
      </form>
      <ErrorLine error={repo.error ?? repo.statusError} />
      {repo.notice && !repo.error && !repo.statusError && (
        <div className="ide-muted ide-scm-notice" role="status" data-testid="scm-notice">
          {repo.notice}
        </div>
      )}
      <div className="ide-scm-lists">
        {s && isClean(s) && (
          <div className="ide-empty" data-testid="scm-clean">
            Nothing to commit, working tree clean.
          </div>
        )}
        {s && section({ title: "Conflicts", where: "conflicted", entries: s.conflicted })}
        {s && section({ title: "Staged", where: "staged", entries: s.staged, all: { label: "Unstage all", run: () => repo.unstageAll() } })}
        {s && section({ title: "Changes", where: "unstaged", entries: s.unstaged, all: { label: "Stage all", run: () => repo.stageAll() } })}
        {s && section({ title: "Untracked", where: "untracked", entries: s.untracked, all: s.unstaged.length ? undefined : { label: "Stage all", run: () => repo.stageAll() } })}
      </div>
    </div>
  );
}
