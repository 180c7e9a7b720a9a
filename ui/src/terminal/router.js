// The one PTY output router of a loaded asset: created in setup(), disposed
// by its teardown. It owns the per-tab output handler (host.iii.on gives
// `iii::ide-ui::pty-output::<browserId>`) and routes each frame to the
// terminal holding its session. The worker keeps up to four deliveries in
// flight, so frames can land out of order: each session's frames are applied
// strictly in `sequence` order, duplicates dropped. A delivery is answered
// only once its frame is applied (for a terminal: rendered), which is what
// throttles the worker under a flood of output. Frames for a session nobody
// holds yet (output racing the `open` reply) wait in a bounded queue.

/** The base id of the per-tab output handler; the console appends `::<browserId>`. */
export const PTY_OUTPUT_HANDLER = "iii::ide-ui::pty-output";
/** Frames kept for a session no terminal holds yet. */
export const MAX_QUEUED_FRAMES = 256;
/** Sessions with queued frames at once (oldest forgotten first). */
export const MAX_QUEUED_SESSIONS = 16;
/** Out-of-order frames kept per held session (the worker is at most four apart). */
export const MAX_AHEAD = 64;

/**
 * @typedef {{session_id: string, sequence: number, data?: string | null, eof?: boolean, exit_code?: number | null, signal?: string | null, error?: string | null}} PtyFrame
 * @typedef {(frame: PtyFrame) => (void | Promise<void>)} FrameSink
 */

/** @param {any} p @returns {p is PtyFrame} */
function isFrame(p) {
  return !!p && typeof p === "object" && typeof p.session_id === "string" && Number.isSafeInteger(p.sequence);
}

class Holder {
  /** @param {FrameSink} sink @param {number} last */
  constructor(sink, last) {
    this.sink = sink;
    /** The last applied sequence. */
    this.last = last;
    /** Frames ahead of `last + 1`, by sequence, each with its delivery's answer. @type {Map<number, {frame: PtyFrame, done: () => void}>} */
    this.ahead = new Map();
    /** While held (between `hold` and `release`) frames wait here, in arrival order. */
    this.paused = true;
    /** @type {Promise<void>} */
    this.chain = Promise.resolve();
    this.closed = false;
  }
}

export class PtyRouter {
  /** @param {{on?: (id: string, handler: (p: any) => any) => any, browserId?: string}} iii */
  constructor(iii) {
    /** @type {Map<string, Holder>} */
    this.holders = new Map();
    /** @type {Map<string, PtyFrame[]>} */
    this.queued = new Map();
    /** Frames dropped from full queues, per session (a pane shows it). @type {Map<string, number>} */
    this.dropped = new Map();
    this.disposed = false;
    /** @type {Array<() => void>} */
    this.cleanups = [];
    this.outputFunctionId = iii.browserId ? `${PTY_OUTPUT_HANDLER}::${iii.browserId}` : null;
    if (typeof iii.on === "function" && this.outputFunctionId) {
      const off = iii.on(PTY_OUTPUT_HANDLER, (payload) => this.deliver(payload).then(() => ({})));
      if (typeof off === "function") this.cleanups.push(off);
    } else {
      this.outputFunctionId = null;
    }
  }

  /** Whether terminals can run here (a per-tab handler and a browser id). */
  get available() {
    return !this.disposed && this.outputFunctionId !== null;
  }

  /**
   * One delivery from the worker. Resolves once the frame is applied (or
   * known to be a duplicate, or queued for a session not held yet).
   * @param {any} payload @returns {Promise<void>}
   */
  deliver(payload) {
    if (this.disposed || !isFrame(payload)) return Promise.resolve();
    const h = this.holders.get(payload.session_id);
    if (!h) {
      this.enqueue(payload);
      return Promise.resolve();
    }
    if (payload.sequence <= h.last) return Promise.resolve();
    return new Promise((resolve) => {
      const prev = h.ahead.get(payload.sequence);
      if (prev) {
        // a retry of a frame still waiting: answer both when it is applied
        const before = prev.done;
        prev.done = () => {
          before();
          resolve();
        };
        return;
      }
      if (h.ahead.size >= MAX_AHEAD) {
        // cannot happen with the worker's window of four; never grow without bound
        const first = Math.min(...h.ahead.keys());
        const f = h.ahead.get(first);
        h.ahead.delete(first);
        f?.done();
      }
      h.ahead.set(payload.sequence, { frame: payload, done: resolve });
      if (!h.paused) this.drain(h);
    });
  }

  /** @param {PtyFrame} frame */
  enqueue(frame) {
    let q = this.queued.get(frame.session_id);
    if (!q) {
      if (this.queued.size >= MAX_QUEUED_SESSIONS) {
        const oldest = this.queued.keys().next().value;
        if (oldest !== undefined) this.queued.delete(oldest);
      }
      q = [];
      this.queued.set(frame.session_id, q);
    }
    if (q.some((f) => f.sequence === frame.sequence)) return;
    q.push(frame);
    if (q.length > MAX_QUEUED_FRAMES) {
      q.sort((a, b) => a.sequence - b.sequence);
      q.splice(0, q.length - MAX_QUEUED_FRAMES);
      this.dropped.set(frame.session_id, (this.dropped.get(frame.session_id) ?? 0) + 1);
    }
  }

  /**
   * Take `sessionId`'s frames from now on; they wait until `release`. Call
   * it before the attach or adopt that makes the worker send them, so a live
   * frame racing the reply is kept, not lost.
   * @param {string} sessionId @param {FrameSink} sink
   */
  hold(sessionId, sink) {
    const prev = this.holders.get(sessionId);
    if (prev) this.unhold(sessionId, prev);
    const h = new Holder(sink, 0);
    this.holders.set(sessionId, h);
    const q = this.queued.get(sessionId) ?? [];
    this.queued.delete(sessionId);
    for (const f of q) h.ahead.set(f.sequence, { frame: f, done: () => {} });
    return () => this.unhold(sessionId, h);
  }

  /**
   * Start applying: `last` is the last sequence already applied (the
   * attach reply's frames are applied by the caller first). What is at or
   * below it is dropped; the rest is applied in order.
   * @param {string} sessionId @param {number} last
   */
  release(sessionId, last) {
    const h = this.holders.get(sessionId);
    if (!h) return;
    h.last = Math.max(h.last, last);
    h.paused = false;
    this.drain(h);
  }

  /** @param {Holder} h */
  drain(h) {
    for (const [seq, f] of h.ahead) {
      if (seq <= h.last) {
        h.ahead.delete(seq);
        f.done();
      }
    }
    // a frame numbered like the last one applied is a truncated-replay redraw's twin; never a gap
    for (let next = h.ahead.get(h.last + 1); next; next = h.ahead.get(h.last + 1)) {
      const seq = h.last + 1;
      h.ahead.delete(seq);
      h.last = seq;
      const { frame, done } = next;
      h.chain = h.chain
        .then(() => (h.closed ? undefined : h.sink(frame)))
        .catch((e) => console.error("ide: a terminal failed to apply a frame", e))
        .then(done);
    }
  }

  /** The last sequence applied for `sessionId` (0 when not held). @param {string} sessionId */
  lastApplied(sessionId) {
    return this.holders.get(sessionId)?.last ?? 0;
  }

  /** @param {string} sessionId @param {Holder} h */
  unhold(sessionId, h) {
    if (this.holders.get(sessionId) !== h) return;
    this.holders.delete(sessionId);
    h.closed = true;
    for (const f of h.ahead.values()) f.done();
    h.ahead.clear();
  }

  dispose() {
    this.disposed = true;
    for (const [id, h] of [...this.holders]) this.unhold(id, h);
    this.queued.clear();
    for (const fn of this.cleanups.splice(0).reverse()) {
      try {
        fn();
      } catch {
        // the handler went with the connection
      }
    }
  }
}
