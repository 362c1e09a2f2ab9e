// CA certificates end to end: a local HTTPS site whose certificate a test CA signed is
// refused by a session (an unknown authority) until the project uploads that CA; then new
// sessions load it over cdp_url, with no certificate errors waived. Upload checks, list,
// delete (new sessions distrust it again), project scoping.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, endSession } from '../sessions/test-support.js';
import { makeTestPki, type TestPki } from './test-support.js';

describe.each(browserBackends)('CA certificates on %s', (backend) => {
  let server: TestServer;
  let pki: TestPki;
  let site: Server;
  let siteUrl: string;

  beforeAll(async () => {
    pki = makeTestPki();
    site = createServer({ key: pki.server.key, cert: pki.server.cert }, (_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>internal</title><h1 id="who">internal site</h1>');
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    siteUrl = `https://127.0.0.1:${(site.address() as AddressInfo).port}`;
    server = await startTestServer({ backend, env: { BROWSER_POOL_SIZE: '1' } });
  });
  afterAll(async () => {
    await server?.close();
    site?.closeAllConnections();
    await new Promise((r) => site?.close(r));
    pki?.remove();
  });

  const upload = async (fields: { name: string; file: Buffer | string; description?: string }, key?: string) => {
    const form = new FormData();
    form.set('name', fields.name);
    if (fields.description !== undefined) form.set('description', fields.description);
    form.set('file', new Blob([typeof fields.file === 'string' ? fields.file : new Uint8Array(fields.file)], { type: 'application/x-pem-file' }), 'ca.crt');
    const res = await server.request('/v1/certificates', { method: 'POST', body: form, ...(key ? { headers: { 'service-api-key': key } } : {}) });
    return { status: res.status, body: (await res.json()) as any };
  };

  /** The site's heading in a new session's first tab, or the navigation's error. */
  const visit = async (): Promise<string> => {
    const s = await createSession(server, { browser: { headless: { active: true } }, session: { recording: { active: false } } });
    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      await page.goto(siteUrl, { timeout: 15_000 });
      return `page: ${await page.textContent('#who')}`;
    } catch (err) {
      return `error: ${(err as Error).message.split('\n')[0]!.replace(/ at https:.*/, '')}`;
    } finally {
      await browser.close();
      await endSession(server, s.id);
    }
  };

  it('a session trusts the site once its CA is uploaded, and no longer after the CA is deleted', async () => {
    expect(await visit()).toMatch(/^error: .*ERR_CERT_AUTHORITY_INVALID/);

    const created = await upload({ name: 'corp-root-ca', description: 'Root CA of the internal services.', file: pki.caPem });
    expect(created).toEqual({
      status: 200,
      body: {
        data: {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          name: 'corp-root-ca',
          description: 'Root CA of the internal services.',
          createdAt: expect.any(String),
        },
      },
    });
    expect(await visit()).toBe('page: internal site');

    const list = await (await server.request('/v1/certificates')).json();
    expect(list).toEqual({ data: [created.body.data] });
    expect(await (await server.request('/v1/certificates/corp-root-ca', { method: 'DELETE' })).json()).toEqual({ data: { status: 'deleted' } });
    expect((await server.request('/v1/certificates/corp-root-ca', { method: 'DELETE' })).status).toBe(404);
    expect(await (await server.request('/v1/certificates')).json()).toEqual({ data: [] });
    expect(await visit()).toMatch(/^error: .*ERR_CERT_AUTHORITY_INVALID/);
  });

  it('takes PEM and DER; refuses what is not one CA certificate, and a name taken; keeps each project its own', async () => {
    const der = Buffer.from(pki.caPem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
    const fromDer = await upload({ name: 'der_form', file: der });
    expect(fromDer.status).toBe(200);
    expect(fromDer.body.data.description).toBeNull();
    expect((await upload({ name: 'der_form', file: pki.caPem })).body).toEqual({
      error: { code: 409, message: 'A certificate named der_form already exists' },
    });
    expect((await upload({ name: 'garbage', file: 'not a certificate' })).body.error.message).toBe('The file is not an X.509 certificate in PEM or DER form');
    expect((await upload({ name: 'leaf', file: pki.server.cert })).body.error.message).toMatch(/not a CA certificate/);
    expect((await upload({ name: 'two', file: pki.caPem + pki.server.cert })).body.error.message).toMatch(/several certificates/);
    expect((await upload({ name: 'bad name!', file: pki.caPem })).status).toBe(400);

    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    expect((await server.request('/v1/certificates', { headers: { 'service-api-key': other.key } }).then((r) => r.json())) as unknown).toEqual({ data: [] });
    expect((await server.request('/v1/certificates/der_form', { method: 'DELETE', headers: { 'service-api-key': other.key } })).status).toBe(404);
    // The same name in another project is its own.
    expect((await upload({ name: 'der_form', file: pki.caPem }, other.key)).status).toBe(200);
    await server.request('/v1/certificates/der_form', { method: 'DELETE' });
  });
});
