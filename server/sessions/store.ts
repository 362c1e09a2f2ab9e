// Session rows. Every query names the project: a session of another project is not found.
import type { Db } from '../store/db.js';
import type { components } from '../../generated/types.js';

type Session = components['schemas']['Session'];
export type SessionStatus = components['schemas']['SessionStatus'];
export type HistoryMetric = components['schemas']['HistoryMetric'];
export type Granularity = components['schemas']['HistoryGranularity'];

export interface SessionRow {
  id: string;
  project_id: string;
  status: SessionStatus;
  node_id: string;
  configuration: Session['configuration'];
  tags: string[];
  cdp_token: string;
  live_view_token: string;
  batch_id: string | null;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  end_reason: string | null;
  credits_used: number;
  proxy_bytes: number;
  network_bytes_total: number;
  steps: number;
  screenshots: number;
  domains: string[];
  deleted_at: Date | null;
  /** The service proxy pool entry the session went through. */
  service_proxy_id: string | null;
  /** How its identities signed in (the identities capability writes it); null without identities. */
  identities: Session['identities'] | null;
}

export interface NewSession {
  id: string;
  projectId: string;
  nodeId: string;
  configuration: Session['configuration'];
  tags: string[];
  cdpToken: string;
  liveViewToken: string;
  batchId?: string;
  serviceProxyId?: string;
}

/**
 * Inserts the session unless its project already has as many unfinished sessions as its
 * own cap (projects.max_concurrent_browsers, set through the admin API): undefined then.
 * The project's row is locked for the count and the insert, so creations racing on any
 * node of one database never pass the cap together.
 */
export async function insertSessionWithinCap(db: Db, s: NewSession): Promise<{ row: SessionRow } | { cap: number }> {
  return db.transaction(async (tx) => {
    const [project] = await tx.query<{ cap: number | null }>('SELECT max_concurrent_browsers AS cap FROM projects WHERE id = $1 FOR UPDATE', [s.projectId]);
    if (project?.cap != null) {
      const [{ n }] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM sessions WHERE project_id = $1 AND status IN ('starting', 'running')`, [
        s.projectId,
      ]);
      if (n >= project.cap) return { cap: project.cap };
    }
    return { row: await insertSession(tx, s) };
  });
}

export async function insertSession(db: Db, s: NewSession): Promise<SessionRow> {
  const [row] = await db.query<SessionRow>(
    `INSERT INTO sessions (id, project_id, status, node_id, configuration, tags, cdp_token, live_view_token, batch_id, service_proxy_id)
     VALUES ($1, $2, 'starting', $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
    [
      s.id,
      s.projectId,
      s.nodeId,
      JSON.stringify(s.configuration),
      JSON.stringify(s.tags),
      s.cdpToken,
      s.liveViewToken,
      s.batchId ?? null,
      s.serviceProxyId ?? null,
    ],
  );
  return row;
}

/** A project's own caps on its sessions: null where the server's configuration applies. */
export interface ProjectSessionCaps {
  /** On a session's duration (projects.max_session_minutes), ms; undefined without one. */
  maxSessionMs: number | undefined;
  /** On each session's browser (the admin API's browser_memory_limit_mb and browser_cpu_limit). */
  memoryMb: number | null;
  cpus: number | null;
}

export async function projectSessionCaps(db: Db, projectId: string): Promise<ProjectSessionCaps> {
  const [row] = await db.query<{ max_session_minutes: number | null; browser_memory_limit_mb: number | null; browser_cpu_limit: number | null }>(
    'SELECT max_session_minutes, browser_memory_limit_mb, browser_cpu_limit FROM projects WHERE id = $1',
    [projectId],
  );
  return {
    maxSessionMs: row?.max_session_minutes ? row.max_session_minutes * 60_000 : undefined,
    memoryMb: row?.browser_memory_limit_mb ?? null,
    cpus: row?.browser_cpu_limit ?? null,
  };
}

export async function markRunning(db: Db, id: string): Promise<void> {
  await db.query(`UPDATE sessions SET status = 'running', started_at = now() WHERE id = $1 AND status = 'starting'`, [id]);
}

/** A session the API can address: deleted sessions are gone from get, tags and delete. */
export async function getSession(db: Db, projectId: string, id: string): Promise<SessionRow | undefined> {
  const rows = await db.query<SessionRow>('SELECT * FROM sessions WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL', [projectId, id]);
  return rows[0];
}

export async function findByToken(db: Db, id: string): Promise<SessionRow | undefined> {
  const rows = await db.query<SessionRow>('SELECT * FROM sessions WHERE id = $1', [id]);
  return rows[0];
}

export interface EndUpdate {
  status: 'completed' | 'failed';
  reason: string;
  proxyBytes: number;
  networkBytes: number;
  steps: number;
  screenshots: number;
  domains: string[];
  deleted: boolean;
}

/** Ends a session once: answers the row as ended, or undefined when it had already ended. */
export async function endSessionRow(db: Db, id: string, u: EndUpdate): Promise<SessionRow | undefined> {
  const rows = await db.query<SessionRow>(
    `UPDATE sessions SET status = $2, end_reason = $3, ended_at = now(), proxy_bytes = $4, network_bytes_total = $5,
       steps = $6, screenshots = $7, domains = $8, deleted_at = CASE WHEN $9::boolean THEN now() ELSE deleted_at END
     WHERE id = $1 AND status IN ('starting', 'running') RETURNING *`,
    [id, u.status, u.reason, u.proxyBytes, u.networkBytes, u.steps, u.screenshots, JSON.stringify(u.domains), u.deleted],
  );
  return rows[0];
}

/** The session's row if it has ended with this status and reason (an end whose commit was not acknowledged). */
export async function endedAs(db: Db, id: string, status: string, reason: string): Promise<SessionRow | undefined> {
  const rows = await db.query<SessionRow>('SELECT * FROM sessions WHERE id = $1 AND status = $2 AND end_reason = $3', [id, status, reason]);
  return rows[0];
}

export async function markDeleted(db: Db, projectId: string, id: string): Promise<void> {
  await db.query('UPDATE sessions SET deleted_at = now() WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL', [projectId, id]);
}

export async function setTags(db: Db, projectId: string, id: string, tags: string[]): Promise<boolean> {
  const rows = await db.query('UPDATE sessions SET tags = $3 WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id', [
    projectId,
    id,
    JSON.stringify(tags),
  ]);
  return rows.length > 0;
}

/** The project's sessions that have not ended, on any node. */
export async function unfinishedOfProject(db: Db, projectId: string): Promise<SessionRow[]> {
  return db.query<SessionRow>(`SELECT * FROM sessions WHERE project_id = $1 AND status IN ('starting', 'running') AND deleted_at IS NULL`, [projectId]);
}

/** Sessions a node left running: after a restart of that node they have no browser. */
export async function unfinishedOnNode(db: Db, nodeId: string, before?: Date): Promise<SessionRow[]> {
  return db.query<SessionRow>(
    `SELECT * FROM sessions WHERE node_id = $1 AND status IN ('starting', 'running') AND ($2::timestamptz IS NULL OR created_at < $2)`,
    [nodeId, before ?? null],
  );
}

export interface ListFilter {
  page: number;
  limit: number;
  status?: SessionStatus;
  tags?: string[];
  createdFrom?: string;
  createdTo?: string;
  batchId?: string;
  domains?: string[];
  /** An active proxy in the creation body. */
  proxy?: boolean;
  extraStealth?: boolean;
  /** Part of the profile's name, any case. */
  profileName?: string;
  /**
   * Sessions a DELETE removed from the API too: the web console's history shows every
   * session the project ran, as the usage series counts them.
   */
  includeDeleted?: boolean;
}

export async function listSessions(db: Db, projectId: string, f: ListFilter): Promise<{ rows: SessionRow[]; total: number }> {
  const where = f.includeDeleted ? ['project_id = $1'] : ['project_id = $1', 'deleted_at IS NULL'];
  const params: unknown[] = [projectId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (f.status) add('status = ?', f.status);
  if (f.tags?.length) add('tags @> ?::jsonb', JSON.stringify(f.tags));
  if (f.createdFrom) add('created_at >= ?', f.createdFrom);
  if (f.createdTo) add('created_at < ?', f.createdTo);
  if (f.batchId) add('batch_id = ?', f.batchId);
  if (f.domains?.length) add('domains @> ?::jsonb', JSON.stringify(f.domains));
  if (f.proxy !== undefined) add(`coalesce((configuration #>> '{session,proxy,active}')::boolean, false) = ?`, f.proxy);
  if (f.extraStealth !== undefined) add(`coalesce((configuration #>> '{browser,extra_stealth,active}')::boolean, false) = ?`, f.extraStealth);
  if (f.profileName) add(`strpos(lower(configuration #>> '{browser,profile,name}'), lower(?)) > 0`, f.profileName);
  const clause = where.join(' AND ');
  const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sessions WHERE ${clause}`, params);
  const rows = await db.query<SessionRow>(
    `SELECT * FROM sessions WHERE ${clause} ORDER BY created_at DESC, id LIMIT ${f.limit} OFFSET ${(f.page - 1) * f.limit}`,
    params,
  );
  return { rows, total: n };
}

/** A session of the project, whether or not a DELETE removed it from the API (the console's session page). */
export async function findSessionRecord(db: Db, projectId: string, id: string): Promise<SessionRow | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return (await db.query<SessionRow>('SELECT * FROM sessions WHERE project_id = $1 AND id = $2', [projectId, id.toLowerCase()]))[0];
}

export interface HistoryBucket {
  date: Date;
  session_count: number;
  credits_used: number;
  proxy_bytes: number;
  session_hours: number;
  screenshots: number;
  network_bytes_total: number;
}

/**
 * The earliest start of a history range. The database has no year 0: a range starting before
 * the year 1 (to_date 0001-01-01 alone starts 30 days before it) was "date/time field value out
 * of range", a 500.
 */
export const EARLIEST_HISTORY = new Date('0001-01-01T00:00:00Z');
export const EARLIEST_HISTORY_MESSAGE = 'The range starts before 0001-01-01 (without from_date it starts 30 days before to_date)';

/**
 * Per-period sums over sessions created in [from, to), bucketed by creation time in UTC,
 * every period present (zeros where nothing happened). Weeks start on Monday, as in
 * Postgres's date_trunc. Running sessions count their duration so far.
 */
export async function historyBuckets(db: Db, projectId: string, from: Date, to: Date, granularity: Granularity): Promise<HistoryBucket[]> {
  return db.query<HistoryBucket>(
    `WITH periods AS (
       SELECT generate_series(date_trunc($4, $2::timestamptz AT TIME ZONE 'UTC'),
                              ($3::timestamptz AT TIME ZONE 'UTC') - interval '1 microsecond',
                              ('1 ' || $4)::interval) AS start
     ), s AS (
       SELECT date_trunc($4, created_at AT TIME ZONE 'UTC') AS start, credits_used, proxy_bytes, screenshots, network_bytes_total,
              EXTRACT(EPOCH FROM (COALESCE(ended_at, now()) - created_at)) / 3600.0 AS hours
       FROM sessions WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
     )
     SELECT (p.start AT TIME ZONE 'UTC') AS date,
            count(s.start)::int AS session_count,
            COALESCE(sum(s.credits_used), 0)::float8 AS credits_used,
            COALESCE(sum(s.proxy_bytes), 0)::int8 AS proxy_bytes,
            COALESCE(sum(s.hours), 0)::float8 AS session_hours,
            COALESCE(sum(s.screenshots), 0)::int8 AS screenshots,
            COALESCE(sum(s.network_bytes_total), 0)::int8 AS network_bytes_total
     FROM periods p LEFT JOIN s ON s.start = p.start
     GROUP BY p.start ORDER BY p.start`,
    [projectId, from.toISOString(), to.toISOString(), granularity],
  );
}
