// The sandbox end to end against hostile code: endless loops (stopped at the time limit
// while the server serves), unbounded memory, fork bombs, a cancelled run, and what the code
// cannot reach (the server's files, environment and processes, the network but its
// session). After each run, nothing of it is left: no process and no directory. Ordinary
// runs and the user's errors: sandbox.test.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../testing/harness.js';
import type { Sandbox, SandboxRequest } from './index.js';
import { startSandboxBench, type SandboxBench } from './test-support.js';

let bench: SandboxBench;
let server: TestServer;
let cdpUrl: string;
let sessionId: string;
let sandbox: Sandbox;

beforeAll(async () => {
  bench = await startSandboxBench();
  ({ server, cdpUrl, sessionId, sandbox } = bench);
});
afterAll(async () => {
  await bench?.close();
});

// After each run, nothing of it is left: no directory and no process.
afterEach(() => bench.expectNothingLeft());

const run = (code: string, more: Partial<SandboxRequest> = {}) => sandbox.run({ kind: 'task', code, cdpUrl, timeoutMs: 20_000, ...more });

describe('limits', () => {
  it('stops an endless loop at the time limit while the server keeps serving', async () => {
    // The code says it loops (a log line, written before the loop): the server is asked while
    // it does. Or once the run has ended: the limit counts from before the child starts, and
    // on a loaded machine the start alone may take it all.
    let looping!: () => void;
    const loops = new Promise<void>((resolve) => (looping = resolve));
    const running = run("export default async function run(ctx) { ctx.log.info('looping'); for (;;) {} }", { timeoutMs: 3000, onLog: () => looping() });
    await Promise.race([loops, running]);
    const meanwhile = await server.request(`/v1/sessions/${sessionId}`);
    expect(meanwhile.status).toBe(200);
    const outcome = await running;
    expect(outcome).toMatchObject({ ok: false, error: { type: 'timeout', message: 'the code was still running after 3000 ms and was stopped' } });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(3000);
    expect(outcome.durationMs).toBeLessThan(15_000);
  });

  it('stops code that allocates without bound (heap and off-heap)', async () => {
    const heap = await run('export default async function run() { const a = []; for (;;) a.push(new Array(100000).fill(Math.random())); }', { memoryMb: 128 });
    expect(heap).toMatchObject({ ok: false, error: { type: 'automation_failure', message: expect.stringMatching(/memory/) } });
    const buffers = await run('export default async function run() { const a = []; for (;;) a.push(Buffer.alloc(64 * 1024 * 1024, 1)); }', { memoryMb: 128 });
    expect(buffers).toMatchObject({ ok: false, error: { type: 'automation_failure', message: expect.stringMatching(/memory|allocation failed/i) } });
  });

  it('refuses a fork bomb at the process limit', async () => {
    const outcome = await run(`import { spawn } from 'node:child_process';
export default async function run() {
  for (let i = 0; i < 1000; i++) {
    const child = spawn('/usr/bin/sleep', ['60']);
    await new Promise((resolve, reject) => { child.once('spawn', resolve); child.once('error', reject); });
  }
  return 'a thousand processes';
}`);
    expect(outcome).toMatchObject({ ok: false, error: { type: 'automation_failure', message: expect.stringContaining('EAGAIN') } });
  });

  it('cancels a run when its signal aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 1000);
    const outcome = await run('export default async function run() { await new Promise(() => {}); }', { signal: controller.signal });
    expect(outcome).toMatchObject({ ok: false, error: { type: 'cancelled' } });
    expect(outcome.durationMs).toBeLessThan(10_000);
  });
});

describe('what the code cannot reach', () => {
  let target: Server;
  let hits = 0;
  beforeAll(async () => {
    target = createServer((_req, res) => {
      hits++;
      res.end('reached');
    });
    await new Promise<void>((resolve) => target.listen(0, '0.0.0.0', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => target.close(() => resolve())));

  it("cannot read /etc/passwd, the server's DATA_DIR or source, nor see its environment or processes", async () => {
    process.env.SANDBOX_TEST_SECRET = 'not-for-user-code';
    try {
      const outcome = await run(`import * as fs from 'node:fs';
export default async function run() {
  const tryRead = (path: string) => { try { return fs.readdirSync(path).length >= 0 ? 'read' : 'read'; } catch (e: any) { return e.code; } };
  const tryFile = (path: string) => { try { fs.readFileSync(path); return 'read'; } catch (e: any) { return e.code; } };
  return {
    passwd: tryFile('/etc/passwd'),
    dataDir: tryRead(${JSON.stringify(server.dataDir)}),
    source: tryRead(${JSON.stringify(process.cwd())}),
    root: fs.readdirSync('/').sort(),
    env: { ...process.env },
    processes: fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name)).length,
    uid: process.getuid!(),
    writeUsr: (() => { try { fs.writeFileSync('/usr/x', 'x'); return 'written'; } catch (e: any) { return e.code; } })(),
  };
}`);
      expect(outcome.ok).toBe(true);
      const value = (outcome as { value: Record<string, unknown> }).value;
      expect(value).toMatchObject({ passwd: 'ENOENT', dataDir: 'ENOENT', source: 'ENOENT', writeUsr: 'EROFS' });
      expect(value.root).not.toContain('etc');
      expect(value.root).not.toContain('work');
      expect(value.env).toEqual({ HOME: '/tmp', PWD: '/tmp' });
      // Its own node and bwrap's init: the pid namespace hides every other process.
      expect(value.processes).toBeLessThanOrEqual(3);
      if (process.getuid?.() === 0) expect(value.uid).toBeGreaterThanOrEqual(200_000);
    } finally {
      delete process.env.SANDBOX_TEST_SECRET;
    }
  });

  it('reaches no network but its session: not the loopback of the host, not its other addresses, not the relay for anything else', async () => {
    const port = (target.address() as AddressInfo).port;
    const hostAddress =
      Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '10.255.255.1';
    const outcome = await run(`import { request } from 'node:http';
export default async function run({ page }) {
  const attempt = async (url: string) => { try { const r = await fetch(url); return 'status ' + r.status; } catch (e: any) { return e.cause?.code ?? e.message; } };
  const relay = await new Promise((resolve) => {
    const req = request({ socketPath: '/run/sbx/cdp.sock', path: '/v1/sessions' }, (res) => resolve('status ' + res.statusCode));
    req.on('error', (e: any) => resolve(e.code));
    req.end();
  });
  return {
    loopback: await attempt('http://127.0.0.1:${port}/'),
    host: await attempt('http://${hostAddress}:${port}/'),
    outside: await attempt('http://1.1.1.1/'),
    dns: await attempt('http://example.com/'),
    relay,
    browser: await page.evaluate(() => 1 + 1),
  };
}`);
    expect(outcome).toMatchObject({
      ok: true,
      value: { loopback: 'ECONNREFUSED', host: 'ENETUNREACH', outside: 'ENETUNREACH', relay: 'status 403', browser: 2 },
    });
    expect((outcome as { value: { dns: string } }).value.dns).not.toMatch(/^status/);
    expect(hits).toBe(0);
  });
});
