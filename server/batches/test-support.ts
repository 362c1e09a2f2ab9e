// Shared by the batch and billing tests (not a test itself): JSON requests over real HTTP,
// polling, a batch's wait for its end, and what the batch tests check a batch by (its
// bodies against the contract, its events, capacity freed between tests).
import { setTimeout as sleep } from 'node:timers/promises';
import type { ValidateFunction } from 'ajv';
import { afterEach, expect } from 'vitest';
import { compileSchema, createAjv, loadSpec } from '../http/spec.js';
import { startTestServer, type Backend, type TestServer } from '../testing/harness.js';

export interface Requester {
  request(path: string, init?: RequestInit): Promise<Response>;
}

export const HEADLESS = { browser: { headless: { active: true } } } as const;

/** A request answering its status and parsed JSON body. */
export async function call(
  server: Requester,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await server.request(path, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // kept as text for the assertion message
  }
  return { status: res.status, body: parsed };
}

/** Polls `read` until `done` holds of its value, or fails after `timeoutMs`. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 45_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value).slice(0, 2000)}`);
    await sleep(intervalMs);
  }
}

export async function createBatch(server: Requester, body: unknown): Promise<string> {
  const res = await call(server, 'POST', '/v1/batch-sessions', body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.batch_id as string;
}

export async function getBatch(server: Requester, id: string): Promise<any> {
  const res = await call(server, 'GET', `/v1/batch-sessions/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** Waits until the batch has left `pending`; answers its detail. */
export function batchEnd(server: Requester, id: string, timeoutMs = 45_000): Promise<any> {
  return until(
    () => getBatch(server, id),
    (b) => b.status !== 'pending',
    timeoutMs,
  );
}

type BatchSchema = 'BatchCreated' | 'BatchDetail' | 'BatchList' | 'BatchCancelled' | 'EventBatchCompletedData' | 'EventBatchFailedData';
let validators: Map<BatchSchema, ValidateFunction> | undefined;

/** The body is valid against the contract's schema `name` (compiled at the first check). */
export function expectValid(name: BatchSchema, body: unknown): void {
  if (!validators) {
    const ajv = createAjv(loadSpec());
    const names: BatchSchema[] = ['BatchCreated', 'BatchDetail', 'BatchList', 'BatchCancelled', 'EventBatchCompletedData', 'EventBatchFailedData'];
    validators = new Map(names.map((n) => [n, compileSchema(ajv, { $ref: `#/components/schemas/${n}` })]));
  }
  const v = validators.get(name)!;
  expect(v(body), `${name}: ${JSON.stringify(v.errors)}`).toBe(true);
}

/** The batch's events, in order. */
export async function batchEvents(server: TestServer, batchId: string): Promise<{ type: string; data: any }[]> {
  return server.db.query(`SELECT type, data FROM events WHERE type LIKE 'batch.%' AND data->>'batch_id' = $1 ORDER BY seq`, [batchId]);
}

/** Ends every session the server still runs, so the next test starts with free capacity. */
export async function endAll(server: TestServer): Promise<void> {
  const rows = await server.db.query<{ id: string }>(`SELECT id FROM sessions WHERE status IN ('starting', 'running')`);
  for (const r of rows) await call(server, 'DELETE', `/v1/sessions/${r.id}`);
}

/**
 * A server a test starts with the settings it needs (`start(env)`); after each test its
 * sessions are ended and it is closed. Registers the afterEach of the describe it is called in.
 */
export function serverPerTest(backend: Backend): (env?: Record<string, string>) => Promise<TestServer> {
  let server: TestServer | undefined;
  afterEach(async () => {
    if (server) {
      await endAll(server).catch(() => {});
      await server.close();
    }
    server = undefined;
  });
  return async (env = {}) => (server = await startTestServer({ backend, env }));
}
