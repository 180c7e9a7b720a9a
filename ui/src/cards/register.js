// Which registrar a console gives chat-card renderers: the shipped console
// calls it host.functionTriggers, the design draft host.functionCalls.
// Feature-detected; a console with neither just shows its own cards.

/**
 * Register `renderer` through the first registrar the host has.
 * @param {any} host @param {any} renderer
 * @returns {{registrar: string | null, off: () => void}}
 */
export function registerCardRenderer(host, renderer) {
  for (const name of ["functionTriggers", "functionCalls"]) {
    const r = host?.[name];
    if (r && typeof r.register === "function") {
      const off = r.register(renderer);
      return { registrar: name, off: typeof off === "function" ? off : () => {} };
    }
  }
  return { registrar: null, off: () => {} };
}
