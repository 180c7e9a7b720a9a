// The page's terminals, outside React: one `Terminals` per loaded asset
// (created in setup, disposed by its teardown), holding every pane's xterm
// and its session. React mounts only move a pane's element in and out of a
// container, so strict-mode replays and tab switches never touch a session.
//
// A pane's life: `open` (a login shell in the browsed root) or a lease from
// storage (`attach` with its reconnect token) or an orphan (`adopt`); frames
// reach it through the router in sequence order and are acknowledged once
// xterm has parsed them; keystrokes go out one write at a time (so they
// cannot overtake each other on the bus); the fit addon's size goes out as
// `resize`. Credentials rotate on every attach and adopt, so each reply is
// written back to the lease at once.

import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { SearchAddon } from "@xterm/addon-search";
import { WebLinksAddon } from "@xterm/addon-web-links";
import { SerializeAddon } from "@xterm/addon-serialize";
import { PtyRouter } from "./router.js";
import { arrange, clampFont, loadFontSize, loadLayout, loadLeases, saveFontSize, saveLayout, saveLeases } from "./leases.js";
import { dropSnapshot, loadSnapshot, pruneSnapshots, saveSnapshot } from "./snapshots.js";

/** How often the orphan list refreshes while someone looks at it. */
export const ORPHAN_POLL_MS = 3000;
const SCROLLBACK = 5000;
/** A pane quiet this long keeps its screen (the fallback when a reload finds a frame mid-write). */
export const KEEP_QUIET_MS = 1000;

/** @param {string} b64 */
export function fromBase64(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** @param {Uint8Array} bytes */
export function toBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

const encoder = new TextEncoder();

/** @param {string} s one byte per char (xterm's onBinary) */
function latin1(s) {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

/** ide is not on the bus right now (its functions are gone, or the tab's connection is). @param {any} e */
export function isAway(e) {
  return e?.code === "function_not_found" || e?.code === "disconnected";
}

/** A lost lease: the worker no longer knows the session or these credentials. @param {any} e */
export function isLostLease(e) {
  return typeof e?.code === "string" && /211$/.test(e.code);
}

/**
 * The terminal's colours, from the console's tokens on `el` (light and dark
 * are a token flip, so the terminal follows the page).
 * @param {Element} el
 */
function themeFrom(el) {
  const css = getComputedStyle(el);
  const v = (/** @type {string} */ name, /** @type {string} */ fallback) => css.getPropertyValue(name).trim() || fallback;
  const bg = v("--color-bg", "white");
  const fg = v("--color-ink", "black");
  return {
    background: bg,
    foreground: fg,
    cursor: fg,
    cursorAccent: bg,
    selectionBackground: v("--color-selection", "silver"),
  };
}

/**
 * @typedef {"starting" | "live" | "exited" | "lost" | "error" | "closed"} PaneStatus
 * @typedef {{exit_code: number | null, signal: string | null, error: string | null}} ExitInfo
 * @typedef {import("./leases.js").Lease} Lease
 * @typedef {{kind: "open", cwd: string} | {kind: "attach", lease: Lease} | {kind: "adopt", session_id: string, cwd: string}} Start
 */

let paneCounter = 0;

export class TermPane {
  /** @param {Terminals} owner @param {Start} start */
  constructor(owner, start) {
    this.owner = owner;
    this.id = start.kind === "attach" ? start.lease.pane : `t${Date.now().toString(36)}${(paneCounter++).toString(36)}`;
    /** @type {Start} */
    this.start = start;
    /** @type {Lease | null} */
    this.lease = start.kind === "attach" ? { ...start.lease } : null;
    /** @type {PaneStatus} */
    this.status = "starting";
    /** @type {ExitInfo | null} */
    this.exit = null;
    /** @type {null | {code: string, message: string}} */
    this.error = null;
    /** Set when the replay could not reach back as far as asked (the ring lost frames). */
    this.truncated = false;
    this.cwd = start.kind === "attach" ? start.lease.cwd : start.cwd;
    this.title = this.cwd.split("/").filter(Boolean).pop() ?? "/";

    this.el = document.createElement("div");
    this.el.className = "ide-term-screen";
    this.el.dataset.pane = this.id;
    this.term = new Terminal({
      fontSize: owner.fontSize,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
      scrollback: SCROLLBACK,
      cursorBlink: false,
      allowProposedApi: false,
    });
    // tests and the stepper read the terminal through its element
    Object.defineProperty(this.el, "ideTerminal", { value: this.term });
    this.fit = new FitAddon();
    this.search = new SearchAddon();
    this.term.loadAddon(this.fit);
    this.term.loadAddon(this.search);
    this.serializer = new SerializeAddon();
    this.term.loadAddon(this.serializer);
    this.term.loadAddon(new WebLinksAddon((_e, uri) => window.open(uri, "_blank", "noopener")));
    this.term.attachCustomWheelEventHandler((e) => {
      if (!(e.ctrlKey || e.metaKey)) return true;
      e.preventDefault();
      owner.setFontSize(owner.fontSize + (e.deltaY < 0 ? 1 : -1));
      return false;
    });
    this.opened = false;
    this.begun = false;
    /** Whether any output reached this xterm (a re-attach then asks only for what follows). */
    this.written = false;
    /** Writes xterm has not parsed yet: while any is out, the screen is not the one of `lease.sequence`. */
    this.applying = 0;
    /** The sequence of the screen last kept for a reload. */
    this.keptSequence = 0;
    this.keepTimer = 0;
    this.lastFrameAt = 0;
    /** @type {{cols: number, rows: number} | null} the size the worker has */
    this.sizeSent = null;
    /** @type {Array<{dispose: () => void}>} */
    this.disposables = [
      this.term.onData((d) => this.send(encoder.encode(d))),
      this.term.onBinary((d) => this.send(latin1(d))),
      this.term.onResize(({ cols, rows }) => this.resized(cols, rows)),
    ];
    /** @type {Uint8Array[]} */
    this.pendingInput = [];
    this.writing = false;
    /** @type {{cols: number, rows: number} | null} */
    this.pendingSize = null;
    this.resizing = false;
    /** @type {(() => void) | null} */
    this.unhold = null;
    /** @type {ResizeObserver | null} */
    this.observer = null;
    this.fitFrame = 0;
  }

  get sessionId() {
    return this.lease?.session_id ?? null;
  }

  /** Show the pane in `container` (its first mount opens xterm and starts the session). @param {HTMLElement} container */
  mount(container) {
    if (this.status === "closed") return;
    container.append(this.el);
    if (!this.opened) {
      this.term.open(this.el);
      this.opened = true;
    }
    this.applyTheme();
    this.observer?.disconnect();
    this.observer = new ResizeObserver(() => this.scheduleFit());
    this.observer.observe(this.el);
    this.refit();
    if (!this.begun) {
      this.begun = true;
      void this.begin();
    }
  }

  /** @param {HTMLElement} container */
  unmount(container) {
    this.observer?.disconnect();
    this.observer = null;
    if (this.el.parentElement === container) this.el.remove();
  }

  applyTheme() {
    if (this.el.isConnected) this.term.options.theme = themeFrom(this.el);
  }

  scheduleFit() {
    if (this.fitFrame) return;
    this.fitFrame = requestAnimationFrame(() => {
      this.fitFrame = 0;
      this.refit();
    });
  }

  refit() {
    if (!this.opened || !this.el.isConnected || this.status === "closed") return;
    const dims = this.fit.proposeDimensions();
    if (!dims || !Number.isFinite(dims.cols) || !Number.isFinite(dims.rows) || dims.cols < 2 || dims.rows < 1) return;
    this.fit.fit();
  }

  changed() {
    this.el.dataset.status = this.status;
    if (this.lease) this.el.dataset.session = this.lease.session_id;
    this.owner.notify();
  }

  /** @param {any} e */
  failed(e) {
    const err = { code: typeof e?.code === "string" ? e.code : "error", message: typeof e?.message === "string" ? e.message : String(e) };
    if (isLostLease(err) && this.lease) {
      this.status = "lost";
      this.error = err;
      this.release();
      this.owner.forgetLease(this);
    } else if (this.status === "starting") {
      this.status = "error";
      this.error = err;
      this.release();
    } else {
      this.error = err;
    }
    this.changed();
  }

  async begin() {
    const router = this.owner.router;
    const api = this.owner.api;
    if (!router.available || !router.outputFunctionId) {
      this.failed({ code: "unsupported", message: "this console gives the page no per-tab handler (host.iii.on with a browser id); terminals cannot receive output" });
      return;
    }
    const size = { cols: this.term.cols, rows: this.term.rows };
    const output_function_id = router.outputFunctionId;
    try {
      if (this.start.kind === "open") {
        const out = await api.call("shell::pty::open", { cwd: this.start.cwd, ...size, output_function_id });
        if (this.status === "closed") {
          void api.call("shell::pty::close", { session_id: out.session_id, access_key: out.access_key }).catch(() => {});
          return;
        }
        this.lease = { pane: this.id, session_id: out.session_id, access_key: out.access_key, reconnect_token: out.reconnect_token, sequence: 0, cwd: out.cwd ?? this.cwd };
        this.cwd = this.lease.cwd;
        // frames that raced the reply wait in the router's queue; take them now
        this.hold();
        this.status = "live";
        this.owner.rememberLease(this);
        this.changed();
        router.release(out.session_id, 0);
        this.sizeSent = size;
        this.flushSize();
        return;
      }
      const sessionId = this.start.kind === "attach" ? this.start.lease.session_id : this.start.session_id;
      this.holdFor(sessionId);
      if (this.start.kind === "adopt") {
        // nothing of this session is on this screen: everything retained
        const out = await api.call("shell::pty::adopt", { session_id: sessionId, after_sequence: 0, ...size, output_function_id });
        await this.attached(sessionId, out);
        return;
      }
      // a reload: the screen this tab kept goes back first, and the worker
      // sends what follows its sequence; without one (another tab, a lost
      // snapshot) the fresh screen asks for everything retained
      const kept = loadSnapshot(sessionId);
      const after = kept && this.lease ? kept.sequence : 0;
      const restoring = kept && this.lease ? this.restoreScreen(kept) : null;
      const out = await api.call("shell::pty::attach", { session_id: sessionId, reconnect_token: this.start.lease.reconnect_token, after_sequence: after, ...size, output_function_id });
      await restoring;
      await this.attached(sessionId, out);
    } catch (e) {
      this.failed(e);
    }
  }

  /**
   * An attach or adopt reply: new credentials, the retained frames, then
   * live frames from `next_sequence` on.
   * @param {string} sessionId @param {any} out
   */
  async attached(sessionId, out) {
    if (this.status === "closed") return;
    const cwd = typeof out.cwd === "string" ? out.cwd : this.cwd;
    this.cwd = cwd;
    this.lease = {
      pane: this.id,
      session_id: sessionId,
      access_key: out.access_key,
      reconnect_token: out.reconnect_token,
      sequence: this.lease?.session_id === sessionId ? this.lease.sequence : 0,
      cwd,
    };
    this.truncated = !!out.truncated;
    this.owner.rememberLease(this);
    const frames = Array.isArray(out.frames) ? [...out.frames].sort((a, b) => a.sequence - b.sequence) : [];
    let last = this.written ? this.lease.sequence : 0;
    for (const f of frames) {
      if (f.sequence <= last && !(out.truncated && f === frames[0])) continue;
      await this.apply({ session_id: sessionId, sequence: f.sequence, data: f.data });
      last = Math.max(last, f.sequence);
    }
    last = Math.max(last, Number(out.next_sequence ?? 1) - 1);
    const st = out.status;
    if (st && typeof st === "object" && st.exited) {
      this.exited({ exit_code: st.exited.exit_code ?? null, signal: st.exited.signal ?? null, error: st.exited.error ?? null });
    } else {
      this.status = "live";
      this.error = null;
      // a sessions listing that failed while the worker was away is stale now
      if (this.owner.orphanError) void this.owner.refreshOrphans();
    }
    this.setSequence(last);
    this.changed();
    this.owner.router.release(sessionId, last);
    this.sizeSent = { cols: this.term.cols, rows: this.term.rows };
    this.flushSize();
  }

  /**
   * Write a kept screen into the fresh xterm; the lease goes on from its
   * sequence. @param {import("./snapshots.js").Snapshot} kept
   */
  async restoreScreen(kept) {
    if (!this.lease) return;
    this.lease.sequence = kept.sequence;
    this.keptSequence = kept.sequence;
    this.applying += 1;
    try {
      await new Promise((resolve) => this.term.write(kept.data, () => resolve(undefined)));
    } finally {
      this.applying -= 1;
    }
    this.written = true;
    this.el.dataset.sequence = String(kept.sequence);
  }

  /**
   * Keep the screen for a reload, as of `lease.sequence`, when xterm has
   * parsed every frame up to it and none after (else the last kept one
   * stays: it is exact for its own sequence).
   */
  keepScreen() {
    if (this.keepTimer) clearTimeout(this.keepTimer);
    this.keepTimer = 0;
    const lease = this.lease;
    if (!lease || !this.written || this.applying || !this.opened) return;
    if (this.status !== "live" && this.status !== "exited") return;
    if (lease.sequence === this.keptSequence) return;
    const size = { cols: this.term.cols, rows: this.term.rows };
    if (saveSnapshot(lease.session_id, lease.sequence, size, (scrollback) => this.serializer.serialize({ scrollback }), SCROLLBACK)) {
      this.keptSequence = lease.sequence;
    } else {
      this.keptSequence = 0;
    }
  }

  /**
   * Keep the screen once the pane has been quiet for a while (off the typing
   * path). One timer per quiet period: a frame only notes its time, and the
   * timer waits out the rest of the quiet from the last one.
   */
  scheduleKeep() {
    this.lastFrameAt = performance.now();
    if (this.keepTimer) return;
    const check = () => {
      const left = KEEP_QUIET_MS - (performance.now() - this.lastFrameAt);
      if (left > 0) {
        this.keepTimer = /** @type {any} */ (setTimeout(check, left));
        return;
      }
      this.keepTimer = 0;
      const idle = /** @type {any} */ (globalThis).requestIdleCallback;
      if (typeof idle === "function") idle(() => this.keepScreen(), { timeout: 2000 });
      else this.keepScreen();
    };
    this.keepTimer = /** @type {any} */ (setTimeout(check, KEEP_QUIET_MS));
  }

  hold() {
    if (this.lease) this.holdFor(this.lease.session_id);
  }

  /** @param {string} sessionId */
  holdFor(sessionId) {
    this.unhold?.();
    this.unhold = this.owner.router.hold(sessionId, (f) => this.apply(f));
  }

  release() {
    this.unhold?.();
    this.unhold = null;
  }

  /** One frame, in order: written, then counted. @param {import("./router.js").PtyFrame} f */
  async apply(f) {
    if (this.status === "closed") return;
    if (typeof f.data === "string" && f.data.length) {
      const bytes = fromBase64(f.data);
      this.applying += 1;
      try {
        await new Promise((resolve) => this.term.write(bytes, () => resolve(undefined)));
      } finally {
        this.applying -= 1;
      }
      this.written = true;
    }
    this.setSequence(f.sequence);
    this.scheduleKeep();
    if (f.eof || f.exit_code != null || f.signal || f.error) {
      this.exited({ exit_code: f.exit_code ?? null, signal: f.signal ?? null, error: f.error ?? null });
      this.changed();
    }
  }

  /** @param {number} seq */
  setSequence(seq) {
    if (!this.lease || seq <= this.lease.sequence) return;
    this.lease.sequence = seq;
    this.el.dataset.sequence = String(seq);
    this.owner.rememberLease(this);
  }

  /** @param {ExitInfo} info */
  exited(info) {
    this.status = "exited";
    this.exit = info;
  }

  /** Keystrokes, one write in flight at a time (in order), batched while one is out. @param {Uint8Array} bytes */
  send(bytes) {
    if (this.status !== "live" || !this.lease) return;
    this.pendingInput.push(bytes);
    if (!this.writing) void this.flushInput();
  }

  async flushInput() {
    this.writing = true;
    this.el.dataset.writing = "1";
    try {
      while (this.pendingInput.length && this.lease && this.status === "live") {
        const parts = this.pendingInput.splice(0);
        const total = parts.reduce((n, p) => n + p.length, 0);
        const all = new Uint8Array(total);
        let at = 0;
        for (const p of parts) {
          all.set(p, at);
          at += p.length;
        }
        try {
          await this.owner.api.call("shell::pty::write", { session_id: this.lease.session_id, access_key: this.lease.access_key, data: toBase64(all) });
        } catch (e) {
          this.failed(e);
          break;
        }
      }
    } finally {
      this.writing = false;
      delete this.el.dataset.writing;
    }
  }

  /** @param {number} cols @param {number} rows */
  resized(cols, rows) {
    this.pendingSize = { cols, rows };
    this.flushSize();
  }

  async flushSize() {
    if (this.resizing || !this.lease || this.status !== "live") return;
    this.resizing = true;
    try {
      while (this.pendingSize && this.lease && this.status === "live") {
        const size = this.pendingSize;
        this.pendingSize = null;
        if (this.sizeSent && this.sizeSent.cols === size.cols && this.sizeSent.rows === size.rows) continue;
        try {
          await this.owner.api.call("shell::pty::resize", { session_id: this.lease.session_id, access_key: this.lease.access_key, ...size });
          this.sizeSent = size;
        } catch (e) {
          // ide is off the bus for a moment (an engine restart): the size waits for the next
          // resize or the re-attach, which carries the terminal's size anyway
          if (isAway(e)) {
            this.pendingSize ??= size;
            this.sizeSent = null;
          } else this.failed(e);
          break;
        }
      }
    } finally {
      this.resizing = false;
    }
  }

  /** Re-attach the same terminal (the engine came back): only what it has not applied. */
  async reattach() {
    if (!this.lease || this.status !== "live") return;
    const lease = this.lease;
    try {
      this.holdFor(lease.session_id);
      const out = await this.owner.api.call("shell::pty::attach", {
        session_id: lease.session_id,
        reconnect_token: lease.reconnect_token,
        after_sequence: lease.sequence,
        cols: this.term.cols,
        rows: this.term.rows,
        output_function_id: this.owner.router.outputFunctionId,
      });
      await this.attached(lease.session_id, out);
    } catch (e) {
      this.failed(e);
    }
  }

  /** Close: kill the session (when it is ours) and drop the pane. */
  async close() {
    const lease = this.lease;
    const held = this.status === "live" || this.status === "exited";
    this.status = "closed";
    this.release();
    this.owner.forgetLease(this);
    this.dispose();
    if (lease && held) {
      try {
        await this.owner.api.call("shell::pty::close", { session_id: lease.session_id, access_key: lease.access_key });
      } catch (e) {
        // an exited session may be gone already; anything else is worth saying
        if (!isLostLease(e)) this.owner.report(e);
      }
    }
  }

  /** Stop receiving, keep the session and this screen (hot reload, page hide). */
  detach() {
    const lease = this.lease;
    this.keepScreen();
    this.release();
    if (lease && this.status === "live") {
      void this.owner.api.call("shell::pty::detach", { session_id: lease.session_id, access_key: lease.access_key }, 5000).catch(() => {});
    }
  }

  dispose() {
    if (this.fitFrame) cancelAnimationFrame(this.fitFrame);
    if (this.keepTimer) clearTimeout(this.keepTimer);
    this.keepTimer = 0;
    this.observer?.disconnect();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.el.remove();
    this.term.dispose();
  }
}

export class Terminals {
  /** @param {{iii: any, api: import("../api.js").Api, onReconnect?: (fn: (info: {workerRestarted: boolean}) => void) => () => void}} app */
  constructor(app) {
    this.api = app.api;
    this.router = new PtyRouter(app.iii);
    /** @type {TermPane[]} */
    this.panes = [];
    /** @type {string | null} */
    this.active = null;
    /** The pane shown beside the active one, if the panel is split. @type {string | null} */
    this.split = null;
    this.fontSize = loadFontSize();
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    this.version = 0;
    /** @type {null | {code: string, message: string}} */
    this.notice = null;
    /** @type {any[]} */
    this.orphans = [];
    /** @type {null | {code: string, message: string}} */
    this.orphanError = null;
    this.restored = false;
    /** The layout last written to storage (JSON), so an unchanged one is not written again. */
    this.layoutSaved = "";
    this.disposed = false;
    /** @type {Array<() => void>} */
    this.cleanups = [];
    // the connection came back: every pane re-attaches after what it applied; another
    // worker process than before: its sessions are gone with the old one (shown as
    // lost), and a pane opened on the new one since must not be re-attached under the
    // user's typing
    if (typeof app.onReconnect === "function") {
      this.cleanups.push(
        app.onReconnect((info) => {
          if (info?.workerRestarted) void this.refreshOrphans();
          else this.panes.forEach((p) => void p.reattach());
        }),
      );
    }
    // leaving the page: let the worker know at once that nobody watches
    // these sessions (best effort; a dead target is noticed on delivery too)
    const onHide = () => this.panes.forEach((p) => p.detach());
    if (typeof globalThis.addEventListener === "function") {
      globalThis.addEventListener("pagehide", onHide);
      this.cleanups.push(() => globalThis.removeEventListener("pagehide", onHide));
    }
  }

  /** For useSyncExternalStore. @param {() => void} fn */
  subscribe = (fn) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  snapshot = () => this.version;

  notify() {
    this.version += 1;
    this.rememberLayout();
    for (const fn of [...this.listeners]) fn();
  }

  /** The layout goes to storage on every change (once restored: before, it is what restore reads). */
  rememberLayout() {
    if (!this.restored || this.disposed) return;
    const layout = { order: this.panes.map((p) => p.id), active: this.active, split: this.split };
    const key = JSON.stringify(layout);
    if (key === this.layoutSaved) return;
    this.layoutSaved = key;
    saveLayout(layout);
  }

  /** The panes the browser's leases name, once per load, in the stored layout. */
  restore() {
    if (this.restored || this.disposed) return;
    this.restored = true;
    const { leases, active, split } = arrange(loadLeases(), loadLayout());
    // screens kept for sessions no lease names any more are of no use
    pruneSnapshots(new Set(leases.map((l) => l.session_id)));
    for (const lease of leases) {
      if (this.panes.some((p) => p.id === lease.pane)) continue;
      this.panes.push(new TermPane(this, { kind: "attach", lease }));
    }
    if (!this.active && active) this.active = active;
    if (!this.split && split && split !== this.active) this.split = split;
    if (!this.active && this.panes.length) this.active = this.panes[0].id;
    this.notify();
  }

  /** @param {string} cwd */
  openShell(cwd) {
    const p = new TermPane(this, { kind: "open", cwd });
    this.panes.push(p);
    this.active = p.id;
    this.notify();
    return p;
  }

  /** Split the panel: a new shell beside the active pane. @param {string} cwd */
  splitShell(cwd) {
    const p = new TermPane(this, { kind: "open", cwd });
    this.panes.push(p);
    if (!this.active) this.active = p.id;
    else this.split = p.id;
    this.notify();
    return p;
  }

  unsplit() {
    this.split = null;
    this.notify();
  }

  /** @param {any} summary a `shell::pty::sessions` entry */
  adopt(summary) {
    const p = new TermPane(this, { kind: "adopt", session_id: summary.session_id, cwd: summary.cwd ?? "/" });
    this.panes.push(p);
    this.active = p.id;
    this.orphans = this.orphans.filter((o) => o.session_id !== summary.session_id);
    this.notify();
    return p;
  }

  /** @param {string} id */
  activate(id) {
    // the split pane's tab swaps the two sides
    if (id === this.split) this.split = this.active;
    this.active = id;
    this.notify();
  }

  /** @param {string} id */
  async close(id) {
    const p = this.panes.find((x) => x.id === id);
    if (!p) return;
    this.panes = this.panes.filter((x) => x !== p);
    if (this.split === id) this.split = null;
    if (this.active === id) {
      this.active = this.split ?? this.panes[this.panes.length - 1]?.id ?? null;
      this.split = null;
    }
    this.notify();
    await p.close();
  }

  /** A lost pane's "new shell": the same place, a new session. @param {string} id */
  replace(id) {
    const i = this.panes.findIndex((x) => x.id === id);
    if (i < 0) return;
    const old = this.panes[i];
    const p = new TermPane(this, { kind: "open", cwd: old.cwd });
    this.panes[i] = p;
    if (this.active === id) this.active = p.id;
    if (this.split === id) this.split = p.id;
    this.notify();
    // an exited session still holds its slot on the worker until closed
    void old.close();
  }

  /** @param {number} n */
  setFontSize(n) {
    const v = clampFont(n);
    if (v === this.fontSize) return;
    this.fontSize = v;
    saveFontSize(v);
    for (const p of this.panes) {
      p.term.options.fontSize = v;
      p.refit();
    }
    this.notify();
  }

  applyTheme() {
    for (const p of this.panes) p.applyTheme();
  }

  /** @param {TermPane} p */
  rememberLease(p) {
    if (!p.lease || this.disposed) return;
    const leases = loadLeases().filter((l) => l.pane !== p.id && l.session_id !== p.lease?.session_id);
    leases.push(p.lease);
    saveLeases(leases);
  }

  /** @param {TermPane} p */
  forgetLease(p) {
    saveLeases(loadLeases().filter((l) => l.pane !== p.id));
    if (p.lease) dropSnapshot(p.lease.session_id);
  }

  /** @param {any} e */
  report(e) {
    this.notice = { code: typeof e?.code === "string" ? e.code : "error", message: typeof e?.message === "string" ? e.message : String(e) };
    this.notify();
  }

  /** Detached sessions of this page that no pane here holds: what a lost storage left running. */
  async refreshOrphans() {
    // only sessions that were live before the call can be missing from its answer
    const liveBefore = new Set(this.panes.filter((p) => p.status === "live").map((p) => p.sessionId));
    try {
      const out = await this.api.call("shell::pty::sessions", {}, 10_000);
      // a lost pane holds nothing: its session is exactly what may be offered
      const mine = new Set(this.panes.filter((p) => p.status !== "lost").map((p) => p.sessionId).filter(Boolean));
      const list = Array.isArray(out?.sessions) ? out.sessions : [];
      this.orphans = list.filter((s) => s && s.ui === "ide" && s.status === "detached" && !mine.has(s.session_id));
      this.orphanError = null;
      // a live pane whose session the worker no longer lists lost it (the worker restarted):
      // say so now rather than at the next keystroke
      const listed = new Set(list.map((s) => s?.session_id));
      for (const p of this.panes) {
        if (p.status === "live" && p.sessionId && liveBefore.has(p.sessionId) && !listed.has(p.sessionId)) {
          p.failed({ code: "S211", message: `the worker no longer lists session ${p.sessionId}; it ended with the worker` });
        }
      }
    } catch (e) {
      this.orphanError = { code: /** @type {any} */ (e)?.code ?? "error", message: /** @type {any} */ (e)?.message ?? String(e) };
    }
    if (!this.disposed) this.notify();
  }

  dispose() {
    this.disposed = true;
    for (const p of this.panes.splice(0)) {
      p.detach();
      p.dispose();
    }
    for (const fn of this.cleanups.splice(0)) fn();
    this.router.dispose();
    this.listeners.clear();
  }
}
