// The web fetch tool end to end: the real server in-process over real HTTP, real Chromium,
// the local fixture site (fixtures/server.ts) for every page, file and challenge. One
// server for the file: pages, consent dialogs, challenges, files, errors and billing,
// screenshot and page PDF. What the operator configures (a server each) is in
// fetch-settings.test.ts.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBinary, fixtureJson, fixturePdf, fixturePng, fixtureText, startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { DEFAULT_MAX_SETTLE_MS } from '../page/readiness.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { fetchUrl, post } from './test-support.js';

let fx: FixtureServer;
let srv: TestServer;

async function ledger(s: TestServer): Promise<{ n: number; credits: number }> {
  const [row] = await s.db.query<{ n: number; credits: number }>(
    "SELECT count(*)::int AS n, COALESCE(sum(credits), 0)::float8 AS credits FROM usage_ledger WHERE kind = 'fetch'",
  );
  return row;
}

beforeAll(async () => {
  fx = await startFixtureServer();
  srv = await startTestServer({ env: { FETCH_BROWSERS: '1', FETCH_MAX_CONCURRENCY: '2', MAX_CONCURRENT_BROWSERS: '1' } });
}, 120_000);

afterAll(async () => {
  await srv?.close();
  await fx?.close();
});

describe('web fetch: pages', () => {
  it('answers the rendered DOM of a script-rendered page as text/html (F1, F6)', async () => {
    const res = await fetchUrl(srv, `${fx.url}/site/script-rendered.html`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-disposition')).toBeNull();
    const html = await res.text();
    expect(html).toMatch(/^<!DOCTYPE html>|^<html/i);
    expect(html).toContain('id="rendered">Rendered by script: fixture #42</p>');
    expect(html).toMatch(/<li class="item">item a<\/li>/);
  });

  it('returns a page that never settles, within the readiness bound', async () => {
    // Against a page that settles, fetched the same way in the same minute: a loaded machine
    // slows both, while the bound on settling (DEFAULT_MAX_SETTLE_MS) is wall time. Its
    // bound is well short of the load time-out (30 s) an unbounded wait would take.
    const timed = async (path: string) => {
      const started = Date.now();
      const res = await fetchUrl(srv, `${fx.url}${path}`);
      expect(res.status).toBe(200);
      return { html: await res.text(), ms: Date.now() - started };
    };
    const settled = await timed('/site/script-rendered.html');
    const never = await timed('/site/never-settles.html');
    const ticks = Number(/id="ticks">(\d+)</.exec(never.html)?.[1]);
    expect(ticks).toBeGreaterThan(0);
    expect(never.ms - settled.ms).toBeLessThan(DEFAULT_MAX_SETTLE_MS + 5_000);
  }, 60_000);

  it('is sessionless: no session row, and it works while the concurrent-browser limit is reached (F7)', async () => {
    const count = async () => (await srv.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions'))[0].n;
    const before = await count();
    const made = await post(srv, '/v1/sessions', { browser: { headless: { active: true } } });
    expect(made.status).toBe(200);
    const { data } = (await made.json()) as { data: { id: string } };
    try {
      const refused = await post(srv, '/v1/sessions', { browser: { headless: { active: true } } });
      expect(refused.status).toBe(429);
      await refused.arrayBuffer();
      const res = await fetchUrl(srv, `${fx.url}/site/script-rendered.html`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('Rendered by script');
      expect(await count()).toBe(before + 1); // the session made above, none for the fetch
    } finally {
      await srv.request(`/v1/sessions/${data.id}`, { method: 'DELETE' });
    }
  }, 90_000);
});

describe('web fetch: consent dialogs (F2)', () => {
  // Each fixture page records, as the page itself sees it, the decision stored by the library
  // and whether the library's dialog is still visible.
  const state = (html: string) => /id="consent-state" data-decision="([^"]+)" data-dialog="([^"]+)"/.exec(html)?.slice(1);

  for (const [name, page] of [
    ['vanilla-cookieconsent', 'vanilla'],
    ['Klaro', 'klaro'],
    ['cookieconsent (Osano)', 'osano'],
    ['tarteaucitron.js', 'tarteaucitron'],
    ['a hand-made German banner (text heuristics)', 'banner-de'],
  ]) {
    it(`rejects non-essential cookies in ${name} and returns the page without the dialog`, async () => {
      const res = await fetchUrl(srv, `${fx.url}/site/consent/${page}.html`);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain('id="article"');
      expect(state(html)).toEqual(['rejected', 'hidden']);
    });
  }
});

describe('web fetch: bot-detection challenges (F3)', () => {
  it('the JavaScript check is real: a plain headless Playwright is refused by it', async () => {
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--disable-quic', '--no-first-run'] });
    try {
      const page = await browser.newPage();
      await page.goto(`${fx.url}/challenge/js`);
      await page.waitForSelector('#reasons', { timeout: 10_000 });
      expect(await page.title()).toBe('Just a moment...');
      expect(await page.textContent('#reasons')).toMatch(/webdriver|headless-user-agent/);
    } finally {
      await browser.close();
    }
  });

  it('waits through a JavaScript interstitial and returns the page behind it, never the interstitial', async () => {
    const res = await fetchUrl(srv, `${fx.url}/challenge/js`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('id="protected">You passed the JavaScript check.');
    expect(html).not.toContain('Just a moment');
    expect(html).toContain('id="scripted"');
  });

  it('solves a proof-of-work captcha (ALTCHA) by running it', async () => {
    const res = await fetchUrl(srv, `${fx.url}/challenge/pow`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('id="protected">Proof of work accepted.');
    expect(html).not.toContain('altcha-widget');
  });

  it('without a captcha-solving service, a captcha interstitial is an error, never returned', async () => {
    const res = await fetchUrl(srv, `${fx.url}/challenge/captcha`);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: string };
    expect(body.error).toMatch(/captcha/i);
  });
});

describe('web fetch: files and other resources (F4, F5, F6)', () => {
  it('a PDF: original bytes, original type, Content-Disposition: attachment with its name', async () => {
    const res = await fetchUrl(srv, `${fx.url}/files/report.pdf`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="report.pdf"');
    expect(Buffer.from(await res.arrayBuffer()).equals(fixturePdf)).toBe(true);
  });

  it('a download: original bytes and type, the upstream file name', async () => {
    const res = await fetchUrl(srv, `${fx.url}/files/archive.bin`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="data-archive.bin"');
    expect(Buffer.from(await res.arrayBuffer()).equals(fixtureBinary)).toBe(true);
  });

  it('JSON keeps its type and bytes (not re-encoded, not wrapped)', async () => {
    const res = await fetchUrl(srv, `${fx.url}/api/data.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('content-disposition')).toBeNull();
    expect(await res.text()).toBe(fixtureJson);
  });

  it('an image and a text file keep their type and bytes', async () => {
    const png = await fetchUrl(srv, `${fx.url}/images/pixel.png`);
    expect(png.status).toBe(200);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await png.arrayBuffer()).equals(fixturePng)).toBe(true);
    const txt = await fetchUrl(srv, `${fx.url}/text/notes.txt`);
    expect(txt.status).toBe(200);
    expect(txt.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await txt.text()).toBe(fixtureText);
  });

  it('follows redirects to the resource, and says where it came from and what the upstream answered', async () => {
    const res = await fetchUrl(srv, `${fx.url}/redirect?to=${encodeURIComponent('/api/data.json')}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(fixtureJson);
    expect(res.headers.get('x-upstream-status')).toBe('200');
    expect(res.headers.get('x-upstream-url')).toBe(`${fx.url}/api/data.json`);
    const page = await fetchUrl(srv, `${fx.url}/site/script-rendered.html`);
    expect([page.headers.get('x-upstream-status'), page.headers.get('x-upstream-url')]).toEqual(['200', `${fx.url}/site/script-rendered.html`]);
  });

  it('a not-found page is returned as it rendered, its 404 in X-Upstream-Status', async () => {
    const res = await fetchUrl(srv, `${fx.url}/status/404`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('This page does not exist');
    expect(res.headers.get('x-upstream-status')).toBe('404');
    expect(res.headers.get('x-upstream-url')).toBe(`${fx.url}/status/404`);
  });
});

describe('web fetch: errors ({error: string}) and billing (F8, F9)', () => {
  it('an invalid URL and a refused scheme answer 400', async () => {
    const bad = await fetchUrl(srv, 'not a url');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'Invalid URL: not a url' });
    const ftp = await fetchUrl(srv, 'ftp://files.example.org/a.txt');
    expect(ftp.status).toBe(400);
    expect(await ftp.json()).toEqual({ error: 'Only http and https URLs are supported: ftp://files.example.org/a.txt' });
  });

  it('a host that does not resolve answers 502 with the resolver error', async () => {
    const res = await fetchUrl(srv, 'http://nonexistent.invalid/');
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: 'getaddrinfo ENOTFOUND nonexistent.invalid' });
  });

  it('an upstream 5xx and a refused connection answer 502', async () => {
    const res = await fetchUrl(srv, `${fx.url}/status/503`);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: 'Upstream error: the server answered 503 Service Unavailable' });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await fetchUrl(srv, `http://127.0.0.1:${port}/`);
    expect(refused.status).toBe(502);
    expect(((await refused.json()) as { error: string }).error).toBe(`Upstream error: 127.0.0.1:${port} refused the connection`);
  });

  it('each 200 charges 0.005 credits to the ledger; 4xx and 5xx charge nothing', async () => {
    const before = await ledger(srv);
    expect((await fetchUrl(srv, `${fx.url}/api/data.json`)).status).toBe(200);
    const after = await ledger(srv);
    expect(after.n).toBe(before.n + 1);
    expect(after.credits - before.credits).toBeCloseTo(0.005, 10);
    expect((await fetchUrl(srv, 'not a url')).status).toBe(400);
    expect((await fetchUrl(srv, `${fx.url}/status/503`)).status).toBe(502);
    expect((await fetchUrl(srv, 'http://nonexistent.invalid/')).status).toBe(502);
    expect(await ledger(srv)).toEqual(after);
  });
});

describe('screenshot and page PDF', () => {
  it('POST /v1/tools/screenshot answers a PNG of the asked size, and of the whole page with full_page', async () => {
    const res = await post(srv, '/v1/tools/screenshot', { url: `${fx.url}/site/script-rendered.html`, width: 800, height: 600, wait_until: 'networkidle' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    const png = Buffer.from(await res.arrayBuffer());
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([800, 600]);
    const full = await post(srv, '/v1/tools/screenshot', { url: `${fx.url}/site/consent/tarteaucitron.html`, width: 400, height: 300, full_page: true });
    expect(full.status).toBe(200);
    const fp = Buffer.from(await full.arrayBuffer());
    expect(fp.readUInt32BE(16)).toBe(400);
    expect(fp.readUInt32BE(20)).toBeGreaterThanOrEqual(300);
  });

  it('POST /v1/tools/page-pdf answers a PDF with the print options', async () => {
    const res = await post(srv, '/v1/tools/page-pdf', {
      url: `${fx.url}/site/script-rendered.html`,
      format: 'A4',
      landscape: true,
      print_background: true,
      margin: { top: '1cm', bottom: '1cm' },
      wait_until: 'networkidle',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    const pdf = Buffer.from(await res.arrayBuffer());
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    // A4 landscape: 842 x 595 points.
    const box = /MediaBox\s*\[\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\]/.exec(pdf.toString('latin1'));
    expect(box, 'a MediaBox').not.toBeNull();
    expect(Math.abs(Number(box![3]) - 842)).toBeLessThan(2);
    expect(Math.abs(Number(box![4]) - 595)).toBeLessThan(2);
  });

  it('screenshot and PDF errors use the general shape', async () => {
    const res = await post(srv, '/v1/tools/screenshot', { url: 'http://nonexistent.invalid/' });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: { code: 502, message: 'getaddrinfo ENOTFOUND nonexistent.invalid' } });
    const pdf = await post(srv, '/v1/tools/page-pdf', { url: 'ftp://example.org/x' });
    expect(pdf.status).toBe(400);
  });

  it('a URL that answers a download has no page to capture: 400, for both tools', async () => {
    for (const tool of ['/v1/tools/screenshot', '/v1/tools/page-pdf']) {
      const res = await post(srv, tool, { url: `${fx.url}/files/archive.bin` });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: { code: 400, message: 'The URL answers a file download, which has no page to capture' } });
    }
  });
});
