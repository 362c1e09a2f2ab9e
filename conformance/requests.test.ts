import { describe, expect, it } from 'vitest';
import { Contract, type JsonObject } from './contract.js';
import { buildRequest, render, synthesize, zip, type FilePart } from './requests.js';
import { SuiteContext, extractId } from './context.js';
import type { HttpResponse } from './http.js';
import { isJsonMediaType } from './http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function spec(paths: JsonObject, schemas: JsonObject = {}): Contract {
  return new Contract({
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    security: [{ Key: [] }],
    paths,
    components: { schemas, securitySchemes: { Key: { type: 'apiKey', in: 'header', name: 'service-api-key' } } },
  });
}

const ok = { '200': { description: 'ok' } };

describe('synthesize', () => {
  const c = spec(
    {},
    {
      Thing: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'kind'],
        properties: { name: { type: 'string', minLength: 3 }, kind: { enum: ['a', 'b'] }, note: { type: 'string' } },
      },
    },
  );

  it('fills required properties only, following refs, enums and formats', () => {
    const v = synthesize(c, { $ref: '#/components/schemas/Thing' });
    expect(v).toEqual({ name: 'conformance', kind: 'a' });
    expect(c.validate({ $ref: '#/components/schemas/Thing' }, v)).toBeUndefined();
  });

  it('honours formats, patterns, lengths and numeric bounds', () => {
    expect(synthesize(c, { type: 'string', format: 'uuid' })).toMatch(UUID);
    expect(Date.parse(synthesize(c, { type: 'string', format: 'date-time' }) as string)).not.toBeNaN();
    expect(synthesize(c, { type: 'string', pattern: '^[A-Za-z0-9+/]*={0,2}$', minLength: 1 })).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    expect(synthesize(c, { type: 'string', pattern: '^https://[^/?#\\s]+$' })).toBe('https://example.com');
    expect((synthesize(c, { type: 'string', minLength: 20 }) as string).length).toBe(20);
    expect((synthesize(c, { type: 'string', maxLength: 4 }) as string).length).toBe(4);
    expect(synthesize(c, { type: 'integer', minimum: 5, maximum: 9 })).toBe(5);
    expect(synthesize(c, { type: 'integer', exclusiveMinimum: 0 })).toBe(1);
    expect(synthesize(c, { type: 'number', maximum: -3 })).toBe(-3);
    expect(synthesize(c, { type: 'integer', minimum: 0, multipleOf: 7 })).toBe(0);
  });

  it('prefers examples, then defaults, and composes allOf / oneOf', () => {
    expect(synthesize(c, { type: 'string', example: 'given' })).toBe('given');
    expect(synthesize(c, { type: 'integer', default: 20 })).toBe(20);
    expect(
      synthesize(c, {
        allOf: [
          { type: 'object', required: ['a'], properties: { a: { type: 'integer' } } },
          { type: 'object', required: ['b'], properties: { b: { type: 'boolean' } } },
        ],
      }),
    ).toEqual({ a: 1, b: false });
    expect(synthesize(c, { oneOf: [{ type: 'null' }, { type: 'string', const: 'x' }] })).toBe('x');
    expect(synthesize(c, { type: ['null', 'integer'] })).toBe(1);
  });

  it('makes unique array items when asked, within minItems/maxItems', () => {
    const v = synthesize(c, { type: 'array', items: { type: 'string' }, minItems: 3, uniqueItems: true }) as string[];
    expect(v).toHaveLength(3);
    expect(new Set(v).size).toBe(3);
    expect(synthesize(c, { type: 'array', items: { type: 'string' }, maxItems: 0 })).toEqual([]);
  });

  it('gives random values when asked (path ids)', () => {
    const a = synthesize(c, { type: 'string' }, { random: true });
    const b = synthesize(c, { type: 'string' }, { random: true });
    expect(a).not.toBe(b);
  });
});

describe('buildRequest', () => {
  const c = spec({
    '/v1/things/{thing_id}/parts/{part}': {
      post: {
        operationId: 'addPart',
        parameters: [
          { name: 'thing_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
          { name: 'part', in: 'path', required: true, schema: { type: 'string' }, example: 'primary' },
          { name: 'limit', in: 'query', schema: { type: 'integer', default: 20 } },
          { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } }, example: ['a', 'b'] },
          { name: 'q', in: 'query', required: true, schema: { type: 'string', enum: ['x', 'y'] } },
          { name: 'ignored', in: 'query', schema: { type: 'string' } },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } }, example: { n: 42 } } },
        },
        responses: ok,
      },
    },
    '/v1/uploads': {
      post: {
        operationId: 'upload',
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['name', 'file'],
                properties: { name: { type: 'string' }, file: { type: 'string', contentMediaType: 'application/zip' } },
              },
            },
          },
        },
        responses: ok,
      },
    },
    '/v1/plain': {
      post: {
        operationId: 'plain',
        requestBody: {
          content: { 'application/json': { schema: { type: 'object', required: ['url'], properties: { url: { type: 'string', format: 'uri' } } } } },
        },
        responses: ok,
      },
    },
  });

  it('fills path, query and JSON body from the contract', () => {
    const op = c.operation('addPart');
    const a = buildRequest(c, op);
    const b = buildRequest(c, op);
    expect(a.pathParams.thing_id).toMatch(UUID);
    expect(a.pathParams.thing_id).not.toBe(b.pathParams.thing_id);
    expect(a.pathParams.part).toBe('primary');
    expect(a.query).toEqual([
      ['limit', '20'],
      ['tags', 'a'],
      ['tags', 'b'],
      ['q', 'x'],
    ]);
    expect(a.body).toEqual({ mediaType: 'application/json', value: { n: 42 } });
    const given = buildRequest(c, op, { pathParams: { thing_id: 'T1' } });
    const http = render('http://h:1/', given, { apiKey: 'k', credentials: c.credentialsOf(op), timeoutMs: 5 });
    expect(http.url).toBe('http://h:1/v1/things/T1/parts/primary?limit=20&tags=a&tags=b&q=x');
    expect(http.headers).toMatchObject({ 'service-api-key': 'k', 'content-type': 'application/json' });
    expect(http.body).toBe('{"n":42}');
    expect(render('http://h:1', given, { credentials: c.credentialsOf(op), timeoutMs: 5 }).headers?.['service-api-key']).toBeUndefined();
  });

  it('synthesizes a body without an example', () => {
    const op = c.operation('plain');
    expect(buildRequest(c, op).body?.value).toEqual({ url: 'https://example.com/' });
  });

  it('sends multipart bodies as form data with a ZIP holding manifest.json', async () => {
    const op = c.operation('upload');
    const built = buildRequest(c, op);
    const file = (built.body!.value as Record<string, FilePart>).file;
    expect(file).toMatchObject({ file: true, type: 'application/zip', filename: 'conformance.zip' });
    const http = render('http://h', built, { timeoutMs: 5 });
    const form = http.body as FormData;
    expect(form).toBeInstanceOf(FormData);
    expect(form.get('name')).toBe('conformance');
    const blob = form.get('file') as File;
    expect(blob.type).toBe('application/zip');
    const bytes = Buffer.from(await blob.arrayBuffer());
    expect(bytes.readUInt32LE(0)).toBe(0x04034b50);
    const nameLength = bytes.readUInt16LE(26);
    expect(bytes.subarray(30, 30 + nameLength).toString()).toBe('manifest.json');
    const size = bytes.readUInt32LE(18);
    expect(JSON.parse(bytes.subarray(30 + nameLength, 30 + nameLength + size).toString())).toMatchObject({ manifest_version: 3 });
    expect(http.headers?.['content-type']).toBeUndefined();
  });

  it('writes a ZIP whose end record points at its central directory', () => {
    const bytes = Buffer.from(zip({ 'a.txt': 'hello' }));
    // The end-of-central-directory record points at the central directory.
    const end = bytes.length - 22;
    expect(bytes.readUInt32LE(end)).toBe(0x06054b50);
    const dir = bytes.readUInt32LE(end + 16);
    expect(bytes.readUInt32LE(dir)).toBe(0x02014b50);
  });
});

describe('the project contract', () => {
  const c = Contract.fromFile();

  it('gives every operation a request whose JSON body validates against the contract', () => {
    const failures: string[] = [];
    for (const op of c.operations) {
      const built = buildRequest(c, op);
      if (!built.body || !isJsonMediaType(built.body.mediaType)) continue;
      const media = Object.entries(op.requestBody!.content).find(([t]) => isJsonMediaType(t))![1];
      const error = c.validate(media.schema, built.body.value);
      if (error) failures.push(`${op.id}: ${error}`);
      // The synthesizer alone, without the contract's example, must also fit.
      const synthesized = synthesize(c, media.schema);
      const error2 = c.validate(media.schema, synthesized);
      if (error2) failures.push(`${op.id} (synthesized): ${error2} ${JSON.stringify(synthesized)}`);
    }
    expect(failures).toEqual([]);
  });

  it('finds the collections and their creators', () => {
    const sessions = c.collectionFor('/v1/sessions/{sessionId}/mouse/click', 'sessionId');
    expect(sessions?.creator?.id).toBe('createSession');
    expect(sessions?.deleter?.id).toBe('endSession');
    expect(c.collectionFor('/v2/tasks/{taskId}/run', 'taskId')?.creator?.id).toBe('createTask');
    expect(c.collectionFor('/v1/webhooks/{id}/test', 'id')?.creator?.id).toBe('createWebhook');
    expect(c.collectionFor('/v1/sessions/{session_id}/recordings/{recording_id}', 'recording_id')?.creator).toBeUndefined();
    expect(c.collectionForKey('session_id')?.path).toBe('/v1/sessions');
    expect(c.collectionForKey('batch_id')?.path).toBe('/v1/batch-sessions');
    expect(c.collectionForKey('id')).toBeUndefined();
  });

  it('finds the id in the documented answer of every creator, and what a batch spawns', () => {
    const ctx = new SuiteContext(c, { baseUrl: 'http://unused' });
    for (const col of c.collections.values()) {
      if (!col.creator) continue;
      const created = Object.keys(col.creator.responses).find((status) => /^2\d\d$/.test(status));
      const media = created ? col.creator.responses[created]?.content?.['application/json'] : undefined;
      const example = media?.example ?? Object.values<JsonObject>(media?.examples ?? {})[0]?.value;
      const id = extractId(col, buildRequest(c, col.creator), { json: example } as HttpResponse);
      expect(id, col.path).toBeTruthy();
    }
    expect(ctx.spawns(c.collections.get('/v1/batch-sessions')!)).toBe(true);
    expect(ctx.spawns(c.collections.get('/v1/sessions')!)).toBe(false);
  });
});
