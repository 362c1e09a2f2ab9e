// THE module through which every capability emits events. Call it with the transaction
// that makes the state change, so the event commits (or rolls back) with it:
//
//   await db.transaction(async (tx) => {
//     await tx.query('UPDATE sessions SET status = ... WHERE ...');
//     await emitEvent(tx, d.signals, projectId, 'session.completed', { session_id, ... });
//   });
//
// One statement writes the event row (the outbox) and its first delivery attempt for every
// enabled webhook of the project subscribed to the type, so even a call outside a
// transaction is atomic, and nothing is lost between the event and its fan-out. The server's
// signals are told deliveries were written (before the commit: the delivery worker treats it
// as a hint and looks again shortly after).
//
// Several things ending together (a node's sessions failed at once, a batch's items) emit
// with emitEvents: the same single statement for all their events, in one transaction with
// all their state changes, instead of a statement (and a commit) each. Their deliveries are
// queued in the order given, so a webhook is sent them in that order when it keeps up.
import type { Db } from '../store/db.js';
import { newEventId } from './ids.js';
import type { Signals } from '../capability/signals.js';
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

/** One event to emit: its project, type and data. */
export interface EventToEmit<T extends EventType = EventType> {
  projectId: string;
  type: T;
  data: EventDataMap[T];
}

/** An event of any type, its data checked against its type. */
export type AnyEventToEmit = { [T in EventType]: EventToEmit<T> }[EventType];

/** Whom an emit tells that deliveries were written: the server's signals. */
export type EmitSignals = Pick<Signals, 'deliveriesWritten'>;

export async function emitEvent<T extends EventType>(tx: Db, signals: EmitSignals, projectId: string, type: T, data: EventDataMap[T]): Promise<EmittedEvent> {
  const [out] = await emitEvents(tx, signals, [{ projectId, type, data } as AnyEventToEmit]);
  return out;
}

/** Emits several events in one statement; answers one EmittedEvent per event, in order. */
export async function emitEvents(tx: Db, signals: EmitSignals, events: readonly AnyEventToEmit[]): Promise<EmittedEvent[]> {
  if (events.length === 0) return [];
  for (const e of events) if (!isEventType(e.type)) throw new TypeError(`unknown event type ${String(e.type)}`);
  const created = new Date().toISOString();
  const ids = events.map(() => newEventId());
  const rows = await tx.query<{ event_id: string }>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
         AS i(id, project_id, type, text, data, ord)
     ),
     ev AS (
       INSERT INTO events (id, project_id, type, created, text, data)
       SELECT id, project_id, type, $6::timestamptz, text, data::jsonb FROM input ORDER BY ord
       RETURNING id
     )
     INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event_type)
     SELECT ${DELIVERY_ID_SQL}, w.project_id, w.id, ev.id, i.type
       FROM ev JOIN input i ON i.id = ev.id JOIN webhooks w ON w.project_id = i.project_id
      WHERE w.enabled AND i.type = ANY (w.subscribed_events)
      ORDER BY i.ord, w.id
     RETURNING event_id`,
    [
      ids,
      events.map((e) => e.projectId),
      events.map((e) => e.type),
      events.map((e) => summarize(e.type, e.data as never)),
      events.map((e) => JSON.stringify(e.data)),
      created,
    ],
  );
  const deliveries = new Map<string, number>();
  for (const r of rows) deliveries.set(r.event_id, (deliveries.get(r.event_id) ?? 0) + 1);
  if (rows.length > 0) signals.deliveriesWritten.emit();
  return ids.map((id) => ({ id, created, deliveries: deliveries.get(id) ?? 0 }));
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
