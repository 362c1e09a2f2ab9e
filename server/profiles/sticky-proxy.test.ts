// A profile made with dedicated_sticky_ip keeps its sessions on one service proxy of the
// operator's pool while that proxy is healthy: the pool alone would rotate through its
// matches (least recently picked first), so without the profile consecutive sessions of one
// country alternate. When the kept proxy fails, the next session gets another, which the
// profile keeps from then on.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { Server as ProxyChainServer } from 'proxy-chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceProxyPool } from '../config/service-proxy-pool.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, endSession, eventually, headless, sessionRow, startPageServer, type PageServer } from '../sessions/test-support.js';

interface Proxy {
  server: ProxyChainServer;
  url: string;
  seen: string[];
}

async function proxy(): Promise<Proxy> {
  const seen: string[] = [];
  const server = new ProxyChainServer({
    port: 0,
    host: '127.0.0.1',
    verbose: false,
    prepareRequestFunction: ({ request }) => {
      seen.push(request.url ?? '');
      return {};
    },
  });
  await server.listen();
  return { server, seen, url: `http://127.0.0.1:${server.port}` };
}

describe.each(backends)('sticky service proxies of profiles on %s', (backend) => {
  let server: TestServer;
  let pages: PageServer;
  let first: Proxy;
  let second: Proxy;
  let dir: string;
  const ids: string[] = [];

  beforeAll(async () => {
    pages = await startPageServer();
    [first, second] = await Promise.all([proxy(), proxy()]);
    const pool = [first, second].map((p) => ({ url: p.url, country_code: 'fr' }));
    ids.push(...parseServiceProxyPool(pool).entries.map((e) => e.id));
    dir = mkdtempSync(join(tmpdir(), 'sticky-test-'));
    writeFileSync(join(dir, 'pool.json'), JSON.stringify(pool));
    server = await startTestServer({ backend, env: { SERVICE_PROXY_POOL: join(dir, 'pool.json') } });
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
    await Promise.all([first, second].map((p) => p?.server.close(true).catch(() => {})));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const fr = { proxy: { active: true, type: 'service_proxy', country_code: 'fr' } };
  const withProfile = { ...headless(fr), browser: { headless: { active: true }, profile: { name: 'sticky' } } };
  const proxyOf = async (id: string) => (await sessionRow(server.db, id))?.service_proxy_id;
  const session = async (body: unknown) => {
    const s = await createSession(server, body);
    const used = await proxyOf(s.id);
    await endSession(server, s.id);
    return used;
  };

  it('keeps the sessions of the profile on the proxy of the session it was made from, and moves it when that proxy fails', async () => {
    const source = await createSession(server, headless(fr));
    expect(await proxyOf(source.id)).toBe(ids[0]);
    const browser = await chromium.connectOverCDP(source.cdp_url);
    await browser.contexts()[0]!.pages()[0]!.goto(pages.url('/?via=source'));
    await browser.close();
    expect(first.seen).toContain(pages.url('/?via=source'));
    const made = await server.request('/v1/profiles', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'sticky', source: 'session', session_id: source.id, dedicated_sticky_ip: true }),
    });
    expect(made.status).toBe(200);
    await endSession(server, source.id);
    await eventually(async () => (await (await server.request('/v1/profiles/sticky')).json()).data.status === 'ready', 30_000, 'the profile to be saved');

    // The pool alone alternates; the profile's sessions stay on the first proxy.
    expect(await session(headless(fr))).toBe(ids[1]);
    expect(await session(withProfile)).toBe(ids[0]);
    expect(await session(headless(fr))).toBe(ids[1]);
    expect(await session(withProfile)).toBe(ids[0]);
    expect(await session(withProfile)).toBe(ids[0]);

    // The kept proxy goes away: the next session of the profile gets the other, and keeps it.
    await first.server.close(true);
    expect(await session(withProfile)).toBe(ids[1]);
    expect(await session(withProfile)).toBe(ids[1]);
    const [row] = await server.db.query<{ sticky_proxy_id: string }>(`SELECT sticky_proxy_id FROM profiles WHERE name = 'sticky'`);
    expect(row!.sticky_proxy_id).toBe(ids[1]);
    // Ten sessions, each a cold launch behind its proxy, one after another: about 20 s on a
    // fast day, past the default 60 s on a machine three times slower (2026-12-07, AMD EPYC).
  }, 150_000);
});
