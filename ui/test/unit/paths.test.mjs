import { test } from "node:test";
import assert from "node:assert/strict";
import { basename, dirname, imageType, isNoiseDir, join, relative, stealsView } from "../../src/models/paths.js";

test("path helpers", () => {
  assert.equal(join("/r", "src/a.rs"), "/r/src/a.rs");
  assert.equal(join("/r/", "a"), "/r/a");
  assert.equal(join("/r", ""), "/r");
  assert.equal(dirname("/r/src/a.rs"), "/r/src");
  assert.equal(dirname("/a"), "/");
  assert.equal(basename("/r/src/a.rs"), "a.rs");
  assert.equal(relative("/r", "/r/src/a.rs"), "src/a.rs");
  assert.equal(relative("/r", "/rr/a"), null);
  assert.equal(imageType("x/Logo.PNG"), "image/png");
  assert.equal(imageType("x.rs"), null);
  assert.ok(isNoiseDir("node_modules") && isNoiseDir("target") && !isNoiseDir("src"));
});

test("only real source paths steal the view", () => {
  for (const p of ["src/main.rs", "README.md", "a/b/c.ts", "Makefile"]) assert.equal(stealsView(p), true, p);
  for (const p of [
    "target/debug/x.rs",
    "web/node_modules/pkg/index.js",
    "a/dist/bundle.js",
    "build/out.txt",
    ".git/HEAD",
    "src/.hidden.rs",
    ".github/workflows/ci.yml",
    "src/main.o",
    "Cargo.lock",
    "src/a.rs.swp",
    "notes.txt~",
    "app.log",
    "x.tmp",
    "",
  ])
    assert.equal(stealsView(p), false, p);
});
