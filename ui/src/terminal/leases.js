// What a browser keeps of its terminals: one lease per pane (the session
// and its credentials, the last sequence applied), the panel's layout (the
// tabs' order, the active pane and the one split beside it), and the font
// size, a per-browser preference every pane reads.

import { storage } from "../storage.js";

const LEASES_KEY = "term:leases";
const FONT_KEY = "term:font-size";
const LAYOUT_KEY = "term:layout";
export const FONT_MIN = 8;
export const FONT_MAX = 40;
export const FONT_DEFAULT = 14;

/**
 * @typedef {{pane: string, session_id: string, access_key: string, reconnect_token: string, sequence: number, cwd: string}} Lease
 */

/** @param {any} l @returns {l is Lease} */
function isLease(l) {
  return (
    !!l &&
    typeof l.pane === "string" &&
    typeof l.session_id === "string" &&
    typeof l.access_key === "string" &&
    typeof l.reconnect_token === "string" &&
    Number.isSafeInteger(l.sequence) &&
    typeof l.cwd === "string"
  );
}

/** @returns {Lease[]} */
export function loadLeases() {
  const raw = storage.getJson(LEASES_KEY);
  return Array.isArray(raw) ? raw.filter(isLease) : [];
}

/** @param {Lease[]} leases */
export function saveLeases(leases) {
  storage.setJson(LEASES_KEY, leases);
}

/**
 * @typedef {{order: string[], active: string | null, split: string | null}} Layout
 */

/** @returns {Layout | null} */
export function loadLayout() {
  const raw = storage.getJson(LAYOUT_KEY);
  if (!raw || typeof raw !== "object" || !Array.isArray(raw.order)) return null;
  const str = (/** @type {unknown} */ v) => (typeof v === "string" ? v : null);
  return { order: raw.order.filter((/** @type {unknown} */ x) => typeof x === "string"), active: str(raw.active), split: str(raw.split) };
}

/** @param {Layout} layout */
export function saveLayout(layout) {
  storage.setJson(LAYOUT_KEY, layout);
}

/**
 * The panes a reload brings back, laid out as they were: the leases in the
 * stored tab order (a lease the layout does not name goes last, in storage
 * order), the stored active pane (else the first), and the stored split pane
 * when it is back too and is not the active one.
 * @param {Lease[]} leases @param {Layout | null} layout
 * @returns {{leases: Lease[], active: string | null, split: string | null}}
 */
export function arrange(leases, layout) {
  const order = layout?.order ?? [];
  const rank = (/** @type {Lease} */ l) => {
    const i = order.indexOf(l.pane);
    return i < 0 ? order.length : i;
  };
  const sorted = leases.map((l, i) => ({ l, i })).sort((a, b) => rank(a.l) - rank(b.l) || a.i - b.i).map((x) => x.l);
  const has = (/** @type {string | null | undefined} */ id) => !!id && sorted.some((l) => l.pane === id);
  const active = has(layout?.active) ? /** @type {string} */ (layout?.active) : (sorted[0]?.pane ?? null);
  const split = has(layout?.split) && layout?.split !== active ? /** @type {string} */ (layout?.split) : null;
  return { leases: sorted, active, split };
}

/** @param {unknown} n */
export function clampFont(n) {
  const v = Math.round(Number(n));
  if (!Number.isFinite(v)) return FONT_DEFAULT;
  return Math.min(FONT_MAX, Math.max(FONT_MIN, v));
}

export function loadFontSize() {
  const raw = storage.get(FONT_KEY);
  return raw === null ? FONT_DEFAULT : clampFont(raw);
}

/** @param {number} n */
export function saveFontSize(n) {
  storage.set(FONT_KEY, String(clampFont(n)));
}
