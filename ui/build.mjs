// Builds the page: ui/src/page.jsx -> dist/page.js (ES module, react
// external, everything else bundled once) and src/styles.css ->
// dist/styles.css. `--check` builds into memory and fails when the
// committed dist/ differs, so the embedded bundle cannot drift from ui/.

import * as esbuild from "esbuild";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const check = process.argv.includes("--check");

/** The only bare imports left in the bundle: the console's import map provides them. */
export const EXTERNAL = ["react", "react/jsx-runtime", "react-dom", "react-dom/client"];

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/page.jsx"],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  external: EXTERNAL,
  minify: true,
  legalComments: "none",
  charset: "utf8",
  write: false,
  metafile: true,
  outfile: "dist/page.js",
  logLevel: "warning",
});
const css = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/styles.css"],
  bundle: true,
  minify: true,
  write: false,
  outfile: "dist/styles.css",
  logLevel: "warning",
});

// One copy of @codemirror/state (two copies break every instanceof check
// CodeMirror does across packages), and no React inside the bundle.
const inputs = Object.keys(result.metafile.inputs);
const stateCopies = new Set(inputs.filter((p) => p.includes("@codemirror/state/")).map((p) => p.slice(0, p.indexOf("@codemirror/state/"))));
if (stateCopies.size !== 1) throw new Error(`expected exactly one @codemirror/state, found ${stateCopies.size}: ${[...stateCopies].join(", ")}`);
const reactInside = inputs.filter((p) => /node_modules\/(react|react-dom|scheduler)\//.test(p));
if (reactInside.length) throw new Error(`react must stay external, bundled: ${reactInside.join(", ")}`);

// The stylesheet stays inside the console's scope wrapper and themes only
// through the console's tokens: every selector under [data-iii-ui="ide"],
// no literal colours (light and dark are a token flip on html[data-theme]).
const source = readFileSync(join(here, "src/styles.css"), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
for (const block of source.split("}")) {
  const open = block.indexOf("{");
  if (open < 0) continue;
  for (const sel of block.slice(0, open).split(",")) {
    if (!sel.trim().startsWith('[data-iii-ui="ide"]')) throw new Error(`styles.css: selector outside the scope wrapper: ${sel.trim()}`);
  }
  const body = block.slice(open + 1);
  const literal = /#[0-9a-fA-F]{3,8}\b|\b(?:rgb|rgba|hsl|hsla)\(/.exec(body);
  if (literal) throw new Error(`styles.css: literal colour ${literal[0]} in ${block.slice(0, open).trim()}; use a var(--color-*) token`);
}

const outputs = [...result.outputFiles, ...css.outputFiles];
let stale = [];
for (const f of outputs) {
  const rel = relative(here, f.path);
  if (check) {
    let committed = null;
    try {
      committed = readFileSync(f.path);
    } catch {
      committed = null;
    }
    if (!committed || Buffer.compare(committed, Buffer.from(f.contents)) !== 0) stale.push(rel);
  } else {
    mkdirSync(dist, { recursive: true });
    writeFileSync(f.path, f.contents);
    console.log(`${rel}: ${f.contents.length} bytes`);
  }
}
if (stale.length) {
  console.error(`the committed bundle differs from a fresh build of ui/: ${stale.join(", ")}; run \`npm run build\` in ui/ and commit ui/dist/`);
  process.exit(1);
}
if (check) console.log("ui/dist matches a fresh build");
