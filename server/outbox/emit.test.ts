import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent, emitEvents, toEnvelope, type AnyEventToEmit, type EventRow } from './emit.js';
import { sampleEventData } from '../events/samples.js';
import { loadEventSchemas } from '../events/schema.js';
import { summarize } from './summarize.js';
import { createProject, insertWebhook, openTestDb, type TestDb } from '../events/test-support.js';
import { EVENT_TYPES } from './types.js';
import { ulid } from './ids.js';

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t?.close();
});

describe('emitEvent', () => {
  it('writes the envelope row: evt_ id, ISO created, one-line text, data', async () => {
    const project = await createProject(t.db);
    const data = sampleEventData('session.failed');
    const out = await emitEvent(t.db, t.signals, project, 'session.failed', data);
    expect(out.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(new Date(out.created).toISOString()).toBe(out.created);
    const [row] = await t.db.query<EventRow>('SELECT id, type, created, project_id, text, data FROM events WHERE id = $1', [out.id]);
    const env = toEnvelope(row);
    expect(env).toEqual({
      id: out.id,
      type: 'session.failed',
      created: out.created,
      project_id: project,
      text: `Session ${data.session_id} failed after 41.0 s: browser_unreachable`,
      data,
    });
  });

  it('commits and rolls back with the state change', async () => {
    const project = await createProject(t.db);
    await insertWebhook(t.db, project, 'http://127.0.0.1:9/', ['batch.failed']);
    const ids: string[] = [];
    await expect(
      t.db.transaction(async (tx) => {
        ids.push((await emitEvent(tx, t.signals, project, 'batch.failed', sampleEventData('batch.failed'))).id);
        throw new Error('state change failed');
      }),
    ).rejects.toThrow('state change failed');
    expect(await t.db.query('SELECT 1 FROM events WHERE id = $1', [ids[0]])).toHaveLength(0);
    expect(await t.db.query('SELECT 1 FROM webhook_deliveries WHERE event_id = $1', [ids[0]])).toHaveLength(0);
    const ok = await t.db.transaction((tx) => emitEvent(tx, t.signals, project, 'batch.failed', sampleEventData('batch.failed')));
    expect(await t.db.query('SELECT 1 FROM events WHERE id = $1', [ok.id])).toHaveLength(1);
    expect(await t.db.query('SELECT 1 FROM webhook_deliveries WHERE event_id = $1', [ok.id])).toHaveLength(1);
  });

  it('fans out to the enabled webhooks of the project that subscribe to the type, nothing else', async () => {
    const project = await createProject(t.db);
    const other = await createProject(t.db);
    const a = await insertWebhook(t.db, project, 'http://127.0.0.1:9/a', ['task.completed', 'task.failed']);
    const b = await insertWebhook(t.db, project, 'http://127.0.0.1:9/b', ['task.completed']);
    await insertWebhook(t.db, project, 'http://127.0.0.1:9/c', ['task.failed']);
    await insertWebhook(t.db, project, 'http://127.0.0.1:9/d', ['task.completed'], { enabled: false });
    await insertWebhook(t.db, other, 'http://127.0.0.1:9/e', ['task.completed']);
    const out = await emitEvent(t.db, t.signals, project, 'task.completed', sampleEventData('task.completed'));
    expect(out.deliveries).toBe(2);
    const rows = await t.db.query<{ webhook_id: string; attempt: number; status: string; event_type: string; project_id: string }>(
      'SELECT webhook_id, attempt, status, event_type, project_id FROM webhook_deliveries WHERE event_id = $1 ORDER BY webhook_id',
      [out.id],
    );
    expect(rows.map((r) => r.webhook_id).sort()).toEqual([a.id, b.id].sort());
    for (const r of rows) expect(r).toMatchObject({ attempt: 1, status: 'pending', event_type: 'task.completed', project_id: project });
  });

  it('refuses an unknown type', async () => {
    const project = await createProject(t.db);
    await expect(emitEvent(t.db, t.signals, project, 'nope.nope' as never, {} as never)).rejects.toThrow(/unknown event type/);
  });
});

describe('emitEvents', () => {
  it('writes several events of several types and projects, each with its fan-out, deliveries in the order given', async () => {
    const project = await createProject(t.db);
    const other = await createProject(t.db);
    const a = await insertWebhook(t.db, project, 'http://127.0.0.1:9/a', ['session.completed', 'session.failed']);
    const b = await insertWebhook(t.db, project, 'http://127.0.0.1:9/b', ['session.failed']);
    const c = await insertWebhook(t.db, other, 'http://127.0.0.1:9/c', ['session.completed']);
    const events: AnyEventToEmit[] = [
      { projectId: project, type: 'session.completed', data: sampleEventData('session.completed') },
      { projectId: project, type: 'session.failed', data: sampleEventData('session.failed') },
      { projectId: other, type: 'session.completed', data: { ...sampleEventData('session.completed'), session_id: 'other' } },
      { projectId: project, type: 'batch.completed', data: sampleEventData('batch.completed') },
      { projectId: project, type: 'session.completed', data: { ...sampleEventData('session.completed'), session_id: 'last' } },
    ];
    const out = await t.db.transaction((tx) => emitEvents(tx, t.signals, events));
    expect(out.map((o) => o.deliveries)).toEqual([1, 2, 1, 0, 1]);
    expect(new Set(out.map((o) => o.id)).size).toBe(5);
    // Each event row is what emitEvent writes for it alone.
    const rows = await t.db.query<EventRow>('SELECT id, type, created, project_id, text, data FROM events WHERE id = ANY ($1::text[])', [out.map((o) => o.id)]);
    const byId = new Map(rows.map((r) => [r.id, toEnvelope(r)]));
    events.forEach((e, i) =>
      expect(byId.get(out[i].id)).toEqual({
        id: out[i].id,
        type: e.type,
        created: out[i].created,
        project_id: e.projectId,
        text: summarize(e.type, e.data as never),
        data: e.data,
      }),
    );
    // Deliveries are queued (seq) in the order the events were given.
    const deliveries = await t.db.query<{ event_id: string; webhook_id: string }>(
      'SELECT event_id, webhook_id FROM webhook_deliveries WHERE event_id = ANY ($1::text[]) ORDER BY seq',
      [out.map((o) => o.id)],
    );
    expect(deliveries.map((d) => [out.findIndex((o) => o.id === d.event_id), d.webhook_id])).toEqual([
      [0, a.id],
      [1, [a.id, b.id].sort()[0]],
      [1, [a.id, b.id].sort()[1]],
      [2, c.id],
      [4, a.id],
    ]);
  });

  it('commits and rolls back together with the state change', async () => {
    const project = await createProject(t.db);
    await insertWebhook(t.db, project, 'http://127.0.0.1:9/', ['task.failed']);
    const ids: string[] = [];
    const many = Array.from({ length: 20 }, () => ({ projectId: project, type: 'task.failed' as const, data: sampleEventData('task.failed') }));
    await expect(
      t.db.transaction(async (tx) => {
        ids.push(...(await emitEvents(tx, t.signals, many)).map((o) => o.id));
        throw new Error('state change failed');
      }),
    ).rejects.toThrow('state change failed');
    expect(ids).toHaveLength(20);
    expect(await t.db.query('SELECT 1 FROM events WHERE id = ANY ($1::text[])', [ids])).toHaveLength(0);
    expect(await t.db.query('SELECT 1 FROM webhook_deliveries WHERE event_id = ANY ($1::text[])', [ids])).toHaveLength(0);
  });

  it('writes nothing for no events, and refuses an unknown type before writing any', async () => {
    const project = await createProject(t.db);
    expect(await emitEvents(t.db, t.signals, [])).toEqual([]);
    const [{ n: before }] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [project]);
    await expect(
      emitEvents(t.db, t.signals, [
        { projectId: project, type: 'task.failed', data: sampleEventData('task.failed') },
        { projectId: project, type: 'nope.nope', data: {} } as never,
      ]),
    ).rejects.toThrow(/unknown event type/);
    const [{ n: after }] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [project]);
    expect(after).toBe(before);
  });
});

describe('summaries', () => {
  it.each(EVENT_TYPES)('%s has a one-line text', (type) => {
    const text = summarize(type, sampleEventData(type));
    expect(text.length).toBeGreaterThan(10);
    expect(text).not.toMatch(/[\r\n]/);
    expect(text).not.toMatch(/undefined|NaN|\[object/);
  });
  it('stays one bounded line whatever the data holds', () => {
    const d = sampleEventData('task.failed');
    d.error.message = `line one\nline two\t${'x'.repeat(1000)}`;
    const text = summarize('task.failed', d);
    expect(text).not.toMatch(/[\r\n\t]/);
    expect(text.length).toBeLessThanOrEqual(300);
  });
});

describe('ids', () => {
  it('are unique and sort by time', () => {
    const a = ulid(1_700_000_000_000);
    const b = ulid(1_700_000_000_001);
    expect(a < b).toBe(true);
    const many = new Set(Array.from({ length: 10_000 }, () => ulid()));
    expect(many.size).toBe(10_000);
  });
});

// W4: every type's payload validates against its schema in openapi.yaml. Types the
// contract does not document yet are reported as skipped, not passed.
describe('event payloads validate against openapi.yaml', () => {
  const schemas = loadEventSchemas();
  for (const type of EVENT_TYPES) {
    it.skipIf(!schemas.documented.has(type))(`${type} (emitted and test events)`, async () => {
      const validate = schemas.validator(type)!;
      const project = await createProject(t.db);
      const out = await emitEvent(t.db, t.signals, project, type, sampleEventData(type));
      const [row] = await t.db.query<EventRow>('SELECT id, type, created, project_id, text, data FROM events WHERE id = $1', [out.id]);
      const env = toEnvelope(row);
      expect(validate(env), JSON.stringify(validate.errors)).toBe(true);
    });
  }
});

describe('loadEventSchemas', () => {
  it('finds webhooks.<type> request schemas and resolves component refs', async () => {
    const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'evschema-'));
    const file = join(dir, 'openapi.yaml');
    writeFileSync(
      file,
      `openapi: 3.1.0
info: {title: t, version: 1.0.0}
webhooks:
  batch.failed:
    post:
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/BatchFailedEvent'}
      responses: {'200': {description: ok}}
components:
  schemas:
    BatchFailedEvent:
      type: object
      additionalProperties: false
      required: [id, type, created, project_id, text, data]
      properties:
        id: {type: string, pattern: '^evt_'}
        type: {const: batch.failed}
        created: {type: string, format: date-time}
        project_id: {type: string}
        text: {type: string}
        data: {$ref: '#/components/schemas/BatchData'}
    BatchData:
      type: object
      additionalProperties: false
      required: [batch_id, total_requests, completed_requests, failed_requests, status]
      properties:
        batch_id: {type: string}
        total_requests: {type: integer}
        completed_requests: {type: integer}
        failed_requests: {type: integer}
        status: {type: string, enum: [completed, failed]}
`,
    );
    const s = loadEventSchemas(file);
    rmSync(dir, { recursive: true, force: true }); // loaded: the file is no longer needed
    expect([...s.documented]).toEqual(['batch.failed']);
    expect(s.validator('batch.completed')).toBeNull();
    const v = s.validator('batch.failed')!;
    const env = { id: 'evt_1', type: 'batch.failed', created: new Date().toISOString(), project_id: 'p', text: 't', data: sampleEventData('batch.failed') };
    expect(v(env), JSON.stringify(v.errors)).toBe(true);
    expect(v({ ...env, data: { ...env.data, extra: 1 } })).toBe(false);
    expect(v({ ...env, created: 'yesterday' })).toBe(false);
  });
});
