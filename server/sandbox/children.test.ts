// The sandbox end to end, between the server and its children: ctx.requestIntervention
// across the message pipe (answered, refused, withdrawn at the time limit, forged by the
// code), the directories of a server that is gone, warm children, and prepared ones (a warm
// pair). After each run, nothing of it is left: no process and no directory. Ordinary runs:
// sandbox.test.ts; hostile code: hostile.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.js';
import { eventually } from '../sessions/test-support.js';
import type { TestServer } from '../testing/harness.js';
import { createSandbox, type Sandbox, type SandboxIntervention, type SandboxRequest } from './index.js';
import { startSandboxBench, type SandboxBench } from './test-support.js';

let bench: SandboxBench;
let server: TestServer;
let cdpUrl: string;
let sandbox: Sandbox;
let runsRoot: string;

beforeAll(async () => {
  bench = await startSandboxBench();
  ({ server, cdpUrl, sandbox, runsRoot } = bench);
});
afterAll(async () => {
  await bench?.close();
});

// After each run, nothing of it is left: no directory and no process.
afterEach(() => bench.expectNothingLeft());

const run = (code: string, more: Partial<SandboxRequest> = {}) => sandbox.run({ kind: 'task', code, cdpUrl, timeoutMs: 20_000, ...more });

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
        return new Promise<string>((_resolve, reject) =>
          s.addEventListener('abort', () => setTimeout(() => ((settled = true), reject(new Error('withdrawn'))), 200)),
        );
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
    // No wait after the write: the pipe keeps the order of what is written, so the server
    // reads the forged request, and has refused it or called onIntervention, before it reads
    // the result that ends the run.
    let calls = 0;
    const forged = await run(
      `import { writeSync } from 'node:fs';
export default async function run() {
  writeSync(3, JSON.stringify({ t: 'intervention', id: 7, message: '', input_type: 'anything' }) + '\\n');
  return 'went on';
}`,
      { onIntervention: async () => String(++calls) },
    );
    expect(forged).toMatchObject({ ok: true, value: 'went on' });
    expect(calls).toBe(0);
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
    const lines: string[] = [];
    const warm = createSandbox({
      config: { ...server.config, sandboxWarm: 1 },
      log: createLogger('debug', { write: (line: string) => void lines.push(line) }),
    });
    try {
      const first = await warm.run({ kind: 'snippet', code: 'return 1;', cdpUrl, timeoutMs: 20_000 });
      expect(first).toMatchObject({ ok: true, value: 1 });
      // The one started behind the first run gets ready, then serves the next.
      await eventually(() => lines.some((l) => l.includes('sandbox: a warm child is ready')), 30_000, 'the warm child to be ready');
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
