// A typed command line into argv, the way a POSIX shell would split words,
// without being a shell: no variables, globs, pipes or redirections are
// interpreted — `|`, `>`, `$HOME` and `*` are ordinary characters of a word.
// Single quotes keep everything literally; double quotes keep everything
// but a backslash before `"`, `\`, `$` or `` ` ``; outside quotes a
// backslash makes the next character literal and whitespace separates words.
// `''` and `""` are empty words.

/**
 * @typedef {{ok: true, argv: string[]} | {ok: false, error: string}} SplitResult
 */

/** @param {string} c */
const isSpace = (c) => c === " " || c === "\t" || c === "\n" || c === "\r";

/** @param {string} line @returns {SplitResult} */
export function splitArgv(line) {
  /** @type {string[]} */
  const argv = [];
  let word = "";
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (isSpace(c)) {
      if (inWord) argv.push(word);
      word = "";
      inWord = false;
      i += 1;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return { ok: false, error: `unterminated single quote at column ${i + 1}` };
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      let closed = false;
      while (j < line.length) {
        const d = line[j];
        if (d === '"') {
          closed = true;
          break;
        }
        if (d === "\\" && j + 1 < line.length && '"\\$`'.includes(line[j + 1])) {
          word += line[j + 1];
          j += 2;
          continue;
        }
        word += d;
        j += 1;
      }
      if (!closed) return { ok: false, error: `unterminated double quote at column ${i + 1}` };
      inWord = true;
      i = j + 1;
    } else if (c === "\\") {
      if (i + 1 >= line.length) return { ok: false, error: "a trailing backslash escapes nothing" };
      // a backslash-newline joins lines, as in a shell
      if (line[i + 1] !== "\n") {
        word += line[i + 1];
        inWord = true;
      }
      i += 2;
    } else {
      word += c;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) argv.push(word);
  if (argv.length === 0) return { ok: false, error: "type a command" };
  return { ok: true, argv };
}

/** Quote one word so splitArgv gives it back (for showing an argv as a line). @param {string} w */
export function quoteWord(w) {
  if (w !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(w)) return w;
  return `'${w.replace(/'/g, `'\\''`)}'`;
}

/** @param {string[]} argv */
export function joinArgv(argv) {
  return argv.map(quoteWord).join(" ");
}
