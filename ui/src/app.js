// The page's per-asset services, created once in setup() and disposed by its
// teardown: the API, the one change-event handler (per tab, from host.iii.on)
// and the shell::changed binding on the browsed root. React mounts come and
// go (strict mode replays effects); these do not.

import { Api } from "./api.js";

/** The base id of the per-tab change handler; the console appends `::<browserId>`. */
export const CHANGED_HANDLER = "iii::ide-ui::changed";
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
    /** @type {Set<() => void>} */
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

  /** @param {() => void} fn */
  onReconnect(fn) {
    this.reconnectListeners.add(fn);
    return () => this.reconnectListeners.delete(fn);
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
    for (const fn of [...this.reconnectListeners]) fn();
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
    // the root's binding belongs to the previous host
    this.unbind();
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
