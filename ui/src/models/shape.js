// The bytes of a text file the editor does not show: a UTF-8 byte order
// mark and each line's own terminator ("\n", "\r\n" or a lone "\r"). The
// editor holds the text with "\n" between lines and no BOM (CodeMirror's
// own model); the line breaks whose terminator is not the file's usual one
// are kept aside by position and follow the edits (editor/eol.js), so a
// save puts back every byte the user did not touch. Pure.

const BOM = "\uFEFF";

/**
 * @typedef {{
 *   bom: boolean,
 *   doc: string,
 *   dominant: string,
 *   mixed: boolean,
 *   special: Array<[number, string]>,
 * }} Shape
 * `special`: [position of the break in `doc`, its terminator] for every
 * break whose terminator is not `dominant`, in order.
 */

/** @param {string} raw the file's text as read @returns {Shape} */
export function readShape(raw) {
  const bom = raw.startsWith(BOM);
  const text = bom ? raw.slice(1) : raw;
  // the usual file: "\n" only, the text is the editor's document as is
  if (!text.includes("\r")) return { bom, doc: text, dominant: "\n", mixed: false, special: [] };
  /** @type {Array<[number, string]>} */
  const breaks = [];
  const counts = { "\n": 0, "\r\n": 0, "\r": 0 };
  let doc = "";
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 10 && c !== 13) continue;
    const term = c === 13 && text.charCodeAt(i + 1) === 10 ? "\r\n" : c === 13 ? "\r" : "\n";
    doc += text.slice(start, i);
    breaks.push([doc.length, term]);
    doc += "\n";
    counts[term] += 1;
    i += term.length - 1;
    start = i + 1;
  }
  doc += text.slice(start);
  /** @type {string} */
  let dominant = "\n";
  for (const t of /** @type {const} */ (["\r\n", "\r"])) if (counts[t] > counts[dominant]) dominant = t;
  const kinds = Object.values(counts).filter((n) => n > 0).length;
  return { bom, doc, dominant, mixed: kinds > 1, special: breaks.filter(([, t]) => t !== dominant) };
}

/** What a status line says of the shape. @param {Pick<Shape, "bom" | "dominant" | "mixed">} s */
export function describeShape(s) {
  const eol = s.mixed ? "mixed line endings" : s.dominant === "\r\n" ? "CRLF" : s.dominant === "\r" ? "CR" : "LF";
  return `${s.bom ? "UTF-8 with BOM" : "UTF-8"} · ${eol}`;
}

/**
 * The file's bytes (as text) for the editor's lines: the BOM if it had one,
 * each break's own terminator where it is kept aside, else the usual one.
 * @param {{bom: boolean, dominant: string}} s
 * @param {Iterable<string>} lines the editor's lines, in order
 * @param {Map<number, string>} special terminators by break position
 */
export function writeShape(s, lines, special) {
  /** @type {string[]} */
  const out = s.bom ? [BOM] : [];
  let pos = 0;
  let first = true;
  // whether the text so far ends with "\r" (asked of a list, not of a growing string)
  let endsCr = false;
  for (const line of lines) {
    if (!first) {
      let term = special.get(pos - 1) ?? s.dominant;
      // a lone "\r", an empty line and a "\n" would read back as one "\r\n": that "\n"
      // is not the file's own (it would have been read as "\r\n"), so it becomes "\r"
      if (term === "\n" && endsCr) term = "\r";
      out.push(term);
      endsCr = term === "\r";
    }
    first = false;
    if (line !== "") {
      out.push(line);
      endsCr = false;
    }
    pos += line.length + 1;
  }
  return out.join("");
}
