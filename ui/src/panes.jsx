// The side panes of the workspace, as a list of modules: each names itself
// and renders from the workspace context. The terminal, jobs, history and
// source-control panes plug in here (and into `bottomPanes`) the same way.

import { Explorer } from "./explorer.jsx";
import { SearchPanel } from "./search.jsx";
import { TerminalPanel } from "./terminal/panel.jsx";
import { JobsPanel } from "./ops/jobs.jsx";
import { HistoryPanel } from "./ops/history.jsx";
import { ScmPanel } from "./ops/scm.jsx";
import { OutlinePanel, ProblemsPanel, ReferencesPanel } from "./code/panels.jsx";

/**
 * `when` hides a pane whose subject is absent (source control outside a
 * repository); `keepMounted` keeps a bottom pane alive while another is shown
 * (the terminal's screens).
 * @typedef {{id: string, title: string, render: (ctx: any) => any, when?: (ctx: any) => boolean, keepMounted?: boolean}} Pane
 */

/** @type {Pane[]} */
export const sidePanes = [
  { id: "explorer", title: "Explorer", render: (ctx) => <Explorer ctx={ctx} /> },
  { id: "search", title: "Search", render: (ctx) => <SearchPanel ctx={ctx} /> },
  { id: "outline", title: "Outline", render: (ctx) => <OutlinePanel ctx={ctx} /> },
  { id: "scm", title: "Git", when: (ctx) => ctx.git?.inRepo === true, render: (ctx) => <ScmPanel ctx={ctx} /> },
];

/** Panes under the editor. @type {Pane[]} */
export const bottomPanes = [
  { id: "terminal", title: "Terminal", keepMounted: true, render: (ctx) => <TerminalPanel ctx={ctx} /> },
  { id: "jobs", title: "Jobs", render: (ctx) => <JobsPanel ctx={ctx} /> },
  { id: "history", title: "History", render: (ctx) => <HistoryPanel ctx={ctx} /> },
  { id: "problems", title: "Problems", render: (ctx) => <ProblemsPanel ctx={ctx} /> },
  { id: "references", title: "References", render: (ctx) => <ReferencesPanel ctx={ctx} /> },
];
