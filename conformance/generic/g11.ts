// G11 another project's key sees 404 for every resource id this project created: every
// operation that takes a key, on an item path of a collection the run created items of.
import { defineRules, check, type T } from '../runner.js';
import { bodyVerdict } from '../responses.js';
import { answered, exchangeLine } from './common.js';

export default defineRules((ctx) =>
  // Operations without a key (security: []) answer the same to every project.
  ctx.contract.operations
    .filter((op) => op.secured)
    .flatMap((op) => {
      const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      // The innermost parameter whose collection the suite can create items of.
      const owned = names
        .map((name) => ({ name, c: ctx.contract.collectionFor(op.path, name) }))
        .filter((x) => x.c?.creator)
        .pop();
      if (!owned) return [];
      const { name, c } = owned as { name: string; c: NonNullable<typeof owned.c> };
      return [
        check(`G11 ${op.id} answers 404 to another project's key`, async (t: T) => {
          const other = await ctx.otherKey();
          if (!other.key) t.skip(`no other project's key: ${other.reason}`);
          await ctx.ensure(c);
          const resources = ctx.registry.live(c.path, ctx.mainKey ?? null);
          if (resources.length === 0) {
            const ex = await ctx.exercise(c.creator!);
            t.skip(`the run has no live ${c.path} item (${c.creator!.id}: ${ex.response?.status ?? ex.error})`);
          }
          for (const r of resources) {
            const pathParams: Record<string, string> = { [name]: r.id };
            for (const [k, v] of Object.entries(r.pathParams)) if (names.includes(k) && k !== name) pathParams[k] = v;
            const ex = await ctx.call(await ctx.build(op, { pathParams }), { key: { value: other.key } });
            const res = answered(t, ex);
            if (res.status === 501 && ctx.contract.response(op, 501)?.key === '501') t.skip(`${op.id} is not implemented by this server (501, documented)`);
            t.assert(res.status === 404, `another project's key on ${c.path} ${r.id}: ${exchangeLine(ex)}`);
            if (ctx.contract.response(op, 404)?.key === '404') {
              const v = bodyVerdict(ctx.contract, op, res);
              t.assert(v.kind !== 'fail', `404 without the documented 404 body: ${v.kind === 'fail' ? v.message : ''}`);
            }
          }
          t.note(`${resources.length} × ${c.path}: ${resources.map((r) => r.id).join(', ')}`);
        }),
      ];
    }),
);
