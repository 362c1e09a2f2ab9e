// ctx.requestIntervention in task runs, over real HTTP on real Chromium with the code in the
// real sandbox: the request is listed on the run's session and fires intervention.requested
// for it; the API's answer comes back as the code's value; nobody answering in time fails the
// run; a cancel withdraws the request; malformed requests are refused in the code; and
// execute-code, which has no one to ask, refuses the call with a clear message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionEvents } from '../sessions/test-support.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { HEADLESS } from '../batches/test-support.js';
import { call, deployedTask, until } from './test-support.js';

const NO_RECORDING = { recording: { active: false } };

describe.each(browserBackends)('ctx.requestIntervention on %s', (backend) => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer({ backend, env: { TASK_CONCURRENCY: '2', MAX_CONCURRENT_BROWSERS: '4' } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function run(taskId: string, body: Record<string, unknown> = {}) {
    const res = await call(t, 'POST', `/v2/tasks/${taskId}/run`, { input_params: {}, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { run_id: string; status: string };
  }
  const status = async (runId: string) => (await call(t, 'GET', `/v2/tasks/runs/${runId}/status`)).body;
  const ended = (runId: string) =>
    until(
      () => status(runId),
      (s) => !['queued', 'running'].includes(s.status),
      60_000,
    );
  const pending = async (sessionId: string) => {
    const res = await call(t, 'GET', `/v1/sessions/${sessionId}/agent/requested-human-intervention`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.requests as { request_id: string; message: string; input_type: string }[];
  };
  /** The run's session once the run has asked: its one pending request. */
  async function askedIn(runId: string) {
    const { session_id: sessionId } = await until(
      () => status(runId),
      (s) => s.status === 'running' && !!s.session_id,
      60_000,
    );
    const [request] = await until(
      () => pending(sessionId),
      (l) => l.length > 0,
      60_000,
    );
    return { sessionId: sessionId as string, request: request! };
  }
  const taskEvent = (runId: string) =>
    until(
      () => t.db.query<{ type: string; data: any }>("SELECT type, data FROM events WHERE type LIKE 'task.%' AND data->>'run_id' = $1", [runId]),
      (l) => l.length > 0,
      60_000,
    ).then((l) => l[0]!);

  it(
    'a confirm request is listed on the run session, fires intervention.requested for it, and the API answer is the code value',
    { timeout: 120_000 },
    async () => {
      const taskId = await deployedTask(
        t,
        `export default async function run(ctx: any) {
  const answer: string = await ctx.requestIntervention({ message: 'Buy 2 items for 59.90 EUR?', input_type: 'confirm' });
  return answer;
}
`,
        NO_RECORDING,
      );
      const started = await run(taskId);
      const { sessionId, request } = await askedIn(started.run_id);
      expect(request).toMatchObject({ message: 'Buy 2 items for 59.90 EUR?', input_type: 'confirm' });
      const [requested] = await sessionEvents(t.db, sessionId, ['intervention.requested']);
      expect(requested?.data).toMatchObject({
        session_id: sessionId,
        request_id: request.request_id,
        input_type: 'confirm',
        live_view_url: expect.stringContaining(`/live/${sessionId}`),
      });

      const answered = await call(t, 'POST', `/v1/sessions/${sessionId}/agent/respond-to-human-intervention`, {
        requestId: request.request_id,
        response: 'yes',
      });
      expect(answered.status, JSON.stringify(answered.body)).toBe(200);
      const event = await taskEvent(started.run_id);
      expect(event.type).toBe('task.completed');
      expect(event.data).toMatchObject({ session_id: sessionId, output: { value: { result: 'yes' } } });
      expect(await ended(started.run_id)).toMatchObject({ status: 'success', result: { result: 'yes' } });
    },
  );

  it('a request nobody answers before its timeout_seconds fails the run: automation_failure at the line of the call', { timeout: 120_000 }, async () => {
    const taskId = await deployedTask(
      t,
      `export default async function run(ctx: any) {
  return await ctx.requestIntervention({ message: 'Type the code from the SMS', input_type: 'otp', timeout_seconds: 1 });
}
`,
      NO_RECORDING,
    );
    const started = await run(taskId);
    const event = await taskEvent(started.run_id);
    expect(event.type).toBe('task.failed');
    expect(event.data.error).toMatchObject({ type: 'automation_failure' });
    expect(event.data.error.message).toMatch(/^No one answered the request for a person within 1 s \(line 2\)$/);
    const [row] = await t.db.query<{ status: string }>('SELECT status FROM interventions WHERE session_id = $1', [event.data.session_id]);
    expect(row?.status).toBe('expired');
  });

  it('a run cancelled while it waits withdraws its request: no longer listed on the session', { timeout: 120_000 }, async () => {
    const session = await call(t, 'POST', '/v1/sessions', HEADLESS);
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    const sessionId = session.body.data.id as string;
    try {
      const taskId = await deployedTask(
        t,
        `export default async function run(ctx: any) {
  return await ctx.requestIntervention({ message: 'Solve the puzzle, then press done', input_type: 'takeover' });
}
`,
        NO_RECORDING,
      );
      const started = await run(taskId, { session_id: sessionId });
      const asked = await askedIn(started.run_id);
      expect(asked.sessionId).toBe(sessionId);
      expect(asked.request.input_type).toBe('takeover');
      const cancelled = await call(t, 'POST', `/v2/tasks/runs/${started.run_id}/cancel`);
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
      expect((await taskEvent(started.run_id)).type).toBe('task.cancelled');
      // The session runs on (it was given to the run); its request is gone.
      expect(await pending(sessionId)).toEqual([]);
      const [row] = await t.db.query<{ status: string }>('SELECT status FROM interventions WHERE id = $1', [asked.request.request_id]);
      expect(row?.status).toBe('cancelled');
    } finally {
      await call(t, 'DELETE', `/v1/sessions/${sessionId}`);
    }
  });

  it('malformed requests are refused in the code with what is wrong; execute-code refuses the call: no one to ask', { timeout: 120_000 }, async () => {
    const taskId = await deployedTask(
      t,
      `export default async function run(ctx: any) {
  const tries = [
    { message: 'Pick one', input_type: 'choice' },
    { message: '   ', input_type: 'text' },
    { message: 'x'.repeat(2001), input_type: 'text' },
    { message: 'Wait', input_type: 'confirm', timeout_seconds: 0 },
    null,
  ];
  const refused: string[] = [];
  for (const q of tries) refused.push(await ctx.requestIntervention(q).then(() => 'answered', (e: Error) => e.message));
  return refused;
}
`,
      NO_RECORDING,
    );
    const res = await run(taskId, { sync: true });
    expect(res).toMatchObject({ status: 'success' });
    expect((res as any).result.result).toEqual([
      'requestIntervention: input_type must be one of confirm, text, otp, takeover',
      'requestIntervention: message must be a non-empty string',
      'requestIntervention: message must be at most 2000 characters',
      'requestIntervention: timeout_seconds must be a number from 1 to 86400',
      'requestIntervention takes {message, input_type, timeout_seconds?}',
    ]);

    const session = await call(t, 'POST', '/v1/sessions', HEADLESS);
    const sessionId = session.body.data.id as string;
    try {
      const executed = await call(t, 'POST', `/v1/tools/execute-code?sessionId=${sessionId}`, {
        code: "const answer = await requestIntervention({ message: 'Proceed?', input_type: 'confirm' });\nreturn answer;",
      });
      expect(executed).toEqual({
        status: 400,
        body: { error: { code: 400, message: 'Error at line 1: interventions are not available here: only a task run can ask a person' } },
      });
      expect(await pending(sessionId)).toEqual([]);
    } finally {
      await call(t, 'DELETE', `/v1/sessions/${sessionId}`);
    }
  });
});
