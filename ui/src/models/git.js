// Source control, as a pure model: the argv of every git call the pane
// makes (reads carry --no-optional-locks, so a status never takes the index
// lock from a git the user runs at the same time; paths go after `--` as
// literal top-relative pathspecs) and the parse of
// `git status --porcelain=v2 -z --branch`.

/**
 * @typedef {{path: string, code: string, orig?: string, kind: "ordinary" | "renamed" | "copied" | "unmerged" | "untracked"}} GitEntry
 * @typedef {{
 *   branch: {head: string | null, oid: string | null, upstream: string | null, ahead: number, behind: number, detached: boolean, initial: boolean},
 *   staged: GitEntry[],
 *   unstaged: GitEntry[],
 *   untracked: GitEntry[],
 *   conflicted: GitEntry[],
 * }} GitStatus
 */

const READ = ["--no-optional-locks"];

/** A path from status (relative to the top level) as a pathspec that means exactly it. @param {string} path */
export const pathspec = (path) => `:(top,literal)${path}`;

export const gitArgs = {
  toplevel: () => [...READ, "rev-parse", "--show-toplevel"],
  status: () => [...READ, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"],
  /** @param {string} path */
  stage: (path) => ["add", "--", pathspec(path)],
  /** Unstage; before the first commit there is no HEAD to restore from, so the index entry goes. @param {string} path @param {boolean} initial */
  unstage: (path, initial) => (initial ? ["rm", "--cached", "-q", "--", pathspec(path)] : ["restore", "--staged", "--", pathspec(path)]),
  /** Every change and untracked file of the whole tree. */
  stageAll: () => ["add", "--all"],
  /** Everything staged back out; before the first commit by emptying the index. @param {boolean} initial */
  unstageAll: (initial) => (initial ? ["rm", "--cached", "-r", "-q", "--", ":(top)"] : ["reset", "-q"]),
  /** @param {string} message */
  commit: (message) => ["commit", "-m", message],
  /** The file's bytes in HEAD (`HEAD:path`) or the index (`:path`), paths relative to the top level. @param {"HEAD" | "index"} from @param {string} path */
  show: (from, path) => [...READ, "show", from === "HEAD" ? `HEAD:${path}` : `:${path}`],
};

/** @param {string} xy one side of the XY code */
const changed = (xy) => xy !== "." && xy !== " ";

/** @param {string} out the NUL-separated output @returns {GitStatus} */
export function parseStatus(out) {
  /** @type {GitStatus} */
  const s = {
    branch: { head: null, oid: null, upstream: null, ahead: 0, behind: 0, detached: false, initial: false },
    staged: [],
    unstaged: [],
    untracked: [],
    conflicted: [],
  };
  const fields = out.split("\0");
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i];
    if (!f) continue;
    if (f.startsWith("# ")) {
      const [key, ...rest] = f.slice(2).split(" ");
      const v = rest.join(" ");
      if (key === "branch.oid") {
        s.branch.initial = v === "(initial)";
        s.branch.oid = s.branch.initial ? null : v;
      } else if (key === "branch.head") {
        s.branch.detached = v === "(detached)";
        s.branch.head = s.branch.detached ? null : v;
      } else if (key === "branch.upstream") s.branch.upstream = v;
      else if (key === "branch.ab") {
        const m = /^\+(\d+) -(\d+)$/.exec(v);
        if (m) {
          s.branch.ahead = Number(m[1]);
          s.branch.behind = Number(m[2]);
        }
      }
      continue;
    }
    const type = f[0];
    if (type === "?") {
      s.untracked.push({ path: f.slice(2), code: "?", kind: "untracked" });
    } else if (type === "1" || type === "2") {
      // 1 XY sub mH mI mW hH hI path  |  2 XY sub mH mI mW hH hI Xscore path, then the original path as its own field
      const parts = splitN(f, type === "1" ? 9 : 10);
      const xy = parts[1];
      const path = parts[parts.length - 1];
      /** @type {GitEntry["kind"]} */
      let kind = "ordinary";
      /** @type {string | undefined} */
      let orig;
      if (type === "2") {
        kind = parts[8].startsWith("C") ? "copied" : "renamed";
        orig = fields[++i];
      }
      if (changed(xy[0])) s.staged.push({ path, code: xy[0], kind, ...(orig !== undefined ? { orig } : {}) });
      if (changed(xy[1])) s.unstaged.push({ path, code: xy[1], kind: "ordinary" });
    } else if (type === "u") {
      const parts = splitN(f, 11);
      s.conflicted.push({ path: parts[10], code: parts[1], kind: "unmerged" });
    }
    // "!" (ignored) is not asked for
  }
  return s;
}

/** Split on the first n-1 spaces (the last field is a path and may hold spaces). @param {string} f @param {number} n */
function splitN(f, n) {
  const out = [];
  let rest = f;
  for (let k = 0; k < n - 1; k++) {
    const sp = rest.indexOf(" ");
    if (sp < 0) break;
    out.push(rest.slice(0, sp));
    rest = rest.slice(sp + 1);
  }
  out.push(rest);
  return out;
}

/** What a status letter means, for titles. @param {string} code */
export function codeName(code) {
  return (
    /** @type {Record<string, string>} */ ({
      M: "modified",
      T: "type changed",
      A: "added",
      D: "deleted",
      R: "renamed",
      C: "copied",
      U: "unmerged",
      "?": "untracked",
    })[code] ?? code
  );
}

/** @param {GitStatus} s */
export function isClean(s) {
  return s.staged.length + s.unstaged.length + s.untracked.length + s.conflicted.length === 0;
}

/** The branch line: name (or detached at oid), upstream and ahead/behind. @param {GitStatus["branch"]} b */
export function branchLabel(b) {
  let name = b.detached ? `detached at ${(b.oid ?? "").slice(0, 8)}` : (b.head ?? "?");
  if (b.initial) name += " (no commits yet)";
  if (b.upstream) {
    const ab = [b.ahead ? `↑${b.ahead}` : "", b.behind ? `↓${b.behind}` : ""].filter(Boolean).join(" ");
    name += ` → ${b.upstream}${ab ? ` ${ab}` : ""}`;
  }
  return name;
}
