// One jailed child and everything that is its own: the temporary directory, the relay's
// socket in it, the process tree, the pipes. Started before its run is known (a warm
// child: Playwright loaded, waiting on stdin); `dispose` leaves nothing of it behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { killAll, killUntilGone } from '../browser/procfs.js';
import { runnerBundle } from './bundle.js';
import { jailCommand, jailProcesses } from './jail.js';
import type { ChildConfig, ChildConnect, ChildMessage, ServerMessage } from './protocol.js';
import { startCdpRelay, type CdpRelay } from './relay.js';

/** The longest message line: an artifact's base64 (artifacts are capped below this). */
export const MAX_LINE_BYTES = 96 * 1024 * 1024;
/** How long a killed sandbox may take to close its pipes before it is given up on. */
const KILL_GRACE_MS = 5000;

export interface JailedListener {
  message(message: ChildMessage): void;
  /** Text the child wrote to stdout or stderr (not through console: that is a message). */
  output(stream: 'stdout' | 'stderr', text: string): void;
  /** A line longer than MAX_LINE_BYTES, or one that is not JSON: the child was killed. */
  garbled(): void;
}

export interface Jailed {
  readonly memoryMb: number;
  /** When the child was spawned. */
  readonly spawnedAt: number;
  /** Resolves when Playwright is loaded and the relay is up; rejects if the child died first. */
  readonly ready: Promise<void>;
  /** Resolves once the sandbox's own processes are gone (its pipes closed). Processes its
   *  code started may still be dying then: `dispose` waits for those too. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stdout and stderr have each brought the run's end mark (the child's last
   *  word follows it): everything the code wrote has been delivered. Never, if it died first. */
  readonly outputEnded: Promise<void>;
  readonly alive: boolean;
  /** Messages and output from now on go to this listener. */
  listen(listener: JailedListener): void;
  /**
   * Binds the relay to this CDP endpoint for good and has the child connect Playwright to it
   * now, before its run is known (a warm pair); resolves once connected, rejects if the
   * child died first. Its run must then be for the same endpoint.
   */
  connect(cdpUrl: string): Promise<void>;
  /** Hands the child its run: the user's module and the settings. */
  start(js: string, config: Omit<ChildConfig, 'cdpPath' | 'endMark'>, cdpUrl: string): Promise<void>;
  /** A line to the running child (after start): stdin stays open for these. */
  send(message: ServerMessage): void;
  kill(): void;
  /** Whether the child keeps the server's process alive: not while it waits unused (a
   * script that forgets `close()` still exits, and the child dies with it), yes in a run. */
  hold(on: boolean): void;
  /** Kills it if it runs, waits until it is gone, removes its directory. */
  dispose(): Promise<void>;
}

/**
 * A server killed mid-run leaves its runs' directories (its sandboxes die with it:
 * --die-with-parent). The first run of a sandbox removes those whose server is gone; the
 * directory's name carries the server's pid.
 */
export async function sweepStaleDirs(log: Logger): Promise<void> {
  try {
    const stale = (await readdir(tmpdir())).filter((name) => {
      const pid = /^sbx-(\d+)-/.exec(name)?.[1];
      return pid !== undefined && Number(pid) !== process.pid && !processExists(Number(pid));
    });
    await Promise.all(stale.map((name) => rm(join(tmpdir(), name), { recursive: true, force: true })));
    if (stale.length) log.info({ count: stale.length }, 'removed directories of sandboxes whose server is gone');
  } catch (err) {
    log.warn({ err }, 'could not sweep old sandbox directories');
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The run's directory is made in the system's temporary directory, which the run's uid
 * must be able to pass through (as it can /tmp) for bwrap to bind it. */
export async function startJailed(memoryMb: number, log: Logger): Promise<Jailed> {
  const runDir = await mkdtemp(join(tmpdir(), `sbx-${process.pid}-`));
  let relay: CdpRelay | undefined;
  let child: ChildProcess;
  const jail = jailCommand(runDir, { memoryMb });
  try {
    relay = await startCdpRelay(join(runDir, 'cdp.sock'));
    await mkdir(join(runDir, 'code'));
    await writeFile(join(runDir, 'runner.cjs'), await runnerBundle());
    if (jail.uid !== undefined) {
      // The run's directory belongs to the run's uid (closed to every other user); the
      // files in it stay the server's, read-only to the child.
      await chown(runDir, jail.uid, jail.uid);
      await chmod(join(runDir, 'cdp.sock'), 0o666);
    }
    child = spawn(jail.file, jail.args, { env: {}, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true });
  } catch (err) {
    await relay?.close().catch(() => {});
    await rm(runDir, { recursive: true, force: true });
    throw err;
  }
  const spawnedAt = Date.now();
  let alive = true;
  let listener: JailedListener | undefined;
  const early: (() => void)[] = [];
  const deliver = (call: (l: JailedListener) => void) => (listener ? call(listener) : early.push(() => call(listener!)));

  const { promise: ready, resolve: markReady, reject: failReady } = milestone();
  const { promise: connected, resolve: markConnected, reject: failConnected } = milestone();
  /** The endpoint the child connected to ahead of its run (connect), if it did. */
  let boundTo: string | undefined;

  const kill = () => {
    if (!alive || !child.pid) return;
    try {
      // The process group of prlimit/setpriv/bwrap; bwrap's own child dies with it
      // (--die-with-parent), and with pid 1 of the namespace, everything in it.
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    let graceTimer: NodeJS.Timeout | undefined;
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      if (!alive) return;
      alive = false;
      clearTimeout(graceTimer);
      failReady(new Error(`the sandbox ended before it was ready (${signal ? `signal ${signal}` : `exit code ${code}`})`));
      failConnected(new Error(`the sandbox ended before it was connected (${signal ? `signal ${signal}` : `exit code ${code}`})`));
      resolve({ code, signal });
    };
    // 'close': every holder of the pipes is gone, so nothing of the sandbox is left.
    child.on('close', done);
    child.on('error', (err) => {
      log.error({ err }, 'sandbox could not start');
      done(null, null);
    });
    child.once('exit', () => {
      graceTimer = setTimeout(() => {
        log.warn({ pid: child.pid }, 'sandbox pipes still open after its process ended');
        done(null, 'SIGKILL');
      }, KILL_GRACE_MS);
      graceTimer.unref();
    });
  });

  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const garbled = () => {
    kill();
    deliver((l) => l.garbled());
  };
  const onLine = (raw: string) => {
    let message: ChildMessage;
    try {
      message = JSON.parse(raw) as ChildMessage;
    } catch {
      return garbled();
    }
    if (message.t === 'ready') return markReady();
    if (message.t === 'connected') return markConnected();
    deliver((l) => l.message(message));
  };
  const messages = child.stdio[3]!;
  messages.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, nl));
      onLine(Buffer.concat(pending).toString('utf8'));
      pending = [];
      pendingBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      pending.push(chunk.subarray(start));
      pendingBytes += chunk.length - start;
      if (pendingBytes > MAX_LINE_BYTES) {
        pending = [];
        pendingBytes = 0;
        garbled();
      }
    }
  });
  messages.on('error', () => {});
  child.stdin!.on('error', () => {});
  // The mark is the run's own and unguessable from outside; code that writes it early only
  // cuts its own output short.
  const endMark = `\u0000end-${randomBytes(12).toString('hex')}\u0000`;
  const marked = (['stdout', 'stderr'] as const).map((stream) => {
    const seen = milestone();
    const watch = markWatch(endMark, (text) => deliver((l) => l.output(stream, text)), seen.resolve);
    child[stream]!.setEncoding('utf8').on('data', watch.push).on('end', watch.flush);
    return seen.promise;
  });
  const outputEnded = Promise.all(marked).then(() => {});

  let disposed: Promise<void> | undefined;
  const jailed: Jailed = {
    memoryMb,
    spawnedAt,
    ready,
    exited,
    outputEnded,
    get alive() {
      return alive;
    },
    listen(next) {
      listener = next;
      for (const call of early.splice(0)) call();
    },
    connect(cdpUrl) {
      if (boundTo !== undefined) return Promise.reject(new Error('the sandbox is connected already'));
      boundTo = cdpUrl;
      const cdpPath = relay!.target(cdpUrl);
      child.stdin!.write(`${JSON.stringify({ t: 'connect', cdpPath } satisfies ChildConnect)}\n`);
      return connected;
    },
    async start(js, config, cdpUrl) {
      // A child connected ahead of its run is bound to that browser: never pointed elsewhere.
      if (boundTo !== undefined && boundTo !== cdpUrl) throw new Error('the sandbox is connected to another browser than the run is for');
      await writeFile(join(runDir, 'code', 'user.mjs'), js);
      const cdpPath = relay!.target(cdpUrl);
      // Not ended: the answers to the code's requests for a person follow on it.
      child.stdin!.write(`${JSON.stringify({ ...config, cdpPath, endMark } satisfies ChildConfig)}\n`);
    },
    send(message) {
      if (alive && child.stdin!.writable) child.stdin!.write(`${JSON.stringify(message)}\n`);
    },
    kill,
    hold(on) {
      const handles = [child, child.stdin, child.stdout, child.stderr, child.stdio[3]] as ({ ref?(): void; unref?(): void } | null)[];
      for (const handle of handles) (on ? handle?.ref : handle?.unref)?.call(handle);
      relay!.hold(on);
    },
    dispose: () =>
      (disposed ??= (async () => {
        kill();
        await exited;
        await reapJail(runDir, jail.uid, log);
        await relay!.close().catch(() => {});
        await rm(runDir, { recursive: true, force: true }).catch((err: unknown) => log.warn({ err, runDir }, 'sandbox directory not removed'));
      })()),
  };
  jailed.hold(false);
  return jailed;
}

/**
 * Waits until no process of the jail is left, killing any still there. The pipes close once
 * the jail's own processes are gone, but what the code started (a fork bomb's sleepers)
 * dies with the pid namespace, which the kernel empties after: seen alive after the pipes
 * closed when the machine was busy.
 */
export async function reapJail(runDir: string, uid: number | undefined, log: Pick<Logger, 'warn'>): Promise<void> {
  const left = await killUntilGone(() => {
    const found = jailProcesses(runDir, uid);
    killAll(found);
    return found;
  }, KILL_GRACE_MS);
  if (left.length > 0) log.warn({ pids: left, runDir }, 'sandbox processes still alive after being killed');
}

/**
 * A moment in the child's life (ready, connected, its last word, its end mark) that it may
 * never reach: settled once, and no unhandled rejection when nobody waits for it.
 */
export function milestone(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * Passes a stream's text on without `mark`, and tells when the mark has gone by. A chunk
 * that ends with what may be the mark's beginning keeps that part until the next chunk.
 */
export function markWatch(mark: string, emit: (text: string) => void, onMark: () => void): { push(text: string): void; flush(): void } {
  let held = '';
  let passed = false;
  const out = (text: string) => text && emit(text);
  return {
    push(text) {
      let s = held + text;
      held = '';
      if (!passed) {
        const at = s.indexOf(mark);
        if (at !== -1) {
          passed = true;
          out(s.slice(0, at));
          out(s.slice(at + mark.length));
          return onMark();
        }
        for (let k = Math.min(mark.length - 1, s.length); k > 0; k--) {
          if (mark.startsWith(s.slice(-k))) {
            held = s.slice(-k);
            s = s.slice(0, -k);
            break;
          }
        }
      }
      out(s);
    },
    flush() {
      out(held);
      held = '';
    },
  };
}
