// A session's events, for its console page: the outbox rows that name it. The contract
// lists events only per webhook delivery; this reads them whatever webhooks exist. Test
// events (POST /v1/webhooks/{id}/test) carry made-up session ids and are left out.
import type { Db } from '../store/db.js';

export interface SessionEvent {
  id: string;
  type: string;
  created: Date;
  text: string;
  data: Record<string, unknown>;
}

export async function sessionEvents(db: Db, projectId: string, sessionId: string): Promise<SessionEvent[]> {
  return db.query<SessionEvent>(
    `SELECT id, type, created, text, data FROM events
      WHERE project_id = $1 AND NOT test AND data->>'session_id' = $2
      ORDER BY seq DESC LIMIT 200`,
    [projectId, sessionId],
  );
}
