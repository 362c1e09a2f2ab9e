// Finding and killing the processes of one browser root through /proc (the runtime is
// Linux: Debian Chromium, Xvfb).
//
// Why not just kill the process groups we spawned: Chromium's crash handler
// (chrome_crashpad_handler) calls setsid() and is reparented to init, so it leaves the
// group; and pids are reused, so a pid written in owner.json by a server that died an hour
// ago may now be someone else's process. A process is therefore ours only if it carries
// the root's marker in its environment (set when we spawn Chromium and Xvfb) or names the
// root directory on its command line (every Chromium process has --user-data-dir=<root>/…
// in argv; zygote-forked children rewrite their environ area with setproctitle, so the
// marker alone would miss them).
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync, readdirSync } from 'node:fs';

/** The environment variable that tags every process started for a root. */
export const MARKER_VARIABLE = 'CLOUD_BROWSER_ROOT_MARKER';

export interface RootIdentity {
  /** Random value of MARKER_VARIABLE given to the root's processes. */
  marker: string;
  /** Absolute path of the root as it was when the processes started. */
  rootDir: string;
}

export interface ProcStat {
  pid: number;
  /** R, S, D, Z, T, X, …: Z is a zombie (exited, not reaped). */
  state: string;
  ppid: number;
  pgid: number;
  /** Clock ticks after boot: with the pid, names one process across pid reuse. */
  startTime: number;
  /** CPU time used so far, user and system, in clock ticks. */
  cpuTicks: number;
  /** Resident set size, in pages. */
  rssPages: number;
}

export function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2 (comm) is parenthesised and may itself contain spaces and ')': fields after it
  // start behind the last ')'. Then: state ppid pgrp session tty tpgid flags minflt
  // cminflt majflt cmajflt utime stime cutime cstime priority nice threads itrealvalue
  // starttime (field 22, index 19 here).
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    state: fields[0] ?? '?',
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    startTime: Number(fields[19]),
    // utime and stime (fields 14 and 15), in clock ticks.
    cpuTicks: Number(fields[11]) + Number(fields[12]),
    // rss (field 24), in pages.
    rssPages: Number(fields[21]),
  };
}

/** USER_HZ: Linux reports times in /proc in this unit on every architecture it runs on. */
const TICKS_PER_SECOND = 100;

/** Resident memory is counted in pages; the page size of the machines we run on (x86-64, arm64 with 4K pages). */
const PAGE_BYTES = 4096;

/**
 * CPU time and resident memory of every live process in these process groups together (a
 * browser's Chromium processes share its group). Memory shared between processes is counted
 * in each, as `ps` does.
 */
export function groupUsage(pgids: ReadonlySet<number>): { cpuSeconds: number; rssBytes: number; processes: number } {
  let ticks = 0;
  let pages = 0;
  let processes = 0;
  if (pgids.size === 0) return { cpuSeconds: 0, rssBytes: 0, processes };
  for (const pid of listPids()) {
    const stat = readStat(pid);
    if (!stat || !pgids.has(stat.pgid) || stat.state === 'Z' || stat.state === 'X') continue;
    ticks += stat.cpuTicks;
    pages += stat.rssPages;
    processes++;
  }
  return { cpuSeconds: ticks / TICKS_PER_SECOND, rssBytes: pages * PAGE_BYTES, processes };
}

/**
 * Whether the process exists and has not exited. Zombies count as exited: orphans are
 * reparented to init, and the init of some containers reaps late or never.
 */
export function isRunning(pid: number, startTime?: number): boolean {
  const stat = readStat(pid);
  if (!stat || stat.state === 'Z' || stat.state === 'X') return false;
  return startTime === undefined || stat.startTime === startTime;
}

export function listPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

function readNulSeparated(path: string): string[] {
  try {
    return readFileSync(path, 'latin1').split('\0');
  } catch {
    return []; // gone, or not ours to read
  }
}

export function belongsToRoot(pid: number, root: RootIdentity): boolean {
  const dirPrefix = root.rootDir.endsWith('/') ? root.rootDir : `${root.rootDir}/`;
  if (readNulSeparated(`/proc/${pid}/cmdline`).some((arg) => arg.includes(dirPrefix))) return true;
  return readNulSeparated(`/proc/${pid}/environ`).includes(`${MARKER_VARIABLE}=${root.marker}`);
}

/** The running processes of a root (never this process). */
export function findRootProcesses(root: RootIdentity): ProcStat[] {
  const found: ProcStat[] = [];
  for (const pid of listPids()) {
    if (pid === process.pid) continue;
    const stat = readStat(pid);
    if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
    if (belongsToRoot(pid, root)) found.push(stat);
  }
  return found;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // ESRCH: already gone
  }
}

/** One pass: SIGKILL every process of the root, whole groups first when we lead them. */
export function killRootProcessesOnce(root: RootIdentity): ProcStat[] {
  const procs = findRootProcesses(root);
  // A verified group leader means the group is ours (a pgid is not reused while its group
  // has members): killing the group first stops zygotes from forking new children.
  for (const p of procs) if (p.pid === p.pgid) signal(-p.pgid, 'SIGKILL');
  for (const p of procs) signal(p.pid, 'SIGKILL');
  return procs;
}

/**
 * Repeats `pass` (one round of SIGKILLs, answering the pids it found) until a pass finds
 * none: a process may fork between two passes, or take a moment to die. Resolves with the
 * pids still found at the deadline: empty on success.
 */
export async function killUntilGone(pass: () => number[], timeoutMs = 5_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = pass();
    if (found.length === 0) return [];
    if (Date.now() > deadline) return found;
    await sleep(50);
  }
}

/** SIGKILLs every process in `pids` (those already gone are skipped). */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) signal(pid, 'SIGKILL');
}

/**
 * SIGKILLs the root's processes until none runs (a zygote may fork between two passes).
 * Resolves with the pids still running at the deadline: empty on success.
 */
export function killRootProcesses(root: RootIdentity, timeoutMs = 5_000): Promise<number[]> {
  return killUntilGone(() => killRootProcessesOnce(root).map((p) => p.pid), timeoutMs);
}

/** Whether `p` settles within `ms` (the timer does not keep the process alive). */
export function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms).unref()));
  return Promise.race([p.then(() => true), late]).finally(() => clearTimeout(timer));
}

/** This process's identity for owner.json: pid plus start time plus boot id. */
let self: { pid: number; startTime: number; bootId: string } | undefined;
export function selfIdentity(): { pid: number; startTime: number; bootId: string } {
  // Cached: a process keeps its identity for life.
  if (self?.pid !== process.pid) self = { pid: process.pid, startTime: readStat(process.pid)?.startTime ?? 0, bootId: bootId() };
  return self;
}

export function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}
