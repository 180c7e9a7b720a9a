// The side panes of the workspace, as a list of modules: each names itself
// and renders from the workspace context. The terminal, jobs, history and
// source-control panes plug in here (and into `bottomPanes`) the same way.

import { Explorer } from "./explorer.jsx";
import { SearchPanel } from "./search.jsx";
import { TerminalPanel } from "./terminal/panel.jsx";

/**
 * @typedef {{id: string, title: string, render: (ctx: any) => any}} Pane
 */

/** @type {Pane[]} */
export const sidePanes = [
  { id: "explorer", title: "Explorer", render: (ctx) => <Explorer ctx={ctx} /> },
  { id: "search", title: "Search", render: (ctx) => <SearchPanel ctx={ctx} /> },
];

/** Panes under the editor. @type {Pane[]} */
export const bottomPanes = [{ id: "terminal", title: "Terminal", render: (ctx) => <TerminalPanel ctx={ctx} /> }];
