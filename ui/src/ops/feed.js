// The jobs pane's live feed, one per loaded asset (created in setup(),
// disposed by its teardown, like the terminals' output router): the per-tab
// handler `iii::ide-ui::job-finished::<browserId>` and ONE unfiltered
// `shell::job-finished` binding to it, through the host. Each delivery goes
// to the jobs store, which re-reads the list (deliveries are unordered and
// may repeat; the store converges). A reconnect re-reads too: the worker
// may have restarted and lost its records.

import { JobsStore } from "../models/jobs.js";

/** The base id of the per-tab completion handler; the console appends `::<browserId>`. */
export const JOB_FINISHED_HANDLER = "iii::ide-ui::job-finished";

export class JobFeed {
  /** @param {import("../app.js").App} app */
  constructor(app) {
    this.app = app;
    this.iii = app.iii;
    this.store = new JobsStore((id, payload) => app.api.call(id, payload));
    /** @type {Array<() => void>} */
    this.cleanups = [];
    /** @type {null | (() => void)} */
    this.unbind = null;
    /** @type {null | {code: string, message: string}} */
    this.bindError = null;
    this.disposed = false;
    const iii = this.iii;
    this.handlerId = iii.browserId ? `${JOB_FINISHED_HANDLER}::${iii.browserId}` : null;
    if (typeof iii.on !== "function" || !this.handlerId) {
      this.bindError = { code: "unsupported", message: "this console cannot receive events; the job list refreshes on demand only" };
    } else {
      const off = iii.on(JOB_FINISHED_HANDLER, (payload) => {
        if (!this.disposed) void this.store.event(payload);
        return {};
      });
      if (typeof off === "function") this.cleanups.push(off);
      this.bind();
    }
    // another host chosen: its completions, its list
    this.cleanups.push(
      app.onHost(() => {
        if (this.unbind) this.bind();
        void this.store.refresh();
      }),
    );
    // back on the engine, with ide answering: bind afresh (as the root's binding does) and re-read
    this.cleanups.push(
      app.onReconnect(() => {
        if (this.unbind) this.bind();
        void this.store.refresh();
      }),
    );
  }

  /** The one unfiltered binding (a previous one is dropped first). */
  bind() {
    this.dropBinding();
    if (this.disposed || !this.handlerId) return;
    if (typeof this.iii.registerTrigger !== "function") {
      this.bindError = { code: "unsupported", message: "this console cannot register triggers; the job list refreshes on demand only" };
      return;
    }
    try {
      // no job_id: every future completion of this worker's background jobs
      const handle = this.iii.registerTrigger(this.app.triggerInput("shell::job-finished", this.handlerId, {}));
      this.unbind = typeof handle === "function" ? handle : handle && typeof handle.unregister === "function" ? () => handle.unregister() : () => {};
      this.bindError = null;
    } catch (e) {
      const o = /** @type {any} */ (e);
      this.bindError = { code: o?.code ?? "error", message: o?.message ?? String(e) };
    }
  }

  dropBinding() {
    const off = this.unbind;
    this.unbind = null;
    try {
      off?.();
    } catch {
      // gone with the connection already
    }
  }

  dispose() {
    this.disposed = true;
    this.dropBinding();
    for (const fn of this.cleanups.splice(0).reverse()) {
      try {
        fn();
      } catch {
        // gone with the connection already
      }
    }
  }
}
