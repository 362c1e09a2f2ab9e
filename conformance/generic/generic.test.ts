// The generic checks against a tiny contract and a tiny server that implements it: as
// written, every check passes (or is skipped with a reason); with one fault switched on,
// the check of the rule it breaks fails.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Contract, type JsonObject } from '../contract.js';
import { prng } from '../prng.js';
import { buildRequest, fillPath } from '../requests.js';
import { runSuite, type SuiteResult } from '../suite.js';
import { makeCase } from './g12.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonObject, extra: JsonObject = {}) => ({ description: 'answer', ...extra, content: { 'application/json': { schema } } });
const err = json(ref('Error'));
const data = (schema: JsonObject) => json({ type: 'object', additionalProperties: false, required: ['data'], properties: { data: schema } });
const idParam = { name: 'thing_id', in: 'path', required: true, schema: { type: 'string' } };

export const tinySpec: JsonObject = {
  openapi: '3.1.0',
  info: { title: 'tiny', version: '1.0.0' },
  security: [{ Key: [] }],
  paths: {
    '/v1/things': {
      post: {
        operationId: 'createThing',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                additionalProperties: false,
                required: ['name'],
                properties: { name: { type: 'string', minLength: 1 }, size: { type: 'integer' } },
              },
              example: { name: 'box' },
            },
          },
        },
        responses: { '200': data(ref('Thing')), '400': err, '401': err, '415': err },
      },
      get: { operationId: 'listThings', responses: { '200': data({ type: 'array', items: ref('Thing') }), '401': err } },
    },
    '/v1/things/{thing_id}': {
      parameters: [idParam],
      get: { operationId: 'getThing', responses: { '200': data(ref('Thing')), '401': err, '404': err } },
      delete: {
        operationId: 'deleteThing',
        responses: {
          '200': data({ type: 'object', additionalProperties: false, required: ['status'], properties: { status: { type: 'string' } } }),
          '401': err,
          '404': err,
        },
      },
    },
    '/v1/things/{thing_id}/file': {
      get: {
        operationId: 'getThingFile',
        parameters: [idParam],
        responses: {
          '200': {
            description: 'the file',
            headers: { 'X-Checksum': { required: true, schema: { type: 'string', pattern: '^[0-9a-f]+$' } } },
            content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
          },
          '401': err,
          '404': err,
        },
      },
    },
    '/v1/public': {
      get: {
        operationId: 'getPublic',
        security: [],
        responses: { '200': json({ type: 'object', additionalProperties: false, required: ['ok'], properties: { ok: { type: 'boolean' } } }) },
      },
    },
  },
  components: {
    securitySchemes: { Key: { type: 'apiKey', in: 'header', name: 'service-api-key' } },
    schemas: {
      Error: {
        type: 'object',
        additionalProperties: false,
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            additionalProperties: false,
            required: ['code', 'message'],
            properties: { code: { type: 'integer' }, message: { type: 'string' } },
          },
        },
      },
      Thing: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'name'],
        properties: { id: { type: 'string' }, name: { type: 'string' }, size: { type: 'integer' } },
      },
    },
  },
};

type Fault =
  | 'status418' // getThing answers an undocumented status
  | 'textList' // listThings answers text/plain
  | 'badBody' // getThing's body lacks a required field
  | 'noChecksum' // getThingFile without its required header
  | 'openList' // listThings without a key answers 200
  | 'anyKey' // any key is accepted
  | 'crashOnMalformed' // malformed JSON → 500
  | 'acceptExtra' // unknown body fields accepted
  | 'noAllow' // 405 without Allow
  | 'noDeleteRoute' // DELETE on an item is not served at all
  | 'renameOnGet' // getThing changes the thing
  | 'leak' // another project sees this project's things
  | 'crashOnOddId' // an id that is not one of its own → 500 (instead of 404)
  | 'crashOnBigSize'; // a size past a 32-bit column (the contract sets no maximum) → 500

interface Thing {
  id: string;
  name: string;
  project: string;
}

class TinyServer {
  readonly things = new Map<string, Thing>();
  readonly deleted: string[] = [];
  /** The body of every POST /v1/things, as sent. */
  readonly posts: string[] = [];
  private server?: Server;
  private n = 0;
  constructor(private readonly faults: Set<Fault>) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((r) => this.server!.close(() => r()));
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  }

  private error(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) {
    this.send(res, status, { error: { code: status, message } }, headers);
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString();
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const f = this.faults;
    const segments = url.pathname.split('/').filter(Boolean);

    let route: { allow: string[]; name: string; id?: string } | undefined;
    if (url.pathname === '/v1/things') route = { allow: ['POST', 'GET'], name: 'things' };
    else if (url.pathname === '/v1/public') route = { allow: ['GET'], name: 'public' };
    else if (segments.length === 3 && segments[1] === 'things')
      route = { allow: f.has('noDeleteRoute') ? ['GET'] : ['GET', 'DELETE'], name: 'thing', id: segments[2] };
    else if (segments.length === 4 && segments[1] === 'things' && segments[3] === 'file') route = { allow: ['GET'], name: 'file', id: segments[2] };
    if (!route) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('no route');
    if (!route.allow.includes(method)) {
      if (route.name === 'thing' && method === 'DELETE') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('no route');
      return this.error(res, 405, 'method not allowed', f.has('noAllow') ? {} : { allow: route.allow.join(', ') });
    }
    if (route.name === 'public') return this.send(res, 200, { ok: true });

    const key = req.headers['service-api-key'];
    const projects: Record<string, string> = { 'key-a': 'A', 'key-b': 'B' };
    let project = typeof key === 'string' ? (projects[key] ?? (f.has('anyKey') ? 'A' : undefined)) : undefined;
    if (!project && f.has('openList') && route.name === 'things' && method === 'GET') project = 'A';
    if (!project) return this.error(res, 401, 'Invalid or missing API key');

    const visible = (t: Thing | undefined) => t && (t.project === project || f.has('leak'));
    const show = (t: Thing) => ({ id: t.id, name: t.name });

    if (route.name === 'things' && method === 'POST') {
      this.posts.push(raw);
      if (req.headers['content-type'] !== 'application/json') return this.error(res, 415, 'Content-Type must be application/json');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw);
      } catch {
        return f.has('crashOnMalformed') ? this.error(res, 500, 'Unexpected token') : this.error(res, 400, 'Malformed JSON');
      }
      if (!body || typeof body !== 'object' || Array.isArray(body)) return this.error(res, 400, 'body must be an object');
      if (typeof body.name !== 'string' || body.name.length === 0) return this.error(res, 400, 'body/name must be a string');
      if ('size' in body && !Number.isInteger(body.size)) return this.error(res, 400, 'body/size must be an integer');
      if (f.has('crashOnBigSize') && (body.size as number) > 2 ** 31 - 1) return this.error(res, 500, 'integer out of range');
      const extra = Object.keys(body).filter((k) => k !== 'name' && k !== 'size');
      if (extra.length && !f.has('acceptExtra')) return this.error(res, 400, `body must not have ${extra[0]}`);
      const thing = { id: `t_${++this.n}`, name: body.name, project };
      this.things.set(thing.id, thing);
      return this.send(res, 200, { data: show(thing) });
    }
    if (route.name === 'things') {
      const list = [...this.things.values()].filter((t) => t.project === project).map(show);
      if (f.has('textList')) return void res.writeHead(200, { 'content-type': 'text/plain' }).end(JSON.stringify({ data: list }));
      return this.send(res, 200, { data: list });
    }
    if (f.has('crashOnOddId') && !/^t_\d+$/.test(route.id!)) return this.error(res, 500, 'Cannot read properties of undefined');
    const thing = this.things.get(route.id!);
    if (!visible(thing)) return this.error(res, 404, 'Not found');
    if (route.name === 'file') {
      return void res.writeHead(200, { 'content-type': 'application/octet-stream', ...(f.has('noChecksum') ? {} : { 'x-checksum': 'c0ffee' }) }).end('bytes');
    }
    if (method === 'DELETE') {
      this.things.delete(thing!.id);
      this.deleted.push(thing!.id);
      return this.send(res, 200, { data: { status: 'deleted' } });
    }
    if (f.has('status418')) return this.error(res, 418, 'teapot');
    if (f.has('badBody')) return this.send(res, 200, { data: { id: thing!.id } });
    const answer = { data: show(thing!) };
    if (f.has('renameOnGet')) thing!.name += '!';
    return this.send(res, 200, answer);
  }
}

let running: TinyServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function run(
  faults: Fault[],
  only?: string[],
): Promise<SuiteResult & { lines: string[]; server: TinyServer; status: (name: string) => string | undefined; message: (name: string) => string | undefined }> {
  running = new TinyServer(new Set(faults));
  const baseUrl = await running.start();
  const lines: string[] = [];
  const result = await runSuite({
    baseUrl,
    apiKey: 'key-a',
    otherApiKey: 'key-b',
    contract: new Contract(tinySpec),
    rulesDir: '/nonexistent',
    only,
    timeoutMs: 5000,
    out: (l) => lines.push(l),
  });
  const find = (name: string) => result.report.results.find((r) => r.name === name);
  return { ...result, lines, server: running, status: (n) => find(n)?.status, message: (n) => find(n)?.message };
}

describe('generic checks against a conforming server', () => {
  it('pass, and the run cleans up what it created', async () => {
    const r = await run([]);
    const failed = r.report.results.filter((x) => x.status === 'fail');
    expect(failed.map((x) => `${x.name}: ${x.message}`)).toEqual([]);
    expect(r.exitCode).toBe(0);
    expect(r.lines[r.lines.length - 1]).toMatch(/^\d+ passed, 0 failed, \d+ skipped$/);
    // Every rule has checks, and the skips say why.
    const ids = new Set(r.report.results.map((x) => x.id));
    expect([...ids].sort()).toEqual(['G1', 'G10', 'G11', 'G12', 'G13', 'G2', 'G3', 'G4', 'G5', 'G6', 'G7', 'G8']);
    for (const s of r.report.results.filter((x) => x.status === 'skip')) expect(s.message).toBeTruthy();
    expect(r.status("G11 getThing answers 404 to another project's key")).toBe('pass');
    expect(r.status('G10 listThings listing is unchanged by a round of GETs')).toBe('pass');
    expect(r.status('G5 getThingFile documented headers are present and valid')).toBe('pass');
    // The DELETE check removed a thing of its own; the cleanup removed the shared one and
    // those G12 cases made (a hostile case may still be a valid request).
    expect(r.server.deleted.length).toBeGreaterThanOrEqual(2);
    expect([...r.server.things.values()].filter((t) => t.project === 'A')).toEqual([]);
    expect(r.cleanup[r.cleanup.length - 1]).toMatch(/^cleanup: removed \d+ × \/v1\/things$/);
  });

  it('G6 is exempt for `security: []`, and G6 wrong-key and G10 listings are skipped under --stateless', async () => {
    running = new TinyServer(new Set());
    const baseUrl = await running.start();
    const r = await runSuite({
      baseUrl,
      stateless: true,
      contract: new Contract(tinySpec),
      rulesDir: '/nonexistent',
      only: ['G6', 'G10', 'G11'],
      out: () => {},
    });
    const by = (n: string) => r.report.results.find((x) => x.name === n);
    expect(r.report.results.some((x) => x.name.startsWith('G6 getPublic'))).toBe(false);
    expect(by('G6 listThings without a key answers 401')?.status).toBe('pass');
    expect(by('G6 listThings with a wrong key answers 401')).toMatchObject({ status: 'skip', message: 'stateful: needs a real implementation' });
    expect(by('G10 listThings listing is unchanged by a round of GETs')?.status).toBe('skip');
    expect(by("G11 getThing answers 404 to another project's key")?.status).toBe('skip');
  });
});

describe('generic checks against a faulty server', () => {
  const cases: [Fault, string[], string, RegExp][] = [
    ['noDeleteRoute', ['G1'], 'G1 deleteThing is served', /answered 404 without the documented 404 body/],
    ['status418', ['G2'], 'G2 getThing status is documented', /418 is not a status getThing documents/],
    ['textList', ['G3'], 'G3 listThings Content-Type is documented', /200 came as text\/plain; documented for 200: application\/json/],
    ['badBody', ['G4'], 'G4 getThing JSON body validates', /body\/data must have the property 'name'.*schema/],
    ['noChecksum', ['G5'], 'G5 getThingFile documented headers are present and valid', /required header X-Checksum is missing/],
    ['openList', ['G6'], 'G6 listThings without a key answers 401', /expected 401: GET \/v1\/things → 200/],
    ['anyKey', ['G6'], 'G6 createThing with a wrong key answers 401', /expected 401/],
    ['crashOnMalformed', ['G7'], 'G7 createThing malformed JSON answers 4xx', /malformed JSON: a server error/],
    ['acceptExtra', ['G7'], 'G7 createThing extra field on a closed schema answers 4xx', /accepted/],
    ['noAllow', ['G8'], 'G8 PUT /v1/things answers 405 with Allow', /405 without an Allow header/],
    ['renameOnGet', ['G10'], 'G10 getThing answers the same twice', /the bodies differ at \/data\/name/],
    ['renameOnGet', ['G10'], 'G10 listThings listing is unchanged by a round of GETs', /differ at \/data\/0\/name/],
    ['leak', ['G11'], "G11 getThing answers 404 to another project's key", /another project's key on \/v1\/things t_\d+: GET \/v1\/things\/t_\d+ → 200/],
    ['crashOnOddId', ['G12'], 'G12 getThing hostile input #1 (seed 1)', /^path thing_id = .*: a server error: GET \/v1\/things\/.* → 500/],
    ['crashOnBigSize', ['G13'], 'G13 createThing request schema at its boundaries (seed 1)', /valid: size = 2\^31: a server error: POST \/v1\/things → 500/],
  ];
  for (const [fault, only, name, message] of cases) {
    it(`${fault}: ${name} fails`, async () => {
      const r = await run([fault], only);
      expect(r.status(name), r.lines.join('\n')).toBe('fail');
      expect(r.message(name)).toMatch(message);
      expect(r.exitCode).toBe(1);
      if (fault === 'noDeleteRoute') {
        // What cannot be removed is reported.
        expect(r.cleanup.filter((l) => /^could not remove \/v1\/things t_\d+: DELETE \/v1\/things\/\{thing_id\} → 404$/.test(l))).toHaveLength(2);
      } else {
        // The run still removes what it created.
        expect([...r.server.things.values()].filter((t) => t.project === 'A')).toEqual([]);
      }
    });
  }

  it('the same checks pass without the fault (each case is a real difference)', async () => {
    const r = await run([], ['G1', 'G2', 'G3', 'G4', 'G5', 'G6', 'G7', 'G8', 'G10', 'G11', 'G12', 'G13']);
    for (const [, , name] of cases) expect(r.status(name), name).toBe('pass');
  });
});

describe('G12 cases', () => {
  it('give a DELETE an item of its own only when the odd value is not in its path (then it names none)', async () => {
    running = new TinyServer(new Set());
    const baseUrl = await running.start();
    const r = await runSuite({
      baseUrl,
      apiKey: 'key-a',
      otherApiKey: 'key-b',
      contract: new Contract(tinySpec),
      rulesDir: '/nonexistent',
      only: ['G1', 'G12'],
      fuzzCases: 8,
      timeoutMs: 5000,
      out: () => {},
    });
    expect(r.report.summary.failed).toBe(0);
    // deleteThing's one part to make hostile is its path: none of its 8 cases made a thing of
    // its own from the creator's example (hostile createThing cases change that body). Only
    // G1 did: its valid createThing, and its deleteThing's own thing (10 when each case made one).
    expect(running.posts.filter((b) => b === '{"name":"box"}').length).toBeLessThanOrEqual(2);
  });

  it("keep a hostile path value on its operation's route: never a dot segment, which a URL resolves to the parent path", () => {
    const contract = new Contract(tinySpec);
    // Its one part to make hostile is the path: every case is a path case.
    const op = contract.operations.find((o) => o.id === 'getThingFile')!;
    const built = buildRequest(contract, op);
    const segments = op.path.split('/').length;
    const values = new Set<string>();
    for (let seed = 0; seed < 2_000; seed++) {
      const c = makeCase(op, built, prng(seed));
      values.add(c.built.pathParams.thing_id);
      expect(new URL(`http://x${fillPath(op.path, c.built.pathParams)}`).pathname.split('/'), c.what).toHaveLength(segments);
    }
    // Traversal is still tried, as one segment.
    expect(values).toContain('../../etc/passwd');
  });
});
