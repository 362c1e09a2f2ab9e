// THE module through which every capability emits events. Call it with the transaction
// that makes the state change, so the event commits (or rolls back) with it:
//
//   await db.transaction(async (tx) => {
//     await tx.query('UPDATE sessions SET status = ... WHERE ...');
//     await emitEvent(tx, projectId, 'session.completed', { session_id, ... });
//   });
//
// One statement writes the event row (the outbox) and its first delivery attempt for every
// enabled webhook of the project subscribed to the type, so even a call outside a
// transaction is atomic, and nothing is lost between the event and its fan-out.
import type { Db } from '../store/db.js';
import { newEventId } from './ids.js';
import { deliveriesWritten } from './nudge.js';
import { summarize } from './summarize.js';
import { isEventType, type AnyEventEnvelope, type EventDataMap, type EventEnvelope, type EventType } from './types.js';

export interface EmittedEvent {
  id: string;
  /** ISO 8601, as in the envelope. */
  created: string;
  /** Number of webhooks the event was queued for. */
  deliveries: number;
}

/** SQL for a delivery id; generated in the statement that fans out. */
export const DELIVERY_ID_SQL = `'dlv_' || replace(gen_random_uuid()::text, '-', '')`;

export async function emitEvent<T extends EventType>(
  tx: Db,
  projectId: string,
  type: T,
  data: EventDataMap[T],
): Promise<EmittedEvent> {
  if (!isEventType(type)) throw new TypeError(`unknown event type ${String(type)}`);
  const id = newEventId();
  const created = new Date().toISOString();
  const text = summarize(type, data);
  const rows = await tx.query<{ id: string }>(
    `WITH ev AS (
       INSERT INTO events (id, project_id, type, created, text, data)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb)
       RETURNING id, project_id, type
     )
     INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event_type)
     SELECT ${DELIVERY_ID_SQL}, w.project_id, w.id, ev.id, ev.type
       FROM ev JOIN webhooks w ON w.project_id = ev.project_id
      WHERE w.enabled AND ev.type = ANY (w.subscribed_events)
     RETURNING id`,
    [id, projectId, type, created, text, JSON.stringify(data)],
  );
  if (rows.length > 0) deliveriesWritten();
  return { id, created, deliveries: rows.length };
}

export interface EventRow {
  id: string;
  type: string;
  created: Date | string;
  project_id: string;
  text: string;
  data: unknown;
}

/** The wire envelope of a stored event. */
export function toEnvelope(row: EventRow): AnyEventEnvelope {
  return {
    id: row.id,
    type: row.type as EventType,
    created: row.created instanceof Date ? row.created.toISOString() : new Date(row.created).toISOString(),
    project_id: row.project_id,
    text: row.text,
    data: (typeof row.data === 'string' ? JSON.parse(row.data) : row.data) as EventEnvelope['data'],
  } as AnyEventEnvelope;
}
