// The sandbox end to end: real runs of user code in bubblewrap against a real session's
// Chromium through its cdp_url, and the hostile ones (endless loops, unbounded memory, fork
// bombs, reading the server's files and environment, the network). After each run, nothing
// of it is left: no process and no directory.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../log.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, HEADLESS, startPageServer, type PageServer } from '../sessions/test-support.js';
import { checkTypeScript, createSandbox, type Sandbox, type SandboxIntervention, type SandboxRequest } from './index.js';

let server: TestServer;
let pages: PageServer;
let cdpUrl: string;
let sessionId: string;
let sandbox: Sandbox;
let runsRoot: string;

beforeAll(async () => {
  server = await startTestServer();
  pages = await startPageServer();
  const session = await createSession(server, HEADLESS);
  cdpUrl = session.cdp_url;
  sessionId = session.id;
  // The runs' directories go under a root of this file's own: what is left there (or any
  // process whose command line or mounts name it) after a run is a leak.
  runsRoot = mkdtempSync(join(tmpdir(), 'cb-sandbox-test-'));
  // Like /tmp: the run's uid must be able to pass through to its own directory.
  chmodSync(runsRoot, 0o711);
  vi.stubEnv('TMPDIR', runsRoot);
  // Cold runs (no warm child) so that after each run nothing at all may remain.
  sandbox = createSandbox({ config: { ...server.config, sandboxWarm: 0 }, log: createLogger('silent') });
});

afterAll(async () => {
  // As it was, or unset if it was: a plain assignment of undefined sets the string 'undefined'.
  vi.unstubAllEnvs();
  await sandbox?.close();
  await pages?.close();
  await server?.close();
  rmSync(runsRoot, { recursive: true, force: true });
});

/** Live processes that belong to a run of this file: their command line or mounts name its root. */
function sandboxProcesses(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (/\) [ZX] /.test(stat)) return false;
        return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(runsRoot) || readFileSync(`/proc/${pid}/mountinfo`, 'latin1').includes(runsRoot);
      } catch {
        return false;
      }
    })
    .map(Number);
}

afterEach(async () => {
  await sandbox.settled();
  expect(readdirSync(runsRoot)).toEqual([]);
  expect(sandboxProcesses()).toEqual([]);
});

const run = (code: string, more: Partial<SandboxRequest> = {}) => sandbox.run({ kind: 'task', code, cdpUrl, timeoutMs: 20_000, ...more });

describe('runs', () => {
  it('runs a task: the page title from a fixture page, ctx.input, logs', async () => {
    const outcome = await run(
      `import type { Page } from 'playwright-core';
export default async function run(ctx: { page: Page; input: { path: string }; log: any }) {
  console.log('going to', ctx.input.path);
  ctx.log.warn('careful');
  await ctx.page.goto(${JSON.stringify(pages.url('/'))} + ctx.input.path.slice(1));
  return { title: await ctx.page.title(), input: ctx.input };
}`,
      { input: { path: '/' } },
    );
    expect(outcome).toMatchObject({ ok: true, value: { title: 'Home', input: { path: '/' } } });
    expect(outcome.logs.map((l) => [l.level, l.message])).toEqual([
      ['info', 'going to /'],
      ['warn', 'careful'],
    ]);
    expect(outcome.sandboxMs).toBeGreaterThan(0);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(outcome.sandboxMs);
  });

  it('tells onSuccess of a success at the last word, before the outcome; never of a failure', async () => {
    const told: unknown[] = [];
    const ok = await run('export default async function run() { console.log("bye"); return { n: 1 }; }', { onSuccess: (v) => told.push(v) });
    expect(ok).toMatchObject({ ok: true, value: { n: 1 } });
    expect(told).toEqual([{ n: 1 }]);
    // The outcome still has the whole output.
    expect(ok.logs.map((l) => l.message)).toEqual(['bye']);
    const failed = await run('export default async function run() { throw new Error("no"); }', { onSuccess: (v) => told.push(v) });
    expect(failed).toMatchObject({ ok: false, error: { type: 'automation_failure' } });
    const tooBig = await run('export default async function run() { return "x".repeat(2000); }', { outputMaxBytes: 100, onSuccess: (v) => told.push(v) });
    expect(tooBig).toMatchObject({ ok: false });
    expect(told).toHaveLength(1);
  });

  it('keeps what the code wrote to stdout and stderr just before its result (the child is ended at its last word)', async () => {
    const big = 'x'.repeat(200_000);
    const outcome = await run(`export default async function run() {
  process.stdout.write('to stdout\\n');
  process.stderr.write('to stderr\\n');
  process.stdout.write('${big}' + '\\n');
  return 'done';
}`);
    expect(outcome).toMatchObject({ ok: true, value: 'done' });
    expect(outcome.logs.map((l) => [l.level, l.message])).toContainEqual(['error', 'to stderr']);
    // In chunks as the pipe gave them (two writes may arrive as one), all of it, in order.
    const written = outcome.logs.filter((l) => l.level === 'info').map((l) => l.message).join('');
    expect(written.replace(/\n/g, '')).toBe(`to stdout${big}`);
  });

  it('runs a snippet given page, context and browser; no return is null', async () => {
    const outcome = await sandbox.run({
      kind: 'snippet',
      code: `await page.goto(${JSON.stringify(pages.url('/second'))});\nreturn [await page.title(), context.pages().length > 0, browser.isConnected()];`,
      cdpUrl,
      timeoutMs: 20_000,
    });
    expect(outcome).toMatchObject({ ok: true, value: ['Second', true, true] });
    expect(await sandbox.run({ kind: 'snippet', code: 'const a: number = 1;', cdpUrl, timeoutMs: 20_000 })).toMatchObject({ ok: true, value: null });
  });

  it('saves artifacts into the given directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-sandbox-artifacts-'));
    try {
      const outcome = await run(
        `export default async function run({ page, artifacts }) {
  await page.setContent('<title>x</title><h1>shot</h1>');
  await artifacts.save('shot.png', await page.screenshot(), 'image/png');
  await artifacts.save('note.txt', 'hello', 'text/plain');
  return 'saved';
}`,
        { artifactsDir: dir },
      );
      expect(outcome).toMatchObject({ ok: true, value: 'saved' });
      const byName = Object.fromEntries(outcome.artifacts.map((a) => [a.name, a]));
      expect(byName['note.txt']).toEqual({ name: 'note.txt', path: join(dir, 'note.txt'), size: 5, contentType: 'text/plain' });
      expect(readFileSync(join(dir, 'note.txt'), 'utf8')).toBe('hello');
      expect(byName['shot.png'].contentType).toBe('image/png');
      expect(readFileSync(byName['shot.png'].path).subarray(1, 4).toString()).toBe('PNG');
      expect(statSync(byName['shot.png'].path).size).toBe(byName['shot.png'].size);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Without a directory, save throws in the user's code.
    const refused = await run(`export default async function run({ artifacts }) { await artifacts.save('a.txt', 'x'); }`);
    expect(refused).toMatchObject({ ok: false, error: { type: 'automation_failure', message: 'artifacts cannot be saved in this run' } });
  });
});

describe('user errors', () => {
  it('reports a thrown error with its line in the user source', async () => {
    const outcome = await run(`interface Shape { sides: number }
export default async function run(ctx: unknown): Promise<number> {
  const s: Shape = { sides: 3 };
  if (s.sides === 3) throw new Error('three sides');
  return s.sides;
}`);
    expect(outcome).toMatchObject({ ok: false, error: { type: 'automation_failure', message: 'three sides', line: 4 } });
    const snippet = await sandbox.run({ kind: 'snippet', code: "const x = 1;\n\nthrow new TypeError('bad ' + x);", cdpUrl, timeoutMs: 20_000 });
    expect(snippet).toMatchObject({ ok: false, error: { type: 'automation_failure', message: 'bad 1', line: 3, rootCause: 'TypeError' } });
  });

  it('names the line of a syntax error, without running anything', async () => {
    expect(checkTypeScript('const a = 1;\nconst b = ;\n', 'task')).toMatchObject({ ok: false, line: 2 });
    expect(checkTypeScript('const a = 1;\n\nreturn a +;', 'snippet')).toMatchObject({ ok: false, line: 3 });
    expect(checkTypeScript('return await page.title();', 'snippet')).toEqual({ ok: true });
    expect(checkTypeScript('export default async function run() {\n  return 1;\n', 'task')).toMatchObject({ ok: false, line: 3 });
    const outcome = await run('export default async function run() {\n  return 1 +* 2;\n}');
    expect(outcome).toMatchObject({ ok: false, error: { type: 'automation_failure', line: 2 } });
    expect(outcome.ok === false && outcome.error.message).toMatch(/^syntax error: /);
  });

  it('refuses a result that is not JSON, and a module without a default function', async () => {
    expect(await run('export default async function run() { return { when: new Map() }; }')).toMatchObject({
      ok: false,
      error: { type: 'automation_failure', message: 'the result must be JSON: the return value.when is a Map, not plain JSON' },
    });
    expect(await run('export default async function run() { return { f: () => 1 }; }')).toMatchObject({
      ok: false,
      error: { type: 'automation_failure', message: 'the result must be JSON: the return value.f is a function' },
    });
    expect(await run('export const x = 1;')).toMatchObject({ ok: false, error: { type: 'automation_failure', message: expect.stringContaining('export default') } });
  });

  it('stops a result or a log over the output cap', async () => {
    expect(await run("export default async function run() { return 'x'.repeat(5000); }", { outputMaxBytes: 1000 })).toMatchObject({
      ok: false,
      error: { type: 'automation_failure', message: expect.stringContaining('over the limit of 1000') },
    });
    const chatty = await run("export default async function run() { for (;;) { console.log('y'.repeat(100)); await new Promise((r) => setImmediate(r)); } }", { outputMaxBytes: 10_000 });
    expect(chatty).toMatchObject({ ok: false, error: { type: 'automation_failure', message: 'the log exceeded 10000 bytes; the run was stopped' } });
    expect(chatty.logs.reduce((n, l) => n + l.message.length + 1, 0)).toBeLessThanOrEqual(10_000);
  });
});

describe('limits', () => {
  it('stops an endless loop at the time limit while the server keeps serving', async () => {
    const running = run('export default async function run() { for (;;) {} }', { timeoutMs: 3000 });
    await new Promise((r) => setTimeout(r, 1500));
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

describe('ctx.requestIntervention', () => {
  it('hands the request to onIntervention and its answer, or its error, back to the code', async () => {
    const asked: SandboxIntervention[] = [];
    const outcome = await run(
      `export default async function run(ctx) {
  const first = await ctx.requestIntervention({ message: 'Proceed?', input_type: 'confirm' });
  const second = await ctx.requestIntervention({ message: 'The code', input_type: 'otp', timeout_seconds: 30 }).catch((e) => 'refused: ' + e.message);
  return [first, second];
}`,
      {
        onIntervention: async (q) => {
          asked.push(q);
          if (q.inputType === 'otp') throw new Error('No one answered the request for a person within 30 s');
          return 'yes';
        },
      },
    );
    expect(outcome).toMatchObject({ ok: true, value: ['yes', 'refused: No one answered the request for a person within 30 s'] });
    expect(asked).toEqual([
      { message: 'Proceed?', inputType: 'confirm' },
      { message: 'The code', inputType: 'otp', timeoutMs: 30_000 },
    ]);
  });

  it('keeps the time limit running while it waits, and aborts the waiting request when the run ends', async () => {
    let signal: AbortSignal | undefined;
    let settled = false;
    const outcome = await run(`export default async function run(ctx) { return ctx.requestIntervention({ message: 'Wait', input_type: 'text' }); }`, {
      // Counted from before the child starts, which took over 3 s on a loaded machine.
      timeoutMs: 8_000,
      onIntervention: (_q, s) => {
        signal = s;
        // Like the interventions service: it gives up when told to.
        return new Promise<string>((_resolve, reject) => s.addEventListener('abort', () => setTimeout(() => ((settled = true), reject(new Error('withdrawn'))), 200)));
      },
    });
    expect(outcome).toMatchObject({ ok: false, error: { type: 'timeout' } });
    expect(signal?.aborted).toBe(true);
    // The run reported only once its request was settled.
    expect(settled).toBe(true);
  });

  it('is refused without onIntervention (execute-code), and the server checks what the child sends', async () => {
    const snippet = await sandbox.run({
      kind: 'snippet',
      code: `return await requestIntervention({ message: 'Proceed?', input_type: 'confirm' }).catch((e) => e.message);`,
      cdpUrl,
      timeoutMs: 20_000,
    });
    expect(snippet).toMatchObject({ ok: true, value: 'interventions are not available here: only a task run can ask a person' });
    // Code that writes to the message pipe itself gets past the child's checks, not the server's.
    let calls = 0;
    const forged = await run(
      `import { writeSync } from 'node:fs';
export default async function run() {
  writeSync(3, JSON.stringify({ t: 'intervention', id: 7, message: '', input_type: 'anything' }) + '\\n');
  await new Promise((r) => setTimeout(r, 500));
  return 'went on';
}`,
      { onIntervention: async () => String(++calls) },
    );
    expect(forged).toMatchObject({ ok: true, value: 'went on' });
    expect(calls).toBe(0);
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
    const hostAddress = Object.values(networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '10.255.255.1';
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
    expect(outcome).toMatchObject({ ok: true, value: { loopback: 'ECONNREFUSED', host: 'ENETUNREACH', outside: 'ENETUNREACH', relay: 'status 403', browser: 2 } });
    expect((outcome as { value: { dns: string } }).value.dns).not.toMatch(/^status/);
    expect(hits).toBe(0);
  });
});

describe('directories of a server that is gone', () => {
  it('are removed by the first run of a sandbox', async () => {
    const gone = spawnSync('/bin/true');
    const stale = join(runsRoot, `sbx-${gone.pid}-abcdef`);
    mkdirSync(join(stale, 'code'), { recursive: true });
    writeFileSync(join(stale, 'code', 'user.mjs'), 'export default () => 1;');
    const alive = join(runsRoot, `sbx-${process.ppid}-abcdef`);
    mkdirSync(alive);
    const fresh = createSandbox({ config: { ...server.config, sandboxWarm: 0 }, log: createLogger('silent') });
    expect(await fresh.run({ kind: 'snippet', code: 'return 1;', cdpUrl, timeoutMs: 20_000 })).toMatchObject({ ok: true, value: 1 });
    await fresh.settled();
    expect(readdirSync(runsRoot)).toEqual([`sbx-${process.ppid}-abcdef`]);
    rmSync(alive, { recursive: true });
  });
});

describe('warm children', () => {
  it('runs on a warm child and leaves nothing once closed', async () => {
    const warm = createSandbox({ config: { ...server.config, sandboxWarm: 1 }, log: createLogger('silent') });
    try {
      const first = await warm.run({ kind: 'snippet', code: 'return 1;', cdpUrl, timeoutMs: 20_000 });
      expect(first).toMatchObject({ ok: true, value: 1 });
      // The one started behind the first run gets ready, then serves the next.
      await new Promise((r) => setTimeout(r, 3000));
      const second = await warm.run({ kind: 'snippet', code: 'return await page.evaluate(() => 2);', cdpUrl, timeoutMs: 20_000 });
      expect(second).toMatchObject({ ok: true, value: 2 });
      expect(second.sandboxMs).toBeLessThan(first.sandboxMs + 1000);
    } finally {
      await warm.close();
    }
  });
});

describe('prepared (a warm pair)', () => {
  const snippet = (more: Partial<SandboxRequest> = {}): SandboxRequest => ({ kind: 'snippet', code: 'return page.url();', cdpUrl, timeoutMs: 20_000, ...more });

  it('connects ahead of its run, then runs once, for its own endpoint only', async () => {
    const prepared = await sandbox.prepare(cdpUrl);
    expect(prepared.alive).toBe(true);
    // Bound to its endpoint: a run for another is refused, and the sandbox stays usable.
    const other = cdpUrl.replace(/token=[^&]+/, 'token=another');
    expect(() => prepared.run(snippet({ cdpUrl: other }))).toThrow(/own endpoint/);
    const outcome = await prepared.run(snippet({ code: 'return await page.evaluate(() => 40 + 2);' }));
    expect(outcome).toMatchObject({ ok: true, value: 42 });
    expect(prepared.alive).toBe(false);
    expect(() => prepared.run(snippet())).toThrow(/one run/);
  });

  it('a prepared sandbox whose run ends before it starts (a syntax error) is gone all the same', async () => {
    const prepared = await sandbox.prepare(cdpUrl);
    expect(await prepared.run(snippet({ code: 'return (;' }))).toMatchObject({ ok: false, error: { type: 'automation_failure' } });
    await prepared.exited;
  });

  it('leaves nothing when disposed unused, nor when it cannot connect', async () => {
    const unused = await sandbox.prepare(cdpUrl);
    await unused.dispose();
    expect(unused.alive).toBe(false);
    // An endpoint that answers nothing: rejected, the sandbox ended.
    await expect(sandbox.prepare(cdpUrl.replace(/\/v1\/cdp\/[^?]+/, '/v1/cdp/no-such-session'))).rejects.toThrow();
  });

  it('is ended by close() while it waits', async () => {
    const own = createSandbox({ config: { ...server.config, sandboxWarm: 0 }, log: createLogger('silent') });
    const prepared = await own.prepare(cdpUrl);
    await own.close();
    expect(prepared.alive).toBe(false);
    await expect(own.prepare(cdpUrl)).rejects.toThrow(/closed/);
  });
});
