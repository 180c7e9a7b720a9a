// The test host: the documented console Host API over a real engine, and a
// loader that does what the console does — fetch each asset through the
// worker's content function (ide::ui-content), import the script as an ES
// module (react resolves through this page's import map), call setup(host),
// render registered pages inside the data-iii-ui scope wrapper, dispose on
// reload. Function-call renderers register through host.functionCalls (the
// draft's name) or, with ?registrar=functionTriggers, the shipped console's;
// ?view=chat shows the calls given to window.__host.showCalls the way the
// console's FunctionCallCard does (injected renderers first, first non-null
// wins, inside the scope wrapper and an error chip; the JSON default
// otherwise). Test-host code only.

import * as React from "react";
import { createRoot } from "react-dom/client";
import { connect } from "./iii-client.js";

const h = React.createElement;
const params = new URLSearchParams(location.search);
const engineUrl = params.get("engine");
// which name the chat-card registrar has: the draft's functionCalls (default) or the shipped console's functionTriggers
const registrarName = params.get("registrar") === "functionTriggers" ? "functionTriggers" : "functionCalls";
// "chat": render function calls (window.__host.showCalls) instead of the page
const view = params.get("view") ?? "page";
/** Faults the tests switch on: a host component that throws while rendering. */
const faults = { badge: false };
/** Every host.iii.trigger call a script made: {id, job_id, after_sequence}. */
const triggered = [];
const browserId = `console-${crypto.randomUUID()}`;
/** Main-thread tasks over 50 ms since navigation (the benches' load breakdown). */
const longTasks = [];
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (longTasks.length < 100) longTasks.push({ at: Math.round(e.startTime), ms: Math.round(e.duration) });
  }).observe({ type: "longtask", buffered: true });
} catch {
  // no long-task timing in this browser
}
const client = connect(engineUrl, browserId);

// ─── theme (html[data-theme], like the console) ───
const themeListeners = new Set();
new MutationObserver(() => themeListeners.forEach((fn) => fn())).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
const currentTheme = () => (document.documentElement.dataset.theme === "dark" ? "dark" : "light");
function useTheme() {
  return React.useSyncExternalStore(
    (fn) => {
      themeListeners.add(fn);
      return () => themeListeners.delete(fn);
    },
    currentTheme,
  );
}

// ─── registries ───
const pages = new Map();
const pageListeners = new Set();
const notifyPages = () => pageListeners.forEach((fn) => fn());
let pagesVersion = 0;
const renderers = [];
let renderersVersion = 0;

function makeHost(path) {
  const cleanups = [];
  const track = (off) => {
    cleanups.push(off);
    return off;
  };
  const handlers = new Map();
  const host = {
    path,
    iii: {
      browserId,
      trigger: (id, payload, options) => {
        triggered.push({ id, job_id: payload?.job_id ?? null, after_sequence: payload?.after_sequence ?? null });
        return client.trigger(id, payload, options);
      },
      on: (id, handler) => track(client.registerFunction(`${id}::${browserId}`, handler, { internal: true })),
      registerTrigger: (input) => track(client.registerTrigger(input)),
      addConnectionStateListener: (fn) => track(client.addConnectionStateListener(fn)),
    },
    components: {
      // stand-ins with the console's prop names (variant, size)
      Button: ({ variant = "default", size = "default", className = "", ...rest }) =>
        h("button", { type: "button", ...rest, className: `host-button ${variant} ${size} ${className}`.trim() }),
      Badge: (props) => {
        if (faults.badge) throw new Error("host Badge failed (a fault the test switched on)");
        return h("span", { ...props, className: "host-badge" });
      },
    },
    useTheme,
    pages: {
      register(page) {
        pages.set(page.id, { ...page, scope: path.split("/")[0] });
        pagesVersion += 1;
        notifyPages();
        return track(() => {
          if (pages.get(page.id)?.render === page.render) {
            pages.delete(page.id);
            pagesVersion += 1;
            notifyPages();
          }
        });
      },
    },
    [registrarName]: {
      register(renderer) {
        const entry = { renderer, scope: path.split("/")[0] };
        renderers.push(entry);
        renderersVersion += 1;
        notifyPages();
        return track(() => {
          const i = renderers.indexOf(entry);
          if (i >= 0) {
            renderers.splice(i, 1);
            renderersVersion += 1;
            notifyPages();
          }
        });
      },
    },
    slots: { register: () => () => {} },
    configForms: { register: () => () => {} },
  };
  return { host, cleanups, handlers };
}

// ─── loader ───
const loaded = new Map();
async function loadStyle(path) {
  const r = await client.trigger("ide::ui-content", { path });
  const url = URL.createObjectURL(new Blob([r.content], { type: r.content_type ?? "text/css" }));
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = url;
  link.dataset.iiiUi = path;
  await new Promise((resolve, reject) => {
    link.onload = resolve;
    link.onerror = reject;
    document.head.append(link);
  });
  document.querySelectorAll(`link[data-iii-ui="${path}"]`).forEach((l) => l !== link && l.remove());
}
async function loadScript(path) {
  dispose(path);
  const r = await client.trigger("ide::ui-content", { path });
  performance.mark("host:script-fetched");
  if (r.content_type !== "text/javascript") throw new Error(`content_type ${r.content_type}`);
  const url = URL.createObjectURL(new Blob([r.content], { type: "text/javascript" }));
  const mod = await import(url);
  performance.mark("host:imported");
  if (typeof mod.default !== "function") throw new Error(`${path}: no default setup() export`);
  const made = makeHost(path);
  const teardown = await mod.default(made.host);
  if (typeof teardown === "function") made.cleanups.push(teardown);
  loaded.set(path, made);
}
function dispose(path) {
  const l = loaded.get(path);
  if (!l) return;
  loaded.delete(path);
  for (const fn of l.cleanups.splice(0).reverse()) {
    try {
      fn();
    } catch (e) {
      console.error("cleanup failed", e);
    }
  }
}

// ─── function calls (the console's FunctionCallCard dispatch) ───
class HostBoundary extends React.Component {
  constructor(props) {
    super(props);
    this.state = { error: null };
  }
  static getDerivedStateFromError(error) {
    return { error };
  }
  render() {
    if (this.state.error) return h("span", { className: "host-chip", "data-host-chip": this.props.path }, `${this.props.path} failed: ${this.state.error.message}`);
    return this.props.children;
  }
}

/** Injected renderers first (registration order), first non-null wins; else the JSON default. */
function FunctionCallCard({ message }) {
  for (const { renderer, scope } of renderers) {
    if (!renderer.isMatch(message.functionId)) continue;
    const node = message.running ? (renderer.tryRenderRunning ? renderer.tryRenderRunning(message) : null) : renderer.tryRender(message);
    if (node == null) continue;
    return h(
      HostBoundary,
      { path: `${scope}/page.js` },
      h("div", { "data-iii-ui": scope, "data-renderer": renderer.id, style: { display: "contents" } }, node),
    );
  }
  let text;
  try {
    text = JSON.stringify(message.output ?? message.error ?? null, null, 2);
  } catch {
    text = String(message.output);
  }
  return h("pre", { className: "host-json", "data-host-default": "" }, text ?? "undefined");
}

let calls = [];
let callsVersion = 0;
function Chat() {
  React.useSyncExternalStore(
    (fn) => {
      pageListeners.add(fn);
      return () => pageListeners.delete(fn);
    },
    () => `${callsVersion}:${renderersVersion}`,
  );
  return h(
    "div",
    { className: "host-chat" },
    calls.map((c) =>
      h(
        "div",
        { key: c.key, className: "host-call", "data-call": c.key },
        h("div", { className: "host-call-label" }, c.key),
        h(FunctionCallCard, { message: c.message }),
      ),
    ),
  );
}

// ─── shell ───
function Shell() {
  React.useSyncExternalStore(
    (fn) => {
      pageListeners.add(fn);
      return () => pageListeners.delete(fn);
    },
    () => pagesVersion,
  );
  const page = pages.get("ide");
  return h(
    "div",
    { className: "host-shell" },
    h("nav", { className: "host-nav" }, [...pages.values()].map((p) => h("span", { key: p.id, "data-page": p.id }, p.title))),
    h(
      "section",
      { className: "host-main" },
      page ? h("div", { "data-iii-ui": page.scope, style: { display: "contents" } }, h(page.render, {})) : h("p", null, "no page registered"),
    ),
  );
}

async function boot() {
  performance.mark("host:boot");
  await client.ready();
  performance.mark("host:connected");
  await loadStyle("ide/styles.css");
  performance.mark("host:style");
  await loadScript("ide/page.js");
  performance.mark("host:setup");
  createRoot(document.getElementById("app")).render(h(React.StrictMode, null, h(view === "chat" ? Chat : Shell)));
}

window.__host = {
  client,
  booted: boot().then(
    () => true,
    (e) => {
      console.error(e);
      document.body.dataset.bootError = String(e?.message ?? JSON.stringify(e));
      throw e;
    },
  ),
  /** Hot reload: dispose the module's registrations, import it again, set up again. */
  reload: () => loadScript("ide/page.js"),
  dispose: () => dispose("ide/page.js"),
  counts: () => client.counts(),
  /** Where a load's time went: the host's marks and the first calls' timings (ms since navigation). */
  timings: () => ({
    marks: performance.getEntriesByType("mark").map((m) => ({ name: m.name, at: Math.round(m.startTime) })),
    calls: client.timings().map((t) => ({ ...t, start: Math.round(t.start), end: Math.round(t.end) })),
    long_tasks: longTasks.slice(),
  }),
  pages: () => [...pages.keys()],
  /** The chat view's calls: [{key, message}] (a FunctionCallMessage each). */
  showCalls: (list) => {
    calls = list;
    callsVersion += 1;
    notifyPages();
  },
  renderers: () => renderers.map((r) => r.renderer.id),
  registrar: registrarName,
  triggered: () => triggered.slice(),
  faults,
};
