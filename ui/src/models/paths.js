// Path helpers and the "does this path steal the view" rule. Pure: no DOM, no
// host, so node's test runner covers it directly.

/** Directories that are build output, caches or dependencies, at any depth. */
export const NOISE_DIRS = new Set([
  "target",
  "node_modules",
  "dist",
  "build",
  "out",
  "coverage",
  "__pycache__",
  ".git",
  ".hg",
  ".svn",
  ".cache",
  ".next",
  ".nuxt",
  ".venv",
  "venv",
  ".tox",
  ".mypy_cache",
  ".pytest_cache",
  ".gradle",
  ".idea",
  ".turbo",
  "vendor",
  "tmp",
  "temp",
]);

/** Extensions of build and temporary artifacts. */
const ARTIFACT_EXT = new Set([
  "o", "obj", "a", "so", "dylib", "dll", "exe", "class", "pyc", "pyo", "rlib", "rmeta", "d",
  "lock", "log", "tmp", "temp", "swp", "swo", "swx", "bak", "orig", "map", "wasm", "pdb",
  "ilk", "exp", "lib", "idx", "pack",
]);

/** @param {string} p */
export function basename(p) {
  const i = p.lastIndexOf("/");
  return i < 0 ? p : p.slice(i + 1);
}

/** @param {string} p */
export function dirname(p) {
  const i = p.lastIndexOf("/");
  if (i < 0) return "";
  if (i === 0) return "/";
  return p.slice(0, i);
}

/** Join a folder and a relative path ("" and "." are the folder itself).
 * @param {string} dir @param {string} rel */
export function join(dir, rel) {
  if (!rel || rel === ".") return dir;
  if (rel.startsWith("/")) return rel;
  return dir.endsWith("/") ? dir + rel : `${dir}/${rel}`;
}

/** `abs` relative to `root`, or null when it is outside.
 * @param {string} root @param {string} abs */
export function relative(root, abs) {
  if (abs === root) return "";
  const prefix = root.endsWith("/") ? root : `${root}/`;
  return abs.startsWith(prefix) ? abs.slice(prefix.length) : null;
}

/** @param {string} p */
export function extension(p) {
  const b = basename(p);
  const i = b.lastIndexOf(".");
  return i <= 0 ? "" : b.slice(i + 1).toLowerCase();
}

/** A noise directory name (dimmed in the tree). @param {string} name */
export function isNoiseDir(name) {
  return NOISE_DIRS.has(name);
}

/**
 * Whether a change at `rel` (relative to the browsed root) may take the view
 * ("the last written file follows the writer"): never for a hidden segment,
 * a noise directory at any depth, or a build/temp artifact extension.
 * @param {string} rel
 */
export function stealsView(rel) {
  if (!rel) return false;
  const segments = rel.split("/").filter(Boolean);
  if (segments.length === 0) return false;
  for (const s of segments) {
    if (s.startsWith(".")) return false;
    if (NOISE_DIRS.has(s)) return false;
  }
  const name = segments[segments.length - 1];
  if (name.endsWith("~") || name.startsWith("#")) return false;
  if (ARTIFACT_EXT.has(extension(name))) return false;
  return true;
}

const IMAGE_MIME = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  bmp: "image/bmp",
  ico: "image/x-icon",
  svg: "image/svg+xml",
  avif: "image/avif",
};

/** The image MIME type of a path, or null. @param {string} p */
export function imageType(p) {
  return IMAGE_MIME[/** @type {keyof typeof IMAGE_MIME} */ (extension(p))] ?? null;
}
