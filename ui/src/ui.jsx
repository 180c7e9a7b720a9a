// Small shared pieces: error lines (code and message, never swallowed) and
// a banner with actions.

/** @param {{error: any}} props */
export function ErrorLine({ error }) {
  if (!error) return null;
  const code = typeof error.code === "string" ? error.code : "error";
  const message = typeof error.message === "string" ? error.message : String(error);
  return (
    <div className="ide-error" role="alert" data-code={code}>
      <span className="ide-code">{code}</span> {message}
    </div>
  );
}

/** @param {{kind: "warn" | "error" | "info", children: any, actions?: Array<{label: string, onClick: () => void}>}} props */
export function Banner({ kind, children, actions = [] }) {
  return (
    <div className={`ide-banner ${kind}`} role={kind === "info" ? "status" : "alert"}>
      <div className="ide-banner-text">{children}</div>
      <div className="ide-banner-actions">
        {actions.map((a) => (
          <button key={a.label} className="ide-button small" onClick={a.onClick}>
            {a.label}
          </button>
        ))}
      </div>
    </div>
  );
}

/**
 * A button: the console's own (host.components.Button) when it has one, so
 * the page's chrome matches the console; the page's styled one otherwise.
 * @param {{host: any, primary?: boolean, small?: boolean, className?: string, [k: string]: any}} props
 */
export function Button({ host, primary = false, small = false, className = "", ...props }) {
  const Host = host?.components?.Button;
  if (typeof Host === "function" || (Host && typeof Host === "object")) {
    return <Host variant={primary ? "default" : "outline"} size={small ? "sm" : "default"} {...props} />;
  }
  const cls = ["ide-button", primary ? "primary" : "", small ? "small" : "", className].filter(Boolean).join(" ");
  return <button className={cls} type="button" {...props} />;
}

/**
 * The keys of a pick list (quick open, go to symbol, the definition picker):
 * arrows move the selection (kept inside the list), Enter picks the selected
 * item, Escape closes.
 * @template T
 * @param {import("react").KeyboardEvent} e @param {T[]} items @param {number} selected
 * @param {(f: (s: number) => number) => void} setSelected @param {(item: T) => void} pick @param {() => void} close
 */
export function listKeys(e, items, selected, setSelected, pick, close) {
  if (e.key === "Escape") close();
  else if (e.key === "ArrowDown") {
    e.preventDefault();
    setSelected((s) => Math.min(s + 1, items.length - 1));
  } else if (e.key === "ArrowUp") {
    e.preventDefault();
    setSelected((s) => Math.max(s - 1, 0));
  } else if (e.key === "Enter" && items[selected] !== undefined) pick(items[selected]);
}
