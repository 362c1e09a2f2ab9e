// Client certificates end to end over real HTTP, a real database and real Chromium: upload
// (PEM and PKCS#12), list, get, delete, project scoping, what is never returned or logged, and
// sessions (headless, headful under Xvfb) that load a local HTTPS page requiring a client
// certificate the test CA signed: with the project's certificate the page loads, through
// Playwright over cdp_url, without a prompt; a project without one has its handshake refused.
// The server's pool keeps a warm browser: the certificate sessions must not take it.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, createSession, endSession, eventually, rootOf, roots } from '../sessions/test-support.js';
import { runTool } from './tool.js';
import { makeTestPki, startClientAuthServer, type ClientAuthServer, type TestPki } from './test-support.js';

describe.each(browserBackends)('client certificates on %s', (backend) => {
  let server: TestServer;
  let pki: TestPki;
  let site: ClientAuthServer;
  const logs: string[] = [];

  beforeAll(async () => {
    pki = makeTestPki();
    site = await startClientAuthServer(pki);
    server = await startTestServer({ backend, logs, env: { BROWSER_POOL_SIZE: '1', LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => {
    await server?.close();
    await site?.close();
    pki?.remove();
  });

  const upload = async (fields: { name?: string; origin?: string; passphrase?: string; file?: Buffer }, key?: string) => {
    const form = new FormData();
    if (fields.name !== undefined) form.set('name', fields.name);
    if (fields.origin !== undefined) form.set('origin', fields.origin);
    if (fields.passphrase !== undefined) form.set('passphrase', fields.passphrase);
    if (fields.file) form.set('file', new Blob([new Uint8Array(fields.file)], { type: 'application/octet-stream' }), 'client.p12');
    const res = await server.request('/v1/client-certificates', { method: 'POST', body: form, ...(key ? { headers: { 'service-api-key': key } } : {}) });
    return { status: res.status, body: await res.json() };
  };

  /** Opens the fixture site in the session's first tab (or a new context's): its heading, or the navigation's error. */
  const visit = async (cdpUrl: string, where: 'first tab' | 'new context' = 'first tab'): Promise<string> => {
    const browser = await chromium.connectOverCDP(cdpUrl);
    try {
      // Trusting the fixture's server certificate is another family's work (CA certificates,
      // /v1/certificates): here it is waived for the test, the client certificate is not.
      const cdp = await browser.newBrowserCDPSession();
      await cdp.send('Security.setIgnoreCertificateErrors', { ignore: true });
      const page =
        where === 'new context'
          ? await (await browser.newContext()).newPage()
          : (browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage()));
      try {
        await page.goto(site.url, { timeout: 15_000 });
        return `page: ${await page.textContent('#who')}`;
      } catch (err) {
        return `error: ${(err as Error).message.split('\n')[0]!.replace(/ at https:.*/, '')}`;
      }
    } finally {
      await browser.close();
    }
  };

  /**
   * The visit fails because the fixture refused the handshake: no page, and one more refusal
   * on its side. (With TLS 1.3 the client's certificate, or its absence, reaches the server
   * after the client saw its handshake finish, so Chromium reports the refusal as the alert,
   * or, when the close wins the race, as a dropped socket.)
   */
  const refused = async (cdpUrl: string) => {
    const before = site.refused;
    expect(await visit(cdpUrl)).toMatch(/^error: page\.goto: net::ERR_(BAD_SSL_CLIENT_AUTH_CERT|SOCKET_NOT_CONNECTED|CONNECTION_RESET|CONNECTION_CLOSED)$/);
    await eventually(() => site.refused > before, 5_000, 'the fixture to refuse the handshake');
  };

  it('uploads PEM and PKCS#12, describes them without the key, lists newest first, gets, deletes', async () => {
    const passphrase = `p12-${randomUUID()}`;
    const p12 = await upload({ name: 'partner p12', origin: site.url, passphrase, file: pki.pkcs12(passphrase) });
    expect(p12.status).toBe(200);
    expect(p12.body.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'partner p12',
      origin: site.url,
      format: 'pkcs12',
      subject: 'CN=Test Client, O=Acme',
      issuer: 'CN=Test Client CA, O=Cloud Browser Tests',
      not_before: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      not_after: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      fingerprint_sha256: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
      created_at: expect.any(String),
    });
    const pem = await upload({ name: 'partner pem', origin: 'https://Portal.Example.com:8443', file: Buffer.from(pki.client.cert + pki.client.key) });
    expect(pem.status).toBe(200);
    expect(pem.body.data).toMatchObject({ format: 'pem', origin: 'https://portal.example.com:8443', fingerprint_sha256: p12.body.data.fingerprint_sha256 });
    // The origin as browsers write it: a default port left out.
    const defaultPort = await upload({ name: 'default port', origin: 'https://portal.example.com:443', file: Buffer.from(pki.client.cert + pki.client.key) });
    expect(defaultPort.body.data?.origin).toBe('https://portal.example.com');
    await server.request(`/v1/client-certificates/${defaultPort.body.data.id}`, { method: 'DELETE' });

    const list = await (await server.request('/v1/client-certificates?limit=1')).json();
    expect(list).toEqual({ data: [pem.body.data], pagination: { page: 1, limit: 1, total: 2, total_pages: 2 } });
    const page2 = await (await server.request('/v1/client-certificates?limit=1&page=2')).json();
    expect(page2.data).toEqual([p12.body.data]);
    const got = await server.request(`/v1/client-certificates/${p12.body.data.id}`);
    expect({ status: got.status, body: await got.json() }).toEqual({ status: 200, body: { data: p12.body.data } });

    // Never echoed, never logged, not kept in clear: the passphrase and the key.
    const keyBody = pki.client.key.split('\n').slice(1, -2).join('');
    const answers = JSON.stringify([p12.body, pem.body, list, page2]);
    for (const secret of [passphrase, keyBody]) {
      expect(answers).not.toContain(secret);
      expect(logs.join('\n')).not.toContain(secret);
    }
    const [row] = await server.db.query<Record<string, string>>('SELECT * FROM client_certificates WHERE id = $1', [p12.body.data.id]);
    expect(JSON.stringify(row)).not.toContain(passphrase);
    expect(JSON.stringify(row)).not.toContain(keyBody);
    expect(row!.sealed_bundle).toMatch(/^v1:/);

    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    const foreign = await server.request(`/v1/client-certificates/${p12.body.data.id}`, { headers: { 'service-api-key': other.key } });
    expect(foreign.status).toBe(404);
    const foreignDelete = await server.request(`/v1/client-certificates/${p12.body.data.id}`, { method: 'DELETE', headers: { 'service-api-key': other.key } });
    expect(foreignDelete.status).toBe(404);

    for (const id of [p12.body.data.id, pem.body.data.id]) {
      const del = await server.request(`/v1/client-certificates/${id}`, { method: 'DELETE' });
      expect({ status: del.status, body: await del.json() }).toEqual({ status: 200, body: { data: { status: 'deleted' } } });
      expect((await server.request(`/v1/client-certificates/${id}`)).status).toBe(404);
    }
    expect((await (await server.request('/v1/client-certificates')).json()).pagination.total).toBe(0);
  });

  it('refuses bad uploads with a clear 400', async () => {
    const good = Buffer.from(pki.client.cert + pki.client.key);
    const cases: [Parameters<typeof upload>[0], RegExp][] = [
      [{ name: 'x', origin: site.url, file: Buffer.from('not a certificate') }, /neither PEM nor a readable PKCS#12/],
      [{ name: 'x', origin: site.url, passphrase: 'wrong', file: pki.pkcs12('right') }, /cannot be read with the passphrase given/],
      [{ name: 'x', origin: site.url, file: Buffer.from(pki.client.cert + pki.strayKey) }, /does not match the certificate/],
      [{ name: 'x', origin: site.url, file: Buffer.from(pki.client.cert) }, /no private key/],
      [{ name: 'x', origin: 'http://portal.example.com', file: good }, /origin/],
      [{ name: 'x', origin: 'https://portal.example.com/login', file: good }, /origin/],
      [{ name: 'x', origin: 'https://*.example.com', file: good }, /origin/],
      [{ name: 'x', file: good }, /origin/],
      [{ origin: site.url, file: good }, /name/],
      [{ name: 'x', origin: site.url }, /file/],
    ];
    for (const [fields, message] of cases) {
      const res = await upload(fields);
      expect({ status: res.status, message: res.body.error?.message }).toEqual({ status: 400, message: expect.stringMatching(message) });
    }
    expect((await (await server.request('/v1/client-certificates')).json()).pagination.total).toBe(0);
  });

  it('sessions present the certificate to its origin without a prompt, headless (first tab and a new context) and headful; other projects, expired and deleted certificates do not', async () => {
    const other = await createProject(server.db, { name: 'no certificates', source: 'bootstrap', key: `sk_test_nocert_${randomUUID().replaceAll('-', '')}` });
    const otherServer = {
      request: (path: string, init: RequestInit = {}) =>
        server.request(path, { ...init, headers: { ...(init.headers as object), 'service-api-key': other.key } }),
    };
    // Without a certificate: the handshake is refused (a warm pooled browser serves it).
    const plain = await createSession(otherServer, { browser: { headless: { active: true } }, session: { recording: { active: false } } });
    await refused(plain.cdp_url);
    await endSession(otherServer, plain.id);

    const uploaded = await upload({ name: 'fixture', origin: site.url, passphrase: 'pw', file: pki.pkcs12('pw') });
    expect(uploaded.status).toBe(200);
    for (const headless of [true, false]) {
      const s = await createSession(server, { browser: { headless: { active: headless } }, session: { recording: { active: false } } });
      try {
        // Its own browser, its root holding the certificate: not the warm pooled one.
        const nss = await runTool('certutil', ['-L', '-d', `sql:${join(rootOf(browsersDirFor(server.config.dataDir), s.id).dir, 'home', '.pki', 'nssdb')}`]);
        expect(nss.stdout.toString()).toContain(uploaded.body.data.id);
        expect(await visit(s.cdp_url)).toBe('page: Test Client');
        // Playwright's newContext() (an off-the-record context) inherits the rule and the store.
        if (headless) expect(await visit(s.cdp_url, 'new context')).toBe('page: Test Client');
      } finally {
        await endSession(server, s.id);
      }
    }
    // The page and what the browser asks for after it (a favicon): all with the certificate.
    expect(new Set(site.seen)).toEqual(new Set(['Test Client']));
    const served = site.seen.length;

    // Expired since its upload: left out of new sessions (a site would refuse it anyway).
    await server.db.query(`UPDATE client_certificates SET not_after = now() - interval '1 minute' WHERE id = $1`, [uploaded.body.data.id]);
    const expired = await createSession(server, { browser: { headless: { active: true } }, session: { recording: { active: false } } });
    await refused(expired.cdp_url);
    await endSession(server, expired.id);
    await server.db.query(`UPDATE client_certificates SET not_after = now() + interval '1 day' WHERE id = $1`, [uploaded.body.data.id]);

    await server.request(`/v1/client-certificates/${uploaded.body.data.id}`, { method: 'DELETE' });
    const after = await createSession(server, { browser: { headless: { active: true } }, session: { recording: { active: false } } });
    await refused(after.cdp_url);
    await endSession(server, after.id);
    expect(site.seen).toHaveLength(served);
    // Every session's root is gone (the pool's warm browser is not a session's).
    expect(roots(browsersDirFor(server.config.dataDir)).filter((r) => r.owner?.sessionId)).toEqual([]);
  }, 120_000);
});
