// What the page knows of the code it shows, from ide's code-intelligence
// functions: each open file's outline (coder::symbols), diagnostics
// (coder::diagnostics), the last references and definition answers, and
// the once-said notes about missing language servers. No DOM here: the
// editor extensions and panels read this store and call its methods.
//
// Positions on the wire are 1-based lines and 1-based *byte* columns (the
// convention of coder::search); the editor counts UTF-16 code units. The
// two helpers below convert within one line's text.

import { Store } from "./store.js";

const encoder = new TextEncoder();

/** The 1-based byte column of a UTF-16 index into `lineText`. @param {string} lineText @param {number} index */
export function byteColumn(lineText, index) {
  return encoder.encode(lineText.slice(0, Math.max(0, Math.min(index, lineText.length)))).length + 1;
}

/**
 * The UTF-16 index into `lineText` of a 1-based byte column (a column inside
 * a character lands on that character; past the end lands at the end).
 * @param {string} lineText @param {number} column
 */
export function charIndex(lineText, column) {
  let bytes = 0;
  let i = 0;
  const want = Math.max(0, column - 1);
  while (i < lineText.length && bytes < want) {
    const cp = /** @type {number} */ (lineText.codePointAt(i));
    const width = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + width > want) break;
    bytes += width;
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}

/**
 * @typedef {{name: string, name_path: string, kind: string, line: number, column: number, end_line: number, signature?: string, children?: Sym[]}} Sym
 * @typedef {{path: string, line: number, column: number, text?: string, role?: string, outside_roots?: boolean}} Ref
 * @typedef {{severity: string, line: number, column: number, end_line: number, end_column: number, code?: string | null, source?: string | null, message: string}} Diag
 */

/**
 * The chain of symbols whose lines hold `line`, outermost first (the
 * breadcrumbs; the last is the one the outline marks).
 * @param {Sym[]} symbols @param {number} line @returns {Sym[]}
 */
export function symbolChain(symbols, line) {
  /** @type {Sym[]} */
  const chain = [];
  let level = symbols;
  for (;;) {
    const hit = level.find((s) => s.line <= line && line <= Math.max(s.end_line, s.line));
    if (!hit) return chain;
    chain.push(hit);
    level = hit.children ?? [];
  }
}

/** Count symbols at every depth. @param {Sym[]} symbols @returns {number} */
export function countSymbols(symbols) {
  let n = 0;
  for (const s of symbols) n += 1 + countSymbols(s.children ?? []);
  return n;
}

/**
 * References grouped by file, in the order the answer gave them (files and
 * lines), with each group's count.
 * @param {Ref[]} refs @param {(p: string) => string} abs
 * @returns {Array<{path: string, refs: Ref[]}>}
 */
export function groupByFile(refs, abs) {
  /** @type {Map<string, Ref[]>} */
  const groups = new Map();
  for (const r of refs) {
    const p = abs(r.path);
    if (!groups.has(p)) groups.set(p, []);
    /** @type {Ref[]} */ (groups.get(p)).push(r);
  }
  return [...groups].map(([path, list]) => ({ path, refs: list }));
}

/**
 * A line's text split around the match at a 1-based byte column of
 * `nameBytes` bytes: [before, match, after] (the match empty when the
 * column is past the text).
 * @param {string} text @param {number} column @param {string} name
 */
export function splitMatch(text, column, name) {
  const from = charIndex(text, column);
  const to = charIndex(text, column + encoder.encode(name).length);
  return [text.slice(0, from), text.slice(from, to), text.slice(to)];
}

/** @param {Diag[]} list */
export function severityCounts(list) {
  const c = { error: 0, warning: 0, info: 0 };
  for (const d of list) {
    if (d.severity === "error") c.error++;
    else if (d.severity === "warning") c.warning++;
    else c.info++;
  }
  return c;
}

/**
 * The 0-based offsets of a diagnostic in a document given as its lines
 * (1-based line/byte column on the wire), clamped to the text: a range the
 * text no longer has shrinks to the end rather than throwing.
 * @param {(n: number) => string} lineText the text of line n (1-based)
 * @param {(n: number) => number} lineStart the offset of line n
 * @param {number} lines how many lines the document has
 * @param {{line: number, column: number, end_line: number, end_column: number}} d
 */
export function diagnosticRange(lineText, lineStart, lines, d) {
  const at = (/** @type {number} */ line, /** @type {number} */ column) => {
    const n = Math.max(1, Math.min(line, lines));
    return lineStart(n) + charIndex(lineText(n), line > lines ? Number.MAX_SAFE_INTEGER : column);
  };
  const from = at(d.line, d.column);
  const to = Math.max(from, at(d.end_line || d.line, d.end_column || d.column));
  return { from, to };
}

/** What a language server's markdown hover says, as plain blocks: code fences become code, the rest text.
 * @param {string} contents @returns {Array<{code: boolean, text: string}>} */
export function hoverBlocks(contents) {
  /** @type {Array<{code: boolean, text: string}>} */
  const out = [];
  const parts = contents.split(/^```[^\n]*\n?/m);
  parts.forEach((p, i) => {
    // a markdown rule (`---`) only separates the signature from the doc: the block boundary says that
    const text = i % 2 === 1 ? p.replace(/\n$/, "") : p.replace(/^\s*(?:-{3,}|\*{3,}|_{3,})\s*$/gm, "").trim();
    if (text) out.push({ code: i % 2 === 1, text });
  });
  return out;
}

/** The one-letter mark of a symbol kind (the outline's and Ctrl+T's icons). @param {string} kind */
export function kindMark(kind) {
  switch (kind) {
    case "class":
      return "C";
    case "struct":
    case "union":
      return "S";
    case "enum":
      return "E";
    case "enum_member":
      return "e";
    case "interface":
    case "trait":
      return "I";
    case "impl":
      return "i";
    case "type":
      return "T";
    case "function":
    case "prototype":
      return "ƒ";
    case "method":
    case "constructor":
      return "m";
    case "field":
      return "f";
    case "constant":
      return "K";
    case "variable":
      return "v";
    case "module":
    case "namespace":
      return "N";
    case "macro":
      return "!";
    default:
      return "·";
  }
}

/**
 * @typedef {{revision: string | null, symbols: Sym[], language: string | null, note?: string | null, error?: any}} Outline
 * @typedef {{revision: string | null, list: Diag[], stale: boolean, server: string | null}} FileDiags
 * @typedef {{name: string, language: string | null, precision: string, server: string | null, note: string | null, stop: string | null, total: number, groups: Array<{path: string, refs: Ref[]}>}} RefsAnswer
 */

/** The page is not short of room: a file's whole outline (the agents' default is 32 KiB). */
const OUTLINE_BYTES = 4 << 20;

/** Extensions ide parses (coder::symbols): the files whose missing language server is worth a note, and whose diagnostics the page asks for. */
export const CODE_EXTENSIONS = new Set(["rs", "py", "pyi", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "go", "java", "c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"]);

/** @param {string} path */
export function extensionOf(path) {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
}

/** @param {string} path */
export function isCode(path) {
  return CODE_EXTENSIONS.has(extensionOf(path));
}

export class CodeModel extends Store {
  /**
   * @param {(id: string, payload: any) => Promise<any>} call
   * @param {string} root the browsed root (where Ctrl+T looks)
   * @param {(p: string) => string} abs a path of an answer, absolute
   */
  constructor(call, root, abs) {
    super();
    this.call = call;
    this.root = root;
    this.abs = abs;
    /** @type {Map<string, Outline>} */
    this.outlines = new Map();
    /** @type {Map<string, FileDiags>} */
    this.diagnostics = new Map();
    /** @type {RefsAnswer | null} */
    this.references = null;
    /** @type {any} the last references call's error */
    this.referencesError = null;
    this.referencesBusy = false;
    /** Where the cursor is in the active file. @type {{path: string, line: number} | null} */
    this.cursor = null;
    /** The last semantic/structural mark: what answered the last navigation. @type {{what: string, precision: string, server: string | null, note: string | null} | null} */
    this.precision = null;
    /** A language server that would add diagnostics, said once per server: {server, message}. @type {{key: string, message: string} | null} */
    this.serverNote = null;
    /** @type {Set<string>} notes already said (kept by the page across reloads) */
    this.saidNotes = new Set();
    /** Extensions the worker has no language server for (no hover asked there). @type {Set<string>} */
    this.serverless = new Set();
    /** Outline calls in flight, by path. @type {Map<string, Promise<void>>} */
    this.loadingOutline = new Map();
    /** Diagnostics asked but not yet answered, by path. @type {Set<string>} */
    this.diagnosing = new Set();
    /** Diagnostics calls answered (or failed) so far. */
    this.rounds = 0;
  }

  /** @param {string} path @param {number} line */
  setCursor(path, line) {
    if (this.cursor?.path === path && this.cursor.line === line) return;
    this.cursor = { path, line };
    this.changed();
  }

  /**
   * The outline of `path` at `revision`, asked once per revision. `null`
   * (the revision is not known yet: the file is being opened) asks at once,
   * so the outline is read beside the file instead of after it; a call for
   * a known revision waits for one in flight and asks again only if that
   * answered another revision.
   * @param {string} path @param {string | null} revision
   */
  async loadOutline(path, revision) {
    const inFlight = this.loadingOutline.get(path);
    if (inFlight) await inFlight;
    const have = this.outlines.get(path);
    if (have && !have.error && (revision === null || have.revision === revision)) return;
    const again = this.loadingOutline.get(path);
    if (again) return again;
    const call = (async () => {
      try {
        const out = await this.call("coder::symbols", { path, max_answer_bytes: OUTLINE_BYTES });
        const note = out.note ?? (out.degraded ? `Shortened to fit: ${out.degraded}` : null);
        this.outlines.set(path, { revision: out.revision ?? revision, symbols: out.symbols ?? [], language: out.language ?? null, note });
      } catch (e) {
        this.outlines.set(path, { revision, symbols: [], language: null, error: e });
      } finally {
        this.loadingOutline.delete(path);
        this.changed();
      }
    })();
    this.loadingOutline.set(path, call);
    return call;
  }

  /** @param {string} path */
  forget(path) {
    this.outlines.delete(path);
    this.diagnostics.delete(path);
    this.changed();
  }

  /**
   * Diagnostics for files as they are on disk now, one call per file, all
   * at once: a server that publishes nothing for a file whose diagnostics
   * did not change (typescript-language-server, for a file that stays
   * clean) makes that file's answer wait its whole wait_ms, and it must not
   * hold back the others. Files with no server get no entry; the first
   * such answer of each extension is said once (serverNote).
   * @param {string[]} paths
   */
  async diagnose(paths) {
    const want = [...new Set(paths)].filter(isCode).slice(0, 50);
    if (!want.length) return;
    for (const p of want) this.diagnosing.add(p);
    this.changed();
    await Promise.all(want.map((p) => this.diagnoseOne(p)));
    this.rounds++;
    this.changed();
  }

  /** @param {string} want */
  async diagnoseOne(want) {
    try {
      const out = await this.call("coder::diagnostics", { paths: [want], wait_ms: 5000 });
      for (const f of out.files ?? []) {
        const path = this.abs(f.path);
        if (f.error && !f.language_server) {
          this.diagnostics.delete(path);
          this.noteMissingServer(path, f.error);
          continue;
        }
        this.serverless.delete(extensionOf(path));
        this.diagnostics.set(path, { revision: f.revision ?? null, list: f.diagnostics ?? [], stale: Boolean(f.stale), server: f.language_server ?? null });
      }
    } catch {
      // a file that went away or a worker restart: the next save or change asks again
    } finally {
      this.diagnosing.delete(want);
      this.changed();
    }
  }

  /** Say once (per extension) that a server would add diagnostics. @param {string} path @param {string} why */
  noteMissingServer(path, why) {
    const key = extensionOf(path);
    this.serverless.add(key);
    if (this.saidNotes.has(key)) return;
    this.saidNotes.add(key);
    this.serverNote = { key, message: why };
  }

  dismissServerNote() {
    this.serverNote = null;
    this.changed();
  }

  /** Every file's diagnostics, errors first then by path and line. */
  problems() {
    /** @type {Array<Diag & {path: string}>} */
    const all = [];
    for (const [path, f] of this.diagnostics) for (const d of f.list) all.push({ ...d, path });
    const rank = (/** @type {string} */ s) => (s === "error" ? 0 : s === "warning" ? 1 : 2);
    return all.sort((a, b) => rank(a.severity) - rank(b.severity) || a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column);
  }

  counts() {
    const c = { error: 0, warning: 0, info: 0 };
    for (const f of this.diagnostics.values()) {
      const s = severityCounts(f.list);
      c.error += s.error;
      c.warning += s.warning;
      c.info += s.info;
    }
    return c;
  }

  /** @param {string} what @param {any} out */
  markPrecision(what, out) {
    this.precision = { what, precision: out.precision ?? "syntactic", server: out.language_server ?? null, note: out.note ?? null };
    this.changed();
  }

  /** @param {string} path @param {number} line @param {number} column */
  async definition(path, line, column) {
    const out = await this.call("coder::definition", { path, line, column });
    this.markPrecision("definition", out);
    return out;
  }

  /** @param {string} path @param {number} line @param {number} column */
  async findReferences(path, line, column) {
    this.referencesBusy = true;
    this.referencesError = null;
    this.changed();
    try {
      const out = await this.call("coder::references", { path, line, column, max_results: 2000 });
      const refs = /** @type {Ref[]} */ (out.references ?? []);
      this.references = {
        name: out.name ?? "",
        language: out.language ?? null,
        precision: out.precision ?? "syntactic",
        server: out.language_server ?? null,
        note: out.note ?? null,
        stop: out.stop_reason ?? null,
        total: typeof out.total === "number" ? out.total : refs.length,
        groups: groupByFile(refs, this.abs),
      };
      this.markPrecision("references", out);
      return this.references;
    } catch (e) {
      this.references = null;
      this.referencesError = e;
      return null;
    } finally {
      this.referencesBusy = false;
      this.changed();
    }
  }

  /** @param {string} query */
  findSymbols(query) {
    return this.call("coder::find-symbol", { name_path: query, path: this.root, substring: true, max_results: 50 });
  }

  /** @param {{path: string, line: number, column: number, new_name: string, dry_run: boolean}} req */
  rename(req) {
    return this.call("coder::rename", req);
  }

  /** @param {string} path @param {number} line @param {number} column */
  hover(path, line, column) {
    return this.call("coder::hover", { path, line, column });
  }
}
