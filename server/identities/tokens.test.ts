// Identity tokens over real HTTP: a project makes a token, an end user opens the connect page
// in a real browser, links an account, and lands on the callback with the new identity; the
// token works once, expires, and the credentials are sealed like any identity's.
import { randomUUID } from 'node:crypto';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { call } from './test-support.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CALLBACK = 'https://app.example.com/auth/callback?state=abc';
const PASSWORD = 'pw-Linked-Never-Shown-91b2';

describe.each(backends)('identity tokens on %s', (backend) => {
  let server: TestServer;
  let browser: Browser;
  let appId: string;
  const logs: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'debug' } });
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
    appId = (await call(server, 'POST', '/v1/applications', { source: 'https://shop.example.com/login', name: 'Shop' })).body.id;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('links an account through the connect page once, and lands on the callback with the new pending identity', async () => {
    const made = await call(server, 'POST', `/v1/applications/${appId}/tokens`, { callbackUrl: CALLBACK });
    expect(made).toMatchObject({
      status: 201,
      body: {
        data: { token: expect.stringMatching(/^idt_[A-Za-z0-9_-]{32}$/), expires_at: expect.any(String), token_hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      },
    });
    const { token, token_hash, expires_at } = made.body.data;
    expect(new Date(expires_at).getTime() - Date.now()).toBeGreaterThan(14 * 60_000);

    const page = await browser.newPage();
    // The callback is the project's own site: the redirect to it is seen (it does not
    // resolve here, and Playwright routes no request a redirect made).
    let landed = '';
    page.on('request', (r) => {
      if (r.url().startsWith('https://app.example.com/')) landed = r.url();
    });
    await page.goto(`${server.url}/connect/${token}`);
    expect(await page.textContent('h1')).toBe('Link your Shop account');
    // A form sent without a password asks again, keeping what was typed.
    await page.fill('#username', 'alice@example.com');
    await page.evaluate(() => document.querySelectorAll('input').forEach((i) => i.removeAttribute('required')));
    await page.click('button');
    expect(await page.textContent('.error')).toBe('Enter your user name and password.');
    expect(await page.inputValue('#username')).toBe('alice@example.com');
    await page.fill('#password', PASSWORD);
    await page.fill('#totp_secret', 'krug s4za nfzs ayloebqxk5dimvxhi2ldmf2g64raonswkzdt');
    await page.click('button');
    await expect.poll(() => landed, { timeout: 10_000 }).not.toBe('');
    const back = new URL(landed);
    expect(back.origin + back.pathname).toBe('https://app.example.com/auth/callback');
    expect(back.searchParams.get('state')).toBe('abc');
    expect(back.searchParams.get('token_hash')).toBe(token_hash);
    const identityId = back.searchParams.get('identity_id')!;

    const identity = await call(server, 'GET', `/v1/identities/${identityId}`);
    expect(identity.body).toMatchObject({
      id: identityId,
      name: 'alice@example.com',
      status: 'pending',
      application_id: appId,
      source: 'https://shop.example.com/login',
    });
    const credentials = await call(server, 'GET', `/v1/identities/${identityId}/credentials`);
    expect(credentials.text).not.toContain(PASSWORD);
    expect(JSON.stringify(await server.db.query('SELECT credentials FROM identities WHERE id = $1', [identityId]))).not.toContain(PASSWORD);
    expect(logs.join('\n')).not.toContain(PASSWORD);

    // Used up: the page and the form are gone.
    expect((await fetch(`${server.url}/connect/${token}`)).status).toBe(410);
    const again = await fetch(`${server.url}/connect/${token}`, {
      method: 'POST',
      body: new URLSearchParams({ username: 'x', password: 'y' }),
      redirect: 'manual',
    });
    expect(again.status).toBe(410);
    await page.close();
  });

  it("refuses an http callback and an unknown or another project's application; an expired token opens nothing", async () => {
    expect((await call(server, 'POST', `/v1/applications/${appId}/tokens`, { callbackUrl: 'http://app.example.com/cb' })).status).toBe(400);
    expect((await call(server, 'POST', `/v1/applications/${randomUUID()}/tokens`, { callbackUrl: CALLBACK })).status).toBe(404);
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    const asOther = {
      request: (p: string, init: RequestInit = {}) =>
        server.request(p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': other.key } }),
    };
    expect((await call(asOther, 'POST', `/v1/applications/${appId}/tokens`, { callbackUrl: CALLBACK })).status).toBe(404);

    const { token } = (await call(server, 'POST', `/v1/applications/${appId}/tokens`, { callbackUrl: CALLBACK })).body.data;
    await server.db.query(`UPDATE identity_tokens SET expires_at = now() - interval '1 second'`);
    expect((await fetch(`${server.url}/connect/${token}`)).status).toBe(410);
    expect((await fetch(`${server.url}/connect/idt_not-a-token`)).status).toBe(410);
  });
});
