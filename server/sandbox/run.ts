// One run of user code in a jailed child, from its request to its outcome: the code
// transpiled, a child taken, the run handed to it and supervised (its messages read, the
// time limit, the log and result caps, a person's answers), the child killed on every end
// path, and an end without a word diagnosed. Which child, warm or cold, is the caller's
// (index.ts); the outcome's classes are those index.ts's header lists.
import type { Logger } from 'pino';
import { writeArtifact } from './artifacts.js';
import { milestone, type Jailed } from './jailed.js';
import { interventionProblem, NO_INTERVENTIONS, type ChildMessage } from './protocol.js';
import { transpile } from './transpile.js';
import type { SandboxArtifact, SandboxErrorType, SandboxIntervention, SandboxLogLine, SandboxOutcome, SandboxRequest } from './types.js';

export const DEFAULT_MEMORY_MB = 512;
export const DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024;
const ARTIFACTS_MAX_BYTES = 64 * 1024 * 1024;
const ARTIFACTS_MAX_COUNT = 100;

type Failure = { type: SandboxErrorType; message: string; line?: number; rootCause?: string };
type Verdict = { ok: true; value: unknown } | { ok: false; error: Failure };

export async function runOnce(
  req: SandboxRequest,
  d: { missing: string | undefined; log: Logger; take(memoryMb: number): Promise<Jailed>; retire(jailed: Jailed): void },
): Promise<SandboxOutcome> {
  const started = Date.now();
  const logs: SandboxLogLine[] = [];
  const artifacts: SandboxArtifact[] = [];
  let sandboxMs = 0;
  const end = (verdict: Verdict): SandboxOutcome => ({ ...verdict, logs, artifacts, durationMs: Date.now() - started, sandboxMs });
  if (d.missing) return end({ ok: false, error: { type: 'system_error', message: `the code sandbox is not available on this server: ${d.missing}` } });
  if (req.signal?.aborted) return end({ ok: false, error: { type: 'cancelled', message: 'the run was cancelled before it started' } });
  const memoryMb = req.memoryMb ?? DEFAULT_MEMORY_MB;
  const outputMaxBytes = req.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES;
  if (!Number.isInteger(memoryMb) || memoryMb < 64)
    return end({ ok: false, error: { type: 'system_error', message: 'memoryMb must be an integer of at least 64' } });

  const code = await transpile(req.code, req.kind);
  if (!code.ok) return end({ ok: false, error: { type: 'automation_failure', message: `syntax error: ${code.message}`, line: code.line } });

  let jailed: Jailed | undefined;
  try {
    jailed = await d.take(memoryMb);
    jailed.hold(true);
    d.log.debug({ kind: req.kind, warm: jailed.spawnedAt < started }, 'sandbox: a child taken for a run');
    const verdict = await supervise(
      jailed,
      req,
      code,
      outputMaxBytes,
      logs,
      artifacts,
      (ms) => {
        sandboxMs = ms;
        d.log.debug({ kind: req.kind, sandboxMs: ms }, 'sandbox: the code started');
      },
      started,
    );
    return end(verdict);
  } catch (err) {
    d.log.error({ err }, 'sandbox run failed');
    return end({ ok: false, error: { type: 'system_error', message: `the sandbox failed: ${(err as Error).message}` } });
  } finally {
    if (jailed) {
      // Killed before the outcome is told (if it still runs); its processes' end, its relay
      // and its directory come after, which settled() and close() wait for.
      jailed.kill();
      d.retire(jailed);
    }
  }
}

/** Hands the run to the child, reads its messages, enforces the limits, waits until it is gone. */
async function supervise(
  jailed: Jailed,
  req: SandboxRequest,
  code: { js: string; lineOffset: number },
  outputMaxBytes: number,
  logs: SandboxLogLine[],
  artifacts: SandboxArtifact[],
  onStart: (sandboxMs: number) => void,
  started: number,
): Promise<Verdict> {
  let verdict: Verdict | undefined;
  /** The child's last word (result or error) arrived. */
  const lastWord = milestone();
  let userStarted = false;
  let logBytes = 0;
  let stderrTail = '';
  const writes: Promise<void>[] = [];
  // Requests for a person in flight: withdrawn when the run ends, and awaited before it reports.
  const asking = new AbortController();
  const asks: Promise<void>[] = [];
  const stop = (why: Verdict) => {
    verdict ??= why;
    jailed.kill();
  };
  const ask = (id: number, message: Extract<ChildMessage, { t: 'intervention' }>) => {
    const refuse = (why: string) => jailed.send({ t: 'refused', id, message: why });
    const problem = interventionProblem(message);
    if (problem) return refuse(problem);
    const handler = req.onIntervention;
    if (!handler) return refuse(NO_INTERVENTIONS);
    const q: SandboxIntervention = {
      message: message.message,
      inputType: message.input_type,
      ...(message.timeout_seconds !== undefined ? { timeoutMs: Math.round(message.timeout_seconds * 1000) } : {}),
    };
    asks.push(
      Promise.resolve()
        .then(() => handler(q, asking.signal))
        .then(
          (value) => jailed.send({ t: 'answer', id, value: String(value) }),
          (err: unknown) => refuse(err instanceof Error ? err.message : String(err)),
        ),
    );
  };
  const addLog = (level: SandboxLogLine['level'], message: string) => {
    logBytes += Buffer.byteLength(message) + 1;
    if (logBytes > outputMaxBytes) {
      return stop({ ok: false, error: { type: 'automation_failure', message: `the log exceeded ${outputMaxBytes} bytes; the run was stopped` } });
    }
    const line: SandboxLogLine = { at: new Date().toISOString(), level, message };
    logs.push(line);
    req.onLog?.(line);
  };
  const onMessage = (message: ChildMessage) => {
    switch (message.t) {
      case 'start':
        userStarted = true;
        // The sandbox's own cost as this run sees it: from the run's start (a warm child
        // was spawned before) to the user's code starting, the browser connection included.
        onStart(Date.now() - Math.max(started, jailed.spawnedAt));
        return;
      case 'log':
        return addLog(['debug', 'info', 'warn', 'error'].includes(message.level) ? message.level : 'info', String(message.message));
      case 'artifact':
        if (!req.artifactsDir) return;
        writes.push(
          writeArtifact(req.artifactsDir, message, artifacts, ARTIFACTS_MAX_BYTES).catch((err: unknown) =>
            addLog('error', `artifact ${String(message.name)} not saved: ${(err as Error).message}`),
          ),
        );
        return;
      case 'intervention':
        if (!Number.isSafeInteger(message.id)) return stop({ ok: false, error: { type: 'system_error', message: 'the sandbox sent a malformed request' } });
        return ask(message.id, message);
      case 'result': {
        const first = verdict === undefined;
        if (Buffer.byteLength(JSON.stringify(message.value ?? null)) > outputMaxBytes) {
          verdict ??= { ok: false, error: { type: 'automation_failure', message: `the result is over the limit of ${outputMaxBytes} bytes` } };
        } else verdict ??= { ok: true, value: message.value ?? null };
        // The child's last word: it is ended now rather than left to exit on its own (a
        // Node process with Playwright loaded took 5-10 ms to). Its output came before it,
        // up to the end mark (see below).
        jailed.kill();
        lastWord.resolve();
        // A verdict once given stays: the run succeeds with this value.
        if (first && verdict.ok) req.onSuccess?.(verdict.value);
        return;
      }
      case 'error':
        verdict ??= {
          ok: false,
          error: {
            type: message.type === 'system_error' ? 'system_error' : 'automation_failure',
            message: String(message.message),
            ...(typeof message.line === 'number' ? { line: message.line } : {}),
            ...(typeof message.rootCause === 'string' ? { rootCause: message.rootCause } : {}),
          },
        };
        jailed.kill();
        return lastWord.resolve();
      default:
        return stop({ ok: false, error: { type: 'system_error', message: 'the sandbox sent an unknown message' } });
    }
  };
  jailed.listen({
    message: onMessage,
    output(stream, text) {
      if (stream === 'stderr') stderrTail = (stderrTail + text).slice(-4000);
      addLog(stream === 'stderr' ? 'error' : 'info', text.replace(/\n$/, ''));
    },
    garbled: () =>
      stop({ ok: false, error: { type: 'automation_failure', message: "the code's output exceeded the limits or was not readable; the run was stopped" } }),
  });

  const remaining = Math.max(1, req.timeoutMs - (Date.now() - started));
  const timer = setTimeout(
    () => stop({ ok: false, error: { type: 'timeout', message: `the code was still running after ${req.timeoutMs} ms and was stopped` } }),
    remaining,
  );
  const onAbort = () => stop({ ok: false, error: { type: 'cancelled', message: 'the run was cancelled' } });
  req.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // A child that dies before it is ready is diagnosed below from what it wrote.
    await Promise.race([jailed.ready.catch(() => {}), jailed.exited]);
    if (jailed.alive && !verdict) {
      await jailed.start(
        code.js,
        {
          kind: req.kind,
          input: req.input ?? null,
          ...(req.pageTargetId ? { pageTargetId: req.pageTargetId } : {}),
          lineOffset: code.lineOffset,
          outputMaxBytes,
          artifacts: { enabled: req.artifactsDir !== undefined, maxBytes: ARTIFACTS_MAX_BYTES, maxCount: ARTIFACTS_MAX_COUNT },
          interventions: req.onIntervention !== undefined,
        },
        req.cdpUrl,
      );
    }
    // Done at the child's last word once its output has come to the end mark, without
    // waiting for its processes to go (that took 12-24 ms; the run's caller is told the
    // outcome meanwhile, and settled() waits for them); else when they are gone.
    const ended = await Promise.race([jailed.exited, Promise.all([lastWord.promise, jailed.outputEnded]).then(() => undefined)]);
    asking.abort();
    await Promise.all([...writes, ...asks]);
    return verdict ?? diagnose(ended?.code ?? null, ended?.signal ?? null, stderrTail, userStarted);
  } finally {
    asking.abort();
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onAbort);
  }
}

/** The child ended without a verdict: say why, as well as its last words allow. Before the
 * user's code started, whatever happened is the sandbox's. */
function diagnose(code: number | null, signal: NodeJS.Signals | null, stderr: string, userStarted: boolean): Verdict {
  if (userStarted && /heap out of memory|Reached heap limit|Cannot allocate memory|std::bad_alloc|Out of memory/i.test(stderr)) {
    return { ok: false, error: { type: 'automation_failure', message: 'the code ran out of memory and was stopped', rootCause: lastLine(stderr) } };
  }
  return {
    ok: false,
    error: {
      type: 'system_error',
      message: `the sandbox ended without a result (${signal ? `signal ${signal}` : `exit code ${code}`})`,
      ...(stderr ? { rootCause: lastLine(stderr) } : {}),
    },
  };
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter(Boolean).pop()?.slice(0, 500) ?? '';
}
