// The chat cards' model: a function call of ide's (its input and its
// output, as the console's FunctionCallMessage carries them) checked field by
// field and turned into a plain view model. Anything this model does not
// recognise — an unknown function, a missing or mistyped field, an output it
// cannot parse — gives null, and the console renders the call its default
// way. Pure: no DOM, no React.

/** The functions that get a card. */
export const CARD_FUNCTIONS = ["coder::update-file", "coder::create-file", "coder::read-file", "coder::search", "shell::exec", "shell::exec_bg", "shell::status"];

/** Lines a card shows of one text before it says how many more there are. */
export const MAX_LINES = 40;
/** Hits of one file a search card shows. */
export const MAX_HITS_PER_FILE = 8;
/** Files a search card shows. */
export const MAX_FILES = 20;
/** Job states that end a job (shell::status polling stops there). */
export const TERMINAL_JOB_STATES = ["finished", "killed", "failed"];

/** @param {string} functionId */
export function isCardFunction(functionId) {
  return CARD_FUNCTIONS.includes(functionId);
}

const isObj = (/** @type {unknown} */ v) => !!v && typeof v === "object" && !Array.isArray(v);
const isStr = (/** @type {unknown} */ v) => typeof v === "string";
const isBool = (/** @type {unknown} */ v) => typeof v === "boolean";
const isCount = (/** @type {unknown} */ v) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= 0;
const isInt = (/** @type {unknown} */ v) => Number.isSafeInteger(v);
const optStr = (/** @type {unknown} */ v) => v == null || isStr(v);
const optCount = (/** @type {unknown} */ v) => v == null || isCount(v);
const optInt = (/** @type {unknown} */ v) => v == null || isInt(v);
const strArray = (/** @type {unknown} */ v) => Array.isArray(v) && v.every(isStr);

/** Not a card: the caller falls back. */
class Reject extends Error {}
/** @param {boolean} ok @returns {asserts ok} */
function need(ok) {
  if (!ok) throw new Reject();
}

/** A console may carry the output as the object or as its JSON text. @param {unknown} v */
function parsed(v) {
  if (typeof v !== "string") return v;
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
}

/** `{code, message}` — the wire error. @param {unknown} v @returns {{code: string, message: string} | null} */
export function wireError(v) {
  if (!isObj(v)) return null;
  const o = /** @type {any} */ (v);
  if (isStr(o.code) && isStr(o.message) && o.code.length > 0) return { code: o.code, message: o.message };
  return null;
}

/**
 * The error a console put on the message itself: the wire error, wrapped in
 * `{error}`, or a client's text that starts with the code ("C211: …",
 * "remote error (C211): …").
 * @param {unknown} v
 */
function messageError(v) {
  const direct = wireError(v) ?? (isObj(v) ? wireError(/** @type {any} */ (v).error) : null);
  if (direct) return direct;
  if (isStr(v)) {
    const m = /^\s*(?:remote error \()?([A-Z]\d{3})\)?[:\s]\s*([\s\S]*)$/.exec(v);
    if (m) return { code: m[1], message: m[2] };
  }
  return null;
}

/**
 * A text's lines without the terminator of the last one.
 * @param {string} s
 */
export function splitLines(s) {
  if (s === "") return [];
  const lines = s.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** At most `max` of `lines`, and how many were left out. @param {string[]} lines @param {number} [max] */
function capped(lines, max = MAX_LINES) {
  return lines.length > max ? { lines: lines.slice(0, max), more: lines.length - max } : { lines, more: 0 };
}

/** The command line the call ran, shell-quoted for reading. @param {string[]} argv */
export function commandLine(argv) {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ");
}

/** The argv a shell::exec input asks for (command split only roughly: the answer's own argv wins when there is one). @param {any} input */
function inputArgv(input) {
  if (!isObj(input) || !isStr(input.command)) return null;
  if (Array.isArray(input.args) && input.args.every(isStr)) return [input.command, ...input.args];
  return input.command.trim().split(/\s+/).filter(Boolean);
}

/** @param {number} n */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

// ─── coder::update-file ───

/**
 * The text an op puts in the file and the text it took out, as lines (what
 * the echo marks): an edit's new and old text (which may sit inside a line),
 * an insert's or rewrite's whole lines.
 * @param {any} op
 * @returns {{added: string[], removed: string[], inline: boolean} | null}
 */
function opText(op) {
  if (!isObj(op)) return null;
  if ((op.op === "insert" || op.op === "update_lines") && isStr(op.content)) return { added: splitLines(op.content), removed: [], inline: false };
  if (op.op === "edit" && isStr(op.new_text)) return { added: splitLines(op.new_text), removed: isStr(op.old_text) ? splitLines(op.old_text) : [], inline: true };
  return null;
}

/**
 * One op, in a line (the text it adds or takes out is in its echo rows).
 * @param {any} op
 * @returns {{label: string}}
 */
export function describeOp(op) {
  if (!isObj(op) || !isStr(op.op)) return { label: "op" };
  const span = (/** @type {string} */ verb) => (op.from_line === op.to_line ? `${verb} line ${op.from_line}` : `${verb} lines ${op.from_line}–${op.to_line}`);
  switch (op.op) {
    case "insert":
      return { label: `insert before line ${op.at_line}` };
    case "remove":
      return { label: span("remove") };
    case "update_lines":
      return { label: span("rewrite") };
    case "replace":
      return { label: `replace /${isStr(op.pattern) ? op.pattern : ""}/${op.ignore_case ? "i" : ""} → ${JSON.stringify(isStr(op.replacement) ? op.replacement : "")}` };
    case "edit":
      return { label: op.replace_all ? "edit (every occurrence)" : "edit" };
    default:
      return { label: op.op };
  }
}

/**
 * Where the op's new lines sit among an echo's numbered lines: the first
 * line number of the run, and for an edit inside a line the text before and
 * after it. Lines of the run inside the echo's gap are not checked; at least
 * one must be shown.
 * @param {Map<number, string>} byLine @param {number} first @param {number} last
 * @param {string[]} added @param {boolean} inline
 * @returns {{start: number, prefix: string, suffix: string} | null}
 */
export function findRun(byLine, first, last, added, inline) {
  const n = added.length;
  if (!n || (n === 1 && added[0] === "")) return null;
  for (let o = first - n + 1; o <= last; o++) {
    if (o < first || o + n - 1 > last) continue;
    let seen = 0;
    let prefix = "";
    let suffix = "";
    let ok = true;
    for (let k = 0; k < n && ok; k++) {
      const text = byLine.get(o + k);
      if (text === undefined) continue;
      seen++;
      const want = added[k];
      if (!inline) ok = text === want;
      else if (n === 1) {
        const at = text.indexOf(want);
        ok = at >= 0;
        if (ok) {
          prefix = text.slice(0, at);
          suffix = text.slice(at + want.length);
        }
      } else if (k === 0) {
        ok = text.endsWith(want);
        if (ok) prefix = text.slice(0, text.length - want.length);
      } else if (k === n - 1) {
        ok = text.startsWith(want);
        if (ok) suffix = text.slice(want.length);
      } else ok = text === want;
    }
    if (ok && seen > 0) return { start: o, prefix, suffix };
  }
  return null;
}

/**
 * An echo as numbered rows, a unified diff of its op where the op says
 * enough: the gap `elided`/`elided_after` mark becomes a row of its own; the
 * op's new lines are marked added (a replace site's lines are all changed
 * ones); an exact edit's old text goes in as deleted rows right before them
 * (with the rest of the line it sat in), or at the top when its new text is
 * not in the echo.
 * @param {any} echo @param {any} op the request's op @param {boolean} [withRemoved]
 * @returns {Array<{kind: "line", line: number, text: string, added: boolean} | {kind: "del", text: string} | {kind: "gap", count: number}>}
 */
export function echoRows(echo, op, withRemoved = true) {
  need(isObj(echo) && isCount(echo.from_line) && strArray(echo.lines) && isCount(echo.op_index));
  need(optCount(echo.elided) && optCount(echo.elided_after) && optCount(echo.total_replacements));
  const lines = /** @type {string[]} */ (echo.lines);
  const elided = echo.elided ?? 0;
  const after = echo.elided ? (echo.elided_after ?? Math.ceil(lines.length / 2)) : lines.length;
  need(after <= lines.length);
  const numbered = lines.map((text, i) => ({ line: echo.from_line + i + (i >= after ? elided : 0), text }));
  const byLine = new Map(numbered.map((r) => [r.line, r.text]));
  const first = echo.from_line;
  const last = lines.length ? numbered[numbered.length - 1].line : first - 1;
  const text = opText(op);
  const isReplace = isObj(op) && op.op === "replace";
  const run = text ? findRun(byLine, first, last, text.added, text.inline) : null;
  const marked = (/** @type {number} */ line) => isReplace || (run !== null && line >= run.start && line < run.start + (text?.added.length ?? 0));
  /** @type {Array<any>} */
  const rows = [];
  numbered.forEach((r, i) => {
    if (i === after && elided) rows.push({ kind: "gap", count: elided });
    rows.push({ kind: "line", line: r.line, text: r.text, added: marked(r.line) });
  });
  if (after === lines.length && elided) rows.push({ kind: "gap", count: elided });
  const removed = withRemoved && text ? [...text.removed] : [];
  if (removed.length) {
    if (run) {
      removed[0] = run.prefix + removed[0];
      removed[removed.length - 1] += run.suffix;
    }
    const at = run ? rows.findIndex((r) => r.kind === "line" && r.added) : -1;
    rows.splice(at < 0 ? 0 : at, 0, ...removed.map((t) => ({ kind: "del", text: t })));
  }
  return rows;
}

/** @param {any} input @param {any} out */
function updateModel(input, out) {
  need(isObj(out) && Array.isArray(out.results) && out.results.length > 0);
  const specs = isObj(input) && Array.isArray(input.files) ? input.files : [];
  const files = out.results.map((/** @type {any} */ r, /** @type {number} */ i) => {
    need(isObj(r) && isStr(r.path) && isBool(r.success));
    need(Array.isArray(r.echoes) && isBool(r.echoes_truncated));
    need(isCount(r.applied) && isCount(r.new_line_count) && optStr(r.change_id) && optStr(r.revision));
    need(r.changed === undefined || isBool(r.changed));
    const error = r.success ? null : wireError(r.error);
    need(r.success || error !== null);
    const spec = specs[i];
    const ops = isObj(spec) && Array.isArray(spec.ops) ? spec.ops : [];
    // one block per op: a replace (or replace_all edit) echoes each site, joined here
    // with a break between sites that are not adjacent; an edit's old text goes in once
    /** @type {Array<{opIndex: number, op: any, totalReplacements: number | null, rows: any[]}>} */
    const echoes = [];
    for (const e of r.echoes) {
      const idx = isObj(e) ? e.op_index : undefined;
      const prev = echoes.length ? echoes[echoes.length - 1] : null;
      const same = prev !== null && prev.opIndex === idx;
      const rows = echoRows(e, ops[/** @type {number} */ (idx)], !same);
      if (same && prev) {
        const lastRow = [...prev.rows].reverse().find((x) => x.kind === "line");
        const firstRow = rows.find((x) => x.kind === "line");
        if (lastRow && firstRow && firstRow.line !== lastRow.line + 1) prev.rows.push({ kind: "gap", count: firstRow.line - lastRow.line - 1 });
        prev.rows.push(...rows);
      } else {
        echoes.push({ opIndex: idx, op: describeOp(ops[idx]), totalReplacements: e.total_replacements ?? null, rows });
      }
    }
    return {
      path: r.path,
      success: r.success,
      applied: r.applied,
      changed: r.changed !== false,
      newLineCount: r.new_line_count,
      changeId: r.change_id ?? null,
      revision: r.revision ?? null,
      ops: ops.map(describeOp),
      echoes,
      echoesTruncated: r.echoes_truncated,
      error,
    };
  });
  return { kind: "update", files, failed: files.filter((/** @type {any} */ f) => !f.success).length };
}

// ─── coder::create-file ───

/** @param {any} input @param {any} out */
function createModel(input, out) {
  need(isObj(out) && Array.isArray(out.results) && out.results.length > 0);
  const specs = isObj(input) && Array.isArray(input.files) ? input.files : [];
  const files = out.results.map((/** @type {any} */ r, /** @type {number} */ i) => {
    need(isObj(r) && isStr(r.path) && isBool(r.success) && optStr(r.change_id) && optStr(r.revision) && optCount(r.bytes_written));
    const error = r.success ? null : wireError(r.error);
    need(r.success || error !== null);
    const spec = specs[i];
    const content = isObj(spec) && isStr(spec.content) ? spec.content : null;
    const all = content === null ? [] : splitLines(content);
    const shown = capped(all, 20);
    return {
      path: r.path,
      success: r.success,
      bytesWritten: r.bytes_written ?? null,
      changeId: r.change_id ?? null,
      revision: r.revision ?? null,
      overwrite: isObj(spec) && spec.overwrite === true,
      lines: r.success ? shown.lines : [],
      more: r.success ? shown.more : 0,
      error,
    };
  });
  return { kind: "create", files, failed: files.filter((/** @type {any} */ f) => !f.success).length };
}

// ─── coder::read-file ───

/**
 * The numbered lines of a read: from the `N→` prefixes of a numbered read,
 * else counted from the window's first line.
 * @param {string} content @param {number} first @param {boolean} numbered
 */
export function codeLines(content, first, numbered) {
  const lines = splitLines(content);
  return lines.map((text, i) => {
    if (numbered) {
      const m = /^(\d+)→(.*)$/.exec(text);
      if (m) return { line: Number(m[1]), text: m[2] };
    }
    return { line: first + i, text };
  });
}

/** One read (the single answer or a batch entry). @param {any} r @param {any} req */
function readEntry(r, req) {
  need(isObj(r) && optStr(r.path) && optStr(r.content) && optStr(r.revision));
  need(optCount(r.size) && optCount(r.total_lines) && optCount(r.lines_returned) && (r.more_lines == null || isBool(r.more_lines)));
  const windowed = isObj(req) && (isCount(req.line_from) || isCount(req.line_to));
  const first = windowed && isCount(req.line_from) && req.line_from > 0 ? req.line_from : 1;
  const numbered = isObj(req) && req.numbered === true;
  const all = isStr(r.content) ? codeLines(r.content, first, numbered) : null;
  const shown = all ? capped(all) : null;
  return {
    path: isStr(r.path) ? r.path : isObj(req) && isStr(req.path) ? req.path : "",
    stat: r.content == null,
    lines: shown ? shown.lines : [],
    more: shown ? shown.more : 0,
    totalLines: r.total_lines ?? null,
    size: r.size ?? null,
    moreLines: r.more_lines === true,
    revision: r.revision ?? null,
    isUtf8: r.is_utf8 !== false,
  };
}

/** @param {any} input @param {any} out */
function readModel(input, out) {
  need(isObj(out));
  if (Array.isArray(out.results)) {
    need(out.results.length > 0);
    const paths = isObj(input) && Array.isArray(input.paths) ? input.paths : [];
    const entries = out.results.map((/** @type {any} */ r, /** @type {number} */ i) => {
      need(isObj(r) && isBool(r.success));
      const req = isStr(paths[i]) ? { path: paths[i] } : isObj(paths[i]) ? paths[i] : {};
      if (!r.success) {
        const error = wireError(r.error);
        need(error !== null);
        return { path: isStr(r.path) ? r.path : (req.path ?? ""), error };
      }
      return { ...readEntry(r, req), error: null };
    });
    return { kind: "read", entries, failed: entries.filter((/** @type {any} */ e) => e.error).length };
  }
  need(isStr(out.path));
  return { kind: "read", entries: [{ ...readEntry(out, input), error: null }], failed: 0 };
}

// ─── coder::search ───

/**
 * The match in a hit's line, as parts to mark: `column` is 1-based; a literal
 * query is marked where it really is at that column (case-insensitively), a
 * regex hit from the column to the end of its word.
 * @param {string} text @param {number | null} column @param {string} query @param {boolean} regex
 * @returns {Array<{text: string, mark: boolean}> | null}
 */
export function markHit(text, column, query, regex) {
  if (column == null || column < 1 || column > text.length) return null;
  const at = column - 1;
  let len = 0;
  if (!regex && query && text.slice(at, at + query.length).toLowerCase() === query.toLowerCase()) len = query.length;
  else if (regex) len = /^\w*/.exec(text.slice(at))?.[0].length ?? 0;
  if (!len) return null;
  return [
    { text: text.slice(0, at), mark: false },
    { text: text.slice(at, at + len), mark: true },
    { text: text.slice(at + len), mark: false },
  ];
}

/**
 * A file's hits as numbered rows: context lines shared by neighbouring hits
 * once, a hit line over a context line, a break where lines are skipped.
 * @param {Array<{line: number, column: number | null, text: string, before: string[], after: string[]}>} hits
 * @param {string} query @param {boolean} regex
 */
export function hitRows(hits, query, regex) {
  /** @type {Map<number, any>} */
  const byLine = new Map();
  for (const h of hits) {
    h.before.forEach((text, k) => {
      const line = h.line - h.before.length + k;
      if (!byLine.has(line)) byLine.set(line, { kind: "line", line, text, context: true });
    });
    byLine.set(h.line, { kind: "line", line: h.line, text: h.text, hit: true, parts: markHit(h.text, h.column, query, regex) });
    h.after.forEach((text, k) => {
      const line = h.line + 1 + k;
      if (!byLine.has(line)) byLine.set(line, { kind: "line", line, text, context: true });
    });
  }
  /** @type {any[]} */
  const rows = [];
  let prev = null;
  for (const line of [...byLine.keys()].sort((a, b) => a - b)) {
    if (prev !== null && line > prev + 1) rows.push({ kind: "break" });
    rows.push(byLine.get(line));
    prev = line;
  }
  return rows;
}

/** @param {any} input @param {any} out */
function searchModel(input, out) {
  need(isObj(out) && Array.isArray(out.content_matches) && isBool(out.truncated));
  need(out.path_matches == null || Array.isArray(out.path_matches));
  need(optCount(out.files_scanned) && optStr(out.stop_reason) && optStr(out.note));
  /** @type {Map<string, any[]>} */
  const byFile = new Map();
  for (const m of out.content_matches) {
    need(isObj(m) && isStr(m.path) && isCount(m.line) && isStr(m.text));
    need(optCount(m.column) && (m.before == null || strArray(m.before)) && (m.after == null || strArray(m.after)));
    let hits = byFile.get(m.path);
    if (!hits) byFile.set(m.path, (hits = []));
    hits.push({ line: m.line, column: m.column ?? null, text: m.text, before: m.before ?? [], after: m.after ?? [] });
  }
  const paths = (out.path_matches ?? []).map((/** @type {any} */ p) => {
    need(isObj(p) && isStr(p.path) && optStr(p.kind));
    return { path: p.path, kind: p.kind ?? "file" };
  });
  const query = isObj(input) && isStr(input.query) ? input.query : "";
  const regex = isObj(input) && input.regex === true;
  const groups = [...byFile.entries()].map(([path, hits]) => {
    const shown = hits.slice(0, MAX_HITS_PER_FILE);
    return { path, total: hits.length, hits: shown, rows: hitRows(shown, query, regex) };
  });
  return {
    kind: "search",
    query,
    regex,
    matchCount: out.content_matches.length,
    groups: groups.slice(0, MAX_FILES),
    moreFiles: Math.max(0, groups.length - MAX_FILES),
    searchedContent: !(isObj(input) && input.search_content === false),
    pathCount: paths.length,
    paths: paths.slice(0, MAX_FILES),
    morePaths: Math.max(0, paths.length - MAX_FILES),
    truncated: out.truncated,
    stopReason: out.stop_reason ?? null,
    filesScanned: out.files_scanned ?? null,
    note: out.note ?? null,
  };
}

// ─── shell::exec / shell::status ───

/** Where a cut stream lost its bytes, from the request's `keep`. @param {any} input @returns {"head" | "tail" | "both"} */
function keepOf(input) {
  const k = isObj(input) ? input.keep : undefined;
  return k === "tail" || k === "both" ? k : "head";
}

/** Lines of a stream a card shows. */
export const MAX_STREAM_LINES = 200;

/** At most MAX_STREAM_LINES of a stream: its last ones when the call kept the tail. @param {string} text @param {string} keep */
function streamLines(text, keep) {
  const all = splitLines(text);
  if (all.length <= MAX_STREAM_LINES) return { lines: all, more: 0 };
  return keep === "tail" ? { lines: all.slice(-MAX_STREAM_LINES), more: all.length - MAX_STREAM_LINES } : capped(all, MAX_STREAM_LINES);
}

/** The output half of an exec answer or a job record. @param {any} o @param {string} [keep] */
function streams(o, keep = "head") {
  need(isStr(o.stdout) && isStr(o.stderr) && isBool(o.stdout_truncated) && isBool(o.stderr_truncated));
  need(optCount(o.stdout_dropped_bytes) && optCount(o.stderr_dropped_bytes));
  const out = streamLines(o.stdout, keep);
  const err = streamLines(o.stderr, keep);
  return {
    stdout: out.lines,
    stdoutMore: out.more,
    stderr: err.lines,
    stderrMore: err.more,
    stdoutTruncated: o.stdout_truncated,
    stderrTruncated: o.stderr_truncated,
    stdoutDropped: o.stdout_dropped_bytes ?? 0,
    stderrDropped: o.stderr_dropped_bytes ?? 0,
  };
}

/** @param {any} input @param {any} out */
function execModel(input, out) {
  need(isObj(out) && optInt(out.exit_code) && isBool(out.timed_out) && isCount(out.duration_ms));
  need(optStr(out.note) && optStr(out.job_id));
  const argv = inputArgv(input);
  return {
    kind: "exec",
    command: argv ? commandLine(argv) : "",
    cwd: isObj(input) && isStr(input.cwd) ? input.cwd : null,
    exitCode: out.exit_code ?? null,
    timedOut: out.timed_out,
    durationMs: out.duration_ms,
    note: out.note ?? null,
    jobId: out.job_id ?? null,
    keep: keepOf(input),
    ...streams(out, keepOf(input)),
  };
}

/** A job record (shell::status's `job`). @param {any} job @param {string} [keep] */
export function jobModel(job, keep = "head") {
  try {
    need(isObj(job) && isStr(job.id) && strArray(job.argv) && isStr(job.status));
    need(optInt(job.exit_code) && isCount(job.started_at_ms) && optCount(job.finished_at_ms) && optStr(job.reason));
    need(job.timed_out === undefined || isBool(job.timed_out));
    return {
      jobId: job.id,
      command: commandLine(job.argv),
      status: job.status,
      done: TERMINAL_JOB_STATES.includes(job.status),
      exitCode: job.exit_code ?? null,
      startedAtMs: job.started_at_ms,
      finishedAtMs: job.finished_at_ms ?? null,
      reason: job.reason ?? null,
      timedOut: job.timed_out === true,
      ...streams(job, keep),
    };
  } catch (e) {
    if (e instanceof Reject) return null;
    throw e;
  }
}

/** @param {any} _input @param {any} out */
function statusModel(input, out) {
  need(isObj(out));
  const job = jobModel(out.job, keepOf(input));
  need(job !== null);
  return { kind: "status", keep: keepOf(input), ...job };
}

/** @param {any} input @param {any} out */
function execBgModel(input, out) {
  need(isObj(out) && isStr(out.job_id) && out.job_id.length > 0 && strArray(out.argv) && optStr(out.note));
  return {
    kind: "exec_bg",
    jobId: out.job_id,
    command: commandLine(out.argv),
    cwd: isObj(input) && isStr(input.cwd) ? input.cwd : null,
    note: out.note ?? null,
  };
}

const BUILDERS = /** @type {Record<string, (input: any, out: any) => any>} */ ({
  "coder::update-file": updateModel,
  "coder::create-file": createModel,
  "coder::read-file": readModel,
  "coder::search": searchModel,
  "shell::exec": execModel,
  "shell::exec_bg": execBgModel,
  "shell::status": statusModel,
});

/** A short line naming what the call was about, for the error card. @param {string} functionId @param {any} input */
export function callSubject(functionId, input) {
  if (!isObj(input)) return "";
  if (functionId.startsWith("shell::exec")) {
    const argv = inputArgv(input);
    return argv ? commandLine(argv) : "";
  }
  if (functionId === "shell::status") return isStr(input.job_id) ? input.job_id : "";
  if (functionId === "coder::search") return isStr(input.query) ? input.query : "";
  if (Array.isArray(input.files)) return input.files.map((/** @type {any} */ f) => (isObj(f) && isStr(f.path) ? f.path : "?")).join(", ");
  if (Array.isArray(input.paths)) return input.paths.map((/** @type {any} */ p) => (isStr(p) ? p : isObj(p) && isStr(p.path) ? p.path : "?")).join(", ");
  if (isStr(input.path)) return input.path;
  return "";
}

/**
 * The card a finished call gets, or null (render the console's default).
 * @param {any} message a FunctionCallMessage: {functionId, input, output, error?, durationMs?}
 */
export function cardModel(message) {
  try {
    if (!isObj(message) || !isStr(message.functionId)) return null;
    const build = BUILDERS[message.functionId];
    if (!build) return null;
    const input = parsed(message.input);
    const out = parsed(message.output);
    const failure = messageError(message.error) ?? wireError(out);
    if (failure && (out === undefined || out === null || wireError(out))) {
      return { kind: "error", functionId: message.functionId, subject: callSubject(message.functionId, input), ...failure };
    }
    if (out === undefined || out === null) return null;
    return { functionId: message.functionId, ...build(input, out) };
  } catch (e) {
    if (e instanceof Reject) return null;
    // a bug here must not break the chat: the console's default renders the call
    return null;
  }
}

/**
 * The card of a call still running: the command it runs (shell::exec*), or
 * null (the console shows its own running state).
 * @param {any} message
 */
export function runningModel(message) {
  if (!isObj(message) || (message.functionId !== "shell::exec" && message.functionId !== "shell::exec_bg")) return null;
  const argv = inputArgv(parsed(message.input));
  if (!argv || !argv.length) return null;
  return { kind: "running", functionId: message.functionId, command: commandLine(argv) };
}
