// Applications, authentication flows and identities over real HTTP on the real database:
// the operations, their refusals, project scoping, and credentials that never come back
// (sealed in the database, absent from every answer and every log line).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import type { Requester } from '../sessions/test-support.js';
import { call } from './test-support.js';

const PASSWORD = 'pw-Never-Shown-7c1e';
const SEED = 'KRUGS4ZANFZSAYLOEBQXK5DIMVXHI2LDMF2G64RAONSWKZDT';
const CUSTOM = 'custom-value-Never-Shown-44a0';

describe.each(backends)('identities API on %s', (backend) => {
  let server: TestServer;
  const logs: string[] = [];
  /** Every answer's text, to look for secrets in. */
  const answers: string[] = [];
  const api = (method: string, path: string, body?: unknown) =>
    call(server, method, path, body).then((r) => {
      answers.push(r.text);
      return r;
    });

  beforeAll(async () => {
    server = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('applications: create, get, list a page at a time, update, and their authentication flows', async () => {
    const made = await api('POST', '/v1/applications', { source: 'https://shop.example.com/login', description: 'The shop' });
    expect(made).toMatchObject({
      status: 201,
      body: { id: expect.any(String), name: 'shop.example.com', url: 'https://shop.example.com/login', description: 'The shop' },
    });
    const id = made.body.id;
    for (const n of [1, 2]) await api('POST', '/v1/applications', { source: `https://app${n}.example.org/signin`, name: `App ${n}` });

    expect((await api('GET', `/v1/applications/${id}`)).body).toEqual({
      id,
      name: 'shop.example.com',
      url: 'https://shop.example.com/login',
      description: 'The shop',
      identity_count: 0,
      auth_methods: [],
      allowed_domains: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const all = (await api('GET', '/v1/applications')).body;
    expect(all.total).toBe(3);
    expect(all.applications.map((a: any) => a.name)).toEqual(['App 2', 'App 1', 'shop.example.com']);
    const page2 = (await api('GET', '/v1/applications?page=2&limit=2')).body;
    expect(page2).toMatchObject({ total: 3, applications: [{ name: 'shop.example.com' }] });
    expect((await api('GET', '/v1/applications?search=app%201')).body).toMatchObject({ total: 1, applications: [{ name: 'App 1' }] });

    const updated = await api('PUT', `/v1/applications/${id}`, { name: 'Shop', description: null, allowed_domains: ['Auth.Example.com'] });
    expect(updated.body).toMatchObject({ name: 'Shop', description: null, allowed_domains: ['auth.example.com'] });
    expect((await api('PUT', `/v1/applications/${randomUUID()}`, {})).status).toBe(404);

    // Flows: a ready-made one with its defaults answered, a custom one, the refusals.
    const flow = await api('POST', `/v1/applications/${id}/auth-flows`, { name: 'Password', methods: ['username_password'], is_recommended: true });
    expect(flow).toMatchObject({
      status: 201,
      body: {
        name: 'Password',
        description: null,
        is_recommended: true,
        methods: ['username_password'],
        custom_fields: [],
        login: { kind: 'auto', login_url: null, timeout_seconds: 30 },
      },
    });
    const custom = await api('POST', `/v1/applications/${id}/auth-flows`, {
      name: 'Custom',
      methods: ['username_password', 'authenticator', 'custom'],
      custom_fields: [{ name: 'tenant' }],
      is_recommended: true,
      login: {
        kind: 'custom',
        login_url: 'https://auth.example.com/start',
        steps: [
          { action: 'fill', selector: '#tenant', value: '{{custom.tenant}}' },
          { action: 'fill', selector: '#user', value: '{{username}}' },
          { action: 'click', selector: '#go' },
          { action: 'wait_for_url', url_contains: '/mfa' },
          { action: 'totp', selector: '#code' },
          { action: 'choose_account' },
        ],
        success: { selector: '#dashboard' },
        failure: { text: 'Wrong password' },
      },
    });
    expect(custom.status).toBe(201);
    const flows = (await api('GET', `/v1/applications/${id}/auth-flows`)).body.auth_flows;
    // Only one is recommended: the later took it.
    expect(flows.map((f: any) => [f.name, f.is_recommended])).toEqual([
      ['Password', false],
      ['Custom', true],
    ]);
    expect((await api('GET', `/v1/applications/${id}`)).body.auth_methods.sort()).toEqual(['authenticator', 'custom', 'username_password']);
    const patched = await api('PATCH', `/v1/applications/${id}/auth-flows/${flow.body.id}`, { login: { kind: 'two_pages', selectors: { next: '#next' } } });
    expect(patched.body.login).toEqual({ kind: 'two_pages', login_url: null, selectors: { next: '#next' }, timeout_seconds: 30 });

    const refusals: [unknown, RegExp][] = [
      [{ name: 'x', methods: ['username_password'], login: { kind: 'custom' } }, /at least one step/],
      [
        { name: 'x', methods: ['username_password'], login: { kind: 'one_page', steps: [{ action: 'click', selector: 'a' }] } },
        /only a custom login has steps/,
      ],
      [{ name: 'x', methods: ['authenticator'], login: { kind: 'one_page' } }, /methods must include username_password/],
      [{ name: 'x', methods: ['username_password'], login: { login_url: 'https://evil.example.net/login' } }, /evil\.example\.net is neither/],
      [{ name: 'x', methods: ['username_password'], login: { kind: 'custom', steps: [{ action: 'fill', selector: '#a' }] } }, /fill needs value/],
      [{ name: 'x', methods: ['username_password'], login: { kind: 'custom', steps: [{ action: 'totp', selector: '#a' }] } }, /needs the authenticator method/],
      [
        { name: 'x', methods: ['custom'], login: { kind: 'custom', steps: [{ action: 'fill', selector: '#a', value: '{{custom.nope}}' }] } },
        /not one of the flow's custom_fields/,
      ],
      [{ name: 'x', methods: ['username_password'], login: { kind: 'custom', steps: [{ action: 'dance' }] } }, /./],
    ];
    for (const [body, message] of refusals) {
      const r = await api('POST', `/v1/applications/${id}/auth-flows`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    expect((await api('DELETE', `/v1/applications/${id}/auth-flows/${custom.body.id}`)).body).toEqual({ success: true });
    expect((await api('DELETE', `/v1/applications/${id}/auth-flows/${custom.body.id}`)).status).toBe(404);
  });

  it('identities: created with sealed credentials, read without them, filtered, updated, deleted; the application refuses deletion while used', async () => {
    const created = await api('POST', '/v1/identities', {
      name: 'Buyer',
      source: 'https://crm.example.com/login',
      applicationName: 'CRM',
      credentials: [
        { type: 'username_password', username: 'buyer@example.com', password: PASSWORD },
        { type: 'authenticator', secret: SEED },
        { type: 'custom', fields: [{ name: 'tenant', value: CUSTOM }] },
      ],
      metadata: { team: 'purchasing', level: 2 },
    });
    expect(created).toMatchObject({
      status: 201,
      body: { id: expect.any(String), name: 'Buyer', status: 'pending', metadata: { team: 'purchasing', level: 2 } },
    });
    const id = created.body.id;
    const appId = created.body.application_id;
    // The application of that origin was made, named as asked; a second identity of the origin joins it.
    expect((await api('GET', `/v1/applications/${appId}`)).body).toMatchObject({ name: 'CRM', url: 'https://crm.example.com/login', identity_count: 1 });
    const second = await api('POST', '/v1/identities', {
      source: 'https://crm.example.com/other',
      credentials: [{ type: 'username_password', username: 'u2', password: PASSWORD }],
    });
    expect(second.body).toMatchObject({ name: 'Unnamed Identity', application_id: appId });

    expect((await api('GET', `/v1/identities/${id}`)).body).toEqual({
      id,
      name: 'Buyer',
      source: 'https://crm.example.com/login',
      status: 'pending',
      metadata: { team: 'purchasing', level: 2 },
      application_id: appId,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await api('GET', `/v1/identities/${id}/credentials`)).body).toEqual({
      id,
      name: 'Buyer',
      source: 'https://crm.example.com/login',
      credentials: [
        { type: 'username_password', fields: ['username', 'password'] },
        { type: 'authenticator', fields: ['secret'] },
        { type: 'custom', fields: ['tenant'] },
      ],
    });
    // At rest: sealed, bound to the identity and field.
    const [row] = await server.db.query<{ credentials: any }>('SELECT credentials FROM identities WHERE id = $1', [id]);
    expect(JSON.stringify(row!.credentials)).not.toContain(PASSWORD);
    expect(row!.credentials.username_password.password).toMatch(/^v1:/);

    // Lists: filters and pages.
    expect((await api('GET', `/v1/identities?application_id=${appId}`)).body.total).toBe(2);
    expect((await api('GET', '/v1/identities?search=buy')).body.identities.map((i: any) => i.id)).toEqual([id]);
    expect((await api('GET', '/v1/identities?status=active')).body).toEqual({ total: 0, identities: [] });
    expect((await api('GET', '/v1/identities?limit=1')).body).toMatchObject({ total: 2, identities: [{ id: second.body.id }] });
    expect((await api('GET', `/v1/applications/${appId}/identities?metadata[team]=purchasing`)).body.identities).toEqual([
      { id, name: 'Buyer', auth_flow: null, status: 'pending', created_at: expect.any(String), updated_at: expect.any(String) },
    ]);
    expect((await api('GET', `/v1/applications/${appId}/identities?metadata[team]=sales`)).body.identities).toEqual([]);

    // Refusals: two credentials of a type, a seed that is not base32, a code that does not match.
    const bad: [unknown, RegExp][] = [
      [
        [
          { type: 'username_password', username: 'a', password: 'b' },
          { type: 'username_password', username: 'c', password: 'd' },
        ],
        /at most one credential of type username_password/,
      ],
      [[{ type: 'authenticator', secret: 'not base32!' }], /./],
      [[{ type: 'authenticator', secret: SEED, otp: '000000' }], /does not match/],
    ];
    for (const [credentials, message] of bad) {
      const r = await api('POST', '/v1/identities', { source: 'https://crm.example.com/login', credentials });
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(message);
    }

    const renamed = await api('PUT', `/v1/identities/${id}`, {
      name: 'Chief buyer',
      credentials: [{ type: 'username_password', username: 'chief', password: PASSWORD }],
    });
    expect(renamed.body).toEqual({ id, name: 'Chief buyer', metadata: { team: 'purchasing', level: 2 }, updated_at: expect.any(String) });
    expect((await api('GET', `/v1/identities/${id}/credentials`)).body.credentials).toEqual([{ type: 'username_password', fields: ['username', 'password'] }]);

    // Another project sees none of it.
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    const asOther: Requester = {
      request: (p, init = {}) => server.request(p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': other.key } }),
    };
    for (const [method, path] of [
      ['GET', `/v1/identities/${id}`],
      ['GET', `/v1/identities/${id}/credentials`],
      ['DELETE', `/v1/identities/${id}`],
      ['GET', `/v1/applications/${appId}`],
      ['GET', `/v1/applications/${appId}/identities`],
      ['GET', `/v1/applications/${appId}/auth-flows`],
      ['DELETE', `/v1/applications/${appId}`],
    ]) {
      expect((await call(asOther, method!, path!)).status, `${method} ${path}`).toBe(404);
    }
    expect((await call(asOther, 'GET', '/v1/identities')).body).toEqual({ total: 0, identities: [] });

    // The application is kept while identities use it.
    expect(await api('DELETE', `/v1/applications/${appId}`)).toMatchObject({
      status: 409,
      body: { error: { code: 409, message: 'Application has 2 identities; delete them first' } },
    });
    expect((await api('DELETE', `/v1/identities/${id}`)).body).toEqual({ message: 'Identity deleted successfully' });
    expect((await api('GET', `/v1/identities/${id}`)).status).toBe(404);
    expect((await api('DELETE', `/v1/identities/${second.body.id}`)).status).toBe(200);
    expect((await api('DELETE', `/v1/applications/${appId}`)).body).toEqual({ success: true });
    expect((await api('GET', `/v1/applications/${appId}`)).status).toBe(404);
  });

  it('no answer and no log line holds a secret', () => {
    expect(answers.length).toBeGreaterThan(20);
    expect(logs.length).toBeGreaterThan(20);
    for (const text of [...answers, ...logs]) {
      for (const secret of [PASSWORD, SEED, CUSTOM]) expect(text).not.toContain(secret);
    }
  });
});
