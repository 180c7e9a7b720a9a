import { Store } from "./store.js";
// The jobs pane's state: `shell::list` summaries, live from an unfiltered
// `shell::job-finished` binding. Deliveries are unordered and may repeat, and
// a list answer can be older than an event that came after it was asked
// for, so the view converges instead of trusting arrival order:
//  - every event (and every start or kill) asks for a fresh list, read one
//    at a time: one asked for during a read is one more read after it, so
//    the last read always starts after the last event;
//  - a job never goes back from a terminal status to `running`: an event
//    or a status read that saw it end wins over a list that did not yet;
//  - argv is not in the list (redacted); it is kept from what the page
//    started, from events and from status reads.
// Pure: `call(functionId, payload)` is injected.

/**
 * @typedef {"running" | "finished" | "killed" | "failed"} JobStatus
 * @typedef {{id: string, status: JobStatus, exit_code?: number | null, started_at_ms: number, finished_at_ms?: number | null, stdout_truncated?: boolean, stderr_truncated?: boolean}} JobSummary
 * @typedef {JobSummary & {argv?: string[], stdout: string, stderr: string, signal?: string | null}} JobRecord
 * @typedef {{code: string, message: string}} WireError
 */

/** @param {string} s */
export const isTerminal = (s) => s === "finished" || s === "killed" || s === "failed";

/** The newer of two views of one job: terminal beats running, then the later finish. @param {JobSummary | undefined} a @param {JobSummary} b */
export function newer(a, b) {
  if (!a) return b;
  if (isTerminal(a.status) && !isTerminal(b.status)) return a;
  return { ...a, ...b };
}

/** One line for a job's end: `exit 0`, `killed`, `failed (exit 2)`, `running`. @param {Partial<JobRecord>} j */
export function outcome(j) {
  if (j.status === "running") return "running";
  const parts = [];
  if (j.status !== "finished") parts.push(j.status);
  if (typeof j.exit_code === "number") parts.push(`exit ${j.exit_code}`);
  if (j.signal) parts.push(`signal ${j.signal}`);
  if (parts.length === 0) parts.push(j.status ?? "?");
  return parts.join(", ");
}

/** @param {number} ms */
export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export class JobsStore extends Store {
  /** @param {(id: string, payload: any) => Promise<any>} call */
  constructor(call) {
    super();
    this.call = call;
    /** @type {Map<string, JobSummary>} */
    this.jobs = new Map();
    /** @type {Map<string, string[]>} */
    this.argv = new Map();
    /** The open job's full record. @type {JobRecord | null} */
    this.detail = null;
    /** @type {string | null} */
    this.selected = null;
    /** @type {WireError | null} */
    this.error = null;
    /** @type {WireError | null} */
    this.detailError = null;
    /** @type {null | {job_id: string, text: string}} */
    this.note = null;
    /** The list read in flight. @type {Promise<void> | null} */
    this.reading = null;
    this.again = false;
  }

  /** Newest first. */
  rows() {
    return [...this.jobs.values()]
      .map((j) => ({ ...j, argv: this.argv.get(j.id) ?? null }))
      .sort((a, b) => b.started_at_ms - a.started_at_ms || (a.id < b.id ? 1 : -1));
  }

  /**
   * Ask for the list. One read at a time: asked for while one is in flight,
   * one more read follows it (a burst of events costs two reads, and the
   * last one starts after the last event). Resolves when the list, and the
   * open job's record, are read.
   */
  refresh() {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        do {
          this.again = false;
          await this.readList();
        } while (this.again);
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }

  async readList() {
    try {
      const out = await this.call("shell::list", {});
      /** @type {Map<string, JobSummary>} */
      const next = new Map();
      for (const j of Array.isArray(out?.jobs) ? out.jobs : []) {
        if (!j || typeof j.id !== "string") continue;
        next.set(j.id, newer(this.jobs.get(j.id), j));
      }
      // a job the list no longer has was pruned (or the worker restarted)
      this.jobs = next;
      this.error = null;
    } catch (e) {
      this.error = /** @type {any} */ (e);
    }
    this.changed();
    if (this.selected) await this.open(this.selected, false);
  }

  /** A `shell::job-finished` delivery: any order, maybe twice. @param {any} e */
  async event(e) {
    if (!e || typeof e.job_id !== "string" || !isTerminal(e.status)) return;
    if (Array.isArray(e.argv)) this.argv.set(e.job_id, e.argv.map(String));
    const prev = this.jobs.get(e.job_id);
    this.jobs.set(
      e.job_id,
      newer(prev, {
        id: e.job_id,
        status: e.status,
        exit_code: e.exit_code ?? null,
        started_at_ms: e.started_at_ms ?? prev?.started_at_ms ?? 0,
        finished_at_ms: e.finished_at_ms ?? null,
        stdout_truncated: prev?.stdout_truncated ?? false,
        stderr_truncated: prev?.stderr_truncated ?? false,
      }),
    );
    this.changed();
    await this.refresh();
  }

  /** Start argv as a background job in `cwd`. @param {string[]} argv @param {string} cwd */
  async start(argv, cwd) {
    const out = await this.call("shell::exec_bg", { command: argv[0], args: argv.slice(1), cwd });
    const id = String(out.job_id);
    // the worker's word when shell operators went in as plain arguments
    this.note = typeof out.note === "string" && out.note ? { job_id: id, text: out.note } : null;
    this.argv.set(id, Array.isArray(out.argv) ? out.argv.map(String) : argv);
    if (!this.jobs.has(id)) this.jobs.set(id, { id, status: "running", exit_code: null, started_at_ms: Date.now(), finished_at_ms: null });
    this.selected = id;
    this.detail = null;
    this.changed();
    await this.refresh();
    return id;
  }

  /** @param {string} id */
  async kill(id) {
    const out = await this.call("shell::kill", { job_id: id });
    await this.refresh();
    return out;
  }

  /** Read one job's full record (output included). @param {string} id @param {boolean} [select] */
  async open(id, select = true) {
    if (select) {
      this.selected = id;
      if (this.detail?.id !== id) this.detail = null;
      this.detailError = null;
      this.changed();
    }
    try {
      const out = await this.call("shell::status", { job_id: id });
      const job = out?.job;
      if (!job || this.selected !== id) return;
      if (Array.isArray(job.argv)) this.argv.set(id, job.argv.map(String));
      const merged = newer(this.jobs.get(id), job);
      this.jobs.set(id, merged);
      // a status read never shows an older state than the record already shown
      this.detail = this.detail && this.detail.id === id && isTerminal(this.detail.status) && !isTerminal(job.status) ? this.detail : { ...job };
      this.detailError = null;
    } catch (e) {
      if (this.selected !== id) return;
      this.detailError = /** @type {any} */ (e);
    }
    this.changed();
  }

  close() {
    this.selected = null;
    this.detail = null;
    this.detailError = null;
    this.changed();
  }
}
