// The explorer's state: folder listings loaded lazily page by page, which
// folders are expanded, and the flat list of visible rows the virtualized
// view renders. Pure apart from the injected `list` function, so node's test
// runner drives it with a fake.

import { dirname, isNoiseDir, join } from "./paths.js";

/**
 * @typedef {{name: string, kind: string, size?: number, non_accessible?: boolean}} Entry
 * @typedef {{entries: Entry[], total: number, pages: number, hasMore: boolean,
 *            loading: boolean, error: null | {code: string, message: string}}} Listing
 * @typedef {{type: "entry", path: string, name: string, depth: number, kind: string,
 *            expanded: boolean, protected: boolean, noise: boolean}
 *          | {type: "more" | "loading", path: string, depth: number}
 *          | {type: "error", path: string, depth: number, error: {code: string, message: string}}} Row
 * @typedef {(dir: string, page: number) => Promise<{entries: Entry[], total: number, has_more: boolean}>} ListFn
 */

export class TreeModel {
  /** @param {string} root absolute folder @param {ListFn} list */
  constructor(root, list) {
    this.root = root;
    this.list = list;
    /** @type {Map<string, Listing>} */
    this.listings = new Map();
    /** @type {Set<string>} */
    this.expanded = new Set([root]);
    this.version = 0;
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    /** @type {Row[] | null} */
    this.rowsCache = null;
    /** per-folder generation, so a reload that finished late never overwrites a newer one */
    /** @type {Map<string, number>} */
    this.generation = new Map();
  }

  /** @param {() => void} fn */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  changed() {
    this.version += 1;
    this.rowsCache = null;
    for (const fn of [...this.listeners]) fn();
  }

  /** Load (or reload) a folder: the pages it had, at least the first.
   * @param {string} dir */
  async load(dir) {
    const prev = this.listings.get(dir);
    const pages = Math.max(1, prev?.pages ?? 0);
    const gen = (this.generation.get(dir) ?? 0) + 1;
    this.generation.set(dir, gen);
    this.listings.set(dir, {
      entries: prev?.entries ?? [],
      total: prev?.total ?? 0,
      pages: prev?.pages ?? 0,
      hasMore: prev?.hasMore ?? false,
      loading: true,
      error: null,
    });
    this.changed();
    /** @type {Entry[]} */
    const entries = [];
    let total = 0;
    let hasMore = false;
    let loaded = 0;
    try {
      for (let page = 1; page <= pages; page++) {
        const out = await this.list(dir, page);
        entries.push(...out.entries);
        total = out.total;
        hasMore = out.has_more;
        loaded = page;
        if (!hasMore) break;
      }
      if (this.generation.get(dir) !== gen) return;
      this.listings.set(dir, { entries, total, pages: loaded, hasMore, loading: false, error: null });
    } catch (e) {
      if (this.generation.get(dir) !== gen) return;
      this.listings.set(dir, {
        entries: prev?.entries ?? [],
        total: prev?.total ?? 0,
        pages: prev?.pages ?? 0,
        hasMore: false,
        loading: false,
        error: toError(e),
      });
    }
    this.changed();
  }

  /** Fetch the next page of a folder that has more. @param {string} dir */
  async loadMore(dir) {
    const cur = this.listings.get(dir);
    if (!cur || cur.loading || !cur.hasMore) return;
    const gen = this.generation.get(dir) ?? 0;
    this.listings.set(dir, { ...cur, loading: true });
    this.changed();
    try {
      const out = await this.list(dir, cur.pages + 1);
      if (this.generation.get(dir) !== gen) return;
      this.listings.set(dir, {
        entries: [...cur.entries, ...out.entries],
        total: out.total,
        pages: cur.pages + 1,
        hasMore: out.has_more,
        loading: false,
        error: null,
      });
    } catch (e) {
      if (this.generation.get(dir) !== gen) return;
      this.listings.set(dir, { ...cur, loading: false, error: toError(e) });
    }
    this.changed();
  }

  /** Expand or collapse a folder; expanding loads it once. @param {string} dir */
  async toggle(dir) {
    if (this.expanded.has(dir) && dir !== this.root) {
      this.expanded.delete(dir);
      this.changed();
      return;
    }
    this.expanded.add(dir);
    this.changed();
    if (!this.listings.has(dir)) await this.load(dir);
  }

  /** Restore expanded folders (from storage), loading each. @param {string[]} dirs */
  async restore(dirs) {
    const inside = dirs.filter((d) => d === this.root || d.startsWith(`${this.root}/`));
    for (const d of inside) this.expanded.add(d);
    this.changed();
    await this.load(this.root);
    // parents first, so a child whose parent vanished is dropped quietly
    const sorted = [...this.expanded].filter((d) => d !== this.root).sort((a, b) => a.length - b.length);
    await Promise.all(sorted.map((d) => this.load(d)));
  }

  /** Folders whose listing a change event makes stale.
   * @param {{path: string, kind: string, dir?: boolean}} event @returns {string[]} */
  staleFolders(event) {
    if (event.kind === "rescan") return [...this.listings.keys()];
    if (event.path === ".git") return [];
    const abs = join(this.root, event.path);
    const parent = dirname(abs) || this.root;
    const out = [];
    if (this.listings.has(parent)) out.push(parent);
    if (event.kind === "deleted" && this.listings.has(abs)) {
      for (const key of [...this.listings.keys()]) {
        if (key === abs || key.startsWith(`${abs}/`)) this.listings.delete(key);
      }
      for (const key of [...this.expanded]) {
        if (key === abs || key.startsWith(`${abs}/`)) this.expanded.delete(key);
      }
      this.changed();
    }
    return out;
  }

  /** Reload what an event made stale. @param {{path: string, kind: string, dir?: boolean}} event */
  async apply(event) {
    await Promise.all(this.staleFolders(event).map((d) => this.load(d)));
  }

  /** The visible rows, depth-first, folders in the order the listing gives. @returns {Row[]} */
  rows() {
    if (this.rowsCache) return this.rowsCache;
    /** @type {Row[]} */
    const rows = [];
    /** @param {string} dir @param {number} depth */
    const walk = (dir, depth) => {
      const l = this.listings.get(dir);
      if (!l) {
        rows.push({ type: "loading", path: dir, depth });
        return;
      }
      for (const e of l.entries) {
        const path = join(dir, e.name);
        const isDir = e.kind === "dir";
        const open = isDir && this.expanded.has(path);
        rows.push({
          type: "entry",
          path,
          name: e.name,
          depth,
          kind: e.kind,
          expanded: open,
          protected: Boolean(e.non_accessible),
          noise: isDir && isNoiseDir(e.name),
        });
        if (open) walk(path, depth + 1);
      }
      if (l.error) rows.push({ type: "error", path: dir, depth, error: l.error });
      else if (l.loading && l.entries.length === 0) rows.push({ type: "loading", path: dir, depth });
      else if (l.hasMore) rows.push({ type: "more", path: dir, depth });
    };
    walk(this.root, 0);
    this.rowsCache = rows;
    return rows;
  }

  /** Expanded folders, for storage. */
  expandedList() {
    return [...this.expanded];
  }
}

/** @param {unknown} e @returns {{code: string, message: string}} */
export function toError(e) {
  if (e && typeof e === "object") {
    const o = /** @type {any} */ (e);
    if (typeof o.code === "string" && typeof o.message === "string") return { code: o.code, message: o.message };
    if (typeof o.message === "string") return { code: o.code ? String(o.code) : "error", message: o.message };
  }
  return { code: "error", message: String(e) };
}
