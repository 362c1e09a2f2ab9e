// One task run, from its claim to its recorded outcome: the run's session (its own, made
// from the version's browserConfiguration, or the running session it was given), the code
// in the sandbox against that session's CDP endpoint, the artifacts moved into storage, the
// session ended unless the run was told to keep it, and the outcome with its event.
//
// Outcomes (the contract's TaskExecutionError types): an error thrown by the task code →
// automation_failure; the time limit → timeout; a fault of the sandbox or the server →
// system_error; an identity login that failed → invalid_credentials; a cancel →
// task.cancelled. A session that could not be created fails the run with the reason.
//
// ctx.requestIntervention asks a person through the interventions service, for the run's
// session: the run waits (its time limit running) and a cancel withdraws the request.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { Signals } from '../capability/index.js';
import type { NodeLoad, SessionLifecycle, SessionUrls, WarmSource } from '../sessions/index.js';
import type { RecordingLinkService } from '../recording/index.js';
import type { PreparedSandbox, Sandbox, SandboxOutcome } from '../sandbox/index.js';
import type { Interventions } from '../interventions/index.js';
import { within } from '../browser/procfs.js';
import { priceTable, sessionCredits } from '../credits/prices.js';
import type { ArtifactLinks } from './artifact-links.js';
import { runTimeoutMs, sessionBody } from './configuration.js';
import { taskEvent } from './events.js';
import * as queue from './queue-store.js';
import type { FailureScene, TaskHealer } from './healing.js';
import type { WarmPairs } from './warm-pair.js';

export interface RunDeps {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: NodeLoad & SessionLifecycle & SessionUrls & WarmSource;
  sandbox: Sandbox;
  /** Heard: the session's end recorded (its credits), the outcome's first delivery attempt;
   *  told: the outcome's event written. */
  signals: Pick<Signals, 'endRecorded' | 'deliveryAttempted' | 'deliveriesWritten'>;
  /** The warm pair a run whose configuration the pool's browser serves takes (absent: none). */
  warm?: Pick<WarmPairs, 'take' | 'fill'>;
  artifacts: ArtifactLinks;
  recordingLinks: RecordingLinkService;
  interventions: Pick<Interventions, 'ask'>;
  healer: Pick<TaskHealer, 'capture' | 'heal'>;
}

/** Why a run was stopped from outside: the API's cancel, or the server's shutdown. */
export type StopReason = 'cancel' | 'shutdown';

/** A run with no time limit (max_duration -1) still ends: the server's ceiling. */
const RUN_CEILING_MS = 24 * 3_600_000;
/** How long a completed run waits for its session's recording to be stored, for recording_url. */
const RECORDING_WAIT_MS = 30_000;
/** How often a run ending its session reads the session's row, besides the announcement. */
const END_LOOK_MS = 250;
/** The longest a run's ended session holds its browser's teardown, from the session's end (see executeRun). */
const TEARDOWN_HOLD_MAX_MS = 2_000;
/** Lines of the task's log kept on the execution. */
const MAX_LOG_LINES = 1_000;

type Failure = { type: queue.ErrorType; message: string; rootCause: string };

/** Where a run's artifacts wait until the run ends (in DATA_DIR, so storing them is a rename). */
export function runDir(config: Pick<ServiceConfig, 'dataDir'>, executionId: string): string {
  return join(config.dataDir, 'task-runs', executionId);
}

export async function executeRun(d: RunDeps, row: queue.ClaimedRow, signal: AbortSignal): Promise<'ended' | 'requeued'> {
  const started = Date.now();
  const workDir = runDir(d.config, row.id);
  let sessionId: string | null = row.own_session ? null : row.session_id;
  let outcome: queue.Outcome;
  let logs: queue.LogLine[] = [];
  let healing: FailureScene | undefined;
  /** Whether the run stored artifacts (else it has none to list). */
  let kept = false;
  /** The warm pair's sandbox, when the run's session is the pair's browser. */
  let prepared: PreparedSandbox | undefined;
  let usedPair = false;
  /** The run's own session's end, started the moment its code succeeded (see onSuccess). */
  let ending: ReturnType<typeof settle> | undefined;
  // The run's own session is recorded as ended at once, and its browser (frozen meanwhile)
  // is torn down once the run's outcome is out: recorded, and its event's first delivery
  // attempt ended (Signals.deliveryAttempted). Killing Chromium and removing its root took both
  // cores for 50-140 ms (measured on 2 cores), and the end's and the outcome's transactions
  // and the event's claim and request waited behind it. Held at most TEARDOWN_HOLD_MAX_MS.
  let isOut!: () => void;
  const outcomeOut = new Promise<void>((resolve) => (isOut = resolve));
  /** Resolves once the outcome is out (its event's first attempt ended, or it has none to wait for). */
  let out: Promise<void> = Promise.resolve();
  try {
    const session = await openSession(d, row, signal);
    if (session !== 'requeue' && !('failure' in session)) prepared = session.prepared;
    usedPair = prepared !== undefined;
    if (session === 'requeue') {
      await queue.release(d.db, row.id);
      return 'requeued';
    }
    if ('failure' in session) {
      outcome = { status: 'failure', error: session.failure };
    } else {
      sessionId = session.id;
      d.log.debug({ executionId: row.id, sessionId, ms: Date.now() - started, warmPair: prepared !== undefined }, 'task run: its session is ready');
      if (signal.aborted) {
        outcome = stopped(signal);
      } else {
        const result = await (prepared ?? d.sandbox).run({
          kind: 'task',
          code: session.code,
          cdpUrl: session.cdpUrl,
          input: row.input,
          timeoutMs: timeLeft(row, session.createdAt),
          artifactsDir: join(workDir, 'artifacts'),
          signal,
          onIntervention: (q, ended) => d.interventions.ask({ id: session.id, projectId: row.project_id }, { ...q, signal: AbortSignal.any([signal, ended]) }),
          // The code succeeded and its sandbox is killed: the session it ends with is ended
          // now, while the sandbox's processes go and its output is read to the end, not
          // after (the session's end and the sandbox's teardown each took 10-30 ms).
          onSuccess: () => {
            if (row.own_session && row.cleanup_sessions) ending ??= settle(d, row, session.id, { status: 'success', output: {} }, 0, outcomeOut);
          },
        });
        logs = result.logs.slice(-MAX_LOG_LINES);
        outcome = signal.aborted && !result.ok ? stopped(signal) : toOutcome(result);
        // Self-healing needs the page as the failure left it: taken now, before the session ends.
        if (outcome.status === 'failure' && outcome.error.type === 'automation_failure') healing = await d.healer.capture(row, session.cdpUrl);
        if (result.artifacts.length > 0) {
          kept = true;
          await d.artifacts.keep(row, result.artifacts);
        }
      }
    }
  } catch (err) {
    d.log.error({ err, executionId: row.id }, 'task run: system error');
    outcome = {
      status: 'failure',
      error: { type: 'system_error', message: 'The server could not run the task', rootCause: (err as Error).message ?? String(err) },
    };
  } finally {
    // Not run on (cancelled first, a failure): gone with the run. After a run: a no-op.
    void prepared?.dispose();
  }
  try {
    const durationMs = Date.now() - started;
    // The session's end, and the artifacts' links with the work directory's removal, together:
    // neither waits on the other.
    const [{ costCredits, recordingUrl }, artifacts] = await Promise.all([
      ending ?? settle(d, row, sessionId, outcome, durationMs, outcomeOut),
      (kept ? d.artifacts.list(row.id) : Promise.resolve([])).then(async (links) => {
        // The artifacts are in storage now: nothing of the run stays in DATA_DIR once it is reported.
        await rm(workDir, { recursive: true, force: true }).catch(() => {});
        return links;
      }),
    ]);
    const finished = await queue.finish(d.db, d.signals, row.id, { outcome, durationMs, costCredits, logs, sessionId }, (r) =>
      taskEvent(r, { artifacts, recordingUrl }, d.config.publicUrl),
    );
    if (finished && finished.event.deliveries > 0) out = d.signals.deliveryAttempted.next(finished.event.id, TEARDOWN_HOLD_MAX_MS);
    // The outcome and task.failed are recorded: healing goes on in the background.
    if (finished && healing) d.healer.heal(finished.row, healing);
    d.log.info({ executionId: row.id, status: outcome.status, durationMs, warmPair: usedPair }, 'task run ended');
  } finally {
    // The next pair is built once this run is out, not during it: building one starts a
    // sandbox (a Node process loading Playwright) and takes a browser the pool then
    // replaces, CPU the run's code competed with (measured on 2 cores: its first page load
    // took 300-400 ms beside it, 155-185 ms without), and the event's delivery after it.
    void out.then(() => {
      isOut();
      d.warm?.fill();
    });
  }
  return 'ended';
}

/**
 * The run's cost, and its recording's link. The run's own session is ended now unless it is
 * to be kept, and its settled credits are the cost; a kept session is charged when it ends,
 * and the run's share is its time, as in a session it was given.
 */
async function settle(
  d: RunDeps,
  row: queue.ExecutionRow,
  sessionId: string | null,
  outcome: queue.Outcome,
  durationMs: number,
  teardownAfter: Promise<unknown>,
): Promise<{ costCredits: number; recordingUrl?: string }> {
  if (!sessionId) return { costCredits: 0 };
  if (!row.own_session || !row.cleanup_sessions) return { costCredits: sessionCredits({ durationMs, proxyBytes: 0, screenshots: 0 }, priceTable(d.config)) };
  let costCredits = 0;
  try {
    const recording = row.browser_configuration.recording?.active ?? true;
    // A recording is stored by the session's ended hooks, after its browser's teardown, and
    // the outcome waits for its link: a recorded session is torn down at once, as before.
    costCredits = await endSession(d, sessionId, recording ? undefined : within(teardownAfter, TEARDOWN_HOLD_MAX_MS));
    if (!recording) return { costCredits };
    return { costCredits, recordingUrl: await primaryRecording(d, row.project_id, sessionId, outcome.status === 'success' ? RECORDING_WAIT_MS : 0) };
  } catch (err) {
    d.log.error({ err, executionId: row.id, sessionId }, 'task run: could not end its session');
    return { costCredits };
  }
}

/** createdAt: when the run's own session was asked for (undefined for a session it was given). */
type OpenedSession =
  | { id: string; cdpUrl: string; code: string; createdAt: number | undefined; prepared?: PreparedSandbox }
  | { failure: Failure; id?: undefined };

async function openSession(d: RunDeps, row: queue.ClaimedRow, signal: AbortSignal): Promise<OpenedSession | 'requeue'> {
  if (row.version_code === null)
    return { failure: { type: 'system_error', message: 'The task version is gone', rootCause: 'The version was removed before the run started' } };
  const code = Buffer.from(row.version_code, 'base64').toString('utf8');
  if (!row.own_session) {
    const s = row.session_id ? await queue.sessionFacts(d.db, row.session_id) : undefined;
    if (!s || s.status !== 'running') {
      return {
        failure: {
          type: 'automation_failure',
          message: 'The session given to the run is not running',
          rootCause: `Session ${row.session_id} ended before the run started`,
        },
      };
    }
    return { id: row.session_id!, cdpUrl: d.sessions.cdpUrl(row.session_id!, s.cdp_token), code, createdAt: undefined };
  }
  const identity = row.identity_id ? { id: row.identity_id, skipValidation: row.identity_skip_validation } : undefined;
  const body = sessionBody(row.browser_configuration, identity);
  // The warm pair, for a configuration its browser serves exactly; any other takes the usual
  // path. create() makes the whole check (a capability may need a cold launch for the
  // project: client certificates), and ends the pair's browser if it does not serve.
  const pair = d.warm && d.sessions.reservedFits(body) ? d.warm.take() : undefined;
  const createdAt = Date.now();
  let created: Awaited<ReturnType<RunDeps['sessions']['create']>>;
  try {
    created = await d.sessions.create({ projectId: row.project_id, apiKeyId: row.api_key_id }, body, {
      internal: true,
      ...(pair ? { reserved: pair.reservedId } : {}),
    });
  } catch (err) {
    void pair?.sandbox.dispose();
    throw err;
  }
  // Not made on the pair's browser (create ended that browser): its sandbox goes too.
  const prepared = pair && created.ok && created.onReserved ? pair.sandbox : undefined;
  if (pair && !prepared) void pair.sandbox.dispose();
  if (!created.ok) {
    // No free browser after all: the run waits in the queue for one.
    if (created.status === 429 && !signal.aborted) return 'requeue';
    const message = `The run's session could not be created: ${created.message}`;
    if (identity && /credential|password|log ?in|sign ?in|authenticat/i.test(created.message) && created.status === 400) {
      return { failure: { type: 'invalid_credentials', message, rootCause: created.message } };
    }
    return { failure: { type: created.status === 400 ? 'automation_failure' : 'system_error', message, rootCause: created.message } };
  }
  try {
    await queue.setSession(d.db, row.id, created.id);
  } catch (err) {
    void prepared?.dispose();
    throw err;
  }
  return { id: created.id, cdpUrl: created.cdpUrl, code, createdAt, ...(prepared ? { prepared } : {}) };
}

/**
 * The run's time limit: the configuration's max_duration. The run's own session has the
 * same maximum duration, counted from its creation: the code is stopped a second before the
 * session would be, so that running out of time reads as a timeout, not as a browser gone.
 */
function timeLeft(row: queue.ExecutionRow, sessionCreatedAt: number | undefined): number {
  const limit = runTimeoutMs(row.browser_configuration, RUN_CEILING_MS);
  if (sessionCreatedAt === undefined) return limit;
  return Math.max(1_000, limit - (Date.now() - sessionCreatedAt) - 1_000);
}

function stopped(signal: AbortSignal): queue.Outcome {
  return (signal.reason as StopReason) === 'shutdown'
    ? {
        status: 'failure',
        error: { type: 'system_error', message: 'The server shut down during the run', rootCause: 'The server was stopped while the task ran' },
      }
    : { status: 'cancelled', message: 'Cancelled' };
}

function toOutcome(r: SandboxOutcome): queue.Outcome {
  if (r.ok) return { status: 'success', output: asOutput(r.value) };
  const e = r.error;
  const where = e.line !== undefined ? ` (line ${e.line})` : '';
  const failure = { message: `${e.message}${where}`, rootCause: e.rootCause ?? e.message };
  switch (e.type) {
    case 'timeout':
      return { status: 'timeout', error: { type: 'timeout', ...failure } };
    case 'automation_failure':
      return { status: 'failure', error: { type: 'automation_failure', ...failure } };
    case 'cancelled':
      return { status: 'cancelled', message: e.message };
    default:
      return { status: 'failure', error: { type: 'system_error', ...failure } };
  }
}

/** The output as a JSON object: an object as it is, anything else as {result}, nothing as {}. */
export function asOutput(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return value === null ? { result: null } : {};
  if (typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  return { result: value };
}

/**
 * Ends the run's session and answers its settled credits. The end is recorded (credits
 * settled) before the browser's teardown finishes; the outcome need not wait for the
 * teardown, which goes on (the server's shutdown waits for it as for any session's end).
 * The recording is announced in-process the moment it commits (polling the row every
 * 25 ms cost a run 12 ms on average); the row is still read now and then, for an end
 * recorded some other way.
 */
async function endSession(d: RunDeps, sessionId: string, teardownAfter: Promise<unknown> | undefined): Promise<number> {
  let announce!: (credits: number) => void;
  const announced = new Promise<number>((resolve) => (announce = resolve));
  const unsubscribe = d.signals.endRecorded.on(sessionId, (row) => announce(Number(row.credits_used ?? 0)));
  try {
    const ending = d.sessions.end(sessionId, 'completed', 'api', teardownAfter ? { teardownAfter } : {});
    ending.catch((err: unknown) => d.log.error({ err, sessionId }, 'task run: its session did not end cleanly'));
    const ended = ending.then(
      () => 'ended' as const,
      () => 'ended' as const,
    );
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([announced, ended, new Promise<'look'>((r) => (timer = setTimeout(() => r('look'), END_LOOK_MS)))]);
      clearTimeout(timer);
      if (typeof next === 'number') return next;
      const facts = await queue.sessionFacts(d.db, sessionId);
      if (!facts) return 0;
      if (facts.status !== 'running' && facts.status !== 'starting') return Number(facts.credits_used ?? 0);
      if (next === 'ended') return 0;
    }
  } finally {
    unsubscribe();
  }
}

async function primaryRecording(d: RunDeps, projectId: string, sessionId: string, waitMs: number): Promise<string | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const link = await d.recordingLinks.primaryLink(projectId, sessionId);
    if (link || Date.now() >= deadline) return link;
    await new Promise((r) => setTimeout(r, 250));
  }
}
