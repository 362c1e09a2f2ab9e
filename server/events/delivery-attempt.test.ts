import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent, toEnvelope, type EventRow } from '../outbox/emit.js';
import { EVENT_TYPES } from '../outbox/types.js';
import { envelopeBody } from './delivery-attempt.js';
import { sampleEventData } from './samples.js';
import { createProject, openTestDb, type TestDb } from './test-support.js';

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t?.close();
});

describe('envelopeBody', () => {
  it.each(EVENT_TYPES)('%s: the stored data spliced in reads as the envelope of the stored event', async (type) => {
    const project = await createProject(t.db);
    const data = { ...sampleEventData(type), odd: 'quote " backslash \\ newline \n ünïcødé \u2028 😀' } as never;
    const ev = await emitEvent(t.db, t.signals, project, type, data);
    const [row] = await t.db.query<EventRow & { data_json: string }>(
      'SELECT id, type, created, project_id, text, data, data::text AS data_json FROM events WHERE id = $1',
      [ev.id],
    );
    const body = envelopeBody({ event_id: row.id, type: row.type, created: row.created, project_id: row.project_id, text: row.text, data_json: row.data_json });
    expect(JSON.parse(body)).toEqual(toEnvelope(row));
    expect(Object.keys(JSON.parse(body))).toEqual(['id', 'type', 'created', 'project_id', 'text', 'data']);
  });
});
