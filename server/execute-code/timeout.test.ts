// POST /v1/tools/execute-code at its time limit: code still running at 60 s is answered 408
// and stopped, and the session serves the next run. A file of its own, beside
// execute-code.test.ts: the contract's limit is a minute, and this test waits it out on the
// server's own timer while the other files run beside it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, HEADLESS } from '../sessions/test-support.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { executeCode } from './test-support.js';

describe.each(browserBackends)('POST /v1/tools/execute-code (%s)', (backend) => {
  let server: TestServer;
  let sessionId: string;

  beforeAll(async () => {
    server = await startTestServer({ backend });
    sessionId = (await createSession(server, HEADLESS)).id;
  });
  afterAll(async () => {
    await server?.close();
  });

  // A minute of waiting (idle, not spinning).
  it('answers 408 for code still running at 60 s, and stops it', async () => {
    const started = Date.now();
    const { status, body } = await executeCode(server, 'await new Promise(() => {});', sessionId);
    expect({ status, body }).toEqual({ status: 408, body: { error: { code: 408, message: 'Code execution exceeded 60 seconds' } } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(60_000);
    expect((await executeCode(server, 'return 1;', sessionId)).status).toBe(200);
  }, 120_000);
});
