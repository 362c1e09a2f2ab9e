// The hosted vendor's TypeScript SDK (npm anchorbrowser), unchanged, on the task family:
// create with code, list, a legacy run of the draft that waits for its end, and the
// execution read back, against the real server, sandbox and Chromium.
import Anchorbrowser from 'anchorbrowser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { b64, TITLE_TASK } from './test-support.js';

describe('the vendor SDK on tasks', () => {
  let server: TestServer;
  let fixtures: FixtureServer;
  let client: Anchorbrowser;

  beforeAll(async () => {
    server = await startTestServer();
    fixtures = await startFixtureServer();
    client = new Anchorbrowser({ apiKey: server.apiKey, baseURL: server.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await fixtures?.close();
  });

  it('task.create, task.list, task.run (the draft, waiting), task.retrieveExecutionResult', { timeout: 120_000 }, async () => {
    const created = await client.task.create({
      name: 'sdk-title',
      language: 'typescript',
      code: b64(TITLE_TASK),
      browserConfiguration: { recording: { active: false } },
    });
    const taskId = created.data!.id!;
    expect(created.data).toMatchObject({ name: 'sdk-title', latestVersion: 'draft' });
    const list = await client.task.list();
    expect(list.data?.tasks?.map((t) => t.id)).toContain(taskId);

    const run = await client.task.run({ taskId, version: 'draft', inputs: { url: `${fixtures.url}/site/form.html` } });
    expect(run.data).toMatchObject({ success: true, taskId, output: JSON.stringify({ title: 'Form fixture' }) });
    // The SDK's type leaves out executionResultId, which the answer carries (the vendor's async runs need it).
    const executionId = (run.data as { executionResultId?: string }).executionResultId!;
    const execution = await client.task.retrieveExecutionResult(executionId, { taskId });
    expect(execution.data).toMatchObject({ id: executionId, version: 'draft', status: 'success' });
  });
});
