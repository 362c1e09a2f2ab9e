// Task version numbers the contract's pattern accepts (any digits) but the version column
// (integer) cannot hold: reading, running or deleting one answered 500 ("out of range for type
// integer"); found by conformance G13. No version can have such a number: 404 where it is
// looked up, 400 where it would be published.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';

let srv: TestServer;
let taskId: string;
beforeAll(async () => {
  srv = await startTestServer();
  const res = await call('POST', '/v1/task', { name: 'version-range', language: 'typescript', code: Buffer.from('return 1;').toString('base64') });
  taskId = ((await res.json()) as { data: { id: string } }).data.id;
}, 120_000);
afterAll(async () => {
  await srv?.close();
});

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return srv.request(path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

const HUGE = '9'.repeat(20);

describe('a task version number past the column', () => {
  it('is not found when read, deleted or run', async () => {
    expect((await call('GET', `/v1/task/${taskId}/${HUGE}`)).status).toBe(404);
    expect((await call('DELETE', `/v1/task/${taskId}/2147483648`)).status).toBe(404);
    const run = await call('POST', `/v2/tasks/${taskId}/run`, { version: HUGE, input_params: {} });
    expect(run.status).toBe(404);
    expect(((await run.json()) as { error: { message: string } }).error.message).toBe(`Task version ${HUGE} not found`);
  });

  it('is refused when published, and the largest number the column holds is published', async () => {
    const code = Buffer.from('return 2;').toString('base64');
    const refused = await call('POST', `/v1/task/${taskId}/2147483648`, { code });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: { code: 400, message: 'taskVersion must be at most 2147483647' } });
    expect((await call('POST', `/v1/task/${taskId}/2147483647`, { code })).status).toBe(200);
  });
});
