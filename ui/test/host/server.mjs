// Serves the test host: its pages, the iii client, and React vendored from
// npm the way the console provides it — one runtime script that puts React
// on window, and ES-module shims for the import map whose named exports are
// generated from the installed packages (an omitted export would be a
// SyntaxError at import time, as in the console).

import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const ui = join(here, "..", "..");
const require = createRequire(join(ui, "package.json"));

const SHIMS = {
  "react.js": ["react", "React"],
  "react-dom.js": ["react-dom", "ReactDOM"],
  "react-dom-client.js": ["react-dom/client", "ReactDOMClient"],
  "jsx-runtime.js": ["react/jsx-runtime", "JsxRuntime"],
};

async function vendor() {
  const runtime = await esbuild.build({
    absWorkingDir: ui,
    stdin: {
      contents:
        'import * as React from "react"; import * as ReactDOM from "react-dom"; import * as ReactDOMClient from "react-dom/client"; import * as JsxRuntime from "react/jsx-runtime";' +
        "window.__TEST_REACT__ = { React, ReactDOM, ReactDOMClient, JsxRuntime };",
      resolveDir: ui,
    },
    bundle: true,
    format: "iife",
    define: { "process.env.NODE_ENV": '"production"' },
    minify: true,
    write: false,
  });
  /** @type {Record<string, string>} */
  const files = { "runtime.js": runtime.outputFiles[0].text };
  for (const [file, [spec, key]] of Object.entries(SHIMS)) {
    const names = Object.keys(require(spec)).filter((n) => n !== "default" && !n.startsWith("__") && /^[A-Za-z_$][\w$]*$/.test(n));
    files[file] = `const M = window.__TEST_REACT__.${key};\nexport default M;\nexport const { ${names.join(", ")} } = M;\n`;
  }
  return files;
}

const TYPES = { ".html": "text/html", ".js": "text/javascript" };

/** Start the host on a free loopback port. @returns {Promise<{url: string, close: () => Promise<void>}>} */
export async function startHost() {
  const vendored = await vendor();
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    try {
      if (path.startsWith("/vendor/")) {
        const body = vendored[path.slice("/vendor/".length)];
        if (body === undefined) throw new Error("no such vendor file");
        res.writeHead(200, { "content-type": "text/javascript", "cache-control": "no-cache" });
        res.end(body);
        return;
      }
      const file = path === "/" ? "index.html" : path.slice(1);
      if (!/^[a-z-]+\.(html|js)$/.test(file)) throw new Error("not served");
      const body = await readFile(join(here, file));
      res.writeHead(200, { "content-type": TYPES[file.slice(file.lastIndexOf("."))], "cache-control": "no-cache" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end("not found");
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", () => r(undefined)));
  const addr = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${addr.port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
