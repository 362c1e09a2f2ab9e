// The command line that puts the child in its jail. Why bubblewrap: Node's --permission
// model is documented as no boundary against malicious code, and isolated-vm cannot hold a
// Playwright page; an OS sandbox can. bwrap gives the child new user, pid, network, IPC,
// UTS and cgroup namespaces (--unshare-all), so it sees only its own processes in /proc and
// has only a loopback of its own; a filesystem made of read-only binds of what node and
// playwright-core need (/usr and the lib links, the playwright-core package, the run's
// directory) and a small tmpfs /tmp: no /etc (no passwd), no /work, no DATA_DIR, no /root;
// no capabilities; its own session (no TIOCSTI into a terminal); killed with its parent.
//
// Limits, outside bwrap so the child cannot raise them: prlimit sets RLIMIT_AS (memory, on
// top of node's own --max-old-space-size which reports a clean out-of-memory first),
// RLIMIT_NPROC (processes and threads: a fork bomb meets EAGAIN) and RLIMIT_FSIZE. When the
// server runs as root, setpriv moves the child to a uid of its own per run: RLIMIT_NPROC
// counts per uid, and root is exempt from it; an unprivileged uid also owns no file.
import { accessSync, constants, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, posix } from 'node:path';
import { isRunning, listPids } from '../browser/procfs.js';
import { INSIDE } from './protocol.js';

export const BWRAP = '/usr/bin/bwrap';
const PRLIMIT = '/usr/bin/prlimit';
const SETPRIV = '/usr/bin/setpriv';

/** What is missing for a sandbox on this machine, or undefined when nothing is. */
export function missingTools(): string | undefined {
  const needed = [BWRAP, PRLIMIT, ...(process.getuid?.() === 0 ? [SETPRIV] : [])];
  const missing = needed.filter((file) => {
    try {
      accessSync(file, constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
  return missing.length ? `missing ${missing.join(', ')} (Debian packages bubblewrap, util-linux)` : undefined;
}

let playwrightDir: string | undefined;
function playwrightCoreDir(): string {
  playwrightDir ??= realpathSync(dirname(createRequire(import.meta.url).resolve('playwright-core/package.json')));
  return playwrightDir;
}

// Uids handed to runs, from a range no distribution gives to accounts; the start is random
// so that two servers on one machine rarely share one (they would share a process limit).
const UID_BASE = 200_000;
const UID_SPAN = 60_000;
let nextUid = Math.floor(Math.random() * UID_SPAN);
function runUid(): number {
  nextUid = (nextUid + 1) % UID_SPAN;
  return UID_BASE + nextUid;
}

/** A user's processes, each with its threads, and whether it has ended (a zombie, not yet reaped). */
function processesOfUser(uid: number): { pid: number; threads: number; ended: boolean }[] {
  const found: { pid: number; threads: number; ended: boolean }[] = [];
  for (const pid of listPids()) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) !== uid) continue;
      found.push({ pid, threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1), ended: /^State:\s+[ZX]/m.test(status) });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Threads of a user's processes: what RLIMIT_NPROC counts (a zombie's until it is reaped). */
function tasksOfUser(uid: number): number {
  return processesOfUser(uid).reduce((n, p) => n + p.threads, 0);
}

/**
 * The live processes of one jail: those of its uid when it has one of its own, else those
 * whose mounts name its directory (bound into the jail, so every process inside sees it).
 */
export function jailProcesses(runDir: string, uid: number | undefined): number[] {
  if (uid !== undefined) return processesOfUser(uid).flatMap((p) => (p.ended ? [] : [p.pid]));
  let bound: string;
  try {
    bound = ` ${pathInFilesystem(realpathSync(runDir))} `;
  } catch {
    return []; // the directory is gone: so is every mount of it
  }
  return listPids().filter((pid) => {
    if (pid === process.pid || !isRunning(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/mountinfo`, 'latin1').includes(bound);
    } catch {
      return false;
    }
  });
}

const unescapeMount = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));

/**
 * A directory as a bind mount of it shows in mountinfo (its fourth field, the mount's root):
 * its path within its own filesystem. /tmp/sbx-1 on the root filesystem, but /sbx-1 when
 * /tmp is a tmpfs of its own, as many systems mount it.
 */
export function pathInFilesystem(dir: string): string {
  let best = { point: '/', root: '/' };
  for (const line of readFileSync('/proc/self/mountinfo', 'latin1').split('\n')) {
    const f = line.split(' ');
    if (f.length < 5) continue;
    const point = unescapeMount(f[4]!);
    const inside = point === '/' || dir === point || dir.startsWith(`${point}/`);
    if (inside && point.length >= best.point.length) best = { point, root: unescapeMount(f[3]!) };
  }
  return posix.join(best.root, best.point === '/' ? dir : dir.slice(best.point.length));
}

export interface JailLimits {
  memoryMb: number;
}

/** Node's heap takes memoryMb (--max-old-space-size: a clean "heap out of memory" first);
 * RLIMIT_AS bounds everything else (Buffers, wasm, native). Measured on Node 20 with
 * Playwright connected and a screenshot taken: 2.07 GB of address space mapped (code
 * space, stacks, reservations) for about 100 MB resident, whatever the heap limit; so the
 * OS limit is memoryMb above a base a little over that measure. */
const ADDRESS_SPACE_BASE_MB = 2300;
/** Node's own threads (11 measured) and a few children; a fork bomb stops here. */
const MAX_PROCESSES = 64;
const MAX_FILE_BYTES = 64 * 1024 * 1024;
const TMP_BYTES = 64 * 1024 * 1024;

/** The command, and the uid the child runs as when it is not the server's. */
export function jailCommand(runDir: string, limits: JailLimits): { file: string; args: string[]; uid: number | undefined } {
  const node = realpathSync(process.execPath);
  const nodeInside = node.startsWith('/usr/') ? node : '/run/bin/node';
  const root: string[] = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64']) {
    try {
      const stat = lstatSync(top);
      if (stat.isSymbolicLink()) root.push('--symlink', realpathSync(top).replace(/^\//, ''), top);
      else if (stat.isDirectory()) root.push('--ro-bind', top, top);
    } catch {
      // Not on this system.
    }
  }
  if (nodeInside !== node) root.push('--ro-bind', node, nodeInside);
  const bwrap = [
    BWRAP,
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    'sandbox',
    ...root,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(TMP_BYTES),
    '--tmpfs',
    '/tmp',
    '--ro-bind',
    runDir,
    INSIDE.root,
    '--ro-bind',
    playwrightCoreDir(),
    `${INSIDE.nodeModules}/playwright-core`,
    '--chdir',
    '/tmp',
    // The only variable: Playwright asks for a home directory (and there is no passwd to find one).
    '--setenv',
    'HOME',
    '/tmp',
    '--',
    nodeInside,
    `--max-old-space-size=${limits.memoryMb}`,
    '--enable-source-maps',
    // WebAssembly (undici's HTTP parser, under Playwright's connection) otherwise reserves
    // 10 GB of address space per memory for guard pages, which RLIMIT_AS forbids; explicit
    // bounds checks instead cost a little speed in wasm code only.
    '--disable-wasm-trap-handler',
    INSIDE.runner,
  ];
  const uid = process.getuid?.() === 0 ? runUid() : undefined;
  // Without a uid of its own the child shares the server's count of processes (Chromium's
  // included), so its limit is what the server's user runs now plus the run's allowance.
  const nproc = uid === undefined ? tasksOfUser(process.getuid?.() ?? -1) + MAX_PROCESSES : MAX_PROCESSES;
  const drop = uid === undefined ? [] : [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--'];
  return {
    uid,
    file: PRLIMIT,
    args: [
      `--as=${(limits.memoryMb + ADDRESS_SPACE_BASE_MB) * 1024 * 1024}`,
      `--nproc=${nproc}`,
      `--fsize=${MAX_FILE_BYTES}`,
      '--core=0',
      '--',
      ...drop,
      ...bwrap,
    ],
  };
}
