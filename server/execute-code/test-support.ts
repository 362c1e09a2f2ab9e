// Shared by the execute-code tests (not a test itself): POST /v1/tools/execute-code over real
// HTTP, answering its status and parsed body.
import type { TestServer } from '../testing/harness.js';

export async function executeCode(server: TestServer, code: unknown, sessionId: string, key?: string): Promise<{ status: number; body: any }> {
  const res = await server.request(`/v1/tools/execute-code?sessionId=${sessionId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'service-api-key': key } : {}) },
    body: JSON.stringify({ code }),
  });
  return { status: res.status, body: (await res.json()) as any };
}
