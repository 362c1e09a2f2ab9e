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
// child unused for WARM_IDLE_MS is ended, and `close()` ends them all (warm-pool.ts).
//
// This module is the facade: which child serves a run (warm, cold, or prepared ahead for
// one endpoint) and the sandboxes' retirement; a run itself is run.ts's.
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
import { missingTools } from './jail.js';
import { startJailed, sweepStaleDirs, type Jailed } from './jailed.js';
import { DEFAULT_MEMORY_MB, runOnce } from './run.js';
import { checkTypeScript } from './transpile.js';
import type { SandboxArtifact, SandboxErrorType, SandboxIntervention, SandboxLogLine, SandboxOutcome, SandboxRequest } from './types.js';
import { WarmChildren } from './warm-pool.js';

export { checkTypeScript };
export { DEFAULT_MEMORY_MB, DEFAULT_OUTPUT_MAX_BYTES } from './run.js';
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

/** Cheap: nothing starts until the first run (which also starts the warm children). */
export function createSandbox(d: { config: ServiceConfig; log: Logger }): Sandbox {
  const missing = missingTools();
  if (missing) d.log.warn({ missing }, 'user code cannot run: the sandbox is not available');
  const log = d.log;
  const warm = new WarmChildren({ size: missing ? 0 : d.config.sandboxWarm, memoryMb: DEFAULT_MEMORY_MB, log });
  let closed = false;

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
    const child = memoryMb === DEFAULT_MEMORY_MB ? warm.take() : undefined;
    // The next one starts now: it competes for the CPU with this run (its connect measured
    // 60-110 ms instead of 40), but started after the run it would rarely be ready for the
    // next (measured: most back-to-back runs then started cold).
    warm.refill();
    return child ?? startJailed(memoryMb, log);
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
      await Promise.all([warm.close(), ...[...prepared].map((j) => (prepared.delete(j), j.dispose()))]);
      await settled();
    },
  };
}
