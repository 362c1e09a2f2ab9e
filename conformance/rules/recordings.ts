// S9 (docs/conformance-rules.md): DELETE /v1/sessions/{id}/recordings/primary answers
// {data: {status}}, and the recording is gone. A session records by default; its
// recording exists once the session has ended and the video is made (the check waits for
// it to be listed), then is deleted, and must then be neither listed nor downloadable.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line } from '../http.js';
import { buildRequest } from '../requests.js';
import { check, defineRules, type T } from '../runner.js';

const BODY = { browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 2, max_duration: 5 } } };
/** How long the recording may take to appear after the session ended. */
const READY_MS = 120_000;
const RECORD_MS = 2_000;

const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

export default defineRules((ctx: SuiteContext) => {
  const op = (id: string) => ctx.contract.operation(id);
  const at = (id: string, pathParams: Record<string, string>) => buildRequest(ctx.contract, op(id), { pathParams });

  return [
    check('S9 DELETE .../recordings/primary answers {data: {status}} and the recording is gone', async (t: T) => {
      const created = await ctx.call(await ctx.build(op('createSession')), { bodyValue: BODY });
      t.assert(created.response?.status === 200, `POST /v1/sessions answered ${show(created)}`);
      const id = (created.response.json as { data?: { id?: unknown } } | undefined)?.data?.id;
      t.assert(typeof id === 'string', `POST /v1/sessions answered no data.id: ${show(created)}`);
      await sleep(RECORD_MS);
      const ended = await ctx.call(at('endSession', { session_id: id }));
      t.assert(ended.response?.status === 200, `DELETE /v1/sessions/${id} answered ${show(ended)}`);

      const list = () => ctx.call(at('listSessionRecordings', { session_id: id }));
      const count = (ex: Exchange) => (ex.response?.json as { data?: { count?: unknown } } | undefined)?.data?.count;
      const deadline = Date.now() + READY_MS;
      let listed = await list();
      while (listed.response?.status === 200 && count(listed) === 0 && Date.now() < deadline) {
        await sleep(1_000);
        listed = await list();
      }
      t.assert(listed.response?.status === 200, `GET /v1/sessions/${id}/recordings answered ${show(listed)}`);
      t.assert(
        typeof count(listed) === 'number' && (count(listed) as number) > 0,
        `no recording was listed within ${READY_MS / 1000} s of the session's end: ${show(listed)}`,
      );

      const deleted = await ctx.call(at('deleteSessionRecording', { session_id: id, recording_id: 'primary' }));
      t.assert(deleted.response?.status === 200, `DELETE /v1/sessions/${id}/recordings/primary answered ${show(deleted)}`);
      const status = (deleted.response.json as { data?: { status?: unknown } } | undefined)?.data?.status;
      t.assert(typeof status === 'string', `DELETE .../recordings/primary answered no data.status: ${show(deleted)}`);

      const after = await list();
      const items = (after.response?.json as { data?: { items?: { is_primary?: unknown }[] } } | undefined)?.data?.items;
      t.assert(after.response?.status === 200 && Array.isArray(items), `GET /v1/sessions/${id}/recordings answered ${show(after)}`);
      t.assert(!items.some((i) => i.is_primary === true), `the primary recording is still listed after its deletion: ${show(after)}`);
      const fetched = await ctx.call(at('fetchPrimaryRecording', { session_id: id }));
      t.assert(
        fetched.response?.status === 404,
        `GET .../recordings/primary/fetch answered ${fetched.response?.status ?? fetched.error} after the deletion, not 404`,
      );
      const again = await ctx.call(at('deleteSessionRecording', { session_id: id, recording_id: 'primary' }));
      t.assert(again.response?.status === 404, `a second DELETE .../recordings/primary answered ${again.response?.status ?? again.error}, not 404`);
      t.note(`recording listed, deleted (status ${JSON.stringify(status)}), then gone`);
    }),
  ];
});
