// PGlite in its own thread, through db.ts: what callers relied on when it ran in theirs
// (errors with PostgreSQL's fields, transactions that commit or leave nothing, statements
// queued behind an open transaction) still holds, and the caller's event loop now runs
// while a statement does.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPglite } from '../testing/pglite-template.js';
import type { Db } from './db.js';

describe('PGlite in its own thread', () => {
  let db: Db;

  beforeAll(async () => {
    // A copy of the run's migrated template (an in-memory database would run initdb: ~3 s of CPU).
    db = await openTestPglite();
    await db.query('CREATE TABLE t (id int PRIMARY KEY, v text)');
  });
  afterAll(() => db.close());

  it("reports PostgreSQL's error fields (code, constraint) on the caller's side", async () => {
    await db.query('INSERT INTO t VALUES (1, $1)', ['a']);
    const err = await db.query('INSERT INTO t VALUES (1, $1)', ['b']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ code: '23505', constraint: 't_pkey' });
    expect((err as Error).message).toMatch(/duplicate key/);
  });

  it('answers parameters and values as they were: numbers, dates, json, arrays', async () => {
    const at = new Date('2026-11-28T12:00:00.000Z');
    const [row] = await db.query<{ n: number; big: number; at: Date; j: unknown; a: string[] }>(
      'SELECT $1::int AS n, 9007199254740::bigint AS big, $2::timestamptz AS at, $3::jsonb AS j, $4::text[] AS a',
      [7, at, JSON.stringify({ k: [1, 'x'] }), ['p', 'q']],
    );
    expect(row).toEqual({ n: 7, big: 9007199254740, at, j: { k: [1, 'x'] }, a: ['p', 'q'] });
  });

  it('commits a transaction, and leaves nothing of one whose callback throws', async () => {
    await db.transaction(async (tx) => {
      // Statements sent together inside a transaction run in it, one after the other.
      await Promise.all([tx.query('INSERT INTO t VALUES (10, $1)', ['x']), tx.query('INSERT INTO t VALUES (11, $1)', ['y'])]);
    });
    const thrown = new Error('changed my mind');
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES (12, $1)', ['z']);
        throw thrown;
      }),
    ).rejects.toBe(thrown);
    const rows = await db.query<{ id: number }>('SELECT id FROM t WHERE id >= 10 ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual([10, 11]);
    // A transaction that ran no statement is fine too.
    await expect(db.transaction(async () => 'nothing')).resolves.toBe('nothing');
  });

  it('runs a statement from outside only after the open transaction ends, and refuses a nested one', async () => {
    let outside: Promise<Array<{ v: string }>> | undefined;
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO t VALUES (20, $1)', ['inside']);
      outside = db.query<{ v: string }>('SELECT v FROM t WHERE id = 20');
      // Negative: the outside statement does not run inside the open transaction; a window it would.
      await new Promise((r) => setTimeout(r, 50));
      await tx.query('UPDATE t SET v = $1 WHERE id = 20', ['committed']);
      await expect(db.transaction(async () => 1)).rejects.toThrow('nested transaction');
    });
    expect(await outside).toEqual([{ v: 'committed' }]);
  });

  it("keeps the caller's event loop running while a statement runs", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    try {
      await db.query('SELECT count(*) FROM generate_series(1, 3000000)');
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(3);
  });

  it('refuses statements once closed', async () => {
    const other = await openTestPglite();
    await other.close();
    await expect(other.query('SELECT 1')).rejects.toThrow('the database is closed');
    await other.close(); // twice is fine
  });
});

describe('a process using PGlite', () => {
  it('stays up while a statement is awaited, and exits when nothing is left, unclosed', async () => {
    const script = `
      import { openDb } from './server/store/db.ts';
      const db = await openDb({});
      // The child's own idle time (the subject: the process stays up across it), not the test waiting.
      await new Promise((r) => setTimeout(r, 200));
      const [row] = await db.query('SELECT 41 + 1 AS answer');
      console.log(JSON.stringify(row));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      timeout: 60_000,
    });
    expect(JSON.parse(stdout.trim())).toEqual({ answer: 42 });
  }, 90_000);
});
