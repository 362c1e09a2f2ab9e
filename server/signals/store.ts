// The rows of event coordination (migration 030): a value posted under a name, kept until a
// wait takes it or it expires. Every query filters on the project.
import type { Db } from '../store/db.js';

export interface SignalRow {
  id: string;
  data: string;
  consumed: boolean;
}

/** Keeps a posted value; its id orders it among the name's values. */
export async function insert(db: Db, projectId: string, name: string, sealedData: (id: string) => string, retentionSeconds: number): Promise<string> {
  return db.transaction(async (tx) => {
    // The id first: the sealed value is bound to its own row.
    const [{ id }] = await tx.query<{ id: string }>(`SELECT nextval(pg_get_serial_sequence('event_signals', 'id'))::text AS id`);
    await tx.query(
      `INSERT INTO event_signals (id, project_id, name, data, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
      [id, projectId, name, sealedData(id), retentionSeconds],
    );
    return id;
  });
}

/** Values posted and not yet taken (nor expired), of the whole project. */
export async function pendingCount(db: Db, projectId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM event_signals WHERE project_id = $1 AND consumed_at IS NULL AND expires_at > now()`,
    [projectId],
  );
  return row.n;
}

/** The highest id of the name so far: a wait answers any value posted after it. */
export async function cursor(db: Db, projectId: string, name: string): Promise<string> {
  const [row] = await db.query<{ id: string | null }>(`SELECT max(id)::text AS id FROM event_signals WHERE project_id = $1 AND name = $2`, [projectId, name]);
  return row.id ?? '0';
}

/**
 * The value a wait that began at `after` answers now, if any: the oldest of those posted since
 * it began (taken or not: every wait under way sees a post) and those posted earlier that no
 * wait has taken yet (unexpired). A value not yet taken is marked taken here, once.
 */
export async function take(db: Db, projectId: string, name: string, after: string): Promise<SignalRow | undefined> {
  for (;;) {
    const [row] = await db.query<{ id: string; data: string; consumed: boolean }>(
      `SELECT id::text AS id, data, consumed_at IS NOT NULL AS consumed FROM event_signals
        WHERE project_id = $1 AND name = $2
          AND (id > $3::bigint OR (consumed_at IS NULL AND expires_at > now()))
        ORDER BY id LIMIT 1`,
      [projectId, name, after],
    );
    if (!row) return undefined;
    if (row.consumed) return row;
    const marked = await db.query(`UPDATE event_signals SET consumed_at = now() WHERE id = $1 AND consumed_at IS NULL RETURNING id`, [row.id]);
    // Taken by another wait just now: still this wait's when it was posted while it waited.
    if (marked.length > 0 || BigInt(row.id) > BigInt(after)) return { ...row, consumed: true };
  }
}

/**
 * Drops expired values, and taken ones once every wait that could still need them has looked
 * (a wait looks at least every poll interval; a minute is ample).
 */
export async function sweep(db: Db): Promise<number> {
  const rows = await db.query(`DELETE FROM event_signals WHERE expires_at <= now() OR consumed_at <= now() - interval '60 seconds' RETURNING id`);
  return rows.length;
}
