// G8 an undocumented method (among GET, PUT, POST, DELETE, PATCH) on a documented path
// answers 405 with an Allow header listing the documented methods.
import { METHODS } from '../contract.js';
import { send } from '../http.js';
import { render } from '../requests.js';
import { defineRules, check, type T } from '../runner.js';
import { answered, exchangeLine } from './common.js';

export default defineRules((ctx) =>
  ctx.contract.paths.flatMap((path) => {
    const documented = ctx.contract.methodsAt(path);
    if (documented.length === 0) return [];
    return METHODS.filter((m) => !documented.includes(m)).map((method) =>
      check(
        `G8 ${method} ${path} answers 405 with Allow`,
        async (t: T) => {
          const op = ctx.contract.find(documented[0], path)!;
          const built = await ctx.build(op);
          const request = render(
            ctx.baseUrl,
            { ...built, op: { ...op, method }, body: undefined },
            {
              apiKey: ctx.mainKey,
              credentials: ctx.contract.credentialsOf(op),
              timeoutMs: ctx.probeTimeoutMs,
            },
          );
          const ex = await send(request).then(
            (response) => ({ built, request, response }),
            (err: Error) => ({ built, request, error: err.message }),
          );
          const res = answered(t, ex);
          t.assert(res.status === 405, `expected 405: ${exchangeLine(ex)}`);
          const allow = res.headers.get('allow');
          t.assert(allow !== null, `405 without an Allow header (documented: ${documented.join(', ')})`);
          const listed = allow
            .split(',')
            .map((m) => m.trim().toUpperCase())
            .filter(Boolean);
          const missing = documented.filter((m) => !listed.includes(m));
          const extra = listed.filter((m) => (METHODS as readonly string[]).includes(m) && !documented.includes(m as (typeof METHODS)[number]));
          t.assert(
            missing.length === 0 && extra.length === 0,
            `Allow: ${allow}; documented: ${documented.join(', ')}${missing.length ? `; missing ${missing.join(', ')}` : ''}${extra.length ? `; undocumented ${extra.join(', ')}` : ''}`,
          );
          t.note(`Allow: ${allow}`);
        },
        { stateful: false, parallel: true },
      ),
    );
  }),
);
