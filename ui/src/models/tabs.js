// Editor tabs: what is open, the revision each buffer was read at, and what
// happens when the disk moves under a buffer or a save is stale. Pure; the
// page feeds it results of coder::read-file / create-file and renders it.

/**
 * @typedef {{code: string, message: string}} WireError
 * @typedef {"text" | "readonly" | "hex" | "image" | "diff"} TabKind
 * @typedef {{
 *   path: string,
 *   kind: TabKind,
 *   state: "loading" | "ready" | "error",
 *   revision: string | null,
 *   base: string,
 *   buffer: string,
 *   dirty: boolean,
 *   replaced: number,
 *   changedOnDisk: null | {content: string, revision: string | null, deleted?: boolean, mine?: string},
 *   conflict: null | {error: WireError},
 *   compare: null | {mine: string, disk: string, diskRevision: string | null},
 *   saving: boolean,
 *   error: WireError | null,
 *   note: string | null,
 *   extra: any,
 *   unseen: number,
 * }} Tab
 * `unseen`: changes a writer made to this (diff) tab since the user last looked at it.
 */

export class TabsModel {
  constructor() {
    /** @type {Tab[]} */
    this.tabs = [];
    /** @type {string | null} */
    this.active = null;
    this.version = 0;
    /** @type {Set<() => void>} */
    this.listeners = new Set();
  }

  /** @param {() => void} fn */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  changed() {
    this.version += 1;
    for (const fn of [...this.listeners]) fn();
  }

  /** @param {string} path */
  get(path) {
    return this.tabs.find((t) => t.path === path) ?? null;
  }

  /** Open (or focus) a tab; returns true when it was not open yet.
   * @param {string} path @param {TabKind} [kind] */
  open(path, kind = "text") {
    const existing = this.get(path);
    this.active = path;
    if (existing) {
      existing.unseen = 0;
      this.changed();
      return false;
    }
    this.tabs.push({
      path,
      kind,
      state: "loading",
      revision: null,
      base: "",
      buffer: "",
      dirty: false,
      replaced: 0,
      changedOnDisk: null,
      conflict: null,
      compare: null,
      saving: false,
      error: null,
      note: null,
      extra: null,
      unseen: 0,
    });
    this.changed();
    return true;
  }

  /**
   * A writer's change, as a diff tab opened or updated in the background:
   * the active tab stays (unless `follow`), the tab counts what the user has
   * not seen yet. @param {string} id
   * @param {{note: string, extra: any}} r @param {{follow: boolean}} o
   */
  writerChange(id, r, o) {
    const had = this.active;
    const before = this.get(id)?.unseen ?? 0;
    this.open(id, "diff");
    // nothing open: the diff takes no view away
    if (!o.follow && had && had !== id) this.active = had;
    this.loaded(id, { kind: "diff", content: "", revision: null, note: r.note, extra: r.extra });
    const t = /** @type {Tab} */ (this.get(id));
    t.unseen = this.active === id ? 0 : before + 1;
    this.changed();
  }

  /** Writer changes not looked at yet, over all tabs. */
  unseen() {
    return this.tabs.reduce((n, t) => n + t.unseen, 0);
  }

  /** The tab with unseen changes the user should look at next (the last one changed). */
  nextUnseen() {
    let best = /** @type {Tab | null} */ (null);
    for (const t of this.tabs) if (t.unseen > 0 && (!best || (t.extra?.time_ms ?? 0) >= (best.extra?.time_ms ?? 0))) best = t;
    return best?.path ?? null;
  }

  /** @param {string} path */
  close(path) {
    const i = this.tabs.findIndex((t) => t.path === path);
    if (i < 0) return;
    this.tabs.splice(i, 1);
    if (this.active === path) this.active = this.tabs[Math.min(i, this.tabs.length - 1)]?.path ?? null;
    this.changed();
  }

  /** @param {string} path */
  activate(path) {
    const t = this.get(path);
    if (t) {
      this.active = path;
      t.unseen = 0;
      this.changed();
    }
  }

  /** @param {string} path @param {(t: Tab) => void} fn */
  update(path, fn) {
    const t = this.get(path);
    if (!t) return null;
    fn(t);
    this.changed();
    return t;
  }

  /** A read finished. @param {string} path
   * @param {{content: string, revision: string | null, kind?: TabKind, note?: string | null, extra?: any}} r */
  loaded(path, r) {
    return this.update(path, (t) => {
      t.state = "ready";
      t.kind = r.kind ?? t.kind;
      t.base = r.content;
      t.buffer = r.content;
      t.revision = r.revision;
      t.dirty = false;
      t.replaced += 1;
      t.changedOnDisk = null;
      t.conflict = null;
      t.compare = null;
      t.error = null;
      t.note = r.note ?? null;
      if ("extra" in r) t.extra = r.extra ?? null;
    });
  }

  /** A read failed. @param {string} path @param {WireError} error */
  failed(path, error) {
    return this.update(path, (t) => {
      t.state = "error";
      t.error = error;
    });
  }

  /** The user typed. @param {string} path @param {string} content */
  edit(path, content) {
    const t = this.get(path);
    if (!t || t.kind !== "text") return;
    const dirty = content !== t.base;
    const was = t.dirty;
    t.buffer = content;
    t.dirty = dirty;
    if (was !== dirty) this.changed();
  }

  /**
   * The file changed on disk (a change event, then a fresh read). A clean
   * buffer follows the disk; a dirty one keeps the user's edits and says so.
   * @param {string} path @param {{content: string, revision: string | null} | {deleted: true}} disk
   * @returns {"followed" | "kept" | "same" | "none"}
   */
  diskChanged(path, disk) {
    const t = this.get(path);
    if (!t || t.state !== "ready") return "none";
    if ("deleted" in disk) {
      t.changedOnDisk = { content: "", revision: null, deleted: true };
      this.changed();
      return "kept";
    }
    if (disk.revision && disk.revision === t.revision) {
      if (t.changedOnDisk) {
        t.changedOnDisk = null;
        this.changed();
      }
      return "same";
    }
    if (!t.dirty || t.kind !== "text") {
      t.base = disk.content;
      t.buffer = disk.content;
      t.revision = disk.revision;
      t.replaced += 1;
      t.changedOnDisk = null;
      this.changed();
      return "followed";
    }
    if (disk.content === t.buffer) {
      // the disk now holds exactly what the user typed
      t.base = disk.content;
      t.revision = disk.revision;
      t.dirty = false;
      t.changedOnDisk = null;
      this.changed();
      return "followed";
    }
    t.changedOnDisk = { content: disk.content, revision: disk.revision, mine: t.buffer };
    this.changed();
    return "kept";
  }

  /**
   * The disk moved under unsaved edits and the user keeps theirs: the next
   * save replaces exactly the disk's version the user has now seen (and is
   * a conflict again if the disk moves once more). @param {string} path
   */
  keepMine(path) {
    return this.update(path, (t) => {
      const disk = t.changedOnDisk;
      if (!disk || disk.deleted) return;
      t.revision = disk.revision;
      t.base = disk.content;
      t.dirty = t.buffer !== disk.content;
      t.changedOnDisk = null;
    });
  }

  /** The revision a save of this tab must name, and the content to write. @param {string} path */
  saveRequest(path) {
    const t = this.get(path);
    if (!t || t.kind !== "text" || t.state !== "ready") return null;
    return { path, content: t.buffer, expected_revision: t.revision };
  }

  /** @param {string} path */
  saveStarted(path) {
    return this.update(path, (t) => {
      t.saving = true;
      t.error = null;
    });
  }

  /** @param {string} path @param {string} content written @param {string | null} revision */
  saved(path, content, revision) {
    return this.update(path, (t) => {
      t.saving = false;
      t.base = content;
      t.revision = revision;
      t.dirty = t.buffer !== content;
      t.changedOnDisk = null;
      t.conflict = null;
      t.compare = null;
    });
  }

  /** A save failed; C221 is a conflict (nothing was written), anything else an error.
   * @param {string} path @param {WireError} error */
  saveFailed(path, error) {
    return this.update(path, (t) => {
      t.saving = false;
      if (error.code === "C221") t.conflict = { error };
      else t.error = error;
    });
  }

  /** Resolve a conflict by taking the disk: the user's edits are dropped.
   * @param {string} path @param {{content: string, revision: string | null}} disk */
  reload(path, disk) {
    return this.loaded(path, { content: disk.content, revision: disk.revision });
  }

  /** Show the user's buffer against the disk. @param {string} path
   * @param {{content: string, revision: string | null}} disk */
  showCompare(path, disk) {
    return this.update(path, (t) => {
      t.compare = { mine: t.buffer, disk: disk.content, diskRevision: disk.revision };
    });
  }

  /** @param {string} path */
  hideCompare(path) {
    return this.update(path, (t) => {
      t.compare = null;
    });
  }

  /**
   * Resolve a conflict by keeping the user's buffer: the next save names the
   * revision the user has now seen, so it overwrites exactly that and no
   * later write. @param {string} path @param {string | null} diskRevision
   */
  overwriteRequest(path, diskRevision) {
    const t = this.get(path);
    if (!t) return null;
    return { path, content: t.buffer, expected_revision: diskRevision };
  }

  /** What storage keeps: open paths (not diff tabs) and the active one. */
  persisted() {
    return {
      tabs: this.tabs.filter((t) => t.kind !== "diff").map((t) => t.path),
      active: this.active && !this.active.startsWith("diff:") ? this.active : null,
    };
  }
}
