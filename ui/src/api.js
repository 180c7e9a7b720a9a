// The page's calls into ide, over whatever `host.iii` the console gives.
// Every failure becomes {code, message} (the wire error), never swallowed.

/**
 * @typedef {{code: string, message: string}} WireError
 * @typedef {{
 *   trigger: (id: string, payload?: any, options?: {timeoutMs?: number}) => Promise<any>,
 *   on?: (id: string, handler: (payload: any) => any, options?: any) => () => void,
 *   registerTrigger?: (input: {type: string, function_id: string, config: any}) => (() => void) | {unregister: () => void},
 *   addConnectionStateListener?: (fn: (state: string) => void) => () => void,
 *   browserId?: string,
 * }} HostIii
 */

const DEFAULT_TIMEOUT_MS = 30_000;

export class CallError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** Normalize whatever a client rejected with. @param {unknown} e @returns {CallError} */
export function asCallError(e) {
  if (e instanceof CallError) return e;
  const o = /** @type {any} */ (e);
  if (o && typeof o === "object") {
    const body = o.error && typeof o.error === "object" ? o.error : o;
    if (typeof body.code === "string" && typeof body.message === "string") return new CallError(body.code, body.message);
    if (typeof o.message === "string") {
      const m = /^\s*(?:remote error \()?([A-Z]\d{3})\)?[:\s]\s*([\s\S]*)$/.exec(o.message);
      if (m) return new CallError(m[1], m[2]);
      return new CallError(typeof o.code === "string" ? o.code : "error", o.message);
    }
  }
  return new CallError("error", String(e));
}

/**
 * One ide the engine routes to: the namespace it serves and its worker name.
 * @typedef {{namespace: string, worker_name: string}} HostId
 */

export class Api {
  /** @param {HostIii} iii */
  constructor(iii) {
    this.iii = iii;
    /** The namespace of the ide this page works with (null: the console's own, where calls go unnamed). @type {string | null} */
    this.namespace = null;
    /** When the page last sent terminal input (ms since the epoch; 0: never). */
    this.lastKeystrokeAt = 0;
  }

  /** @param {string} id @param {any} payload @param {number} [timeoutMs] */
  async call(id, payload, timeoutMs = DEFAULT_TIMEOUT_MS) {
    // typing in a terminal: background checks wait (see App.watchWorker)
    if (id === "shell::pty::write") this.lastKeystrokeAt = Date.now();
    try {
      // the console's client takes {timeoutMs} (and routes by `namespace`); a client without options ignores them
      const options = this.namespace ? { timeoutMs, namespace: this.namespace } : { timeoutMs };
      return await this.iii.trigger(id, payload, options);
    } catch (e) {
      throw asCallError(e);
    }
  }

  /**
   * Every ide the engine routes to, by namespace (the rows of the engine's
   * function list that serve shell::workspace::roots). Empty when the
   * engine cannot list its functions.
   * @returns {Promise<HostId[]>}
   */
  async hosts() {
    let out;
    try {
      out = await this.iii.trigger("engine::functions::list", { prefix: "shell::workspace::roots" }, { timeoutMs: 10_000 });
    } catch {
      return [];
    }
    /** @type {HostId[]} */
    const found = [];
    for (const f of out?.functions ?? []) {
      if (f?.function_id !== "shell::workspace::roots") continue;
      const namespace = typeof f.namespace === "string" ? f.namespace : "default";
      if (!found.some((h) => h.namespace === namespace)) found.push({ namespace, worker_name: String(f.worker_name ?? "ide") });
    }
    return found.sort((a, b) => (a.namespace === "default" ? -1 : b.namespace === "default" ? 1 : a.namespace.localeCompare(b.namespace)));
  }

  /**
   * The picker's roots, from the ide this Api points at. An answer from
   * another namespace (a console whose client does not route by namespace)
   * is refused: the page must never show one host's files as another's.
   */
  async roots() {
    const r = await this.call("shell::workspace::roots", {});
    const answered = r?.host?.namespace;
    if (this.namespace && answered && answered !== this.namespace) {
      throw new CallError(
        "wrong_host",
        `asked the ide in namespace "${this.namespace}" but the ide in "${answered}" answered: this console's client does not route calls by namespace, so only the ide in its own namespace can be used here`,
      );
    }
    return r;
  }

  /** @param {string} path @param {string} [cursor] */
  listDirs(path, cursor) {
    return this.call("shell::workspace::list", cursor ? { path, cursor } : { path });
  }

  /** @param {string} path */
  validate(path) {
    return this.call("shell::workspace::validate", { path });
  }

  /** @param {string} path @param {number} page @param {number} pageSize */
  listFolder(path, page, pageSize) {
    return this.call("coder::list-folder", { path, page, page_size: pageSize });
  }

  /** @param {string} path @param {number} offset @param {number} length */
  readBytes(path, offset, length) {
    return this.call("shell::workspace::read-bytes", { path, offset, length });
  }

  /** Whole-file text read, with its revision. @param {string} path @param {number} maxBytes */
  async readText(path, maxBytes) {
    const out = await this.call("coder::read-file", { path, max_output_bytes: maxBytes }, 60_000);
    return { content: out.content ?? "", revision: out.revision ?? null, size: out.size ?? 0, mode: typeof out.mode === "number" ? out.mode : null };
  }

  /**
   * Write the whole buffer. With a revision the write happens only if the
   * disk still holds it (C221 otherwise, nothing written); without one only
   * a new file is created (C213 if something is there).
   * The file's permission bits are written back as they were read.
   * @param {string} path @param {string} content @param {string | null} expectedRevision @param {number | null} [mode]
   */
  async save(path, content, expectedRevision, mode = null) {
    /** @type {any} */
    const spec = { path, content };
    if (expectedRevision) spec.expected_revision = expectedRevision;
    if (typeof mode === "number") spec.mode = `0${(mode & 0o777).toString(8)}`;
    const out = await this.call("coder::create-file", { files: [spec] }, 60_000);
    const r = out.results?.[0];
    if (!r) throw new CallError("error", "coder::create-file returned no result");
    if (!r.success) throw asCallError(r.error ?? { code: "error", message: "write failed" });
    return { revision: r.revision ?? null, change_id: r.change_id ?? null };
  }

  /** @param {any} req */
  search(req) {
    return this.call("coder::search", req, 60_000);
  }

  /** @param {string} changeId */
  changeDiff(changeId) {
    return this.call("coder::change-diff", { change_id: changeId });
  }
}
