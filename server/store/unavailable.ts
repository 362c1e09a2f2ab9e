// A database that cannot answer for a while: PostgreSQL unreachable (restarting, stopped,
// out of connections, a dropped connection) or out of disk space (PGlite or PostgreSQL).
// Such a failure is transient and says nothing about the request: the HTTP layer answers
// 503 with the general error body, and work that must not be lost (a session's end, a batch
// item's outcome) is retried by untilCommitted until the database is back.
import type { Logger } from 'pino';

export type UnavailableCause = 'unreachable' | 'disk_full';

const MESSAGES: Record<UnavailableCause, string> = {
  unreachable: 'The database is unavailable; try again shortly',
  disk_full: "The database's disk is full; try again once space is freed",
};

/** What every query fails with while the database cannot answer; `cause` keeps the driver's error. */
export class DatabaseUnavailableError extends Error {
  constructor(
    readonly reason: UnavailableCause,
    cause: unknown,
  ) {
    super(MESSAGES[reason], { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

/** Seconds a client is told to wait (Retry-After) while the database is unavailable. */
export const RETRY_AFTER_SECONDS = 5;

// Socket errors of a connection to PostgreSQL that is refused, reset or cannot be routed.
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
// SQLSTATEs: connection_exception (class 08), admin_shutdown, crash_shutdown,
// cannot_connect_now (starting up or shutting down), too_many_connections.
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
// node-postgres reports a connection lost or never made in words, without a code.
const DRIVER_MESSAGES = [/^Connection terminated/, /timeout exceeded when trying to connect/, /is not queryable/];

/** Why the database could not answer, when that is what `err` says; undefined for any other failure. */
export function unavailableCause(err: unknown): UnavailableCause | undefined {
  if (err instanceof DatabaseUnavailableError) return err.reason;
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  if (code === '53100') return 'disk_full';
  if (typeof code === 'string' && (code.startsWith('08') || SERVER_CODES.has(code) || SOCKET_CODES.has(code))) return 'unreachable';
  // Node's connect to a name with several addresses (localhost) fails with every attempt's error.
  if (err instanceof AggregateError && err.errors.some((e) => unavailableCause(e) === 'unreachable')) return 'unreachable';
  if (DRIVER_MESSAGES.some((m) => m.test(err.message))) return 'unreachable';
  return undefined;
}

/** `err` as a DatabaseUnavailableError when it is one in substance; otherwise unchanged. */
export function asUnavailable(err: unknown): unknown {
  const reason = err instanceof DatabaseUnavailableError ? undefined : unavailableCause(err);
  return reason ? new DatabaseUnavailableError(reason, err) : err;
}

export function isDatabaseUnavailable(err: unknown): err is DatabaseUnavailableError {
  return err instanceof DatabaseUnavailableError;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 2_000;

/**
 * Runs `fn` (one transaction) until it commits: again, with a growing pause, each time the
 * database is unavailable; any other failure is thrown at once. `signal` gives up (the
 * server is stopping): the last failure is thrown, and whatever `fn` records stays for the
 * next start to settle.
 */
export async function untilCommitted<T>(what: string, fn: () => Promise<T>, o: { log: Logger; signal?: AbortSignal }): Promise<T> {
  let wait = FIRST_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await fn();
      if (attempt > 1) o.log.info({ attempts: attempt }, `${what}: recorded once the database was back`);
      return result;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || o.signal?.aborted) throw err;
      if (attempt === 1) o.log.warn({ reason: err.reason }, `${what}: the database is unavailable; retrying until it is back`);
      await pause(wait, o.signal);
      wait = Math.min(MAX_RETRY_MS, wait * 2);
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
