// P3 (docs/conformance-rules.md, Profiles and extensions): GET /v1/extensions answers
// {data: [extension]} with the documented manifest fields, the upload among them; and the
// extension is got by id and deleted (404 afterwards).
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

const MANIFEST_FIELDS = ['description', 'manifest_version', 'name', 'permissions', 'version'];

export default defineRules((ctx: SuiteContext) => {
  const upload = ctx.contract.operation('uploadExtension');
  const list = ctx.contract.operation('listExtensions');
  const get = ctx.contract.operation('getExtension');
  const remove = ctx.contract.operation('deleteExtension');

  return [
    check('P3 GET /v1/extensions answers {data: [extension]} with the documented manifest fields', async (t: T) => {
      const created = await ctx.call(await ctx.build(upload));
      const made = answer(t, created);
      if (made.status === 501) t.skip('extensions are not implemented by this server (501)');
      t.assert(made.status === 200, line(created.request, made, 300));
      const id = (made.json as { data?: { id?: string } }).data?.id;
      t.assert(typeof id === 'string', `upload answered no id: ${line(created.request, made, 300)}`);
      try {
        const listed = await ctx.call(await ctx.build(list));
        const res = answer(t, listed);
        t.assert(res.status === 200, line(listed.request, res, 300));
        const verdict = bodyVerdict(ctx.contract, list, res);
        t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? `${verdict.message}\n${line(listed.request, res, 300)}` : '');
        const body = res.json as { data?: { id: string; manifest: Record<string, unknown> }[] };
        t.assert(Array.isArray(body.data), `data is not an array: ${line(listed.request, res, 300)}`);
        const mine = body.data.find((e) => e.id === id);
        t.assert(mine, `the uploaded extension ${id} is not listed`);
        t.equal(Object.keys(mine.manifest).sort(), MANIFEST_FIELDS, 'the manifest fields');

        const one = await ctx.call(await ctx.build(get, { pathParams: { id } }));
        t.assert(answer(t, one).status === 200, line(one.request, one.response!, 300));
        t.equal((one.response!.json as { id?: string }).id, id, 'GET /v1/extensions/{id} answers the extension');
      } finally {
        const gone = await ctx.call(await ctx.build(remove, { pathParams: { id } }));
        t.assert(answer(t, gone).status === 200, line(gone.request, gone.response!, 300));
      }
      const after = await ctx.call(await ctx.build(get, { pathParams: { id } }));
      t.assert(answer(t, after).status === 404, `after DELETE: ${line(after.request, after.response!, 300)}`);
      t.note(line(created.request, made, 200));
    }),
  ];
});
