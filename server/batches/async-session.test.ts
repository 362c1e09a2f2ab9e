// POST /v1/sessions/async over real HTTP on real Chromium: the answer comes at once with a
// request_id, the status follows the session from queued to ready (its URLs work), a browser
// that cannot start ends failed with the reason, and the batch.completed / batch.failed event
// with batch_id = request_id is what a webhook hears. Bodies are checked against the contract.
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { compileSchema, createAjv, loadSpec } from '../http/spec.js';
import { browserBackends } from '../testing/harness.js';
import { batchEvents, call, HEADLESS, serverPerTest, until } from './test-support.js';

const ajv = createAjv(loadSpec());
const valid = (name: string) => compileSchema(ajv, { $ref: `#/components/schemas/${name}` });
const created = valid('AsyncSessionCreated');
const status = valid('AsyncSessionStatus');

describe.each(browserBackends)('sessions started without waiting (%s)', (backend) => {
  const start = serverPerTest(backend);

  it('answers pending at once; the status goes to ready with a session that runs; batch.completed tells a webhook', async () => {
    const t = await start();
    const res = await call(t, 'POST', '/v1/sessions/async', HEADLESS);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(created(res.body), JSON.stringify(created.errors)).toBe(true);
    expect(res.body.data).toMatchObject({ status: 'pending', session_id: null });
    const id = res.body.data.request_id as string;

    const ready = await until(
      async () => (await call(t, 'GET', `/v1/sessions/async/${id}/status`)).body,
      (b) => b.data?.status !== 'pending' && b.data?.status !== 'processing',
    );
    expect(status(ready), JSON.stringify(status.errors)).toBe(true);
    expect(ready.data).toMatchObject({ request_id: id, status: 'ready', progress: { current_phase: 'ready' }, session: { status: 'completed', error: null } });
    const session = await call(t, 'GET', `/v1/sessions/${ready.data.session.session_id}`);
    expect(session.body.data.status).toBe('running');
    const browser = await chromium.connectOverCDP(ready.data.session.cdp_url);
    expect(browser.contexts().length).toBeGreaterThan(0);
    await browser.close();
    const events = await batchEvents(t, id);
    expect(events.map((e) => e.type)).toEqual(['batch.completed']);
    expect(events[0].data).toMatchObject({ batch_id: id, total_requests: 1, completed_requests: 1, status: 'completed' });
  });

  it('a browser that cannot start: failed, with the reason in session.error, and batch.failed', async () => {
    const t = await start({ CHROMIUM_PATH: '/bin/false' });
    const id = (await call(t, 'POST', '/v1/sessions/async', HEADLESS)).body.data.request_id as string;
    const done = await until(
      async () => (await call(t, 'GET', `/v1/sessions/async/${id}/status`)).body,
      (b) => b.data?.status === 'failed',
    );
    expect(status(done), JSON.stringify(status.errors)).toBe(true);
    expect(done.data).toMatchObject({ progress: { current_phase: 'done' }, session: { session_id: null, status: 'failed' } });
    expect(done.data.session.error).toMatch(/could not be started/);
    expect((await batchEvents(t, id)).map((e) => e.type)).toEqual(['batch.failed']);
  });

  it("refuses what POST /v1/sessions refuses with 400 before queueing; an empty body is all defaults; 404 for ids not the project's", async () => {
    const t = await start({ CHROMIUM_PATH: '/bin/false' });
    const captcha = await call(t, 'POST', '/v1/sessions/async', { browser: { captcha_solver: { active: true } } });
    expect(captcha.status).toBe(400);
    expect(captcha.body.error.message).toMatch(/captcha solver requires an active proxy/i);
    expect((await call(t, 'POST', '/v1/sessions/async', { session: { unknown_option: true } })).status).toBe(400);
    expect(await t.db.query('SELECT 1 FROM batches')).toHaveLength(0);

    const bare = await t.request('/v1/sessions/async', { method: 'POST' });
    expect(bare.status).toBe(200);
    const id = ((await bare.json()) as any).data.request_id as string;
    const other = await createProject(t.db, { name: 'other', source: 'test' });
    const theirs = await call(t, 'GET', `/v1/sessions/async/${id}/status`, undefined, { 'service-api-key': other.key });
    expect(theirs.status).toBe(404);
    expect((await call(t, 'GET', '/v1/sessions/async/4e8a1c2d-3b5f-4a6e-9c7d-8b0a1f2e3d4c/status')).status).toBe(404);
    expect((await call(t, 'GET', '/v1/sessions/async/not-a-uuid/status')).status).toBe(400);
    // A batch of several is not an async request.
    const batch = await call(t, 'POST', '/v1/batch-sessions', { count: 2, configuration: HEADLESS });
    expect((await call(t, 'GET', `/v1/sessions/async/${batch.body.data.batch_id}/status`)).status).toBe(404);
  });
});
