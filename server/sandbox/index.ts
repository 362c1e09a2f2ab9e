// The runner for user code (tasks, execute-code). User code never runs in the server
// process: each run is a fresh node child inside bubblewrap (jail.ts says what it can and
// cannot reach), with an empty environment and a temporary directory of its own that is
// removed on every end path. Its only way out is the session's CDP endpoint, through a
// relay (relay.ts). It reports over a pipe (protocol.ts); the server enforces the time
// limit, caps the log and the result, and kills the whole sandbox on any end.
//
// Speed: loading Playwright is most of a cold start (300 ms to over 1 s on a busy machine;
// a V8 code cache was measured to save almost nothing, the time is module initialisation),
// so SANDBOX_WARM children are started ahead of runs, each with its own directory, uid
// and relay, and never reused: a run takes one and a new one is started behind it. A warm
// child unused for WARM_IDLE_MS is ended, and `close()` ends them all.
//
// A person asked by the code (ctx.requestIntervention, through req.onIntervention) answers
// on the child's stdin. The time limit keeps running while the code waits: a run is given
// its max_duration whole, whoever it waits for; a run that ends withdraws its requests.
//
// How outcomes are classified, consistently:
//   automation_failure  the code's own doing: a thrown error or rejection (with its line in
//                       the user's source), a syntax error, no default export, a result that
//                       is not JSON or too big, a log over the cap, memory past its limit
//                       (the sandbox worked as meant: the code asked too much)
//   timeout             still running at timeoutMs
//   cancelled           the caller's signal aborted the run
//   system_error        the sandbox or the server failed: spawn, the browser connection, a
//                       child that died without saying why
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config/config.js';
import { writeArtifact } from './artifacts.js';
import { missingTools } from './jail.js';
import { milestone, startJailed, sweepStaleDirs, type Jailed } from './jailed.js';
import { interventionProblem, NO_INTERVENTIONS, type ChildMessage } from './protocol.js';
import { checkTypeScript, transpile } from './transpile.js';
import type { SandboxArtifact, SandboxErrorType, SandboxIntervention, SandboxLogLine, SandboxOutcome, SandboxRequest } from './types.js';

export { checkTypeScript };
export type { SandboxErrorType, SandboxLogLine, SandboxArtifact, SandboxRequest, SandboxOutcome, SandboxIntervention };

/**
 * A sandbox taken ahead of its run and connected (Playwright's connectOverCDP done) to one
 * CDP endpoint, the browser that is to be its run's session: its relay is bound to that
 * endpoint for good. It serves one run, for that endpoint, or is disposed unused.
 */
export interface PreparedSandbox {
  readonly cdpUrl: string;
  /** False once it is gone (died, or ended). */
  readonly alive: boolean;
  /** Resolves once every process of it is gone. */
  readonly exited: Promise<unknown>;
  /** Its one run (req.cdpUrl must be this.cdpUrl, memoryMb the default); it is gone after. */
  run(req: SandboxRequest): Promise<SandboxOutcome>;
  /** Ends it unused, to the last file. */
  dispose(): Promise<void>;
}

export interface Sandbox {
  run(req: SandboxRequest): Promise<SandboxOutcome>;
  /** A sandbox connected now to cdpUrl, for a run later (see PreparedSandbox); rejects
   * (leaving nothing) when it cannot be had or could not connect. */
  prepare(cdpUrl: string): Promise<PreparedSandbox>;
  /** False when this machine cannot sandbox (runs then fail with system_error); see `unavailableReason`. */
  readonly available: boolean;
  /** What it cannot do on this machine, for a clear startup/log message. */
  readonly unavailableReason: string | undefined;
  /** Resolves once the sandboxes of the runs that have ended are gone to the last file: a
   * run's outcome waits for its child to be gone, not for its directory's removal. */
  settled(): Promise<void>;
  /** Ends the warm children (runs in flight finish on their own), and waits for settled(). */
  close(): Promise<void>;
}

export const DEFAULT_MEMORY_MB = 512;
export const DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024;
const ARTIFACTS_MAX_BYTES = 64 * 1024 * 1024;
const ARTIFACTS_MAX_COUNT = 100;
/** A warm child nobody took for this long is ended (and started again by the next run). */
const WARM_IDLE_MS = 120_000;

type Failure = { type: SandboxErrorType; message: string; line?: number; rootCause?: string };
type Verdict = { ok: true; value: unknown } | { ok: false; error: Failure };

/** Cheap: nothing starts until the first run (which also starts the warm children). */
export function createSandbox(d: { config: ServiceConfig; log: Logger }): Sandbox {
  const missing = missingTools();
  if (missing) d.log.warn({ missing }, 'user code cannot run: the sandbox is not available');
  const log = d.log;
  const warmSize = d.config.sandboxWarm;
  const warm: { jailed: Jailed; idle: NodeJS.Timeout }[] = [];
  let starting = 0;
  let closed = false;

  const refill = () => {
    while (!closed && !missing && warm.length + starting < warmSize) {
      starting++;
      startJailed(DEFAULT_MEMORY_MB, log).then(
        (jailed) => {
          starting--;
          if (closed) return void jailed.dispose();
          const entry = { jailed, idle: setTimeout(() => drop(entry), WARM_IDLE_MS) };
          entry.idle.unref();
          warm.push(entry);
          let ready = false;
          void jailed.ready.then(
            () => {
              ready = true;
              log.debug('sandbox: a warm child is ready');
            },
            () => {},
          );
          // One that dies while waiting (killed from outside) is cleaned up and replaced;
          // one that died before it was ready is not (no loop of failing starts): the next
          // run starts its own and reports what went wrong.
          void jailed.exited.then(() => {
            if (!warm.includes(entry)) return;
            drop(entry);
            if (ready) refill();
            else log.error('a warm sandbox ended before it was ready; the next run starts cold');
          });
        },
        (err: unknown) => {
          starting--;
          log.error({ err }, 'a warm sandbox could not be started');
        },
      );
    }
  };
  const drop = (entry: (typeof warm)[number]) => {
    const at = warm.indexOf(entry);
    if (at !== -1) warm.splice(at, 1);
    clearTimeout(entry.idle);
    void entry.jailed.dispose();
  };
  // Sandboxes of ended runs whose relay and directory are still being removed.
  const retiring = new Set<Promise<void>>();
  const retire = (jailed: Jailed) => {
    const gone = jailed.dispose();
    retiring.add(gone);
    void gone.finally(() => retiring.delete(gone));
  };
  const settled = async () => {
    while (retiring.size > 0) await Promise.all([...retiring]);
  };
  let swept: Promise<void> | undefined;
  const take = async (memoryMb: number): Promise<Jailed> => {
    await (swept ??= sweepStaleDirs(log));
    if (memoryMb === DEFAULT_MEMORY_MB) {
      const entry = warm.find((e) => e.jailed.alive);
      if (entry) {
        warm.splice(warm.indexOf(entry), 1);
        clearTimeout(entry.idle);
        // The next one starts now: it competes for the CPU with this run (its connect
        // measured 60-110 ms instead of 40), but started after the run it would rarely be
        // ready for the next (measured: most back-to-back runs then started cold).
        refill();
        return entry.jailed;
      }
    }
    refill();
    return startJailed(memoryMb, log);
  };

  // Prepared sandboxes not yet running: close() ends them.
  const prepared = new Set<Jailed>();
  const prepare = async (cdpUrl: string): Promise<PreparedSandbox> => {
    if (missing) throw new Error(`the code sandbox is not available on this server: ${missing}`);
    if (closed) throw new Error('the sandbox is closed');
    const jailed = await take(DEFAULT_MEMORY_MB);
    prepared.add(jailed);
    const dispose = () => {
      prepared.delete(jailed);
      return jailed.dispose();
    };
    try {
      await Promise.race([jailed.ready, jailed.exited.then(() => Promise.reject(new Error('the sandbox ended before it was ready')))]);
      if (closed) throw new Error('the sandbox is closed');
      await jailed.connect(cdpUrl);
    } catch (err) {
      await dispose();
      throw err;
    }
    let used = false;
    return {
      cdpUrl,
      exited: jailed.exited,
      get alive() {
        return jailed.alive && prepared.has(jailed);
      },
      run(req) {
        if (used || !prepared.has(jailed)) throw new Error('a prepared sandbox serves one run');
        if (req.cdpUrl !== cdpUrl || (req.memoryMb ?? DEFAULT_MEMORY_MB) !== DEFAULT_MEMORY_MB)
          throw new Error('a prepared sandbox runs only for its own endpoint, with the default memory');
        used = true;
        prepared.delete(jailed);
        // Also where the run ends before it takes its sandbox (a syntax error, a cancel).
        return runOnce(req, { missing, log, take: () => Promise.resolve(jailed), retire }).finally(() => retire(jailed));
      },
      dispose,
    };
  };

  return {
    available: !missing,
    unavailableReason: missing,
    run: (req) => runOnce(req, { missing, log, take, retire }),
    prepare,
    settled,
    async close() {
      closed = true;
      await Promise.all([
        ...warm.splice(0).map((e) => (clearTimeout(e.idle), e.jailed.dispose())),
        ...[...prepared].map((j) => (prepared.delete(j), j.dispose())),
      ]);
      await settled();
    },
  };
}

async function runOnce(
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
