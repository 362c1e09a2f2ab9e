// T1-T4 (docs/conformance-rules.md, Tasks), and T5 (a run's status), T6 (cancel) and T7
// (selfHealing settings) for the operations this contract adds. Runs open a page of the
// suite's fixture server and report through a webhook pointing at a receiver on that server,
// as a user would see them.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

/** Cheap run sessions: no recording, short limits the server enforces if a check cannot end them. */
const CONFIGURATION = { recording: { active: false }, timeout: { max_duration: 3, idle_timeout: 2 } };
const RUN_WAIT_MS = 120_000;
const EVENT_WAIT_MS = 60_000;

const TITLE_TASK = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  return { title: await ctx.page.title() };
}
`;
const SLOW_TASK = `export default async function run(ctx: any) {
  await new Promise((r) => setTimeout(r, 90000));
  return { late: true };
}
`;
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

interface Envelope {
  id: string;
  type: string;
  data: Record<string, any>;
}

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}
const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

export default defineRules((ctx: SuiteContext) => {
  const op = (id: string) => ctx.contract.operation(id);
  const call = (id: string, pathParams: Record<string, string> = {}, bodyValue?: unknown) =>
    ctx.call(buildRequest(ctx.contract, op(id), { pathParams }), bodyValue === undefined ? {} : { bodyValue });

  const implemented = (t: T, ex: Exchange) => {
    if (answer(t, ex).status === 501) t.skip('tasks are not implemented by this server (501)');
  };

  const conforms = (t: T, id: string, ex: Exchange) => {
    const verdict = bodyVerdict(ctx.contract, op(id), answer(t, ex));
    t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? `${id}: ${verdict.message}` : '');
  };

  const newTask = async (t: T, code?: string): Promise<string> => {
    const ex = await call(
      'createTask',
      {},
      { name: `conformance-${randomBytes(5).toString('hex')}`, language: 'typescript', ...(code ? { code: b64(code) } : {}) },
    );
    implemented(t, ex);
    t.assert(answer(t, ex).status === 200, `POST /v1/task: ${show(ex)}`);
    return (ex.response!.json as { data: { id: string } }).data.id;
  };
  const deploy = (taskId: string, body: unknown) => call('deployTask', { taskId }, body);
  const deployed = async (t: T, code: string): Promise<string> => {
    const taskId = await newTask(t);
    const ex = await deploy(taskId, { code: b64(code), language: 'typescript', browserConfiguration: CONFIGURATION });
    t.assert(answer(t, ex).status === 200, `deploy: ${show(ex)}`);
    return taskId;
  };
  const deleteTask = (taskId: string) => call('deleteTask', { taskId });

  /** The webhook receiver for the task events, made once. */
  let receiver: Promise<{ events: Envelope[] } | { problem: string }> | undefined;
  const receive = () =>
    (receiver ??= (async () => {
      const events: Envelope[] = [];
      const path = '/conformance/task-events';
      ctx.fixtures.route('POST', path, (_req, res, body) => {
        try {
          const env = JSON.parse(body.toString('utf8')) as Envelope;
          if (env && typeof env.type === 'string' && env.type.startsWith('task.')) events.push(env);
        } catch {
          // not an envelope; W rules judge deliveries
        }
        res.writeHead(204).end();
      });
      ctx.fixtures.route('GET', '/conformance/task-page', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Conformance task page</title><p>T4</p>');
      });
      const ex = await call(
        'createWebhook',
        {},
        {
          url: await ctx.fixtures.url(path),
          subscribed_events: ['task.completed', 'task.failed', 'task.cancelled'],
          description: 'conformance: task events',
        },
      );
      const status = ex.response?.status;
      if (status === undefined || status < 200 || status >= 300) return { problem: `a webhook for the task events could not be made: ${show(ex)}` };
      return { events };
    })());

  const waitEvents = async (events: Envelope[], match: (e: Envelope) => boolean, ms = EVENT_WAIT_MS): Promise<Envelope[]> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = events.filter(match);
      if (found.length > 0 || Date.now() > deadline) return found;
      await sleep(250);
    }
  };

  const status = async (t: T, runId: string) => {
    const ex = await call('getTaskRunStatus', { runId });
    t.assert(answer(t, ex).status === 200, `GET /v2/tasks/runs/${runId}/status: ${show(ex)}`);
    conforms(t, 'getTaskRunStatus', ex);
    return ex.response!.json as { run_id: string; status: string; result?: unknown; error?: string; session_id?: string };
  };
  const waitEnd = async (t: T, runId: string) => {
    const deadline = Date.now() + RUN_WAIT_MS;
    for (;;) {
      const s = await status(t, runId);
      if (s.status !== 'queued' && s.status !== 'running') return s;
      t.assert(Date.now() < deadline, `the run is still ${s.status} after ${RUN_WAIT_MS / 1000} s`);
      await sleep(500);
    }
  };

  return [
    check('T1 deploy creates a version whose number is one more than the previous', async (t: T) => {
      const taskId = await newTask(t);
      try {
        const numbers: number[] = [];
        for (let i = 0; i < 3; i++) {
          const ex = await deploy(taskId, { code: b64(TITLE_TASK), language: 'typescript', description: `T1 ${i}` });
          t.assert(answer(t, ex).status === 200, `deploy ${i + 1}: ${show(ex)}`);
          conforms(t, 'deployTask', ex);
          numbers.push(Number((ex.response!.json as { data: { version: string } }).data.version));
        }
        t.assert(numbers[1] === numbers[0] + 1 && numbers[2] === numbers[1] + 1, `versions ${numbers.join(', ')} do not count up by one`);
        // Two at once still get two numbers.
        const both = await Promise.all([0, 1].map(() => deploy(taskId, { code: b64(TITLE_TASK) })));
        const pair = both.map((ex) => Number((answer(t, ex).json as { data: { version: string } }).data.version)).sort();
        t.assert(pair[0] === numbers[2] + 1 && pair[1] === numbers[2] + 2, `two concurrent deploys after ${numbers[2]} got ${pair.join(' and ')}`);
        t.note(`versions ${[...numbers, ...pair].join(', ')}`);
      } finally {
        await deleteTask(taskId);
      }
    }),

    check('T2 code must be base64 and at least 1 character, description at most 1000 characters, language typescript only: otherwise 400', async (t: T) => {
      const taskId = await newTask(t);
      try {
        const bad: [string, unknown][] = [
          ['empty code', { code: '' }],
          ['code that is not base64', { code: 'not base64!' }],
          ['a description of 1001 characters', { code: b64(TITLE_TASK), description: 'x'.repeat(1001) }],
          ['language javascript', { code: b64(TITLE_TASK), language: 'javascript' }],
        ];
        for (const path of ['deployTask', 'saveTaskDraft'] as const) {
          for (const [what, body] of bad) {
            const ex = await call(path, { taskId }, body);
            t.assert(answer(t, ex).status === 400, `${path} with ${what}: ${show(ex)}`);
          }
        }
        const ok = await deploy(taskId, { code: b64(TITLE_TASK), description: 'x'.repeat(1000), language: 'typescript' });
        t.assert(answer(t, ok).status === 200, `the boundary values (1000 characters) are refused: ${show(ok)}`);
      } finally {
        await deleteTask(taskId);
      }
    }),

    check('T3 draft creates or updates the draft and answers a task version', async (t: T) => {
      const taskId = await newTask(t);
      try {
        const first = await call(
          'saveTaskDraft',
          { taskId },
          { code: b64(TITLE_TASK), description: 'T3 first', browserConfiguration: { live_view: { read_only: true, one_time_url: true }, x402: false } },
        );
        t.assert(answer(t, first).status === 200, `first draft: ${show(first)}`);
        conforms(t, 'saveTaskDraft', first);
        const a = (first.response!.json as { data: Record<string, any> }).data;
        t.assert(a.version === 'draft' && a.taskId === taskId, `the draft answers version ${a.version} of task ${a.taskId}`);
        t.assert(
          !('x402' in a.browserConfiguration) && JSON.stringify(a.browserConfiguration.live_view) === '{"read_only":true}',
          `the draft shows ${JSON.stringify(a.browserConfiguration)}`,
        );
        const second = await call('saveTaskDraft', { taskId }, { code: b64(TITLE_TASK), description: 'T3 second' });
        t.assert(answer(t, second).status === 200, `second draft: ${show(second)}`);
        const b = (second.response!.json as { data: Record<string, any> }).data;
        t.assert(b.id === a.id && b.description === 'T3 second', `the second save did not update the draft: ${JSON.stringify(b).slice(0, 300)}`);
        const got = await call('getTaskDraft', { taskId });
        t.assert(
          answer(t, got).status === 200 && (got.response!.json as { data: { description: string } }).data.description === 'T3 second',
          `GET draft: ${show(got)}`,
        );
      } finally {
        await deleteTask(taskId);
      }
    }),

    check('T4 POST /v2/tasks/{taskId}/run answers a run_id; its completion fires task.completed carrying it; a legacy run carries none', async (t: T) => {
      const r = await receive();
      if ('problem' in r) t.fail(r.problem);
      const taskId = await deployed(t, TITLE_TASK);
      try {
        const url = await ctx.fixtures.url('/conformance/task-page');
        const ex = await call('runTask', { taskId }, { input_params: { url } });
        t.assert(answer(t, ex).status === 200, `run: ${show(ex)}`);
        conforms(t, 'runTask', ex);
        const runId = (ex.response!.json as { run_id: string }).run_id;
        const end = await waitEnd(t, runId);
        t.assert(end.status === 'success', `the run ended ${end.status}: ${end.error ?? ''}`);
        const [event] = await waitEvents(r.events, (e) => e.data.run_id === runId);
        t.assert(event, `no task event with run_id ${runId} within ${EVENT_WAIT_MS / 1000} s of the run's end`);
        t.assert(event.type === 'task.completed', `the run's event is ${event.type}`);
        t.assert(event.data.output?.value?.title === 'Conformance task page', `task.completed output: ${JSON.stringify(event.data.output)}`);

        const legacy = await call('executeTask', {}, { taskId, inputs: { url } });
        t.assert(answer(t, legacy).status === 200, `legacy run: ${show(legacy)}`);
        const executionId = (legacy.response!.json as { data: { executionResultId: string } }).data.executionResultId;
        const [legacyEvent] = await waitEvents(r.events, (e) => e.data.execution_id === executionId);
        t.assert(legacyEvent, `no task event for the legacy execution ${executionId}`);
        t.assert(!('run_id' in legacyEvent.data), `a legacy run's event carries run_id ${legacyEvent.data.run_id}`);
        t.note(`run ${runId}: ${event.type}; legacy execution ${executionId}: ${legacyEvent.type} without run_id`);
      } finally {
        await deleteTask(taskId);
      }
    }),

    check('T5 GET /v2/tasks/runs/{runId}/status follows a run from queued or running to its end, with its result or its error', async (t: T) => {
      const taskId = await deployed(t, `export default async function run(ctx: any) {\n  throw new Error('T5 fails on purpose');\n}\n`);
      try {
        const ex = await call('runTask', { taskId }, { input_params: {} });
        t.assert(answer(t, ex).status === 200, `run: ${show(ex)}`);
        const runId = (ex.response!.json as { run_id: string }).run_id;
        const first = await status(t, runId);
        t.assert(first.run_id === runId, `the status names run ${first.run_id}`);
        const end = await waitEnd(t, runId);
        t.assert(
          end.status === 'failure' && typeof end.error === 'string' && end.error.includes('T5 fails on purpose'),
          `the failed run reads ${JSON.stringify(end)}`,
        );
        const unknown = await call('getTaskRunStatus', { runId: '00000000-0000-4000-8000-000000000000' });
        t.assert(answer(t, unknown).status === 404, `an unknown run: ${show(unknown)}`);
      } finally {
        await deleteTask(taskId);
      }
    }),

    check('T6 cancel stops a running run with task.cancelled carrying its run_id; a run that has ended answers 409', async (t: T) => {
      const r = await receive();
      if ('problem' in r) t.fail(r.problem);
      const taskId = await deployed(t, SLOW_TASK);
      try {
        const ex = await call('runTask', { taskId }, { input_params: {} });
        t.assert(answer(t, ex).status === 200, `run: ${show(ex)}`);
        const runId = (ex.response!.json as { run_id: string }).run_id;
        for (const deadline = Date.now() + RUN_WAIT_MS; ; ) {
          const s = await status(t, runId);
          if (s.status === 'running' && s.session_id) break;
          t.assert(s.status === 'queued' || s.status === 'running', `the run ended ${s.status} before it could be cancelled`);
          t.assert(Date.now() < deadline, 'the run did not start');
          await sleep(500);
        }
        const cancel = await call('cancelTaskRun', { runId });
        t.assert(answer(t, cancel).status === 200, `cancel: ${show(cancel)}`);
        conforms(t, 'cancelTaskRun', cancel);
        t.assert((cancel.response!.json as { status: string }).status === 'cancelled', `cancel answered ${show(cancel)}`);
        t.assert((await status(t, runId)).status === 'cancelled', 'the status is not cancelled after the cancel');
        const [event] = await waitEvents(r.events, (e) => e.data.run_id === runId);
        t.assert(event?.type === 'task.cancelled', `the run's event is ${event?.type ?? 'missing'}`);
        const again = await call('cancelTaskRun', { runId });
        t.assert(answer(t, again).status === 409, `a second cancel: ${show(again)}`);
      } finally {
        await deleteTask(taskId);
      }
    }),

    check('T7 selfHealing: off by default, set by update and shown by get as the contract says; an unknown publish mode answers 400', async (t: T) => {
      const taskId = await newTask(t);
      try {
        const created = await call('getTask', { taskId });
        conforms(t, 'getTask', created);
        const initial = (created.response!.json as { data: { selfHealing?: { enabled: boolean } } }).data.selfHealing;
        t.assert(initial?.enabled === false, `a new task's selfHealing is ${JSON.stringify(initial)}, not off`);
        const on = await call('updateTask', { taskId }, { selfHealing: { enabled: true, publish: 'deploy' } });
        t.assert(answer(t, on).status === 200, `update: ${show(on)}`);
        conforms(t, 'updateTask', on);
        const read = await call('getTask', { taskId });
        const shown = (read.response!.json as { data: { selfHealing?: { enabled: boolean; publish?: string } } }).data.selfHealing;
        t.assert(shown?.enabled === true && shown.publish === 'deploy', `after the update, get shows ${JSON.stringify(shown)}`);
        const bad = await call('updateTask', { taskId }, { selfHealing: { enabled: true, publish: 'sometimes' } });
        t.assert(answer(t, bad).status === 400, `an unknown publish mode: ${show(bad)}`);
      } finally {
        await deleteTask(taskId);
      }
    }),
  ];
});
