// Shared by the identities tests: a JSON call that keeps the answer's text (to look for secrets in).
import type { Requester } from '../sessions/test-support.js';

export async function call(server: Requester, method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const res = await server.request(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}
