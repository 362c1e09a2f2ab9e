// The sandbox end to end: real runs of user code in bubblewrap against a real session's
// Chromium through its cdp_url: tasks and snippets, their logs, output and artifacts, and the
// user's own errors (thrown, syntax, results that are not JSON, output past the cap). After
// each run, nothing of it is left: no process and no directory. Hostile code: hostile.test.ts;
// interventions, warm and prepared children, stale directories: children.test.ts.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PageServer } from '../sessions/test-support.js';
import { checkTypeScript, type Sandbox, type SandboxRequest } from './index.js';
import { startSandboxBench, type SandboxBench } from './test-support.js';

let bench: SandboxBench;
let pages: PageServer;
let cdpUrl: string;
let sandbox: Sandbox;

beforeAll(async () => {
  bench = await startSandboxBench();
  ({ pages, cdpUrl, sandbox } = bench);
});
afterAll(async () => {
  await bench?.close();
});

// After each run, nothing of it is left: no directory and no process.
afterEach(() => bench.expectNothingLeft());

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
    const written = outcome.logs
      .filter((l) => l.level === 'info')
      .map((l) => l.message)
      .join('');
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
    expect(await run('export const x = 1;')).toMatchObject({
      ok: false,
      error: { type: 'automation_failure', message: expect.stringContaining('export default') },
    });
  });

  it('stops a result or a log over the output cap', async () => {
    expect(await run("export default async function run() { return 'x'.repeat(5000); }", { outputMaxBytes: 1000 })).toMatchObject({
      ok: false,
      error: { type: 'automation_failure', message: expect.stringContaining('over the limit of 1000') },
    });
    const chatty = await run("export default async function run() { for (;;) { console.log('y'.repeat(100)); await new Promise((r) => setImmediate(r)); } }", {
      outputMaxBytes: 10_000,
    });
    expect(chatty).toMatchObject({ ok: false, error: { type: 'automation_failure', message: 'the log exceeded 10000 bytes; the run was stopped' } });
    expect(chatty.logs.reduce((n, l) => n + l.message.length + 1, 0)).toBeLessThanOrEqual(10_000);
  });
});
