// A small browser client for the iii engine's worker protocol, standing in
// for the console's own: one WebSocket, calls with ids, functions this tab
// registers (handlers), trigger bindings, and a replay of both after a
// reconnect. Test-host code only; never bundled into the page.

/** @param {string} url @param {string} name */
export function connect(url, name) {
  /** @type {WebSocket | null} */
  let ws = null;
  let state = "connecting";
  const pending = new Map();
  const functions = new Map();
  const triggers = new Map();
  const stateListeners = new Set();
  /** The first 200 calls' timings (performance.now() ms): what the benches break a load down by. */
  const timings = [];
  let closedByUser = false;
  /** @type {null | (() => void)} held reconnect, released by resume() */
  let held = null;
  let holding = false;
  let ready;
  let readyResolve;
  const newReady = () => {
    ready = new Promise((r) => (readyResolve = r));
  };
  newReady();

  const setState = (s) => {
    state = s;
    for (const fn of [...stateListeners]) fn(s);
  };
  const send = (msg) => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  };

  const open = () => {
    ws = new WebSocket(url);
    ws.onmessage = async (ev) => {
      const msg = JSON.parse(typeof ev.data === "string" ? ev.data : await ev.data.text());
      switch (msg.type) {
        case "workerregistered": {
          const id = crypto.randomUUID();
          pending.set(id, {
            resolve: () => {
              for (const [fid, meta] of functions) send({ type: "registerfunction", id: fid, metadata: meta.metadata });
              for (const [tid, t] of triggers) send({ type: "registertrigger", id: tid, ...t });
              setState("connected");
              readyResolve();
            },
            reject: (e) => console.error("worker registration failed", e),
          });
          send({ type: "invokefunction", invocation_id: id, function_id: "engine::workers::register", data: { name } });
          break;
        }
        case "invocationresult": {
          const p = pending.get(msg.invocation_id);
          if (!p) break;
          pending.delete(msg.invocation_id);
          if (msg.error) p.reject(msg.error);
          else p.resolve(msg.result);
          break;
        }
        case "invokefunction": {
          const f = functions.get(msg.function_id);
          let result = null;
          let error = null;
          if (!f) error = { code: "function_not_found", message: msg.function_id };
          else {
            try {
              result = (await f.handler(msg.data)) ?? null;
            } catch (e) {
              error = { code: "handler_error", message: String(e?.message ?? e) };
            }
          }
          if (msg.invocation_id) {
            send({ type: "invocationresult", invocation_id: msg.invocation_id, function_id: msg.function_id, ...(error ? { error } : { result }) });
          }
          break;
        }
        case "ping":
          send({ type: "pong" });
          break;
        default:
          break;
      }
    };
    ws.onclose = () => {
      for (const [, p] of pending) p.reject({ code: "disconnected", message: "the engine connection closed" });
      pending.clear();
      if (closedByUser) return;
      setState("disconnected");
      newReady();
      if (holding) held = open;
      else setTimeout(open, 300);
    };
  };
  open();

  return {
    get state() {
      return state;
    },
    ready: () => ready,
    /** @param {string} function_id @param {any} data @param {{timeoutMs?: number, namespace?: string}} [options] */
    async trigger(function_id, data = {}, options = {}) {
      await ready;
      const id = crypto.randomUUID();
      const timeoutMs = options.timeoutMs ?? 30000;
      const timing = timings.length < 200 ? { function_id, start: performance.now(), end: -1 } : null;
      if (timing) timings.push(timing);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject({ code: "timeout", message: `${function_id} did not answer within ${timeoutMs} ms` });
        }, timeoutMs);
        pending.set(id, {
          resolve: (v) => {
            clearTimeout(timer);
            if (timing) timing.end = performance.now();
            resolve(v);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
        // the engine routes an invocation by its `namespace` (absent: default)
        send({ type: "invokefunction", invocation_id: id, function_id, data, ...(options.namespace ? { namespace: options.namespace } : {}) });
      });
    },
    /** @param {string} id @param {(p: any) => any} handler @param {any} [metadata] */
    registerFunction(id, handler, metadata = { internal: true }) {
      functions.set(id, { handler, metadata });
      if (state === "connected") send({ type: "registerfunction", id, metadata });
      return () => {
        if (functions.delete(id)) send({ type: "unregisterfunction", id });
      };
    },
    /** @param {{type: string, function_id: string, config: any, trigger_namespace?: string}} input */
    registerTrigger(input) {
      const id = crypto.randomUUID();
      /** @type {any} */
      const t = { trigger_type: input.type, function_id: input.function_id, config: input.config };
      // where the engine finds the type's provider (absent: this connection's namespace, then default)
      if (input.trigger_namespace) t.trigger_namespace = input.trigger_namespace;
      triggers.set(id, t);
      if (state === "connected") send({ type: "registertrigger", id, ...t });
      return () => {
        if (triggers.delete(id)) send({ type: "unregistertrigger", id, trigger_type: t.trigger_type });
      };
    },
    addConnectionStateListener(fn) {
      stateListeners.add(fn);
      return () => stateListeners.delete(fn);
    },
    timings: () => timings.slice(),
    counts() {
      return { functions: functions.size, triggers: triggers.size, triggerList: [...triggers.values()] };
    },
    /** Drop the socket; the client reconnects and replays, at once or (hold) on resume(). */
    drop(hold = false) {
      holding = hold;
      ws?.close();
    },
    resume() {
      holding = false;
      const go = held;
      held = null;
      go?.();
    },
    close() {
      closedByUser = true;
      ws?.close();
    },
  };
}
