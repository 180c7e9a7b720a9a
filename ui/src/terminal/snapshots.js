// What a tab keeps of its terminals' screens across a reload: per session,
// the screen and scrollback as xterm serialized them after applying every
// frame up to `sequence`, and nothing of a later frame. A reloaded pane
// writes it into its fresh xterm and attaches after that sequence, so the
// worker sends only what the screen has not seen, exactly once, in order.
//
// It lives in sessionStorage: a reload keeps it, another tab (which shows
// nothing yet) replays the ring instead. A snapshot that does not fit is
// taken again with less scrollback; one that still does not fit is dropped,
// and the pane falls back to the replay.

const PREFIX = "ide:term:screen:";
/** The most a snapshot may take (UTF-16 code units; a tab's sessionStorage holds about 5 M). */
export const SNAPSHOT_MAX_CHARS = 1_500_000;

/**
 * @typedef {{sequence: number, cols: number, rows: number, data: string}} Snapshot
 */

/** @returns {Storage | null} */
function store() {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    return null;
  }
}

/** @param {any} s @returns {s is Snapshot} */
function isSnapshot(s) {
  return (
    !!s &&
    Number.isSafeInteger(s.sequence) &&
    s.sequence > 0 &&
    Number.isSafeInteger(s.cols) &&
    Number.isSafeInteger(s.rows) &&
    typeof s.data === "string"
  );
}

/** The snapshot kept for `sessionId`, if any. @param {string} sessionId @returns {Snapshot | null} */
export function loadSnapshot(sessionId) {
  const raw = store()?.getItem(PREFIX + sessionId);
  if (!raw) return null;
  try {
    const s = JSON.parse(raw);
    return isSnapshot(s) ? s : null;
  } catch {
    return null;
  }
}

/**
 * Keep `take(scrollback)`'s screen for `sessionId`, as of `sequence`: with
 * the whole scrollback when it fits, else with less, else not at all (and
 * the older snapshot goes too: the replay is the fallback). Returns whether
 * one was kept.
 * @param {string} sessionId @param {number} sequence @param {{cols: number, rows: number}} size
 * @param {(scrollback: number) => string} take @param {number} scrollback
 */
export function saveSnapshot(sessionId, sequence, size, take, scrollback) {
  const s = store();
  if (!s || !Number.isSafeInteger(sequence) || sequence <= 0) return false;
  for (let lines = scrollback; ; lines = Math.floor(lines / 4)) {
    const data = take(lines);
    if (data.length <= SNAPSHOT_MAX_CHARS) {
      try {
        s.setItem(PREFIX + sessionId, JSON.stringify({ sequence, cols: size.cols, rows: size.rows, data }));
        return true;
      } catch {
        // over the tab's quota: try smaller
      }
    }
    if (lines === 0) break;
  }
  dropSnapshot(sessionId);
  return false;
}

/** @param {string} sessionId */
export function dropSnapshot(sessionId) {
  try {
    store()?.removeItem(PREFIX + sessionId);
  } catch {
    // nothing kept
  }
}

/** Drop every snapshot whose session is not in `keep` (closed panes, lost leases). @param {Set<string>} keep */
export function pruneSnapshots(keep) {
  const s = store();
  if (!s) return;
  try {
    const gone = [];
    for (let i = 0; i < s.length; i++) {
      const key = s.key(i);
      if (key?.startsWith(PREFIX) && !keep.has(key.slice(PREFIX.length))) gone.push(key);
    }
    for (const key of gone) s.removeItem(key);
  } catch {
    // nothing to prune
  }
}
