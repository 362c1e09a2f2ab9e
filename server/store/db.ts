// One SQL interface over both backends: PGlite embedded in DATA_DIR by default, PostgreSQL
// when DATABASE_URL is set. Queries are plain Postgres SQL with $1 placeholders, so every
// module runs unchanged on either.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite, types as pgliteTypes } from '@electric-sql/pglite';
import pg from 'pg';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

export interface Db {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs fn in one transaction; inside it, `tx` is the only handle to use. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  readonly kind: 'pglite' | 'postgres';
  /** PostgreSQL's connection pool, for metrics; PGlite has one connection and no pool. */
  poolStats?(): { max: number; total: number; idle: number; waiting: number };
}

// Asked for at each use: a server started again in this process (tests) registers a new
// provider, which tracers obtained earlier would not see.
const tracer = () => trace.getTracer('cloud-browser');

/**
 * A query as a trace span (a no-op unless tracing is on), inside the work that made it: a
 * query outside any span (a worker's poll) makes none, so idle loops do not flood traces.
 * The SQL text is recorded, never the parameter values.
 */
function traced(query: Db['query']): Db['query'] {
  return <T>(sql: string, params?: readonly unknown[]): Promise<T[]> => {
    if (!trace.getSpan(context.active())) return query<T>(sql, params);
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'QUERY';
    return tracer().startActiveSpan(`db ${operation}`, { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': sql } }, async (span) => {
      try {
        return await query<T>(sql, params);
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        span.end();
      }
    });
  };
}

/** Connections one node holds open to PostgreSQL at most. */
const POOL_MAX = 10;

// bigint and numeric arrive as strings by default; every number we store fits a double.
const toNumber = (v: string) => Number(v);

export async function openDb(options: { databaseUrl?: string; dataDir?: string }): Promise<Db> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl);
  return openPglite(options.dataDir);
}

/** dataDir undefined keeps the database in memory (tests that need no persistence). */
async function openPglite(dataDir: string | undefined): Promise<Db> {
  let dir: string | undefined;
  if (dataDir) {
    dir = join(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
  }
  const lite = new PGlite(dir, {
    parsers: { [pgliteTypes.INT8]: toNumber, [pgliteTypes.NUMERIC]: toNumber },
  });
  await lite.waitReady;
  const wrap = (q: Pick<PGlite, 'query'>): Db['query'] =>
    traced(async (sql, params = []) => (await q.query(sql, params as unknown[])).rows as never);
  // Which transaction the calling code runs inside, if any. Unrelated concurrent callers
  // queue on PGlite's transaction lock; only a call made from inside a transaction's own
  // callback (through the outer handle) is a nested transaction.
  const current = new AsyncLocalStorage<{ open: boolean }>();
  const db: Db = {
    kind: 'pglite',
    query: wrap(lite),
    async transaction(fn) {
      // PGlite has one connection: a nested transaction would deadlock, so refuse it loudly.
      if (current.getStore()?.open) throw new Error('nested transaction');
      return lite.transaction(async (t) => {
        const marker = { open: true };
        try {
          const tx: Db = { ...db, query: wrap(t), transaction: (f) => f(tx) };
          return await current.run(marker, () => fn(tx));
        } finally {
          marker.open = false;
        }
      });
    },
    async close() {
      if (!lite.closed) await lite.close();
    },
  };
  return db;
}

async function openPostgres(url: string): Promise<Db> {
  const pool = new pg.Pool({
    connectionString: url,
    max: POOL_MAX,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === 20 || oid === 1700 ? toNumber : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // A dropped idle connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const client = await pool.connect();
  client.release();
  const db: Db = {
    kind: 'postgres',
    query: traced(async (sql, params = []) => (await pool.query(sql, params as unknown[])).rows),
    async transaction(fn) {
      const conn = await pool.connect();
      try {
        await conn.query('BEGIN');
        const tx: Db = {
          ...db,
          query: traced(async (sql, params = []) => (await conn.query(sql, params as unknown[])).rows),
          transaction: (f) => f(tx),
        };
        const result = await fn(tx);
        await conn.query('COMMIT');
        return result;
      } catch (err) {
        await conn.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        conn.release();
      }
    },
    close: () => pool.end(),
    poolStats: () => ({ max: POOL_MAX, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
  return db;
}
