// Shared by this folder's tests: where Chromium is, temporary browser directories, a
// logger, and checks that nothing of a browser is left.
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readdirSync, readFileSync, statSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Log } from './log.js';
import { silentLog } from './log.js';
import { readOwner, type OwnerRecord } from './owner.js';
import { findRootProcesses, isRunning, listPids, readStat } from './procfs.js';

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * A fresh browsers directory. The cb- prefix is what `pnpm test` checks for leftovers. Short:
 * Chromium's SingletonSocket sits 50 bytes below a root (tmp/org.chromium.Chromium.XXXXXX/),
 * a socket path has 107, and sweep.test.ts nests its roots a level deeper.
 */
/** A folder for browser roots: searchable by others, as each browser's own uid must pass it (browser-user.ts). */
export function tempBrowsersDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cb-bt-'));
  chmodSync(dir, 0o711);
  return dir;
}

/** Silent unless TEST_LOG_LEVEL is set; warnings and errors are kept for assertions. */
export function testLog(): Log & { warnings: string[]; errors: string[] } {
  const warnings: string[] = [];
  const errors: string[] = [];
  const verbose = !!process.env.TEST_LOG_LEVEL && process.env.TEST_LOG_LEVEL !== 'silent';
  const print = (level: string) => (obj: object, msg?: string) => {
    if (verbose) console.log(level, msg ?? '', JSON.stringify(obj));
  };
  return {
    ...silentLog,
    debug: print('debug'),
    info: print('info'),
    warn(obj, msg) {
      warnings.push(msg ?? '');
      print('warn')(obj, msg);
    },
    error(obj, msg) {
      errors.push(msg ?? '');
      print('error')(obj, msg);
    },
    warnings,
    errors,
  };
}

export function ownerOf(rootDir: string): OwnerRecord {
  const owner = readOwner(rootDir);
  if (!owner) throw new Error(`no owner.json in ${rootDir}`);
  return owner;
}

/** Running (not zombie) processes in a process group. */
export function groupMembers(pgid: number): number[] {
  return listPids().filter((pid) => {
    const s = readStat(pid);
    return s !== undefined && s.pgid === pgid && s.state !== 'Z' && s.state !== 'X';
  });
}

/**
 * `read` of each process that still runs as it is read, with its pid: Chromium starts and
 * ends helper processes at any moment, and one that ended between the listing and the read
 * (its /proc entry gone) is no finding.
 */
export function readEach<T extends object>(pids: readonly number[], read: (pid: number) => T): (T & { pid: number })[] {
  return pids.flatMap((pid) => {
    try {
      return [{ pid, ...read(pid) }];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH') return [];
      throw err;
    }
  });
}

/** Everything still running of a root: its marked processes and its recorded groups. */
export function leftovers(owner: OwnerRecord): number[] {
  const pids = new Set<number>(findRootProcesses({ marker: owner.marker, rootDir: owner.rootDir }).map((p) => p.pid));
  for (const pid of owner.pids) if (isRunning(pid)) pids.add(pid);
  for (const pgid of owner.pgids) for (const pid of groupMembers(pgid)) pids.add(pid);
  return [...pids];
}

/** The value of one environment variable of a process, from /proc. */
export function environOf(pid: number, name: string): string | undefined {
  const entry = readFileSync(`/proc/${pid}/environ`, 'latin1')
    .split('\0')
    .find((e) => e.startsWith(`${name}=`));
  return entry?.slice(name.length + 1);
}

export function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Polls until fn() is truthy (or throws at the deadline). */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Which file a path is: inode and change time. */
export interface FileIdentity {
  ino: number;
  ctimeMs: number;
}

/**
 * The X socket of display ":N" (Xvfb with -displayfd makes no lock file), or null when there
 * is none. Xvfb takes the lowest free display number, so the moment one display ends a test
 * file running beside may start another on the same number: a test that the socket of its
 * own display is gone compares identities (`not.toEqual(before)`), never mere existence.
 */
export function xSocket(display: string): FileIdentity | null {
  try {
    const { ino, ctimeMs } = statSync(`/tmp/.X11-unix/X${display.slice(1)}`);
    return { ino, ctimeMs };
  } catch {
    return null;
  }
}
