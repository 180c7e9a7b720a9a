// The ide console page. The console imports this module and calls setup(host)
// once per load; the teardown it returns disposes every binding and handler
// (hot reload, worker disconnect). Only `react` and `react/jsx-runtime` are
// imported at run time; everything else is bundled.

import { useEffect, useLayoutEffect, useState } from "react";
import { App } from "./app.js";
import { Workspace } from "./workspace.jsx";
import { Picker } from "./picker.jsx";
import { storage } from "./storage.js";
import { Terminals } from "./terminal/terminals.js";
import { JobFeed } from "./ops/feed.js";
import { TurnsStore } from "./models/turns.js";
import { makeCardRenderer } from "./cards/cards.jsx";
import { registerCardRenderer } from "./cards/register.js";

/**
 * @param {any} host
 * @returns {() => void}
 */
export default function setup(host) {
  const app = new App(host);
  // the terminals' output router and panes live as long as this asset
  app.terminals = new Terminals(app);
  // the jobs pane's completion feed and the history's store, likewise
  app.jobs = new JobFeed(app);
  app.turns = new TurnsStore((id, payload) => app.api.call(id, payload));
  /** @type {Array<() => void>} */
  const offs = [];
  const pages = host.pages;
  if (pages && typeof pages.register === "function") {
    const off = pages.register({
      id: "ide",
      title: "IDE",
      configurationId: "ide",
      render: (/** @type {any} */ props) => <Page app={app} host={host} {...props} />,
    });
    if (typeof off === "function") offs.push(off);
  } else {
    console.error("ide: this console has no host.pages registrar; the IDE page is not shown");
  }
  // chat cards for ide's own calls, through whichever registrar this console has
  const cards = registerCardRenderer(host, makeCardRenderer({ host, api: app.api }));
  offs.push(cards.off);
  return () => {
    for (const off of offs.splice(0).reverse()) {
      try {
        off();
      } catch (e) {
        console.error("ide: unregistering failed", e);
      }
    }
    app.terminals.dispose();
    app.jobs.dispose();
    app.dispose();
  };
}

/** @param {any} host */
function useTheme(host) {
  if (typeof host.useTheme === "function") return host.useTheme();
  return "light";
}

/** @param {{app: App, host: any}} props */
function Page({ app, host }) {
  const theme = useTheme(host);
  // the ide this page works with (its namespace; null: the console's own),
  // remembered per browser like the root, which is remembered per host
  const [ns, setNs] = useState(() => {
    const remembered = storage.get("host");
    app.useHost(remembered);
    return app.api.namespace;
  });
  const rootKey = ns ? `root@${ns}` : "root";
  const [root, setRoot] = useState(() => storage.get(rootKey));
  const [picking, setPicking] = useState(() => !storage.get(rootKey));

  const [rootError, setRootError] = useState(/** @type {any} */ (null));

  useLayoutEffect(() => {
    if (root) storage.set(rootKey, root);
  }, [root, rootKey]);

  /** @param {string | null} next */
  const chooseHost = (next) => {
    app.useHost(next);
    storage.set("host", app.api.namespace ?? "");
    setNs(app.api.namespace);
    setRoot(null);
    setRootError(null);
    setPicking(true);
  };

  // a remembered root may be gone or no longer allowed: ask again, saying why
  useEffect(() => {
    if (!root) return;
    let live = true;
    app.api.validate(root).catch((e) => {
      if (!live) return;
      setRootError(e);
      setPicking(true);
    });
    return () => {
      live = false;
    };
  }, [app, root]);

  return (
    <div className="ide-page" data-theme={theme}>
      {picking || !root ? (
        <Picker
          app={app}
          host={ns}
          onHost={chooseHost}
          current={root}
          initialError={rootError}
          onPick={(/** @type {string} */ r) => {
            setRootError(null);
            setRoot(r);
            setPicking(false);
          }}
          onCancel={root && !rootError ? () => setPicking(false) : null}
        />
      ) : (
        <Workspace key={`${ns ?? ""}|${root}`} app={app} host={host} root={root} dark={theme === "dark"} onChangeRoot={() => setPicking(true)} />
      )}
    </div>
  );
}
