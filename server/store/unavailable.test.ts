// Which failures mean "the database cannot answer" (and so 503 and a retry), and the retry
// of work that must commit. The errors are the drivers' own: a refused connect by
// node-postgres to a closed port, PostgreSQL's SQLSTATEs as node-postgres reports them.
import net from 'node:net';
import pg from 'pg';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { freePort } from '../testing/free-port.js';
import { asUnavailable, DatabaseUnavailableError, isDatabaseUnavailable, unavailableCause, untilCommitted } from './unavailable.js';

const log = pino({ level: 'silent' });

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('unavailableCause', () => {
  it('a refused connect, as node-postgres reports it, is unreachable', async () => {
    const port = await freePort();
    const client = new pg.Client({ connectionString: `postgres://postgres@localhost:${port}/x` });
    const err = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(unavailableCause(err)).toBe('unreachable');
  });

  it('a connection the server drops mid-query is unreachable', async () => {
    // A "server" that accepts and hangs up at once.
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/x` });
    client.on('error', () => {});
    const err = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    server.close();
    expect(unavailableCause(err)).toBe('unreachable');
  });

  it('SQLSTATEs: shutdown, starting up, too many connections and class 08 are unreachable; 53100 is a full disk; others are not outages', () => {
    for (const code of ['57P01', '57P02', '57P03', '53300', '08006', '08001']) expect(unavailableCause(pgError(code, 'x')), code).toBe('unreachable');
    expect(unavailableCause(pgError('53100', 'could not extend file "base/5/16385": No space left on device'))).toBe('disk_full');
    for (const code of ['23505', '42P01', '40001', '22P02']) expect(unavailableCause(pgError(code, 'x')), code).toBeUndefined();
    expect(unavailableCause(new Error('Connection terminated unexpectedly'))).toBe('unreachable');
    expect(unavailableCause(new AggregateError([pgError('ECONNREFUSED', 'a'), pgError('ECONNREFUSED', 'b')]))).toBe('unreachable');
    expect(unavailableCause(new Error('nested transaction'))).toBeUndefined();
    expect(unavailableCause('not an error')).toBeUndefined();
  });

  it('asUnavailable wraps an outage once, keeping the driver error as its cause, and passes other errors through', () => {
    const driver = pgError('57P01', 'terminating connection due to administrator command');
    const wrapped = asUnavailable(driver);
    expect(isDatabaseUnavailable(wrapped)).toBe(true);
    expect((wrapped as DatabaseUnavailableError).cause).toBe(driver);
    expect((wrapped as Error).message).toMatch(/database is unavailable/);
    expect(asUnavailable(wrapped)).toBe(wrapped);
    const other = pgError('23505', 'duplicate key');
    expect(asUnavailable(other)).toBe(other);
  });
});

describe('untilCommitted', () => {
  it('retries while the database is unavailable, then answers', async () => {
    let calls = 0;
    const result = await untilCommitted(
      'test',
      async () => {
        if (++calls < 4) throw new DatabaseUnavailableError('unreachable', undefined);
        return 'done';
      },
      { log },
    );
    expect([result, calls]).toEqual(['done', 4]);
  });

  it('throws any other failure at once', async () => {
    let calls = 0;
    const run = untilCommitted(
      'test',
      async () => {
        calls++;
        throw new Error('a bug');
      },
      { log },
    );
    await expect(run).rejects.toThrow('a bug');
    expect(calls).toBe(1);
  });

  it('gives up when its signal aborts, with the last failure', async () => {
    const abort = new AbortController();
    let calls = 0;
    const run = untilCommitted(
      'test',
      async () => {
        calls++;
        throw new DatabaseUnavailableError('disk_full', undefined);
      },
      { log, signal: abort.signal },
    );
    setTimeout(() => abort.abort(), 300);
    await expect(run).rejects.toBeInstanceOf(DatabaseUnavailableError);
    expect(calls).toBeGreaterThan(1);
  });
});
