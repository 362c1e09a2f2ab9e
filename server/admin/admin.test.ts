// The admin API over real HTTP, on every backend: off without ADMIN_TOKEN (404 everywhere
// under /admin), the token checked before anything else, projects' CRUD, keys made, listed
// (never shown again) and revoked (401 at once), per-project limits taking the place of the
// configuration's (included credits, cost limit, concurrent browsers, on real Chromium),
// a project's deletion refused while a session runs, and the cluster's nodes listed (a
// silent node reaped on PostgreSQL only).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zipOf } from '../testing/zip-of.js';
import { compileSchema, createAjv, loadSpec } from '../http/spec.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { batchEnd, createBatch, getBatch, HEADLESS, until, type Requester } from '../batches/test-support.js';

const ADMIN_TOKEN = 'adm_0123456789abcdef0123456789abcdef';
const spec = loadSpec();
const ajv = createAjv(spec);
const schema = (name: string) => compileSchema(ajv, { $ref: `#/components/schemas/${name}` });
const isProject = schema('AdminProjectResponse');
const isProjects = schema('AdminProjectListResponse');
const isKeyMade = schema('AdminKeyCreatedResponse');
const isKeys = schema('AdminKeyListResponse');
const isBilling = schema('BillingResponse');
const isNodes = schema('AdminNodeListResponse');

function expectValid(validate: ReturnType<typeof schema>, body: unknown) {
  expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
}

async function send(t: TestServer, method: string, path: string, options: { body?: unknown; token?: string | null; key?: string } = {}) {
  const headers: Record<string, string> = {};
  if (options.token !== null) headers.authorization = `Bearer ${options.token ?? ADMIN_TOKEN}`;
  if (options.key) headers['service-api-key'] = options.key;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(t.url + path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // kept as text for the assertion message
  }
  return { status: res.status, body, headers: res.headers };
}

describe.each(backends)('admin API off on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend });
  });
  afterAll(() => t?.close());

  it('answers 404 to everything under /admin, token or not', async () => {
    for (const [method, path] of [
      ['GET', '/admin/v1/projects'],
      ['POST', '/admin/v1/projects'],
      ['DELETE', '/admin/v1/keys/key_x'],
      ['GET', '/admin'],
      ['PUT', '/admin/v1/projects'],
    ]) {
      for (const token of [ADMIN_TOKEN, null]) {
        const res = await send(t, method, path, { token, body: method === 'POST' ? { name: 'x' } : undefined });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error.code).toBe(404);
      }
    }
    // The project API is untouched.
    expect((await send(t, 'GET', '/v1/billing', { token: null, key: t.apiKey })).status).toBe(200);
  });
});

describe.each(backends)('admin API on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend, env: { ADMIN_TOKEN, INCLUDED_CREDITS: '1000', MAX_CONCURRENT_BROWSERS: '4' } });
  });
  afterAll(() => t?.close());

  it('refuses a missing, wrong or non-bearer token with 401 before reading the request', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${ADMIN_TOKEN}x` },
      { authorization: ADMIN_TOKEN },
      { 'service-api-key': t.apiKey },
    ];
    for (const headers of attempts) {
      const res = await fetch(`${t.url}/admin/v1/projects`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{not json' });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect((await res.json()).error.message).toMatch(/admin token/);
    }
    // An unknown path under /admin with the right token is a plain 404.
    expect((await send(t, 'GET', '/admin/v1/nothing')).status).toBe(404);
    // Admin operations do not take project keys, and project operations do not take the admin token.
    expect((await send(t, 'GET', '/v1/billing', { token: ADMIN_TOKEN })).status).toBe(401);
  });

  it('lists the nodes: this one alive, as /healthz names it', async () => {
    const res = await send(t, 'GET', '/admin/v1/nodes');
    expect(res.status).toBe(200);
    expectValid(isNodes, res.body);
    const health = await (await fetch(`${t.url}/healthz`)).json();
    expect(health.cluster).toEqual({ node_id: expect.any(String), live_nodes: 1, draining: false });
    expect(res.body.data).toEqual([
      expect.objectContaining({ id: health.cluster.node_id, capacity: 4, running: 0, draining: false, status: 'alive', version: expect.any(String) }),
    ]);
    expect((await send(t, 'GET', '/admin/v1/nodes', { token: null })).status).toBe(401);
  });

  it('reaps a silent node on PostgreSQL only: a node on PGlite runs alone', async () => {
    const [{ at }] = await t.db.query<{ at: Date }>(
      `INSERT INTO nodes (id, version, capacity, heartbeat_at) VALUES ('silent-node', 'old', 1, now() - interval '1 hour') RETURNING now() AS at`,
    );
    // Until the reaper's tick has come (heartbeats every NODE_DEAD_AFTER_SECONDS / 5 = 3 s):
    // on PostgreSQL the node is swept; on PGlite this node beat again and reaped nothing.
    await until(
      () =>
        backend === 'postgres'
          ? t.db.query<{ swept: boolean }>(`SELECT swept_at IS NOT NULL AS swept FROM nodes WHERE id = 'silent-node'`).then((r) => r[0]?.swept === true)
          : t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM nodes WHERE id <> 'silent-node' AND heartbeat_at > $1`, [at]).then((r) => r[0]!.n > 0),
      (done) => done,
      10_000,
      100,
    );
    const [row] = await t.db.query<{ dead_at: Date | null; swept_at: Date | null }>(`SELECT dead_at, swept_at FROM nodes WHERE id = 'silent-node'`);
    if (backend === 'postgres') expect(row).toEqual({ dead_at: expect.any(Date), swept_at: expect.any(Date) });
    else expect(row).toEqual({ dead_at: null, swept_at: null });
    // Listed dead either way: its heartbeat is too old.
    const listed = await send(t, 'GET', '/admin/v1/nodes');
    expect(listed.body.data.find((n: { id: string }) => n.id === 'silent-node')?.status).toBe('dead');
    await t.db.query(`DELETE FROM nodes WHERE id = 'silent-node'`);
  });

  it('creates, lists, reads, updates and refuses bad projects', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: 'x', max_concurrent_browsers: 0 },
      { name: 'x', cost_limit: -1 },
      { name: 'x', tier: 'gold' },
      { name: 'x', extra: 1 },
    ]) {
      const res = await send(t, 'POST', '/admin/v1/projects', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const made = await send(t, 'POST', '/admin/v1/projects', { body: { name: 'team-b', included_credits: 50, max_concurrent_browsers: 2 } });
    expect(made.status).toBe(201);
    expectValid(isProject, made.body);
    const p = made.body.data;
    expect(p).toMatchObject({ name: 'team-b', tier: 'self-hosted', included_credits: 50, cost_limit: null, max_concurrent_browsers: 2, gift_credits: 0 });

    const list = await send(t, 'GET', '/admin/v1/projects');
    expectValid(isProjects, list.body);
    expect(list.body.data.map((x: any) => x.name)).toEqual(['default', 'team-b']);

    const patched = await send(t, 'PATCH', `/admin/v1/projects/${p.id}`, { body: { name: 'team-c', cost_limit: 10, included_credits: null } });
    expect(patched.status).toBe(200);
    expectValid(isProject, patched.body);
    expect(patched.body.data).toMatchObject({ id: p.id, name: 'team-c', cost_limit: 10, included_credits: null, max_concurrent_browsers: 2 });
    expect((await send(t, 'GET', `/admin/v1/projects/${p.id}`)).body.data).toEqual(patched.body.data);
    expect((await send(t, 'PATCH', `/admin/v1/projects/${p.id}`, { body: {} })).status).toBe(400);
    expect((await send(t, 'GET', '/admin/v1/projects/nope')).status).toBe(404);
    expect((await send(t, 'PATCH', '/admin/v1/projects/nope', { body: { name: 'x' } })).status).toBe(404);
    expect((await send(t, 'DELETE', '/admin/v1/projects/nope')).status).toBe(404);
    expect((await send(t, 'POST', '/admin/v1/projects/nope/keys', { body: {} })).status).toBe(404);
    expect((await send(t, 'GET', '/admin/v1/projects/nope/keys')).status).toBe(404);
  });

  it('makes a key shown once, lists it without the key, and a revoked key answers 401 at once', async () => {
    const p = (await send(t, 'POST', '/admin/v1/projects', { body: { name: 'keys' } })).body.data;
    const made = await send(t, 'POST', `/admin/v1/projects/${p.id}/keys`, { body: { name: 'ci' } });
    expect(made.status).toBe(201);
    expectValid(isKeyMade, made.body);
    const { id, key, prefix } = made.body.data;
    expect(key.startsWith(prefix)).toBe(true);
    // A body is optional.
    expect((await send(t, 'POST', `/admin/v1/projects/${p.id}/keys`)).status).toBe(201);

    const before = await send(t, 'GET', `/admin/v1/projects/${p.id}/keys`);
    expectValid(isKeys, before.body);
    expect(before.body.data).toHaveLength(2);
    expect(before.body.data[0]).toMatchObject({ id, name: 'ci', prefix, source: 'admin', last_used_at: null, revoked_at: null });
    expect(JSON.stringify(before.body)).not.toContain(key);

    // The key works, in its own project only, and its use is recorded.
    const billing = await send(t, 'GET', '/v1/billing', { token: null, key });
    expect(billing.status).toBe(200);
    const used = (await send(t, 'GET', `/admin/v1/projects/${p.id}/keys`)).body.data[0];
    expect(Date.now() - Date.parse(used.last_used_at)).toBeLessThan(60_000);

    expect((await send(t, 'DELETE', `/admin/v1/keys/${id}`)).body).toEqual({ data: { status: 'revoked' } });
    expect((await send(t, 'GET', '/v1/billing', { token: null, key })).status).toBe(401);
    // Again is harmless; an unknown key is 404.
    expect((await send(t, 'DELETE', `/admin/v1/keys/${id}`)).status).toBe(200);
    expect((await send(t, 'DELETE', '/admin/v1/keys/key_nope')).status).toBe(404);
    const after = (await send(t, 'GET', `/admin/v1/projects/${p.id}/keys`)).body.data[0];
    expect(after.revoked_at).not.toBeNull();
  });

  it("puts a project's included credits, cost limit and browser cap in place of the configuration's", async () => {
    const p = (await send(t, 'POST', '/admin/v1/projects', { body: { name: 'limits', included_credits: 5, cost_limit: 3, max_concurrent_browsers: 1 } })).body
      .data;
    const key = (await send(t, 'POST', `/admin/v1/projects/${p.id}/keys`)).body.data.key;
    const billing = await send(t, 'GET', '/v1/billing', { token: null, key });
    expectValid(isBilling, billing.body);
    expect(billing.body.data).toMatchObject({ credits: 5, included_credits: 5, cost_limit: 3, max_concurrent_browsers: 1 });
    // The default project keeps the configuration's.
    const own = await send(t, 'GET', '/v1/billing', { token: null, key: t.apiKey });
    expect(own.body.data).toMatchObject({ included_credits: 1000, cost_limit: null, max_concurrent_browsers: 4 });

    const create = () => send(t, 'POST', '/v1/sessions', { token: null, key, body: { browser: { headless: { active: true } } } });
    const first = await create();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The project's cap (1) is met before the server's (4).
    const second = await create();
    expect(second.status).toBe(429);
    expect(second.body.error.message).toMatch(/project's concurrent browser limit is reached \(1\)/);

    // Deleting a project with a running session is refused.
    const busy = await send(t, 'DELETE', `/admin/v1/projects/${p.id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.message).toMatch(/1 session/);

    expect((await send(t, 'DELETE', `/v1/sessions/${first.body.data.id}`, { token: null, key })).status).toBe(200);
    const third = await create();
    expect(third.status, JSON.stringify(third.body)).toBe(200);
    expect((await send(t, 'DELETE', `/v1/sessions/${third.body.data.id}`, { token: null, key })).status).toBe(200);

    // No included credits and a cost limit of 0: creation answers 402; null gives the configuration's back.
    await send(t, 'PATCH', `/admin/v1/projects/${p.id}`, { body: { included_credits: 0 } });
    const broke = await create();
    expect(broke.status).toBe(402);
    await send(t, 'PATCH', `/admin/v1/projects/${p.id}`, { body: { included_credits: null, cost_limit: 0 } });
    const limited = await create();
    expect(limited.status).toBe(402);
    expect(limited.body.error.message).toMatch(/cost limit of 0/);
    await send(t, 'PATCH', `/admin/v1/projects/${p.id}`, { body: { cost_limit: null } });
    expect((await send(t, 'GET', '/v1/billing', { token: null, key })).body.data).toMatchObject({ included_credits: 1000, cost_limit: null });

    // A stored file of the project: an uploaded extension.
    const form = new FormData();
    form.set('name', 'kept');
    const manifest = JSON.stringify({ manifest_version: 3, name: 'Kept', version: '1.0' });
    form.set('file', new Blob([new Uint8Array(await zipOf({ 'manifest.json': manifest }))], { type: 'application/zip' }), 'kept.zip');
    expect((await fetch(`${t.url}/v1/extensions`, { method: 'POST', headers: { 'service-api-key': key }, body: form })).status).toBe(200);
    const [{ storage_key }] = await t.db.query<{ storage_key: string }>('SELECT storage_key FROM extensions WHERE project_id = $1', [p.id]);
    const stored = join(t.dataDir, 'extensions', storage_key);
    expect(existsSync(stored)).toBe(true);

    // Idle now: deleted, with its keys, sessions' history and stored files.
    expect((await send(t, 'DELETE', `/admin/v1/projects/${p.id}`)).body).toEqual({ data: { status: 'deleted' } });
    expect((await send(t, 'GET', `/admin/v1/projects/${p.id}`)).status).toBe(404);
    expect((await send(t, 'GET', '/v1/billing', { token: null, key })).status).toBe(401);
    const [{ n }] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE project_id = $1', [p.id]);
    expect(n).toBe(0);
    expect(existsSync(stored)).toBe(false);
  });

  it("makes a batch's items past the project's cap wait for one of its browsers to end", async () => {
    const p = (await send(t, 'POST', '/admin/v1/projects', { body: { name: 'batch-cap', max_concurrent_browsers: 1 } })).body.data;
    const key = (await send(t, 'POST', `/admin/v1/projects/${p.id}/keys`)).body.data.key;
    const as: Requester = {
      request: (path, init = {}) => fetch(t.url + path, { ...init, headers: { 'service-api-key': key, ...(init.headers as Record<string, string>) } }),
    };
    const batchId = await createBatch(as, { count: 2, configuration: HEADLESS });
    const made = (b: any) => b.sessions.filter((i: any) => i.session_id).map((i: any) => i.session_id as string);
    const first = made(
      await until(
        () => getBatch(as, batchId),
        (b) => made(b).length === 1,
      ),
    );
    // The server has room (4); the project has not: the second item waits.
    // Negative: it is still waiting after the worker's idle tick (1 s; 200 ms while items wait).
    await new Promise((r) => setTimeout(r, 1_000));
    const waiting = await getBatch(as, batchId);
    expect(waiting).toMatchObject({ status: 'pending', completed_requests: 1, failed_requests: 0, pending_requests: 1 });
    expect((await send(t, 'DELETE', `/v1/sessions/${first[0]}`, { token: null, key })).status).toBe(200);
    const done = await batchEnd(as, batchId);
    expect(done).toMatchObject({ status: 'completed', completed_requests: 2, failed_requests: 0 });
    for (const id of made(done)) await send(t, 'DELETE', `/v1/sessions/${id}`, { token: null, key });
  });
});
