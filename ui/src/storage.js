// Per-browser memory of the page (localStorage), namespaced under "ide:".
// A storage that throws (privacy mode, quota) degrades to no memory.

const PREFIX = "ide:";

export const storage = {
  /** @param {string} key @returns {string | null} */
  get(key) {
    try {
      return globalThis.localStorage?.getItem(PREFIX + key) ?? null;
    } catch {
      return null;
    }
  },
  /** @param {string} key @param {string} value */
  set(key, value) {
    try {
      globalThis.localStorage?.setItem(PREFIX + key, value);
    } catch {
      // no memory this time; the page still works
    }
  },
  /** @param {string} key @returns {any} */
  getJson(key) {
    const raw = this.get(key);
    if (!raw) return null;
    try {
      return JSON.parse(raw);
    } catch {
      return null;
    }
  },
  /** @param {string} key @param {any} value */
  setJson(key, value) {
    this.set(key, JSON.stringify(value));
  },
};
