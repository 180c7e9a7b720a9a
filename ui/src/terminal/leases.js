// What a browser keeps of its terminals: one lease per pane (the session
// and its credentials, the last sequence applied), and the font size, a
// per-browser preference every pane reads.

import { storage } from "../storage.js";

const LEASES_KEY = "term:leases";
const FONT_KEY = "term:font-size";
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
