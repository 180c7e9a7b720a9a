// ide's chat cards: how the console draws a call of ide's own functions in
// the chat (and the traces). One renderer for all of them; its tryRender
// turns the call into a view model (models/cards.js) and returns null for
// anything the model does not recognise, so the console's default rendering
// takes over. A card that throws while rendering falls back to a plain view
// of the call's output (its error boundary) instead of a broken card.

import { Component, useEffect, useState } from "react";
import { cardModel, isCardFunction, jobModel, runningModel, bytes } from "../models/cards.js";

/** How often a background job's card asks for its status while it runs. */
export const JOB_POLL_MS = 1000;

/**
 * @param {{host: any, api: import("../api.js").Api}} deps
 */
export function makeCardRenderer({ host, api }) {
  return {
    id: "ide/page.js#cards",
    /** @param {string} functionId */
    isMatch: (functionId) => isCardFunction(functionId),
    /** @param {any} message */
    tryRender(message) {
      const model = cardModel(message);
      if (!model) return null;
      return (
        <CardBoundary output={message?.output ?? message?.error ?? null}>
          <Card model={model} host={host} api={api} />
        </CardBoundary>
      );
    },
    /** @param {any} message */
    tryRenderRunning(message) {
      const model = runningModel(message);
      if (!model) return null;
      return (
        <CardBoundary output={message?.input ?? null}>
          <Card model={model} host={host} api={api} />
        </CardBoundary>
      );
    },
  };
}

/** A card that threw shows the call's output as plain JSON, never a broken card. */
class CardBoundary extends Component {
  /** @param {{output: any, children: any}} props */
  constructor(props) {
    super(props);
    this.state = { failed: false };
  }
  static getDerivedStateFromError() {
    return { failed: true };
  }
  /** @param {unknown} error */
  componentDidCatch(error) {
    console.warn("ide: a chat card failed to render; showing the call's output as JSON", error);
  }
  render() {
    const { output, children } = /** @type {any} */ (this.props);
    if (!(/** @type {any} */ (this.state).failed)) return children;
    let text;
    try {
      text = typeof output === "string" ? output : JSON.stringify(output, null, 2);
    } catch {
      text = String(output);
    }
    return (
      <pre className="ide-card-fallback" data-ide-card-fallback="">
        {text}
      </pre>
    );
  }
}

/** @param {{model: any, host: any, api: any}} props */
function Card({ model, host, api }) {
  switch (model.kind) {
    case "update":
      return <UpdateCard m={model} host={host} />;
    case "create":
      return <CreateCard m={model} host={host} />;
    case "read":
      return <ReadCard m={model} host={host} />;
    case "search":
      return <SearchCard m={model} />;
    case "exec":
      return <ExecCard m={model} host={host} api={api} />;
    case "exec_bg":
      return <ExecBgCard m={model} host={host} api={api} />;
    case "status":
      return <StatusCard m={model} host={host} />;
    case "running":
      return <RunningCard m={model} />;
    case "error":
      return <ErrorCard m={model} />;
    default:
      throw new Error(`no card for ${model.kind}`);
  }
}

/**
 * A small label: the console's Badge when it has one.
 * @param {{host: any, tone?: "ok" | "warn" | "danger" | "info", children: any, title?: string}} props
 */
function Tag({ host, tone = "info", children, title }) {
  const HostBadge = host?.components?.Badge;
  if (typeof HostBadge === "function" || (HostBadge && typeof HostBadge === "object")) {
    return (
      <span className={`ide-card-tag ${tone}`} title={title}>
        <HostBadge>{children}</HostBadge>
      </span>
    );
  }
  return (
    <span className={`ide-card-tag ${tone} plain`} title={title}>
      {children}
    </span>
  );
}

/** @param {{fn: string, title?: any, children?: any}} props */
function Head({ fn, title, children }) {
  return (
    <div className="ide-card-head">
      <span className="ide-card-fn">{fn}</span>
      <span className="ide-card-title">{title ?? null}</span>
      {children && <span className="ide-card-tags">{children}</span>}
    </div>
  );
}

/** A path: the file name strong, its folder faint. @param {{path: string}} props */
function PathLabel({ path }) {
  const i = path.lastIndexOf("/");
  return (
    <span className="ide-card-path" title={path}>
      {i > 0 && <span className="ide-card-dir">{path.slice(0, i + 1)}</span>}
      <span className="ide-card-base">{i >= 0 ? path.slice(i + 1) : path}</span>
    </span>
  );
}

/** @param {{error: {code: string, message: string}}} props */
function EntryError({ error }) {
  return (
    <div className="ide-card-error" role="alert" data-code={error.code}>
      <span className="ide-code">{error.code}</span> {error.message}
    </div>
  );
}

/** Rows of code with a line-number gutter. @param {{rows: any[], className?: string}} props */
function CodeRows({ rows, className = "" }) {
  return (
    <div className={`ide-card-code ${className}`} role="table">
      {rows.map((r, i) =>
        r.kind === "break" ? (
          <div key={i} className="ide-card-row break" role="row">
            <span className="ide-card-ln">⋯</span>
          </div>
        ) : r.kind === "gap" ? (
          <div key={i} className="ide-card-row gap" role="row">
            <span className="ide-card-ln" />
            <span className="ide-card-sign" />
            <span className="ide-card-text">⋯ {r.count} line{r.count === 1 ? "" : "s"} not echoed</span>
          </div>
        ) : r.kind === "del" ? (
          <div key={i} className="ide-card-row del" role="row">
            <span className="ide-card-ln" />
            <span className="ide-card-sign">−</span>
            <span className="ide-card-text">{r.text}</span>
          </div>
        ) : (
          <div key={i} className={`ide-card-row${r.added ? " add" : ""}${r.hit ? " hit" : ""}${r.context ? " ctx" : ""}`} role="row" data-line={r.line}>
            <span className="ide-card-ln">{r.line}</span>
            <span className="ide-card-sign">{r.added ? "+" : ""}</span>
            <span className="ide-card-text">{r.parts ? r.parts.map((/** @type {any} */ p, /** @type {number} */ k) => (p.mark ? <mark key={k}>{p.text}</mark> : p.text)) : r.text}</span>
          </div>
        ),
      )}
    </div>
  );
}

/** A file entry's journal change id (and its revision on hover). @param {{f: any}} props */
function ChangeId({ f }) {
  if (!f.changeId) return null;
  return (
    <span className="ide-card-id" title={f.revision ? `revision ${f.revision}` : undefined}>
      change {f.changeId}
    </span>
  );
}

/** @param {{count: number, what?: string}} props */
function More({ count, what = "line" }) {
  if (!count) return null;
  return (
    <div className="ide-card-more">
      … {count} more {what}
      {count === 1 ? "" : "s"}
    </div>
  );
}

// ─── coder::update-file and coder::create-file: one entry per file ───

/**
 * A batch of per-file results: a head naming the file (or the count), and
 * each file's success body or its own error.
 * @param {{m: any, host: any, fn: string, kind: string, body: (f: any) => any}} props
 */
function FilesCard({ m, host, fn, kind, body }) {
  const title = m.files.length === 1 ? <PathLabel path={m.files[0].path} /> : `${m.files.length} files`;
  return (
    <div className="ide-card" data-ide-card={kind}>
      <Head fn={fn} title={title}>
        {m.failed > 0 && (
          <Tag host={host} tone="danger">
            {m.failed} failed
          </Tag>
        )}
      </Head>
      {m.files.map((/** @type {any} */ f, /** @type {number} */ i) => (
        <div key={i} className={`ide-card-file${f.success ? "" : " failed"}`} data-path={f.path}>
          {m.files.length > 1 && (
            <div className="ide-card-file-head">
              <PathLabel path={f.path} />
            </div>
          )}
          {f.success ? body(f) : <EntryError error={f.error} />}
        </div>
      ))}
    </div>
  );
}

/** @param {{m: any, host: any}} props */
function UpdateCard({ m, host }) {
  return (
    <FilesCard
      m={m}
      host={host}
      fn="coder::update-file"
      kind="update"
      body={(f) => (
        <>
          <div className="ide-card-meta">
            {f.applied} op{f.applied === 1 ? "" : "s"} applied · {f.newLineCount} lines
            {!f.changed && (
              <>
                {" · "}
                <Tag host={host} tone="warn">
                  unchanged
                </Tag>
              </>
            )}
            <ChangeId f={f} />
          </div>
          {f.echoes.map((/** @type {any} */ e, /** @type {number} */ k) => (
            <div key={k} className="ide-card-echo" data-op={e.opIndex}>
              <div className="ide-card-op">
                {e.op.label}
                {e.totalReplacements != null && (
                  <span className="ide-muted">
                    {" "}
                    · {e.totalReplacements} replacement{e.totalReplacements === 1 ? "" : "s"}
                  </span>
                )}
              </div>
              <CodeRows rows={e.rows} />
            </div>
          ))}
          {f.echoes.length === 0 && f.ops.length > 0 && <div className="ide-card-op">{f.ops.map((/** @type {any} */ o) => o.label).join(" · ")}</div>}
          {f.echoesTruncated && <div className="ide-card-more">echoes truncated (the echo budget ran out); coder::read-file shows the whole result</div>}
        </>
      )}
    />
  );
}

/** @param {{m: any, host: any}} props */
function CreateCard({ m, host }) {
  return (
    <FilesCard
      m={m}
      host={host}
      fn="coder::create-file"
      kind="create"
      body={(f) => (
        <>
          <div className="ide-card-meta">
            {f.overwrite ? "written" : "created"}
            {f.bytesWritten != null && <> · {bytes(f.bytesWritten)}</>}
            <ChangeId f={f} />
          </div>
          {f.lines.length > 0 && <CodeRows rows={f.lines.map((/** @type {string} */ text, /** @type {number} */ k) => ({ kind: "line", line: k + 1, text, added: true }))} />}
          <More count={f.more} />
        </>
      )}
    />
  );
}

// ─── coder::read-file ───

/** @param {{m: any, host: any}} props */
function ReadCard({ m, host }) {
  const one = m.entries.length === 1 ? m.entries[0] : null;
  return (
    <div className="ide-card" data-ide-card="read">
      <Head fn="coder::read-file" title={one ? <PathLabel path={one.path} /> : `${m.entries.length} files`}>
        {!one && m.failed > 0 && (
          <Tag host={host} tone="danger">
            {m.failed} failed
          </Tag>
        )}
      </Head>
      {m.entries.map((/** @type {any} */ e, /** @type {number} */ i) => (
        <div key={i} className={`ide-card-file${e.error ? " failed" : ""}`} data-path={e.path}>
          {!one && (
            <div className="ide-card-file-head">
              <PathLabel path={e.path} />
            </div>
          )}
          {e.error ? (
            <EntryError error={e.error} />
          ) : (
            <>
              <div className="ide-card-meta">
                {e.stat
                  ? `stat${e.totalLines != null ? ` · ${e.totalLines} lines` : ""}`
                  : `${e.lines.length ? `lines ${e.lines[0].line}–${e.lines[e.lines.length - 1].line}` : "empty"}${e.totalLines != null ? ` of ${e.totalLines}` : ""}`}
                {e.size != null && <> · {bytes(e.size)}</>}
                {!e.isUtf8 && <> · not UTF-8</>}
              </div>
              {e.lines.length > 0 && <CodeRows rows={e.lines.map((/** @type {any} */ l) => ({ kind: "line", line: l.line, text: l.text }))} />}
              <More count={e.more} />
              {e.moreLines && !e.more && (
                <div className="ide-card-more">
                  {e.totalLines != null && e.lines.length ? `${e.totalLines - e.lines[e.lines.length - 1].line} more lines in the file` : "the file goes on"}
                </div>
              )}
            </>
          )}
        </div>
      ))}
    </div>
  );
}

// ─── coder::search ───

/** @param {{m: any}} props */
function SearchCard({ m }) {
  const files = m.groups.length + m.moreFiles;
  return (
    <div className="ide-card" data-ide-card="search">
      <Head fn="coder::search" title={<span className="ide-card-query">{m.query}</span>}>
        <span className="ide-muted">
          {[
            m.searchedContent ? `${m.matchCount} match${m.matchCount === 1 ? "" : "es"} in ${files} file${files === 1 ? "" : "s"}` : null,
            m.pathCount ? `${m.pathCount} path${m.pathCount === 1 ? "" : "s"}` : null,
            m.searchedContent && m.filesScanned != null ? `${m.filesScanned} scanned` : null,
          ]
            .filter(Boolean)
            .join(" · ")}
        </span>
        {m.truncated && <span className="ide-card-flag warn">partial{m.stopReason ? `: ${m.stopReason}` : ""}</span>}
      </Head>
      {m.note && <div className="ide-card-more">{m.note}</div>}
      {m.groups.map((/** @type {any} */ g) => (
        <div key={g.path} className="ide-card-file" data-path={g.path}>
          <div className="ide-card-file-head">
            <PathLabel path={g.path} />
            <span className="ide-muted"> · {g.total}</span>
          </div>
          <CodeRows rows={g.rows} />
          <More count={g.total - g.hits.length} what="hit" />
        </div>
      ))}
      <More count={m.moreFiles} what="file" />
      {m.paths.length > 0 && (
        <div className="ide-card-file">
          <div className="ide-card-file-head ide-muted">paths</div>
          <ul className="ide-card-paths">
            {m.paths.map((/** @type {any} */ p) => (
              <li key={p.path} data-kind={p.kind}>
                <PathLabel path={p.path} />
                {p.kind !== "file" && <span className="ide-muted"> ({p.kind})</span>}
              </li>
            ))}
          </ul>
          <More count={m.morePaths} what="path" />
        </div>
      )}
      {m.groups.length === 0 && m.paths.length === 0 && <div className="ide-card-more">no matches</div>}
    </div>
  );
}

// ─── shell::exec, exec_bg, status ───

/** What the worker left out of each stream. @param {{s: any}} props */
function StreamFlags({ s }) {
  const flags = [];
  if (s.stdoutTruncated) flags.push(`stdout truncated${s.stdoutDropped ? `, ${bytes(s.stdoutDropped)} dropped` : ""}`);
  if (s.stderrTruncated) flags.push(`stderr truncated${s.stderrDropped ? `, ${bytes(s.stderrDropped)} dropped` : ""}`);
  if (s.stdoutMore) flags.push(`${s.stdoutMore} stdout lines not shown here`);
  if (s.stderrMore) flags.push(`${s.stderrMore} stderr lines not shown here`);
  return (
    <>
      {flags.map((f) => (
        <span key={f} className="ide-card-flag warn">
          {f}
        </span>
      ))}
    </>
  );
}

/**
 * One stream's lines, with a mark where the worker cut bytes out: before
 * them (keep: tail), after them (head) or — keep: both — the worker's own
 * cut line is in the text already.
 * @param {{lines: string[], truncated: boolean, dropped: number, keep: string, cls: string, name: string}} props
 */
function Stream({ lines, truncated, dropped, keep, cls, name }) {
  const cut = truncated && keep !== "both" ? <div className="ide-card-cut">[… {dropped ? bytes(dropped) : "output"} of {name} not kept …]</div> : null;
  return (
    <>
      {keep === "tail" && cut}
      {lines.map((l, i) => (
        <div key={i} className={cls}>
          {l || "\u00a0"}
        </div>
      ))}
      {keep !== "tail" && cut}
    </>
  );
}

/** The terminal-styled body: the prompt line, stdout, stderr. @param {{command: string | null, s: any, cwd?: string | null, keep?: string}} props */
function Terminal({ command, s, cwd, keep = "head" }) {
  return (
    <div className="ide-card-term" role="log">
      {command !== null && (
        <div className="ide-card-prompt">
          {cwd && <span className="ide-card-cwd">{cwd}</span>}
          <span className="ide-card-dollar">$</span> {command}
        </div>
      )}
      {s && <Stream lines={s.stdout} truncated={s.stdoutTruncated} dropped={s.stdoutDropped} keep={keep} cls="ide-card-out" name="stdout" />}
      {s && <Stream lines={s.stderr} truncated={s.stderrTruncated} dropped={s.stderrDropped} keep={keep} cls="ide-card-err" name="stderr" />}
    </div>
  );
}

/** @param {{host: any, code: number | null}} props */
function ExitTag({ host, code }) {
  if (code == null) return null;
  return (
    <Tag host={host} tone={code === 0 ? "ok" : "danger"} title="exit code">
      exit {code}
    </Tag>
  );
}

/** @param {{m: any, host: any, api: any}} props */
function ExecCard({ m, host, api }) {
  return (
    <div className="ide-card" data-ide-card="exec" data-exit={m.exitCode ?? ""}>
      <Head fn="shell::exec">
        <ExitTag host={host} code={m.exitCode} />
        {m.timedOut && (
          <Tag host={host} tone="warn">
            timed out
          </Tag>
        )}
        <span className="ide-muted">{m.durationMs} ms</span>
      </Head>
      <Terminal command={m.command} s={m} cwd={m.cwd} keep={m.keep} />
      <div className="ide-card-foot">
        <StreamFlags s={m} />
        {m.note && <span className="ide-card-note">{m.note}</span>}
      </div>
      {m.jobId && <HandedOver jobId={m.jobId} host={host} api={api} />}
    </div>
  );
}

/**
 * A command that outlived its timeout with on_timeout: "background" goes on
 * as a job: followed like an exec_bg card's, below the output so far.
 * @param {{jobId: string, host: any, api: any}} props
 */
function HandedOver({ jobId, host, api }) {
  const { job, error } = useJob({ jobId, api });
  const gone = error && /211$/.test(String(error.code));
  return (
    <div className="ide-card-job" data-job-status={gone ? "gone" : (job?.status ?? "unknown")}>
      <div className="ide-card-meta">
        continues as background job <span className="ide-card-id">{jobId}</span>
        {job && <StatusTag host={host} status={job.status} />}
        {job && <ExitTag host={host} code={job.exitCode} />}
        {gone && (
          <Tag host={host} tone="warn">
            record gone
          </Tag>
        )}
      </div>
      {job && <JobView job={job} host={host} keep="tail" prompt={false} />}
      {error && !gone && (
        <div className="ide-card-foot">
          <EntryError error={error} />
        </div>
      )}
    </div>
  );
}

/** A job record's output (under its command line, unless the card shows that already). @param {{job: any, host: any, keep?: string, prompt?: boolean}} props */
function JobView({ job, host, keep = "head", prompt = true }) {
  return (
    <>
      <Terminal command={prompt ? job.command : null} s={job} keep={keep} />
      <div className="ide-card-foot">
        <StreamFlags s={job} />
        {job.reason && <span className="ide-card-note">{job.reason}</span>}
        {job.timedOut && (
          <Tag host={host} tone="warn">
            outlived max_bg_timeout_ms
          </Tag>
        )}
      </div>
    </>
  );
}

/** @param {{host: any, status: string}} props */
function StatusTag({ host, status }) {
  const tone = status === "running" ? "info" : status === "finished" ? "ok" : "danger";
  return (
    <Tag host={host} tone={tone}>
      {status}
    </Tag>
  );
}

/** @param {{m: any, host: any}} props */
function StatusCard({ m, host }) {
  return (
    <div className="ide-card" data-ide-card="status" data-status={m.status}>
      <Head fn="shell::status">
        <StatusTag host={host} status={m.status} />
        <ExitTag host={host} code={m.exitCode} />
        <span className="ide-muted ide-card-id">{m.jobId}</span>
      </Head>
      <JobView job={m} host={host} keep={m.keep} />
    </div>
  );
}

/**
 * The job a background call started, followed live: shell::status until it
 * ends (stops on unmount), or the note that the worker no longer has it.
 * @param {{jobId: string, api: any}} args
 */
function useJob({ jobId, api }) {
  const [state, setState] = useState(/** @type {{job: any, error: any}} */ ({ job: null, error: null }));
  useEffect(() => {
    let live = true;
    /** @type {ReturnType<typeof setTimeout> | null} */
    let timer = null;
    let failures = 0;
    const tick = async () => {
      timer = null;
      try {
        const out = await api.call("shell::status", { job_id: jobId, keep: "tail", max_output_bytes: 4096 }, 10_000);
        if (!live) return;
        const job = jobModel(out?.job, "tail");
        if (!job) {
          setState({ job: null, error: { code: "shape", message: "shell::status answered a record this card does not know" } });
          return;
        }
        failures = 0;
        setState({ job, error: null });
        if (!job.done) timer = setTimeout(tick, JOB_POLL_MS);
      } catch (e) {
        if (!live) return;
        const err = /** @type {any} */ (e);
        setState((s) => ({ job: s.job, error: { code: err?.code ?? "error", message: err?.message ?? String(e) } }));
        // a job the worker no longer holds will not come back; anything else is retried a while
        if (!/211$/.test(String(err?.code)) && ++failures < 10) timer = setTimeout(tick, JOB_POLL_MS * failures);
      }
    };
    void tick();
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [jobId, api]);
  return state;
}

/** @param {{m: any, host: any, api: any}} props */
function ExecBgCard({ m, host, api }) {
  const { job, error } = useJob({ jobId: m.jobId, api });
  const gone = error && /211$/.test(String(error.code));
  return (
    <div className="ide-card" data-ide-card="exec_bg" data-job-status={gone ? "gone" : (job?.status ?? "unknown")}>
      <Head fn="shell::exec_bg">
        {job && <StatusTag host={host} status={job.status} />}
        {job && <ExitTag host={host} code={job.exitCode} />}
        {gone && (
          <Tag host={host} tone="warn">
            record gone
          </Tag>
        )}
        <span className="ide-muted ide-card-id">{m.jobId}</span>
      </Head>
      {job ? <JobView job={job} host={host} keep="tail" /> : <Terminal command={m.command} s={null} cwd={m.cwd} />}
      {m.note && <div className="ide-card-foot"><span className="ide-card-note">{m.note}</span></div>}
      {error && (
        <div className="ide-card-foot">
          {gone ? (
            <span className="ide-card-note">The worker no longer holds this job&apos;s record (it was pruned after job_retention_secs, or the worker restarted): its status and output cannot be read any more.</span>
          ) : (
            <EntryError error={error} />
          )}
        </div>
      )}
    </div>
  );
}

/** @param {{m: any}} props */
function RunningCard({ m }) {
  return (
    <div className="ide-card" data-ide-card="running">
      <Head fn={m.functionId}>
        <span className="ide-muted">running…</span>
      </Head>
      <Terminal command={m.command} s={null} />
    </div>
  );
}

/** @param {{m: any}} props */
function ErrorCard({ m }) {
  return (
    <div className="ide-card error" data-ide-card="error" data-code={m.code}>
      <Head fn={m.functionId} title={m.subject ? <span className="ide-card-cmd">{m.subject}</span> : null}>
        <span className="ide-card-tag danger plain">failed</span>
      </Head>
      <EntryError error={m} />
    </div>
  );
}
