// bench/profile-start: a session started from a saved profile of about 20 MB (cookies, local
// storage, IndexedDB and HTTP cache; random bytes, so nothing compresses) — create →
// connectOverCDP → goto a page of the profile's site → end — against raw Playwright doing
// the same from the same user-data directory in the same run: copy the saved directory (a
// persistent profile cannot be shared by two browsers) and launchPersistentContext on the
// copy, goto, close. Both headless; ours without recording (the reference records nothing).
// Then the same at concurrency 2 (two starts at once, each side). Also reported: what
// saving the profile at a session's end costs: the DELETE's answer (the browser closed
// gracefully, its user-data moved aside) and the time until the profile is ready again (packed
// and stored), over sessions that persist into it.
// Goal: p50 within 1.2x of the reference.
// Usage: pnpm exec tsx bench/profile-start.ts [--rounds 30]
import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';
import { unzip } from '../server/storage/zip.js';
import { machine, ms, percentile, progress, quiet, takingTurns } from './machine.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 30;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const MB = 1024 * 1024;

// The profile's site: /fill signs in and stores ~20 MB (10 MB IndexedDB, 2 MB local
// storage, 8 MB of cached responses); / is the page every timed round opens.
const assets = Array.from({ length: 8 }, () => randomBytes(MB));
const site = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const asset = /^\/asset\/(\d)$/.exec(url.pathname);
  if (asset) {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'public, max-age=86400' });
    return void res.end(assets[Number(asset[1])]);
  }
  if (url.pathname === '/fill') {
    res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': ['sid=bench; Path=/', 'keep=bench; Path=/; Max-Age=86400'] });
    return void res.end(`<!doctype html><title>fill</title><script>
      const random = (n) => { const b = new Uint8Array(n); for (let i = 0; i < n; i += 65536) crypto.getRandomValues(b.subarray(i, Math.min(n, i + 65536))); return b; };
      localStorage.setItem('blob', Array.from(random(768 * 1024), (x) => String.fromCharCode(97 + (x % 26))).join(''));
      Promise.all([...Array(8).keys()].map((i) => fetch('/asset/' + i).then((r) => r.arrayBuffer()))).then(() => new Promise((done) => {
        const open = indexedDB.open('bench', 1);
        open.onupgradeneeded = () => open.result.createObjectStore('kv');
        open.onsuccess = () => {
          const tx = open.result.transaction('kv', 'readwrite');
          for (let i = 0; i < 10; i++) tx.objectStore('kv').put(random(1024 * 1024), 'chunk' + i);
          tx.oncomplete = done;
        };
      })).then(() => { window.filled = true; });
    </script>`);
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><title>bench</title><h1>bench page</h1><script>document.body.append(document.cookie)</script>');
});
await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };

async function create(server: ServerProcess, body: object): Promise<{ id: string; cdp_url: string }> {
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify(body) });
  const created = (await res.json()) as { data: { id: string; cdp_url: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(created)}`);
  return created.data;
}

async function end(server: ServerProcess, id: string): Promise<void> {
  const res = await server.request(`/v1/sessions/${id}`, { method: 'DELETE' });
  if (res.status !== 200) throw new Error(`end answered ${res.status}`);
}

async function profileOf(server: ServerProcess, name: string): Promise<{ status: string; size_bytes: number | null; updated_at: string }> {
  return ((await (await server.request(`/v1/profiles/${name}`)).json()) as { data: { status: string; size_bytes: number | null; updated_at: string } }).data;
}

async function until(fn: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 120_000; !(await fn()); ) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

console.log(`bench/profile-start on ${machine()}; ${N} rounds, the sides taking turns`);
const server = await startServerProcess({ BROWSER_POOL_SIZE: '0', SESSION_CREATE_RATE_PER_MINUTE: '100000' });
const work = await mkdtemp(join(tmpdir(), 'cb-bench-profile-'));
try {
  // The profile: a session signs in and fills it, then ends.
  const maker = await create(server, HEADLESS);
  {
    const browser = await chromium.connectOverCDP(maker.cdp_url);
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(`${siteUrl}/fill`);
    await page.waitForFunction(() => (window as any).filled === true, undefined, { timeout: 60_000 });
    await browser.close();
  }
  const made = await server.request('/v1/profiles', { method: 'POST', body: JSON.stringify({ name: 'bench', source: 'session', session_id: maker.id }) });
  if (made.status !== 200) throw new Error(`profile creation answered ${made.status}`);
  await end(server, maker.id);
  await until(async () => (await profileOf(server, 'bench')).status === 'ready');
  const { size_bytes } = await profileOf(server, 'bench');

  // The reference's user-data directory: the very one the profile holds, unpacked once.
  const [project] = await readdir(join(server.dataDir, 'profiles'));
  const [profileId] = await readdir(join(server.dataDir, 'profiles', project!));
  const [object] = await readdir(join(server.dataDir, 'profiles', project!, profileId!));
  const template = join(work, 'template');
  await unzip({ path: join(server.dataDir, 'profiles', project!, profileId!, object!) }, template);
  const unpacked = Number(execFileSync('du', ['-sb', template]).toString().split('\t')[0]);
  console.log(`profile: ${(unpacked / MB).toFixed(1)} MB of user-data, ${((size_bytes ?? 0) / MB).toFixed(1)} MB stored`);

  const ours = async () => {
    const s = await create(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'bench' } } });
    const browser = await chromium.connectOverCDP(s.cdp_url);
    const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
    await page.goto(`${siteUrl}/`);
    if (!(await page.textContent('body'))?.includes('sid=bench')) throw new Error('the session is not signed in');
    await browser.close();
    await end(server, s.id);
  };
  let copies = 0;
  const raw = async () => {
    const dir = join(work, `copy-${copies++}`);
    await cp(template, dir, { recursive: true });
    const context = await chromium.launchPersistentContext(dir, { executablePath: chromiumPath, headless: true, args: flags });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${siteUrl}/`);
    if (!(await page.textContent('body'))?.includes('sid=bench')) throw new Error('the reference is not signed in');
    await context.close();
    await rm(dir, { recursive: true, force: true });
  };

  const one = await takingTurns(N, { ours: { run: ours }, raw: { run: raw } });
  const report = (label: string, a: number[], b: number[], goal?: number) => {
    const ratio = percentile(a, 50) / percentile(b, 50);
    const verdict = goal === undefined ? '' : ` (goal ≤ ${goal}x: ${ratio <= goal ? 'met' : 'NOT met'})`;
    console.log(
      `${label}: ours p50 ${ms(percentile(a, 50))} p95 ${ms(percentile(a, 95))} | raw Playwright p50 ${ms(percentile(b, 50))} p95 ${ms(percentile(b, 95))} | p50 ratio ${ratio.toFixed(2)}x${verdict}`,
    );
  };
  report('start from the profile, one at a time', one.ours, one.raw, 1.2);

  // Concurrency 2: each round times two starts at once, per start.
  const two: { ours: number[]; raw: number[] } = { ours: [], raw: [] };
  const pairs = Math.max(5, Math.floor(N / 3));
  for (let i = 1; i <= pairs; i++) {
    for (const [side, fn] of [
      ['ours', ours],
      ['raw', raw],
    ] as const) {
      await quiet();
      await Promise.all(
        [0, 1].map(async () => {
          const t = performance.now();
          await fn();
          two[side].push(performance.now() - t);
        }),
      );
    }
    progress('concurrency 2', i, pairs);
  }
  report('start from the profile, two at once', two.ours, two.raw);

  // Saving: sessions that persist into the profile, ended one at a time.
  const answer: number[] = [];
  const ready: number[] = [];
  const saves = Math.max(5, Math.floor(N / 3));
  for (let i = 1; i <= saves; i++) {
    const s = await create(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'bench', persist: true } } });
    const browser = await chromium.connectOverCDP(s.cdp_url);
    await browser.contexts()[0]!.pages()[0]!.goto(`${siteUrl}/`);
    await browser.close();
    const before = (await profileOf(server, 'bench')).updated_at;
    await quiet();
    const t = performance.now();
    await end(server, s.id);
    answer.push(performance.now() - t);
    await until(async () => (await profileOf(server, 'bench')).updated_at !== before);
    ready.push(performance.now() - t);
    progress('saves', i, saves);
  }
  console.log(
    `save at the session's end (${((size_bytes ?? 0) / MB).toFixed(1)} MB): DELETE answered p50 ${ms(percentile(answer, 50))} p95 ${ms(percentile(answer, 95))}; profile ready again p50 ${ms(percentile(ready, 50))} p95 ${ms(percentile(ready, 95))}`,
  );
} finally {
  await server.stop();
  await rm(work, { recursive: true, force: true });
  site.close();
}
