// The context's bookkeeping against a small server: ids for paths and fields, economical
// counts, unique names, a fresh item for a DELETE, and a cleanup that ends what a batch
// spawned.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contract, type JsonObject } from './contract.js';
import { SuiteContext } from './context.js';

const obj = (properties: JsonObject, required: string[] = Object.keys(properties)) => ({ type: 'object', required, properties });
const answer = (schema: JsonObject) => ({ description: 'ok', content: { 'application/json': { schema } } });
const body = (schema: JsonObject, example?: unknown) => ({ required: true, content: { 'application/json': { schema, ...(example ? { example } : {}) } } });
const p = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });

const spec = {
  openapi: '3.1.0',
  info: { title: 'ctx', version: '1' },
  security: [{ Key: [] }],
  components: { securitySchemes: { Key: { type: 'apiKey', in: 'header', name: 'service-api-key' } } },
  paths: {
    '/v1/sessions': { post: { operationId: 'createSession', responses: { '200': answer(obj({ data: obj({ id: { type: 'string' } }) })) } } },
    '/v1/sessions/{session_id}': {
      get: { operationId: 'getSession', parameters: [p('session_id')], responses: { '200': answer(obj({ data: obj({ id: { type: 'string' } }) })) } },
      delete: { operationId: 'endSession', parameters: [p('session_id')], responses: { '200': answer(obj({})) } },
    },
    '/v1/sessions/{session_id}/recordings/{recording_id}': {
      delete: { operationId: 'deleteRecording', parameters: [p('session_id'), p('recording_id')], responses: { '200': answer(obj({})) } },
    },
    '/v1/sessions/{sessionId}/click': { post: { operationId: 'click', parameters: [p('sessionId')], responses: { '200': answer(obj({})) } } },
    '/v1/batches': {
      post: {
        operationId: 'createBatch',
        requestBody: body(obj({ count: { type: 'integer', minimum: 1, maximum: 5000 } }), { count: 50 }),
        responses: { '200': answer(obj({ data: obj({ batch_id: { type: 'string' }, status: { type: 'string' } }) })) },
      },
    },
    '/v1/batches/{batch_id}': {
      get: {
        operationId: 'getBatch',
        parameters: [p('batch_id')],
        responses: {
          '200': answer(obj({ data: obj({ status: { type: 'string' }, sessions: { type: 'array', items: obj({ session_id: { type: 'string' } }) } }) })),
        },
      },
      delete: { operationId: 'cancelBatch', parameters: [p('batch_id')], responses: { '200': answer(obj({})) } },
    },
    '/v1/profiles': {
      post: {
        operationId: 'createProfile',
        requestBody: body(obj({ name: { type: 'string', maxLength: 20 }, session_id: { type: 'string', format: 'uuid' } }), {
          name: 'shop-login',
          session_id: '0e1d2c3b-4a59-4687-9a6b-5c4d3e2f1a0b',
        }),
        responses: { '200': answer(obj({ data: obj({ status: { type: 'string' } }) })) },
      },
    },
    '/v1/profiles/{name}': { delete: { operationId: 'deleteProfile', parameters: [p('name')], responses: { '200': answer(obj({})) } } },
  },
};

const state = {
  sessions: new Map<string, 'running' | 'ended'>(),
  batches: new Map<string, { count: number; sessions: string[]; polls: number }>(),
  profiles: new Map<string, string>(),
  requests: [] as { method: string; path: string; body: unknown }[],
};
let n = 0;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    const b = text ? JSON.parse(text) : undefined;
    const path = new URL(req.url!, 'http://x').pathname;
    state.requests.push({ method: req.method!, path, body: b });
    const send = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    const seg = path.split('/').filter(Boolean);
    const newSession = () => {
      const id = `s${++n}`;
      state.sessions.set(id, 'running');
      return id;
    };
    if (req.method === 'POST' && path === '/v1/sessions') return send(200, { data: { id: newSession() } });
    if (seg[1] === 'sessions' && seg.length === 3) {
      if (state.sessions.get(seg[2]) !== 'running') return send(404, {});
      if (req.method === 'DELETE') state.sessions.set(seg[2], 'ended');
      return send(200, req.method === 'GET' ? { data: { id: seg[2] } } : {});
    }
    if (seg[1] === 'sessions' && seg[3] === 'recordings') return send(state.sessions.get(seg[2]) === 'running' ? 200 : 404, {});
    if (seg[1] === 'sessions' && seg[3] === 'click') return send(state.sessions.get(seg[2]) === 'running' ? 200 : 404, {});
    if (req.method === 'POST' && path === '/v1/batches') {
      const id = `b${++n}`;
      state.batches.set(id, { count: b.count, sessions: [], polls: 0 });
      return send(200, { data: { batch_id: id, status: 'pending' } });
    }
    if (seg[1] === 'batches') {
      const batch = state.batches.get(seg[2]);
      if (!batch) return send(404, {});
      if (req.method === 'DELETE') return send(200, {});
      // Sessions appear over time: one per read, until the count is reached.
      if (batch.sessions.length < batch.count) batch.sessions.push(newSession());
      const status = batch.sessions.length < batch.count ? 'pending' : 'completed';
      return send(200, { data: { status, sessions: batch.sessions.map((s) => ({ session_id: s })) } });
    }
    if (req.method === 'POST' && path === '/v1/profiles') {
      if (state.sessions.get(b.session_id) !== 'running') return send(404, {});
      state.profiles.set(b.name, b.session_id);
      return send(200, { data: { status: 'pending' } });
    }
    if (req.method === 'DELETE' && seg[1] === 'profiles') return send(state.profiles.delete(decodeURIComponent(seg[2])) ? 200 : 404, {});
    send(404, {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('SuiteContext', () => {
  it('builds valid requests from live resources and cleans up everything it made', async () => {
    const contract = new Contract(spec);
    const ctx = new SuiteContext(contract, { baseUrl, apiKey: 'k', cleanupWaitMs: 5000 });

    // A path parameter named differently (sessionId) still gets the run's session.
    const click = await ctx.exercise(contract.operation('click'));
    expect(click.response?.status).toBe(200);
    const [shared] = ctx.registry.live('/v1/sessions');
    expect(click.built.pathParams.sessionId).toBe(shared.id);

    // A count takes its minimum, not the example's 50.
    const batch = await ctx.exercise(contract.operation('createBatch'));
    expect(batch.built.body?.value).toEqual({ count: 1 });

    // A body field naming a session gets the live one; the name becomes unique and the id.
    const profile = await ctx.exercise(contract.operation('createProfile'));
    expect(profile.response?.status).toBe(200);
    const body = profile.built.body?.value as { name: string; session_id: string };
    expect(body.session_id).toBe(shared.id);
    expect(body.name).toMatch(/^shop-login-[0-9a-f]{6}$/);
    expect(ctx.registry.live('/v1/profiles').map((r) => r.id)).toEqual([body.name]);

    // A DELETE's own check ends a session of its own, not the shared one.
    const end = await ctx.exercise(contract.operation('endSession'));
    expect(end.response?.status).toBe(200);
    expect(end.built.pathParams.session_id).not.toBe(shared.id);
    expect(state.sessions.get(shared.id)).toBe('running');
    expect(ctx.registry.get('/v1/sessions', end.built.pathParams.session_id)?.deleted).toBe(true);

    // A DELETE under a session gets a session of its own too, which is never handed to another
    // check and is ended as soon as the answer is in: it would hold a browser until the cleanup.
    const built = await ctx.build(contract.operation('deleteRecording'), { fresh: true });
    const own = built.pathParams.session_id;
    expect(own).not.toBe(shared.id);
    expect((await ctx.build(contract.operation('click'))).pathParams.sessionId).toBe(shared.id);
    await ctx.release(built);
    expect(state.sessions.get(own)).toBe('ended');
    const recording = await ctx.exercise(contract.operation('deleteRecording'));
    expect(recording.response?.status).toBe(200);
    expect(recording.built.pathParams.session_id).not.toBe(shared.id);
    expect(state.sessions.get(recording.built.pathParams.session_id)).toBe('ended');
    expect(state.sessions.get(shared.id)).toBe('running');

    const lines = await ctx.cleanup();
    // The batch's session was read from the batch and ended with the others.
    expect(lines).toEqual(['cleanup: removed 2 × /v1/sessions, 1 × /v1/profiles, 1 × /v1/batches']);
    expect(ctx.warnings).toEqual([]);
    expect([...state.sessions.values()].every((s) => s === 'ended')).toBe(true);
    expect(state.profiles.size).toBe(0);
    expect(ctx.registry.live()).toEqual([]);
  });
});
