// Functions that run inside pages are sent as source. tsx (esbuild with keepNames) rewrites
// nested functions to call a `__name` helper that exists only in Node, so every such
// function is wrapped with a local stand-in and sent as an expression string; arguments
// travel as JSON. Playwright awaits a promise the expression returns.
export function inPage(fn: (...args: never[]) => unknown, ...args: unknown[]): string {
  return `(() => { const __name = (f) => f; return (${fn.toString()})(${args.map((a) => JSON.stringify(a)).join(', ')}); })()`;
}
