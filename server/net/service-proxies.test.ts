import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceProxyPool, type ServiceProxyEntry } from '../config/service-proxy-pool.js';
import { NO_POOL_MESSAGE, ServiceProxyPool } from './service-proxies.js';
import { eventually } from '../browser/test-support.js';

// Real TCP: "live" proxies are listeners that accept connections (a pick only connects), a
// dead one is a port that was bound and closed.

const listeners: net.Server[] = [];
const accepted = new Map<number, number>();

async function live(): Promise<number> {
  const server = net.createServer((s) => {
    const port = (server.address() as AddressInfo).port;
    accepted.set(port, (accepted.get(port) ?? 0) + 1);
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  listeners.push(server);
  return (server.address() as AddressInfo).port;
}

async function dead(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function pool(doc: unknown[], options: { restMs?: number } = {}) {
  const parsed = parseServiceProxyPool(doc);
  expect(parsed.problems).toEqual([]);
  const lines: string[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
  return { pool: new ServiceProxyPool(parsed.entries, { log, ...options }), entries: parsed.entries, lines };
}

const byPort = (entries: ServiceProxyEntry[], port: number) => entries.find((e) => e.port === port)!;

let us1: number;
let us2: number;
let de: number;
let gone: number;

beforeAll(async () => {
  [us1, us2, de, gone] = await Promise.all([live(), live(), live(), dead()]);
});

afterAll(async () => {
  await Promise.all(listeners.map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('service proxy pool: matching', () => {
  const doc = () => [
    { url: `http://u:secret@127.0.0.1:${us1}`, country_code: 'US', region: 'California', city: 'San Francisco' },
    { url: `http://127.0.0.1:${us2}`, country_code: 'us', region: 'new york' },
    { url: `socks5://127.0.0.1:${de}`, country_code: 'de' },
  ];

  it('picks a proxy matching every field given, names compared without regard to case', async () => {
    const { pool: p, entries } = pool(doc());
    const pick = async (c: object) => {
      const r = await p.pick(c);
      return r.ok ? r.proxy.port : r;
    };
    expect(await pick({ country_code: 'de' })).toBe(de);
    expect(await pick({ country_code: 'us', region: 'NEW YORK' })).toBe(us2);
    expect(await pick({ country_code: 'us', region: 'california', city: 'san francisco' })).toBe(us1);
    expect(await pick({ region: 'California' })).toBe(us1);
    // Nothing asked: any proxy of the pool.
    expect(entries.map((e) => e.port)).toContain(await pick({}));
  });

  it('answers 400 naming what was asked and what the pool offers, at the level that did not match', async () => {
    const { pool: p } = pool(doc());
    const refused = async (c: object) => {
      const r = await p.pick(c);
      expect(r.ok).toBe(false);
      if (r.ok) return '';
      expect(r.status).toBe(400);
      expect(p.refusal(c)).toBe(r.message);
      return r.message;
    };
    expect(await refused({ country_code: 'fr' })).toBe('No service proxy for country_code=fr; the pool offers country_code de, us');
    expect(await refused({ country_code: 'us', region: 'texas' })).toBe(
      'No service proxy for country_code=us, region=texas; for country_code=us the pool offers region California, new york',
    );
    expect(await refused({ country_code: 'us', region: 'new york', city: 'brooklyn' })).toBe(
      'No service proxy for country_code=us, region=new york, city=brooklyn; for country_code=us, region=new york the pool has no proxy with a city',
    );
    expect(await refused({ country_code: 'de', region: 'berlin' })).toBe(
      'No service proxy for country_code=de, region=berlin; for country_code=de the pool has no proxy with a region',
    );
    expect(p.refusal({ country_code: 'us' })).toBeUndefined();
  });

  it('without a pool, every service proxy answers 400 saying the operator has not configured one', async () => {
    const p = new ServiceProxyPool(undefined, { log: pino({ level: 'silent' }) });
    expect(p.configured).toBe(false);
    expect(p.refusal({})).toBe(NO_POOL_MESSAGE);
    expect(NO_POOL_MESSAGE).toMatch(/not configured a proxy pool \(SERVICE_PROXY_POOL\)/);
    expect(await p.pick({ country_code: 'us' })).toEqual({ ok: false, status: 400, message: NO_POOL_MESSAGE });
  });

  it('goes round the matches, and a preferred id comes first while it matches and is healthy', async () => {
    const { pool: p, entries } = pool(doc());
    const ports = [];
    for (let i = 0; i < 4; i++) {
      const r = await p.pick({ country_code: 'us' });
      ports.push(r.ok ? r.proxy.port : 0);
    }
    expect(ports).toEqual([us1, us2, us1, us2]);
    const sticky = byPort(entries, us2).id;
    for (let i = 0; i < 3; i++) {
      const r = await p.pick({ country_code: 'us' }, { prefer: sticky });
      expect(r.ok && r.proxy.id).toBe(sticky);
    }
    // A preference that does not match what is asked does not override it.
    const r = await p.pick({ country_code: 'de' }, { prefer: sticky });
    expect(r.ok && r.proxy.port).toBe(de);
  });
});

describe('service proxy pool: health', () => {
  it('rests a proxy whose connect fails and gives the next match; it is not tried again while it rests', async () => {
    const {
      pool: p,
      entries,
      lines,
    } = pool([
      { url: `http://user:hunter2@127.0.0.1:${gone}`, country_code: 'us' },
      { url: `http://127.0.0.1:${us1}`, country_code: 'us' },
    ]);
    const deadId = byPort(entries, gone).id;
    const first = await p.pick({ country_code: 'us' });
    expect(first.ok && first.proxy.port).toBe(us1);
    expect(p.resting(deadId)).toBe(true);
    const rested = lines.filter((l) => l.includes('resting it'));
    expect(rested).toHaveLength(1);
    expect(JSON.parse(rested[0])).toMatchObject({ serviceProxy: `http://127.0.0.1:${gone}`, id: deadId, failure: 'ECONNREFUSED', restSeconds: 60 });
    for (let i = 0; i < 3; i++) {
      const r = await p.pick({ country_code: 'us' });
      expect(r.ok && r.proxy.port).toBe(us1);
    }
    // Rested once: the picks since did not try it.
    expect(lines.filter((l) => l.includes('resting it'))).toHaveLength(1);
    expect(lines.join('')).not.toContain('hunter2');
  });

  it('answers 503 with the wait when every match rests, and tries a proxy again once its rest is over', async () => {
    const { pool: p, entries } = pool([{ url: `socks5://127.0.0.1:${gone}`, country_code: 'de' }], { restMs: 300 });
    const r = await p.pick({ country_code: 'de' });
    expect(r).toEqual({
      ok: false,
      status: 503,
      message: 'No healthy service proxy for country_code=de right now: its proxy in the pool failed its last connects; try again in 1 s',
      retryAfterSeconds: 1,
    });
    expect(p.resting(entries[0].id)).toBe(true);
    // The rest's expiry is what is tested (restMs 300): just past it, not polled.
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(p.resting(entries[0].id)).toBe(false);
    // Tried again (and rested again: it is still dead).
    expect((await p.pick({ country_code: 'de' })).ok).toBe(false);
    expect(p.resting(entries[0].id)).toBe(true);
  });

  it('a failure a session reports is checked with a connect first: a live proxy stays, a dead one rests', async () => {
    const lateDead = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => lateDead.listen(0, '127.0.0.1', resolve));
    const lateDeadPort = (lateDead.address() as AddressInfo).port;
    const { pool: p, entries } = pool([
      { url: `http://127.0.0.1:${us1}`, country_code: 'us' },
      { url: `http://127.0.0.1:${lateDeadPort}`, country_code: 'us' },
    ]);
    const liveId = byPort(entries, us1).id;
    const laterId = byPort(entries, lateDeadPort).id;
    const before = accepted.get(us1) ?? 0;
    p.reportFailure(liveId);
    // The check's connect, seen by the proxy; a wrongly rested proxy fails the picks below too.
    await eventually(() => accepted.get(us1) === before + 1, 5_000, "the check's connect");
    expect(p.resting(liveId)).toBe(false);

    // Picked while alive (its connect succeeded), then it dies under a session.
    const r1 = await p.pick({ country_code: 'us' });
    const r2 = await p.pick({ country_code: 'us' });
    expect([r1.ok && r1.proxy.id, r2.ok && r2.proxy.id].sort()).toEqual([liveId, laterId].sort());
    await new Promise<void>((resolve) => lateDead.close(() => resolve()));
    // Moments after a connect of ours succeeded, a report is not checked (a page's many
    // failing requests would each cost the proxy a connect)...
    p.reportFailure(laterId);
    // Negative: no check is made, so none rests it; a window a check's connect would fall in.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(p.resting(laterId)).toBe(false);
    // ...a little later it is, and the dead proxy rests.
    // The quiet period (REPORT_QUIET_MS, 2 s, not an option) is what is tested: it must pass.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    p.reportFailure(laterId);
    await eventually(() => p.resting(laterId), 5_000, 'the reported proxy to rest');
    const r3 = await p.pick({ country_code: 'us' });
    expect(r3.ok && r3.proxy.id).toBe(liveId);
  });

  it('a reported failure of a proxy not vouched for rests it, and new sessions get the next match', async () => {
    const { pool: p, entries } = pool([
      { url: `http://127.0.0.1:${gone}`, country_code: 'us' },
      { url: `http://127.0.0.1:${us2}`, country_code: 'us' },
    ]);
    const deadId = byPort(entries, gone).id;
    p.reportFailure(deadId);
    await eventually(() => p.resting(deadId), 5_000, 'the reported proxy to rest');
    const r = await p.pick({ country_code: 'us' }, { prefer: deadId });
    expect(r.ok && r.proxy.port).toBe(us2);
  });
});
