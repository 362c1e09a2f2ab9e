// The web fetch tool under what the operator configures, a server each, over real HTTP with
// real Chromium and the local fixture site: the rate limit per API key, the address policy,
// the time limit, a browser that cannot start, a captcha-solving service, an upstream
// proxy. The tool itself on one server is in fetch.test.ts.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server as ProxyServer } from 'proxy-chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCaptchaService } from '../../fixtures/captcha-service.js';
import { FIXTURE_SITEKEY, fixtureJson, startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { createProject } from '../auth/api-keys.js';
import { browsersDirFor } from '../browser/index.js';
import { startTestServer } from '../testing/harness.js';
import { untilPasses } from '../input/test-support.js';
import { fetchUrl, post } from './test-support.js';

let fx: FixtureServer;

beforeAll(async () => {
  fx = await startFixtureServer();
});

afterAll(async () => {
  await fx?.close();
});

describe('rate limit per API key (F10)', () => {
  it('past FETCH_RATE_PER_MINUTE a key gets 429 with Retry-After; another key is unaffected', async () => {
    const s = await startTestServer({ env: { FETCH_BROWSERS: '1', FETCH_RATE_PER_MINUTE: '2' } });
    try {
      const fixtureJsonUrl = `${fx.url}/api/data.json`;
      expect((await fetchUrl(s, fixtureJsonUrl)).status).toBe(200);
      expect((await fetchUrl(s, 'not a url')).status).toBe(400); // counted too
      const limited = await fetchUrl(s, fixtureJsonUrl);
      expect(limited.status).toBe(429);
      expect(await limited.json()).toEqual({ error: 'Rate limit exceeded' });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      const other = await createProject(s.db, { name: 'other', source: 'test' });
      const res = await fetchUrl(s, fixtureJsonUrl, other.key);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(fixtureJson);
    } finally {
      await s.close();
    }
  }, 90_000);
});

describe('address policy and time limit', () => {
  it('refuses private, loopback and link-local addresses (403) unless the operator allows them', async () => {
    const s = await startTestServer({ env: { FETCH_BROWSERS: '1', ALLOW_PRIVATE_NETWORKS: 'false' } });
    try {
      for (const url of [`${fx.url}/site/script-rendered.html`, 'http://localhost:9/', 'http://169.254.169.254/latest/meta-data/']) {
        const res = await fetchUrl(s, url);
        expect(res.status).toBe(403);
        expect(((await res.json()) as { error: string }).error).toMatch(/^Refused to fetch a private, loopback or link-local address: /);
      }
      const shot = await post(s, '/v1/tools/screenshot', { url: `${fx.url}/` });
      expect(shot.status).toBe(403);
      expect(((await shot.json()) as { error: { code: number } }).error.code).toBe(403);
    } finally {
      await s.close();
    }
  }, 90_000);

  it('an upstream that never answers gives 504 after FETCH_TIMEOUT_SECONDS; the fetch browsers close with the server', async () => {
    const s = await startTestServer({ env: { FETCH_BROWSERS: '1', FETCH_TIMEOUT_SECONDS: '3' } });
    const toolRoots = `${browsersDirFor(s.config.dataDir)}/t-`;
    try {
      expect(await timesOutOnHang(s)).toBeLessThan(10_000);
      expect(chromiumsUnder(toolRoots)).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
    expect(chromiumsUnder(toolRoots)).toBe(0);
  }, 90_000);

  it('a browser slow to start: still 504 by FETCH_TIMEOUT_SECONDS, and closed with the server once up', async () => {
    // Chromium behind a 15 s pause: the launch, which does not watch the deadline, outlasts it.
    const dir = mkdtempSync(join(tmpdir(), 'cb-slow-chromium-'));
    const slow = join(dir, 'chromium');
    writeFileSync(slow, `#!/bin/sh\nsleep 15\nexec ${process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'} "$@"\n`, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const s = await startTestServer({ env: { FETCH_BROWSERS: '1', FETCH_TIMEOUT_SECONDS: '3', CHROMIUM_PATH: slow } });
    const toolRoots = `${browsersDirFor(s.config.dataDir)}/t-`;
    try {
      // Answered while the launch was still in its pause.
      expect(await timesOutOnHang(s)).toBeLessThan(15_000);
      await untilPasses(() => expect(chromiumsUnder(toolRoots)).toBeGreaterThan(0), 60_000);
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(chromiumsUnder(toolRoots)).toBe(0);
  }, 120_000);

  it('an internal failure (no browser can start) answers 500 in the general shape', async () => {
    const s = await startTestServer({ env: { FETCH_BROWSERS: '1', CHROMIUM_PATH: '/nonexistent/chromium' } });
    try {
      const res = await fetchUrl(s, `${fx.url}/api/data.json`);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: { code: 500, message: 'Internal server error' } });
    } finally {
      await s.close();
    }
  }, 60_000);
});

/** A fetch of a page that never answers, on a server with a 3 s limit: its 504, and how long it took. */
async function timesOutOnHang(s: Parameters<typeof fetchUrl>[0]): Promise<number> {
  const started = Date.now();
  const res = await fetchUrl(s, `${fx.url}/hang`);
  expect(res.status).toBe(504);
  expect(await res.json()).toEqual({ error: 'Upstream timed out after 3 seconds' });
  return Date.now() - started;
}

/** Processes whose command line mentions `marker` (the tool browsers' root). */
function chromiumsUnder(marker: string): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) n++;
    } catch {
      // gone
    }
  }
  return n;
}

describe('captcha-solving service (createTask/getTaskResult)', () => {
  it('sends the captcha to the configured service and submits its token', async () => {
    const service = await startCaptchaService();
    const logs: string[] = [];
    const s = await startTestServer({
      env: { FETCH_BROWSERS: '1', CAPTCHA_SERVICE_URL: service.url, CAPTCHA_SERVICE_KEY: service.key, LOG_LEVEL: 'debug' },
      logs,
    });
    try {
      const res = await fetchUrl(s, `${fx.url}/challenge/captcha`);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain('id="protected">Captcha accepted.');
      expect(html).not.toContain('g-recaptcha');
      expect(service.tasks).toEqual([{ type: 'RecaptchaV2TaskProxyless', websiteURL: `${fx.url}/challenge/captcha`, websiteKey: FIXTURE_SITEKEY }]);
      expect(service.polls).toBe(1);
      expect(logs.join('\n')).not.toContain(service.key);
    } finally {
      await s.close();
      await service.close();
    }
  }, 90_000);
});

describe("the operator's upstream proxy", () => {
  it('sends every request through FETCH_PROXY_URL, with its credentials, never logged', async () => {
    const seen: string[] = [];
    const proxy = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      verbose: false,
      prepareRequestFunction: ({ username, password, hostname }) => {
        const ok = username === 'operator' && password === 'pr0xy-s3cret';
        if (ok) seen.push(hostname);
        return { requestAuthentication: !ok };
      },
    });
    await proxy.listen();
    const logs: string[] = [];
    const s = await startTestServer({
      env: { FETCH_BROWSERS: '1', FETCH_PROXY_URL: `http://operator:pr0xy-s3cret@127.0.0.1:${proxy.port}`, LOG_LEVEL: 'debug' },
      logs,
    });
    try {
      const res = await fetchUrl(s, `${fx.url}/site/script-rendered.html`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('Rendered by script');
      // The page and what its script fetched (Chromium's own background requests too).
      expect(seen.filter((h) => h === '127.0.0.1').length).toBeGreaterThanOrEqual(2);
      expect(logs.join('\n')).not.toContain('pr0xy-s3cret');
    } finally {
      await s.close();
      await proxy.close(true);
    }
  }, 90_000);
});
