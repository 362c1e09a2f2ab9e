// Reading sessions back over the real server on every database backend: GET /v1/sessions
// with its filters and pagination, GET /v1/sessions/all/status with the vendor's filters
// (and DELETE /v1/sessions/all), GET /v1/sessions/history with its metrics and periods.
// Each test has a server of its own, so that what it reads is exactly what it made.
// One session's life is in sessions.test.ts.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { backends, startTestServer } from '../testing/harness.js';
import { createProject } from '../auth/api-keys.js';
import * as store from './store.js';
import { HEADLESS, headless, createSession, endSession, getSession, sessionEvents, sessionRow } from './test-support.js';

describe.each(backends)('sessions API on %s', (backend) => {
  it('lists with filters (status, tags, created_from, created_to, batch_id) and pagination, newest first', async () => {
    // A server of its own, so that the listing holds exactly what this test made.
    const own = await startTestServer({ backend });
    try {
      const a = await createSession(own, headless({ tags: ['red', 'round'] }));
      const b = await createSession(own, headless({ tags: ['red', 'square'] }));
      // Rows of an earlier day and of a batch, written as the batch worker would.
      const project = (await sessionRow(own.db, a.id))!.project_id as string;
      const batchId = randomUUID();
      const old = randomUUID();
      const batched = randomUUID();
      for (const [id, batch] of [
        [old, undefined],
        [batched, batchId],
      ] as const) {
        await store.insertSession(own.db, {
          id,
          projectId: project,
          nodeId: 'elsewhere',
          configuration: {},
          tags: ['archived'],
          cdpToken: 't',
          liveViewToken: 'l',
          batchId: batch,
        });
      }
      await own.db.query(
        `UPDATE sessions SET created_at = '2025-01-01T12:00:00Z', status = 'completed', ended_at = '2025-01-01T12:05:00Z', end_reason = 'api' WHERE id = $1`,
        [old],
      );
      await own.db.query(
        `UPDATE sessions SET created_at = now() - interval '1 hour', status = 'failed', ended_at = now(), end_reason = 'launch_failed' WHERE id = $1`,
        [batched],
      );

      const ids = async (query: string) => {
        const res = await own.request(`/v1/sessions${query}`);
        expect(res.status, query).toBe(200);
        const body = await res.json();
        return { ids: body.data.map((s: { id: string }) => s.id) as string[], pagination: body.pagination };
      };
      const all = await ids('');
      expect(all.ids).toEqual([b.id, a.id, batched, old]);
      expect(all.pagination).toEqual({ page: 1, limit: 20, total: 4, total_pages: 1 });
      expect((await ids('?status=running')).ids).toEqual([b.id, a.id]);
      expect((await ids('?status=completed')).ids).toEqual([old]);
      expect((await ids('?status=failed')).ids).toEqual([batched]);
      expect((await ids('?status=starting')).ids).toEqual([]);
      expect((await ids('?tags=red')).ids).toEqual([b.id, a.id]);
      expect((await ids('?tags=red&tags=round')).ids).toEqual([a.id]);
      expect((await ids('?tags=square,red')).ids).toEqual([b.id]);
      expect((await ids('?tags=red,archived')).ids).toEqual([]);
      expect((await ids('?created_to=2025-06-01T00:00:00Z')).ids).toEqual([old]);
      expect((await ids('?created_from=2025-06-01T00:00:00Z')).ids).toEqual([b.id, a.id, batched]);
      expect((await ids('?created_from=2025-01-01T12:00:00Z&created_to=2025-01-01T12:00:01Z')).ids).toEqual([old]);
      expect((await ids(`?batch_id=${batchId}`)).ids).toEqual([batched]);
      expect((await ids(`?batch_id=${randomUUID()}`)).ids).toEqual([]);

      const p1 = await ids('?limit=3');
      const p2 = await ids('?limit=3&page=2');
      expect(p1.ids).toEqual([b.id, a.id, batched]);
      expect(p2.ids).toEqual([old]);
      expect(p2.pagination).toEqual({ page: 2, limit: 3, total: 4, total_pages: 2 });
      expect((await ids('?limit=3&page=9')).ids).toEqual([]);

      for (const bad of ['?status=paused', '?limit=0', '?page=0', '?created_from=yesterday', '?batch_id=nope', '?limit=101']) {
        const res = await own.request(`/v1/sessions${bad}`);
        expect(res.status, bad).toBe(400);
        expect((await res.json()).error.code).toBe(400);
      }
      // Every item is a full record, with the vendor SDK's names beside ours (session_id, team_id, playground).
      const full = (await (await own.request('/v1/sessions?limit=1')).json()).data[0];
      expect(full.session_id).toBe(full.id);
      expect(Object.keys(full).sort()).toEqual(
        [
          'session_id',
          'team_id',
          'playground',
          'cdp_url',
          'configuration',
          'created_at',
          'credits_used',
          'duration',
          'end_reason',
          'ended_at',
          'id',
          'live_view_url',
          'network_bytes_total',
          'proxy_bytes',
          'screenshots',
          'status',
          'steps',
          'tags',
        ].sort(),
      );
      await endSession(own, a.id);
      await endSession(own, b.id);
      expect((await ids('')).ids).toEqual([batched, old]);
    } finally {
      await own.close();
    }
  });

  it('GET /v1/sessions/all/status lists {session_id, status, tags, created_at} with the vendor filters; DELETE /v1/sessions/all ends every running session of the project and none of another', async () => {
    const own = await startTestServer({ backend });
    try {
      const asOther = (key: string) => ({
        request: (p: string, init: RequestInit = {}) =>
          fetch(own.url + p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': key } }),
      });
      const a = await createSession(own, headless({ tags: ['red'] }));
      const b = await createSession(own, headless({ tags: ['red', 'blue'] }));
      const project = (await sessionRow(own.db, a.id))!.project_id as string;
      // An ended session created with the options the other filters look at, as a row.
      const old = randomUUID();
      const configuration = {
        session: { proxy: { active: true, type: 'custom' as const, server: 'http://p.example:8080' } },
        browser: { extra_stealth: { active: true }, profile: { name: 'Shop Main' } },
      };
      await store.insertSession(own.db, {
        id: old,
        projectId: project,
        nodeId: 'elsewhere',
        configuration,
        tags: ['green'],
        cdpToken: 't',
        liveViewToken: 'l',
      });
      await own.db.query(
        `UPDATE sessions SET created_at = '2025-01-01T12:00:00Z', status = 'completed', ended_at = '2025-01-01T12:05:00Z', end_reason = 'api', domains = '["example.com", "shop.example"]' WHERE id = $1`,
        [old],
      );
      const other = await createProject(own.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
      const c = await createSession(asOther(other.key), HEADLESS);

      const statuses = async (query: string) => {
        const res = await own.request(`/v1/sessions/all/status${query}`);
        expect(res.status, query).toBe(200);
        return (await res.json()).data as { count: number; items: { session_id: string; status: string; tags: string[]; created_at: string }[] };
      };
      const all = await statuses('');
      expect(all.count).toBe(3);
      expect(all.items.map((i) => i.session_id)).toEqual([b.id, a.id, old]);
      expect(all.items[0]).toEqual({ session_id: b.id, status: 'running', tags: ['red', 'blue'], created_at: expect.any(String) });
      expect((await statuses('?tags=red')).items.map((i) => i.session_id)).toEqual([b.id, a.id]);
      expect((await statuses('?tags=red,blue')).count).toBe(1);
      expect((await statuses('?domains=example.com')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?domains=example.com,other.example')).count).toBe(0);
      expect((await statuses('?proxy=true')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?proxy=false')).items.map((i) => i.session_id)).toEqual([b.id, a.id]);
      expect((await statuses('?extra_stealth=true')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?profile_name=shop')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?profile_name=home')).count).toBe(0);
      expect((await statuses('?created_to=2025-06-01T00:00:00Z')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await own.request('/v1/sessions/all/status?proxy=maybe')).status).toBe(400);
      expect((await fetch(`${own.url}/v1/sessions/all/status`)).status).toBe(401);

      const ended = await own.request('/v1/sessions/all', { method: 'DELETE' });
      expect(ended.status).toBe(200);
      expect(await ended.json()).toEqual({ data: { status: 'completed', ended: 2 } });
      for (const id of [a.id, b.id]) {
        expect((await getSession(own, id)).status).toBe(404);
        expect((await sessionRow(own.db, id))!.status).toBe('completed');
        expect((await sessionEvents(own.db, id)).map((e) => e.type)).toEqual(['session.completed']);
      }
      // The other project's session runs on; this project has nothing left to end.
      expect((await sessionRow(own.db, c.id))!.status).toBe('running');
      expect(await (await own.request('/v1/sessions/all', { method: 'DELETE' })).json()).toEqual({ data: { status: 'completed', ended: 0 } });
      expect((await statuses('')).items.map((i) => i.session_id)).toEqual([old]);
      await endSession(asOther(other.key), c.id);
    } finally {
      await own.close();
    }
  });

  it('history: the requested metrics per period of the granularity, a summary, and deleted sessions still counted', async () => {
    const own = await startTestServer({ backend });
    try {
      const a = await createSession(own, HEADLESS);
      const b = await createSession(own, HEADLESS);
      await endSession(own, a.id);
      const project = (await sessionRow(own.db, b.id))!.project_id as string;
      const older = randomUUID();
      await store.insertSession(own.db, { id: older, projectId: project, nodeId: 'elsewhere', configuration: {}, tags: [], cdpToken: 't', liveViewToken: 'l' });
      await own.db.query(
        `UPDATE sessions SET created_at = now() - interval '3 days', ended_at = now() - interval '3 days' + interval '30 minutes', status = 'completed', network_bytes_total = 1000, screenshots = 2 WHERE id = $1`,
        [older],
      );

      const get = async (query: string) => {
        const res = await own.request(`/v1/sessions/history${query}`);
        return { status: res.status, body: await res.json() };
      };
      const day = await get('?granularity=day&metrics=session_count,screenshots');
      expect(day.status).toBe(200);
      // 30 days by default: one item per day, each with the date and exactly the metrics asked.
      expect(day.body.pagination.total).toBeGreaterThanOrEqual(30);
      for (const point of day.body.data) expect(Object.keys(point).sort()).toEqual(['date', 'screenshots', 'session_count']);
      expect(day.body.summary).toEqual({ session_count: 3, screenshots: 2 });
      const all = await get(`?granularity=day&limit=100`);
      const nonEmpty = all.body.data.filter((p: { session_count: number }) => p.session_count > 0);
      expect(nonEmpty.map((p: { session_count: number }) => p.session_count)).toEqual([1, 2]);
      expect(nonEmpty[0].network_bytes_total).toBe(1000);
      expect(nonEmpty[0].session_hours).toBeCloseTo(0.5, 5);
      expect(Object.keys(all.body.summary).sort()).toEqual([
        'credits_used',
        'network_bytes_total',
        'proxy_bytes',
        'screenshots',
        'session_count',
        'session_hours',
      ]);
      for (const p of all.body.data) expect(new Date(p.date).getUTCHours()).toBe(0);

      const from = new Date(Date.now() - 2 * 3_600_000).toISOString();
      const hour = await get(`?from_date=${from}&granularity=hour&metrics=session_count`);
      expect(hour.status).toBe(200);
      expect(hour.body.data.length).toBeGreaterThanOrEqual(2);
      expect(hour.body.summary).toEqual({ session_count: 2 }); // the deleted one included
      const week = await get('?granularity=week&metrics=session_count');
      for (const p of week.body.data) expect(new Date(p.date).getUTCDay()).toBe(1); // Mondays

      for (const bad of [
        '?metrics=bogus',
        '?granularity=year',
        `?from_date=${new Date().toISOString()}&to_date=${from}`,
        '?from_date=2000-01-01T00:00:00Z&granularity=hour',
      ]) {
        const res = await get(bad);
        expect(res.status, bad).toBe(400);
        expect(res.body.error.code).toBe(400);
      }
      await endSession(own, b.id);
    } finally {
      await own.close();
    }
  });
});
