// A session over its memory cap (browser/cgroup.ts), through the API on real Chromium and the
// kernel's control groups: a project's own cap set by the admin API, a page that allocates
// until it is stopped beside two ordinary sessions that keep loading pages. The hog ends with
// end_reason memory_limit, told by session.failed, its recording so far kept; the others
// notice nothing (every load succeeds, they run on); nothing of the hog is left. How much
// the others' loads slow down meanwhile is measured in bench/noisy-neighbour.ts, not here.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cgroupPlace } from '../browser/cgroup.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import {
  HEADLESS,
  browsersDirFor,
  createSession,
  endSession,
  eventually,
  getSession,
  processesUnder,
  rootOf,
  sessionEvents,
  sessionRow,
  startPageServer,
  type PageServer,
  type Requester,
} from './test-support.js';

const ADMIN_TOKEN = 'adm_memory_limit_0123456789abcdef0123';
const found = cgroupPlace();
const why = 'why' in found ? found.why : undefined;
if (why) console.log(`server/sessions/memory-limit.test.ts: skipped: ${why}`);

async function admin(server: TestServer, method: string, path: string, body: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe.skipIf(why !== undefined)('a session over its memory cap', () => {
  let server: TestServer;
  let pages: PageServer;
  beforeAll(async () => {
    [server, pages] = await Promise.all([startTestServer({ env: { ADMIN_TOKEN } }), startPageServer()]);
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  it('ends alone with memory_limit, told and recorded, while the sessions beside it keep loading pages', async () => {
    const health = (await (await fetch(`${server.url}/healthz`)).json()) as any;
    expect(health.browsers.limits).toEqual({ memory_mb: 2048, cpus: 1 });

    // A project of its own with a lower cap, as an operator sets one.
    const made = await admin(server, 'POST', '/admin/v1/projects', { name: 'hog', browser_memory_limit_mb: 300 });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ browser_memory_limit_mb: 300, browser_cpu_limit: null });
    const patched = await admin(server, 'PATCH', `/admin/v1/projects/${made.body.data.id}`, { browser_memory_limit_mb: 512, browser_cpu_limit: 1.5 });
    expect(patched.body.data).toMatchObject({ browser_memory_limit_mb: 512, browser_cpu_limit: 1.5 });
    const key = (await admin(server, 'POST', `/admin/v1/projects/${made.body.data.id}/keys`, {})).body.data.key as string;
    const hogProject: Requester = {
      request: (path, init = {}) => fetch(server.url + path, { ...init, headers: { 'service-api-key': key, ...(init.headers as Record<string, string>) } }),
    };

    // Two ordinary sessions of the default project, loading pages until told to stop.
    const neighbours = await Promise.all([createSession(server, HEADLESS), createSession(server, HEADLESS)]);
    const clients: Browser[] = await Promise.all(neighbours.map((n) => chromium.connectOverCDP(n.cdp_url)));
    let stop = false;
    const loads = clients.map(async (client) => {
      const page = client.contexts()[0]!.pages()[0]!;
      let n = 0;
      while (!stop) {
        await page.goto(pages.url(n % 2 ? '/second' : '/'));
        n++;
      }
      return n;
    });

    // The hog: the default session (headful, recorded), on its project's cap.
    const hog = await createSession(hogProject, {});
    const browsersDir = browsersDirFor(server.dataDir);
    const { owner } = rootOf(browsersDir, hog.id);
    expect(owner.cgroups).toHaveLength(2);
    const hogClient = await chromium.connectOverCDP(hog.cdp_url);
    await hogClient.contexts()[0]!.pages()[0]!.goto(pages.url('/hog'));
    const row = await eventually(
      async () => {
        const r = await sessionRow(server.db, hog.id);
        return r?.status === 'failed' ? r : undefined;
      },
      60_000,
      'the hog to be ended',
    );
    stop = true;
    const counts = await Promise.all(loads);
    await hogClient.close().catch(() => {});

    expect(row!.end_reason).toBe('memory_limit');
    const events = await sessionEvents(server.db, hog.id);
    expect(events.map((e) => [e.type, e.data.reason])).toEqual([['session.failed', 'memory_limit']]);
    expect((await getSession(hogProject, hog.id)).body.data).toMatchObject({ status: 'failed', end_reason: 'memory_limit' });
    // Its recording so far is kept.
    const recording = await eventually(
      async () => {
        const list = (await (await hogProject.request(`/v1/sessions/${hog.id}/recordings`)).json()) as any;
        return list.data.count === 1 ? list.data.items[0] : undefined;
      },
      90_000,
      'the recording of the hog',
    );
    expect(recording.size).toBeGreaterThan(0);

    // The neighbours loaded pages throughout (every goto above succeeded) and run on.
    expect(counts.every((n) => n > 0)).toBe(true);
    for (const n of neighbours) expect((await getSession(server, n.id)).body.data.status).toBe('running');
    await Promise.all(clients.map((c) => c.close()));
    for (const n of neighbours) await endSession(server, n.id);

    // Nothing of the hog is left: no process, no root, no control group.
    await eventually(() => processesUnder(browsersDir).length === 0, 10_000, 'no browser process left');
    expect(owner.cgroups!.filter((dir) => existsSync(dir))).toEqual([]);
  }, 180_000);

  it('refuses a project cap below what a browser holds before its first page', async () => {
    const res = await admin(server, 'POST', '/admin/v1/projects', { name: 'tiny', browser_memory_limit_mb: 100 });
    expect(res.status).toBe(400);
    const cpu = await admin(server, 'POST', '/admin/v1/projects', { name: 'tiny', browser_cpu_limit: 0.01 });
    expect(cpu.status).toBe(400);
    const none = await admin(server, 'POST', '/admin/v1/projects', { name: 'uncapped', browser_memory_limit_mb: 0, browser_cpu_limit: 0 });
    expect(none.status).toBe(201);
  });
});
