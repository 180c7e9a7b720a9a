// The page's per-asset services, created once in setup() and disposed by its
// teardown: the API, the one change-event handler (per tab, from host.iii.on)
// and the shell::changed binding on the browsed root. React mounts come and
// go (strict mode replays effects); these do not.

import { Api } from "./api.js";

/** The base id of the per-tab change handler; the console appends `::<browserId>`. */
export const CHANGED_HANDLER = "iii::ide-ui::changed";
/** How long after the last terminal keystroke background checks wait. */
const TYPING_QUIET_MS = 1000;
/** How long a reconnect waits for ide to answer before re-reading anyway. */
const WORKER_WAIT_MS = 60_000;

/**
 * @typedef {{path: string, kind: string, root: string, dir?: boolean, seq?: number, change_id?: string}} ChangeEvent
 */

export class App {
  /** @param {any} host */
  constructor(host) {
    this.host = host;
    /** @type {import("./api.js").HostIii} */
    this.iii = host.iii;
    this.api = new Api(this.iii);
    /** @type {Set<(e: ChangeEvent) => void>} */
    this.changeListeners = new Set();
    /** @type {Set<(info: {workerRestarted: boolean}) => void>} */
    this.reconnectListeners = new Set();
    /** @type {Set<() => void>} */
    this.hostListeners = new Set();
    /** @type {Array<() => void>} */
    this.cleanups = [];
    /** @type {{root: string, off: () => void} | null} */
    this.binding = null;
    /** @type {null | {code: string, message: string}} */
    this.bindError = null;
    this.disposed = false;
    this.reconnectAttempt = 0;
    /** @type {Promise<void>} the last reconnect's wait for ide (tests await it) */
    this.reconnectDone = Promise.resolve();
    /**
     * Whether ide answers, and which process: `away` while it does not, `restartedAt`
     * (its start, epoch ms) once another process answered than before.
     * @type {{state: "unknown" | "up" | "away", instance: string | null, restartedAt: number | null}}
     */
    this.worker = { state: "unknown", instance: null, restartedAt: null };
    /** @type {Set<() => void>} */
    this.workerListeners = new Set();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.workerTimer = null;
    this.workerRun = 0;

    this.handlerId = this.iii.browserId ? `${CHANGED_HANDLER}::${this.iii.browserId}` : CHANGED_HANDLER;
    if (typeof this.iii.on === "function") {
      const off = this.iii.on(CHANGED_HANDLER, (payload) => {
        this.deliver(payload);
        return {};
      });
      if (typeof off === "function") this.cleanups.push(off);
    }
    if (typeof this.iii.addConnectionStateListener === "function") {
      let wasConnected = true;
      const off = this.iii.addConnectionStateListener((state) => {
        const connected = state === "connected" || state === "Connected";
        if (connected && !wasConnected) this.reconnectDone = this.reconnected();
        wasConnected = connected;
      });
      if (typeof off === "function") this.cleanups.push(off);
    }
  }

  /** @param {any} payload */
  deliver(payload) {
    if (this.disposed || !payload || typeof payload.path !== "string") return;
    if (this.binding && payload.root && payload.root !== this.binding.root) return;
    for (const fn of [...this.changeListeners]) fn(/** @type {ChangeEvent} */ (payload));
  }

  /** @param {(e: ChangeEvent) => void} fn */
  onChange(fn) {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  /** @param {(info: {workerRestarted: boolean}) => void} fn after a reconnect (`workerRestarted`: another ide process than before) */
  onReconnect(fn) {
    this.reconnectListeners.add(fn);
    return () => this.reconnectListeners.delete(fn);
  }

  /** @param {() => void} fn called when {@link App.worker} changes */
  onWorker(fn) {
    this.workerListeners.add(fn);
    return () => this.workerListeners.delete(fn);
  }

  /** @param {Partial<App["worker"]>} next */
  setWorker(next) {
    const was = this.worker;
    const now = { ...was, ...next };
    if (now.state === was.state && now.instance === was.instance && now.restartedAt === was.restartedAt) return;
    this.worker = now;
    for (const fn of [...this.workerListeners]) fn();
  }

  /**
   * Ask ide once who it is. Another process than the last one (a restart
   * while this tab stayed connected): bind again and let the page re-read
   * what it shows, as after a reconnect. No answer: ide is away.
   */
  async checkWorker() {
    if (this.disposed) return;
    try {
      const r = await this.api.call("shell::workspace::roots", {}, 5000);
      if (this.disposed) return;
      const instance = typeof r?.host?.instance === "string" ? r.host.instance : null;
      const was = this.worker.instance;
      const restarted = was !== null && instance !== null && instance !== was;
      this.setWorker({
        state: "up",
        instance: instance ?? was,
        restartedAt: restarted ? Number(r.host.started_ms) || Date.now() : this.worker.restartedAt,
      });
      if (restarted) {
        if (this.binding) this.bind(this.binding.root, true);
        for (const fn of [...this.reconnectListeners]) fn({ workerRestarted: true });
      }
    } catch {
      if (!this.disposed) this.setWorker({ state: "away" });
    }
  }

  /** Check ide every `everyMs` (every second while it is away) until disposed. */
  watchWorker(everyMs = 5000) {
    this.stopWatchingWorker();
    const run = ++this.workerRun;
    const tick = async () => {
      this.workerTimer = null;
      // Not while the user types in a terminal: the check's answer, sent to
      // the page just before a keystroke's echo, makes the echo wait for the
      // page's delayed ACK (~40 ms; the engine keeps Nagle on). A second of
      // quiet first costs the check nothing.
      const typed = Date.now() - (this.api.lastKeystrokeAt ?? 0);
      if (this.worker.state === "up" && typed < TYPING_QUIET_MS) {
        if (!this.disposed && run === this.workerRun) this.workerTimer = setTimeout(tick, TYPING_QUIET_MS - typed);
        return;
      }
      await this.checkWorker();
      if (this.disposed || run !== this.workerRun) return;
      this.workerTimer = setTimeout(tick, this.worker.state === "away" ? 1000 : everyMs);
    };
    void tick();
    return () => this.stopWatchingWorker();
  }

  stopWatchingWorker() {
    this.workerRun += 1;
    if (this.workerTimer) clearTimeout(this.workerTimer);
    this.workerTimer = null;
  }

  /** The restart notice was read. */
  dismissRestart() {
    this.setWorker({ restartedAt: null });
  }

  /**
   * Back on the engine: bind again at once (the engine holds the binding
   * until ide provides the type), then wait until ide answers — after an
   * engine restart the tab is usually back before the worker is — and only
   * then let the page re-read its files and folders.
   */
  async reconnected() {
    if (this.disposed) return;
    if (this.binding) this.bind(this.binding.root, true);
    const attempt = ++this.reconnectAttempt;
    let delay = 100;
    for (const started = Date.now(); Date.now() - started < WORKER_WAIT_MS; ) {
      try {
        await this.api.call("shell::workspace::roots", {}, 5000);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2000);
      }
      if (this.disposed || attempt !== this.reconnectAttempt) return;
    }
    if (this.disposed || attempt !== this.reconnectAttempt) return;
    for (const fn of [...this.reconnectListeners]) fn({ workerRestarted: false });
  }

  /**
   * Watch `root` (and only it): the previous binding is dropped.
   * @param {string} root @param {boolean} [force] rebind even if it is the same root
   */
  bind(root, force = false) {
    if (this.disposed) return;
    if (this.binding && this.binding.root === root && !force) return;
    this.unbind();
    if (typeof this.iii.registerTrigger !== "function") {
      this.bindError = { code: "unsupported", message: "this console cannot register triggers; the tree refreshes on demand only" };
      return;
    }
    try {
      const handle = this.iii.registerTrigger(this.triggerInput("shell::changed", this.handlerId, { path: root }));
      const off =
        typeof handle === "function"
          ? handle
          : handle && typeof handle.unregister === "function"
            ? () => handle.unregister()
            : () => {};
      this.binding = { root, off };
      this.bindError = null;
    } catch (e) {
      const o = /** @type {any} */ (e);
      this.bindError = { code: o?.code ?? "error", message: o?.message ?? String(e) };
    }
  }

  /**
   * A binding of this tab's handler to one of the chosen ide's trigger
   * types: the provider is looked up in that ide's namespace
   * (`trigger_namespace`); the handler stays in the console's.
   * @param {string} type @param {string} functionId @param {any} config
   */
  triggerInput(type, functionId, config) {
    /** @type {any} */
    const input = { type, function_id: functionId, config };
    if (this.api.namespace) input.trigger_namespace = this.api.namespace;
    return input;
  }

  /**
   * Work with the ide in `namespace` (null: the console's own). Bindings
   * follow at their next bind.
   * @param {string | null} namespace
   */
  useHost(namespace) {
    const next = namespace && namespace !== "default" ? namespace : null;
    if (next === this.api.namespace) return;
    this.api.namespace = next;
    // the root's binding belongs to the previous host, and so does the process seen
    this.unbind();
    this.setWorker({ state: "unknown", instance: null, restartedAt: null });
    for (const fn of [...this.hostListeners]) fn();
  }

  /** @param {() => void} fn called after another host was chosen */
  onHost(fn) {
    this.hostListeners.add(fn);
    return () => this.hostListeners.delete(fn);
  }

  unbind() {
    if (this.binding) {
      try {
        this.binding.off();
      } catch {
        // the binding is gone with the connection already
      }
      this.binding = null;
    }
  }

  dispose() {
    this.disposed = true;
    if (this.workerTimer) clearTimeout(this.workerTimer);
    this.workerTimer = null;
    this.workerListeners.clear();
    this.unbind();
    for (const fn of this.cleanups.splice(0).reverse()) {
      try {
        fn();
      } catch {
        // a handler the console already dropped
      }
    }
    this.changeListeners.clear();
    this.reconnectListeners.clear();
    this.hostListeners.clear();
  }
}
