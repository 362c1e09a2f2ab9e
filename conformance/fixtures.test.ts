import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FixtureServer } from './fixtures.js';

let fixtures: FixtureServer | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await fixtures?.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('FixtureServer', () => {
  it('starts on first use and serves files and routes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conformance-fixtures-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'index.html'), '<p>hello</p>');
    fixtures = new FixtureServer({ dir });
    const received: string[] = [];
    fixtures.route('POST', '/hooks/1', (_req, res, body) => {
      received.push(body.toString());
      res.writeHead(204).end();
    });
    const base = await fixtures.url('/');
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(base);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toBe('<p>hello</p>');
    expect((await fetch(await fixtures.url('/hooks/1'), { method: 'POST', body: 'evt' })).status).toBe(204);
    expect(received).toEqual(['evt']);
    expect((await fetch(await fixtures.url('/../etc/passwd'))).status).toBe(404);
  });

  it('listens on the port of --fixtures-url and hands out that URL', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    fixtures = new FixtureServer({ publicUrl: `http://fixtures.example:${port}` });
    expect(await fixtures.url('/a')).toBe(`http://fixtures.example:${port}/a`);
    expect((await fetch(`http://127.0.0.1:${port}/a`)).status).toBe(404);
  });
});
