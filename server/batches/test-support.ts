// Shared by the batch and billing tests (not a test itself): JSON requests over real HTTP,
// polling, and a batch's wait for its end.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';

export interface Requester {
  request(path: string, init?: RequestInit): Promise<Response>;
}

export const HEADLESS = { browser: { headless: { active: true } } } as const;

/** A request answering its status and parsed JSON body. */
export async function call(server: Requester, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
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
  return until(() => getBatch(server, id), (b) => b.status !== 'pending', timeoutMs);
}
