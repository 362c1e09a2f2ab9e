// The runner for user code (tasks, execute-code). User code never runs in the server
// process: each run is a fresh node child inside bubblewrap (jail.ts says what it can and
// cannot reach), with an empty environment and a temporary directory of its own that is
// removed on every end path. Its only way out is the session's CDP endpoint, through a
// relay (relay.ts). It reports over a pipe (protocol.ts); the server enforces the time
// limit, caps the log and the result, and kills the whole sandbox on any end.
//
// How outcomes are classified, consistently:
//   automation_failure  the code's own doing: a thrown error or rejection (with its line in
//                       the user's source), a syntax error, no default export, a result that
//                       is not JSON or too big, a log over the cap, memory or processes past
//                       the limits (the sandbox worked as meant: the code asked too much)
//   timeout             still running at timeoutMs
//   cancelled           the caller's signal aborted the run
//   system_error        the sandbox or the server failed: spawn, the browser connection, a
//                       child that died without saying why
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config/config.js';
import { runnerBundle } from './bundle.js';
import { jailCommand, missingTools } from './jail.js';
import type { ChildConfig, ChildMessage } from './protocol.js';
import { startCdpRelay, type CdpRelay } from './relay.js';
import { checkTypeScript, transpile } from './transpile.js';
import { writeArtifact } from './artifacts.js';
import type { SandboxArtifact, SandboxErrorType, SandboxLogLine, SandboxOutcome, SandboxRequest } from './types.js';

export { checkTypeScript };

export type { SandboxErrorType, SandboxLogLine, SandboxArtifact, SandboxRequest, SandboxOutcome };

export interface Sandbox {
  run(req: SandboxRequest): Promise<SandboxOutcome>;
  /** False when this machine cannot sandbox (runs then fail with system_error); see `unavailableReason`. */
  readonly available: boolean;
  /** What it cannot do on this machine, for a clear startup/log message. */
  readonly unavailableReason: string | undefined;
}

export const DEFAULT_MEMORY_MB = 512;
export const DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024;
const ARTIFACTS_MAX_BYTES = 64 * 1024 * 1024;
const ARTIFACTS_MAX_COUNT = 100;
/** How long a killed sandbox may take to be gone before the run ends anyway (and says so). */
const KILL_GRACE_MS = 5000;

/** Cheap and stateless: the bootstrap bundle is made once per process, on the first run. */
export function createSandbox(d: { config: ServiceConfig; log: Logger }): Sandbox {
  const missing = missingTools();
  if (missing) d.log.warn({ missing }, 'user code cannot run: the sandbox is not available');
  return {
    available: !missing,
    unavailableReason: missing,
    run: (req) => runOnce(req, missing, d.log),
  };
}

type Failure = { type: SandboxErrorType; message: string; line?: number; rootCause?: string };

async function runOnce(req: SandboxRequest, missing: string | undefined, log: Logger): Promise<SandboxOutcome> {
  const started = Date.now();
  const logs: SandboxLogLine[] = [];
  const artifacts: SandboxArtifact[] = [];
  let sandboxMs = 0;
  const end = (result: { ok: true; value: unknown } | { ok: false; error: Failure }): SandboxOutcome => ({
    ...result,
    logs,
    artifacts,
    durationMs: Date.now() - started,
    sandboxMs,
  });
  if (missing) return end({ ok: false, error: { type: 'system_error', message: `the code sandbox is not available on this server: ${missing}` } });
  if (req.signal?.aborted) return end({ ok: false, error: { type: 'cancelled', message: 'the run was cancelled before it started' } });
  const memoryMb = req.memoryMb ?? DEFAULT_MEMORY_MB;
  const outputMaxBytes = req.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES;

  const code = await transpile(req.code, req.kind);
  if (!code.ok) return end({ ok: false, error: { type: 'automation_failure', message: `syntax error: ${code.message}`, line: code.line } });

  let runDir: string | undefined;
  let relay: CdpRelay | undefined;
  try {
    runDir = await mkdtemp(join(tmpdir(), 'sbx-'));
    relay = await startCdpRelay(join(runDir, 'cdp.sock'), req.cdpUrl);
    const jail = jailCommand(runDir, { memoryMb });
    const childConfig: ChildConfig = {
      kind: req.kind,
      cdpPath: relay.path,
      input: req.input ?? null,
      lineOffset: code.lineOffset,
      outputMaxBytes,
      artifacts: { enabled: req.artifactsDir !== undefined, maxBytes: ARTIFACTS_MAX_BYTES, maxCount: ARTIFACTS_MAX_COUNT },
    };
    await mkdir(join(runDir, 'code'));
    await Promise.all([
      writeFile(join(runDir, 'config.json'), JSON.stringify(childConfig)),
      writeFile(join(runDir, 'runner.cjs'), await runnerBundle()),
      writeFile(join(runDir, 'code', 'user.mjs'), code.js),
    ]);
    if (jail.uid !== undefined) {
      // The run's directory belongs to the run's uid (and stays closed to everyone else);
      // the files in it stay the server's, read-only to the child.
      await chown(runDir, jail.uid, jail.uid);
      await chown(join(runDir, 'code'), jail.uid, jail.uid);
      await chmod(join(runDir, 'cdp.sock'), 0o666);
    } else {
      await chmod(runDir, 0o700);
    }
    return await supervise(log, req, jail, { outputMaxBytes, logs, artifacts, onStart: (ms) => (sandboxMs = ms) }).then(end);
  } catch (err) {
    log.error({ err }, 'sandbox run failed');
    return end({ ok: false, error: { type: 'system_error', message: `the sandbox failed: ${(err as Error).message}` } });
  } finally {
    await relay?.close().catch(() => {});
    if (runDir) await rm(runDir, { recursive: true, force: true }).catch((err: unknown) => log.warn({ err, runDir }, 'sandbox directory not removed'));
  }
}

interface Supervision {
  outputMaxBytes: number;
  logs: SandboxLogLine[];
  artifacts: SandboxArtifact[];
  onStart(sandboxMs: number): void;
}

/** Spawns the jailed child, reads its messages, enforces the limits, and waits until it is gone. */
function supervise(
  log: Logger,
  req: SandboxRequest,
  jail: { file: string; args: string[] },
  s: Supervision,
): Promise<{ ok: true; value: unknown } | { ok: false; error: Failure }> {
  return new Promise((resolve) => {
    const spawnedAt = Date.now();
    const child = spawn(jail.file, jail.args, { env: {}, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], detached: true });
    let verdict: { ok: true; value: unknown } | { ok: false; error: Failure } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let logBytes = 0;
    let stderrTail = '';
    const writes: Promise<void>[] = [];

    const kill = (why: { ok: false; error: Failure }) => {
      verdict ??= why;
      graceTimer ??= setTimeout(() => {
        log.warn({ pid: child.pid }, 'the killed sandbox did not close its pipes in time');
        void finish(null, 'SIGKILL');
      }, KILL_GRACE_MS);
      try {
        // The process group of prlimit/setpriv/bwrap; bwrap's own child dies with it
        // (--die-with-parent), and with that pid 1 of the namespace, everything in it.
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const addLog = (level: SandboxLogLine['level'], message: string) => {
      logBytes += Buffer.byteLength(message) + 1;
      if (logBytes > s.outputMaxBytes) {
        kill({ ok: false, error: { type: 'automation_failure', message: `the log exceeded ${s.outputMaxBytes} bytes; the run was stopped` } });
        return;
      }
      const line: SandboxLogLine = { at: new Date().toISOString(), level, message };
      s.logs.push(line);
      req.onLog?.(line);
    };

    const timer = setTimeout(
      () => kill({ ok: false, error: { type: 'timeout', message: `the code was still running after ${req.timeoutMs} ms and was stopped` } }),
      req.timeoutMs,
    );
    const onAbort = () => kill({ ok: false, error: { type: 'cancelled', message: 'the run was cancelled' } });
    req.signal?.addEventListener('abort', onAbort, { once: true });

    // A line may carry an artifact (base64) or the result: the cap on one line follows.
    const maxLine = Math.max(s.outputMaxBytes * 2 + 1024, Math.ceil((ARTIFACTS_MAX_BYTES * 4) / 3) + 4096);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const onMessage = (raw: string) => {
      let message: ChildMessage;
      try {
        message = JSON.parse(raw) as ChildMessage;
      } catch {
        return kill({ ok: false, error: { type: 'system_error', message: 'the sandbox sent an unreadable message' } });
      }
      switch (message.t) {
        case 'start':
          s.onStart(Date.now() - spawnedAt);
          return;
        case 'log':
          return addLog(['debug', 'info', 'warn', 'error'].includes(message.level) ? message.level : 'info', String(message.message));
        case 'artifact':
          if (!req.artifactsDir) return;
          writes.push(
            writeArtifact(req.artifactsDir, message, s.artifacts, ARTIFACTS_MAX_BYTES).catch((err: unknown) =>
              addLog('error', `artifact ${String(message.name)} not saved: ${(err as Error).message}`),
            ),
          );
          return;
        case 'result':
          if (Buffer.byteLength(JSON.stringify(message.value ?? null)) > s.outputMaxBytes) {
            verdict ??= { ok: false, error: { type: 'automation_failure', message: `the result is over the limit of ${s.outputMaxBytes} bytes` } };
          } else verdict ??= { ok: true, value: message.value ?? null };
          return;
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
          return;
        default:
          return kill({ ok: false, error: { type: 'system_error', message: 'the sandbox sent an unknown message' } });
      }
    };
    const messages = child.stdio[3] as NodeJS.ReadableStream;
    messages.on('data', (chunk: Buffer) => {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        pending.push(chunk.subarray(start, nl));
        onMessage(Buffer.concat(pending).toString('utf8'));
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
      }
      if (start < chunk.length) {
        pending.push(chunk.subarray(start));
        pendingBytes += chunk.length - start;
        if (pendingBytes > maxLine) {
          pending = [];
          kill({ ok: false, error: { type: 'automation_failure', message: `the code's output exceeded the limits; the run was stopped` } });
        }
      }
    });
    messages.on('error', () => {});
    // Writes straight to stdout/stderr (not through console) are log lines too.
    child.stdout!.setEncoding('utf8').on('data', (text: string) => addLog('info', text.replace(/\n$/, '')));
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      stderrTail = (stderrTail + text).slice(-4000);
      addLog('error', text.replace(/\n$/, ''));
    });

    let exited = false;
    const finish = async (code: number | null, signal: NodeJS.Signals | null) => {
      if (exited) return;
      exited = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      req.signal?.removeEventListener('abort', onAbort);
      await Promise.all(writes);
      resolve(verdict ?? diagnose(code, signal, stderrTail));
    };
    child.on('error', (err) => {
      verdict ??= { ok: false, error: { type: 'system_error', message: `the sandbox could not start: ${err.message}` } };
      void finish(null, null);
    });
    // 'close': every holder of the pipes is gone, so nothing of the sandbox is left.
    child.on('close', (code, signal) => void finish(code, signal));
  });
}

/** The child ended without a verdict: say why, as well as its last words allow. */
function diagnose(code: number | null, signal: NodeJS.Signals | null, stderr: string): { ok: false; error: Failure } {
  if (/heap out of memory|Reached heap limit|Cannot allocate memory|std::bad_alloc|Out of memory/i.test(stderr)) {
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
