// A private X display for one headful browser. Each session gets its own Xvfb so OS-level
// input (xdotool) and screen captures of one session can never touch another's windows.
import { spawn } from 'node:child_process';
import { spawnIn, type BrowserGroup } from './cgroup.js';
import { readFileSync, rmSync } from 'node:fs';
import type { Log } from './log.js';
import { isRunning, within } from './procfs.js';

export interface RunningXvfb {
  pid: number;
  /** ":N", the value for DISPLAY. */
  display: string;
  /** Resolves when Xvfb has exited, for any reason. */
  exited: Promise<void>;
  /** SIGTERM (Xvfb then removes its socket), SIGKILL after 2 s; idempotent. */
  stop(): Promise<void>;
}

export interface XvfbOptions {
  xvfbPath: string;
  width: number;
  height: number;
  /** The whole environment of the Xvfb process (it carries the root's marker). */
  env: NodeJS.ProcessEnv;
  log: Log;
  timeoutMs?: number;
  /** The uid (and gid) it runs as, the browser's (browser-user.ts); the server's when undefined. */
  uid?: number;
  /** The browser's control groups, which Xvfb joins (cgroup.ts). */
  group?: BrowserGroup;
}

export async function startXvfb(options: XvfbOptions): Promise<RunningXvfb> {
  const { width, height, log } = options;
  // -displayfd: Xvfb picks a free display number itself and writes it to fd 3 once it
  // accepts connections, so concurrent launches never race for a number and we need no
  // polling. TCP stays off: only local processes may talk to the display. -terminate:
  // when its last client (the browser) is gone, Xvfb exits instead of resetting, so a
  // display never outlives its browser, even when the server was killed.
  const args = ['-displayfd', '3', '-screen', '0', `${width}x${height}x24`, '-nolisten', 'tcp', '-terminate'];
  const command = spawnIn(options.group, options.xvfbPath, args, options.uid);
  const child = spawn(command.command, command.args, {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    detached: true,
    env: options.env,
    ...(command.uid === undefined ? {} : { uid: command.uid, gid: command.uid }),
  });
  const pid = child.pid;
  let stderrTail = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString()).slice(-2000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject));

  const killGroup = (sig: NodeJS.Signals) => {
    if (pid === undefined) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // already gone
    }
  };

  const displayNumber = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    let settled = false;
    const timer = setTimeout(() => fail(new Error(`Xvfb did not report a display within ${options.timeoutMs ?? 10_000} ms`)), options.timeoutMs ?? 10_000);
    // Once the display is known, a later exit is stop()'s business (and the pid may be
    // reaped and reused by then: never signal it from here).
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killGroup('SIGKILL');
      reject(err);
    };
    const fd3 = child.stdio[3] as NodeJS.ReadableStream | null;
    fd3?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const nl = buffered.indexOf('\n');
      if (nl >= 0 && !settled) {
        settled = true;
        clearTimeout(timer);
        resolve(buffered.slice(0, nl).trim());
      }
    });
    spawnError.catch((err: Error) => fail(new Error(`Xvfb could not start (${options.xvfbPath}): ${err.message}`)));
    exited.then(() => fail(new Error(`Xvfb exited before reporting a display: ${stderrTail.trim().slice(-500)}`)));
  }).catch(async (err) => {
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2_000))]);
    throw err;
  });

  const display = `:${displayNumber}`;
  log.debug({ display, pid, width, height }, 'xvfb started');

  let stopping: Promise<void> | undefined;
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;
  const stop = () =>
    (stopping ??= (async () => {
      if (hasExited()) return removeStaleXFiles(displayNumber);
      // Our child: its exit event says when it is gone (polling /proc would add up to a
      // poll interval to every session's end).
      killGroup('SIGTERM');
      if (!(await within(exited, 2_000)) && !hasExited()) {
        killGroup('SIGKILL');
        await within(exited, 2_000);
      }
      removeStaleXFiles(displayNumber);
    })());

  return { pid: pid!, display, exited, stop };
}

/**
 * Xvfb removes its socket /tmp/.X11-unix/X<n> (and /tmp/.X<n>-lock, which it does not
 * create with -displayfd) when it exits cleanly, not when it is SIGKILLed. A later Xvfb
 * copes with stale files, but we leave /tmp as we found it. The files are removed only
 * when no process listens on that display any more (/proc/net/unix), so a display that
 * another server took over since is never touched.
 */
export function removeStaleXFiles(displayNumber: string): void {
  if (!/^\d+$/.test(displayNumber)) return;
  const socket = `/tmp/.X11-unix/X${displayNumber}`;
  let table = '';
  try {
    table = readFileSync('/proc/net/unix', 'utf8');
  } catch {
    return; // cannot tell: leave it
  }
  // Xvfb listens on the path and on the same name in the abstract namespace (@…).
  const listening = table.split('\n').some((line) => line.endsWith(` ${socket}`) || line.endsWith(` @${socket}`));
  if (listening) return;
  rmSync(socket, { force: true });
  const lock = `/tmp/.X${displayNumber}-lock`;
  try {
    if (!isRunning(Number(readFileSync(lock, 'utf8').trim()))) rmSync(lock, { force: true });
  } catch {
    // no lock
  }
}
