// One SQL interface over both backends: PGlite embedded in DATA_DIR by default, PostgreSQL
// when DATABASE_URL is set. Queries are plain Postgres SQL with $1 placeholders, so every
// module runs unchanged on either.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { spanned } from '../tracing.js';
import { PgliteThread, type Transaction } from './pglite-thread.js';
import { asUnavailable, DatabaseUnavailableError, type UnavailableCause } from './unavailable.js';

export interface Db {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs fn in one transaction; inside it, `tx` is the only handle to use. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  readonly kind: 'pglite' | 'postgres';
  /** PostgreSQL's connection pool, for metrics; PGlite has one connection and no pool. */
  poolStats?(): { max: number; total: number; idle: number; waiting: number };
}

/**
 * A query as a trace span (a no-op unless tracing is on), inside the work that made it: a
 * query outside any span (a worker's poll) makes none, so idle loops do not flood traces.
 * The SQL text is recorded, never the parameter values.
 */
function traced(query: Db['query']): Db['query'] {
  return <T>(sql: string, params?: readonly unknown[]): Promise<T[]> => {
    if (!trace.getSpan(context.active())) return query<T>(sql, params);
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'QUERY';
    return spanned(
      `db ${operation}`,
      { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': sql } },
      () => query<T>(sql, params),
    );
  };
}

/** Connections one node holds open to PostgreSQL at most. */
const POOL_MAX = 10;
/**
 * A connect that hangs (a host that drops packets), or a wait this long for a free
 * connection of the pool, fails as unavailable (503) rather than holding the request forever;
 * long enough that a busy pool on a loaded machine does not trip it.
 */
const CONNECT_TIMEOUT_MS = 30_000;
/** A cause that lasts is logged again after this long. */
const OUTAGE_RELOG_MS = 30_000;

/**
 * Turns a failure that means "the database cannot answer" into DatabaseUnavailableError,
 * and logs when that starts and ends: an operator reads "database unavailable" or
 * "database disk is full" once, not a stack a request.
 */
function outageWatch(log: Logger | undefined) {
  let down: UnavailableCause | undefined;
  let loggedAt = 0;
  return {
    failed(err: unknown): unknown {
      const e = asUnavailable(err);
      if (!(e instanceof DatabaseUnavailableError)) return e;
      if (e.reason !== down || Date.now() - loggedAt > OUTAGE_RELOG_MS) {
        down = e.reason;
        loggedAt = Date.now();
        const cause = (e.cause as Error | undefined)?.message;
        if (e.reason === 'disk_full') log?.error({ cause }, 'database disk is full: writes fail (503) until space is freed');
        else log?.error({ cause }, 'database unavailable: requests answer 503 until it is back');
      }
      return e;
    },
    /** A statement succeeded: the database answers (a full disk still lets reads through). */
    answered(): void {
      if (down !== 'unreachable') return;
      down = undefined;
      log?.info('database available again');
    },
    /** A transaction committed: writes succeed again. */
    committed(): void {
      if (down === undefined) return;
      log?.info(down === 'disk_full' ? 'database writes succeed again: disk space was freed' : 'database available again');
      down = undefined;
    },
  };
}

/** Runs a statement, passing its failure through the outage watch. */
function watched(watch: ReturnType<typeof outageWatch>, query: Db['query']): Db['query'] {
  return async <T>(sql: string, params?: readonly unknown[]): Promise<T[]> => {
    try {
      const rows = await query<T>(sql, params);
      watch.answered();
      return rows;
    } catch (err) {
      throw watch.failed(err);
    }
  };
}

// bigint and numeric arrive as strings by default; every number we store fits a double
// (PGlite's thread parses them the same way).
const toNumber = (v: string) => Number(v);

/** `log` is told when the database becomes unavailable (or its disk full) and when it is back. */
export async function openDb(options: { databaseUrl?: string; dataDir?: string; log?: Logger }): Promise<Db> {
  const watch = outageWatch(options.log);
  if (options.databaseUrl) return openPostgres(options.databaseUrl, watch);
  return openPglite(options.dataDir, watch);
}

/** Where PGlite keeps its files in DATA_DIR. */
export const pgliteDir = (dataDir: string) => join(dataDir, 'pglite');

/** dataDir undefined keeps the database in memory (tests that need no persistence). */
async function openPglite(dataDir: string | undefined, watch: ReturnType<typeof outageWatch>): Promise<Db> {
  let dir: string | undefined;
  if (dataDir) {
    dir = pgliteDir(dataDir);
    mkdirSync(dir, { recursive: true });
  }
  const lite = await PgliteThread.start(dir);
  const wrap = (tx?: Transaction): Db['query'] =>
    watched(
      watch,
      traced((sql, params = []) => lite.query(sql, params, tx) as never),
    );
  // Which transaction the calling code runs inside, if any. Unrelated concurrent callers
  // queue on PGlite's transaction lock; only a call made from inside a transaction's own
  // callback (through the outer handle) is a nested transaction.
  const current = new AsyncLocalStorage<{ open: boolean }>();
  const db: Db = {
    kind: 'pglite',
    query: wrap(),
    async transaction(fn) {
      // PGlite has one connection: a nested transaction would deadlock, so refuse it loudly.
      if (current.getStore()?.open) throw new Error('nested transaction');
      try {
        const id = lite.transaction();
        const marker = { open: true };
        let result;
        try {
          const tx: Db = { ...db, query: wrap(id), transaction: (f) => f(tx) };
          result = await current.run(marker, () => fn(tx));
        } catch (err) {
          marker.open = false;
          await lite.end(id, false).catch(() => {});
          throw err;
        }
        marker.open = false;
        await lite.end(id, true);
        watch.committed();
        return result;
      } catch (err) {
        // The commit itself can fail for want of disk.
        throw watch.failed(err);
      }
    },
    close: () => lite.close(),
  };
  return db;
}

async function openPostgres(url: string, watch: ReturnType<typeof outageWatch>): Promise<Db> {
  const pool = new pg.Pool({
    connectionString: url,
    max: POOL_MAX,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A connection whose server vanished without a word (a host gone) is noticed.
    keepAlive: true,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === 20 || oid === 1700 ? toNumber : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // A dropped idle connection must not crash the process; the pool replaces it, and opens
  // new ones on demand once the server is back (a failed statement destroys its connection).
  pool.on('error', () => {});
  const client = await pool.connect();
  client.release();
  // A connection lost while checked out for a transaction, between two statements, reports
  // on the client itself: without a listener that would crash the process. The next
  // statement of the transaction fails instead.
  const ignoreLost = () => {};
  const db: Db = {
    kind: 'postgres',
    query: watched(
      watch,
      traced(async (sql, params = []) => (await pool.query(sql, params as unknown[])).rows),
    ),
    async transaction(fn) {
      let conn: pg.PoolClient;
      try {
        conn = await pool.connect();
      } catch (err) {
        throw watch.failed(err);
      }
      conn.on('error', ignoreLost);
      let broken: unknown;
      try {
        await conn.query('BEGIN');
        const tx: Db = {
          ...db,
          query: watched(
            watch,
            traced(async (sql, params = []) => (await conn.query(sql, params as unknown[])).rows),
          ),
          transaction: (f) => f(tx),
        };
        const result = await fn(tx);
        await conn.query('COMMIT');
        watch.committed();
        return result;
      } catch (err) {
        const e = watch.failed(err);
        // A lost connection cannot roll back (the server did); a full disk can.
        if (e instanceof DatabaseUnavailableError && e.reason === 'unreachable') broken = e;
        else await conn.query('ROLLBACK').catch((rollbackErr: unknown) => (broken = rollbackErr));
        throw e;
      } finally {
        conn.removeListener('error', ignoreLost);
        // A connection that failed is not given to the next caller: the pool drops it.
        conn.release(broken !== undefined);
      }
    },
    close: () => pool.end(),
    poolStats: () => ({ max: POOL_MAX, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
  return db;
}
