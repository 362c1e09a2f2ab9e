// Functions that run inside pages are sent as source. tsx (esbuild with keepNames) rewrites
// nested functions to call a `__name` helper that exists only in Node, so every such
// function is wrapped with a local stand-in and sent as an expression string; arguments
// travel as JSON. Playwright awaits a promise the expression returns.
export function inPage(fn: (...args: never[]) => unknown, ...args: unknown[]): string {
  return `(() => { const __name = (f) => f; return (${fn.toString()})(${args.map((a) => JSON.stringify(a)).join(', ')}); })()`;
}

/**
 * Several inPage expressions evaluated in one call, answering an object of their values: one
 * round trip to the page instead of one each (under load, each costs the page lifetime).
 */
export function inPageAll(parts: Record<string, string>): string {
  const fields = Object.entries(parts).map(([name, expression]) => `${JSON.stringify(name)}: await ${expression}`);
  return `(async () => ({ ${fields.join(', ')} }))()`;
}
