// What a server process has running and open, read from /proc: its own resident memory and
// file descriptors, and every process that belongs to it (Chromium, Xvfb, ffmpeg), for the
// soak's checks that nothing is left and nothing grows.
import { readFileSync, readdirSync } from 'node:fs';

export interface ServerProcessKinds {
  chromium: number;
  xvfb: number;
  ffmpeg: number;
  other: number;
  /** pid and command name of each, for a failure's message. */
  list: { pid: number; comm: string }[];
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

function pids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

/** Resident memory of one process, in bytes (0 once it has exited). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(read(`/proc/${pid}/status`) ?? '');
  return m ? Number(m[1]) * 1024 : 0;
}

/** Open file descriptors of one process. */
export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/**
 * The processes of a server other than itself: its descendants, and any process that names
 * one of `dirs` on its command line or in its environment. Chromium's crash handler leaves
 * the process tree (setsid, reparented to init) and Xvfb is spawned detached, so the tree
 * alone would miss them; every process the server starts for a browser carries its root
 * (under the server's TMPDIR) in argv or in TMPDIR.
 */
export function serverProcesses(serverPid: number, dirs: string[]): ServerProcessKinds {
  const parent = new Map<number, number>();
  const all = pids();
  for (const pid of all) {
    const stat = read(`/proc/${pid}/stat`);
    if (stat) parent.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
  }
  const descends = (pid: number) => {
    for (let p = parent.get(pid), hops = 0; p !== undefined && p > 1 && hops < 64; p = parent.get(p), hops++) if (p === serverPid) return true;
    return false;
  };
  const out: ServerProcessKinds = { chromium: 0, xvfb: 0, ffmpeg: 0, other: 0, list: [] };
  for (const pid of all) {
    if (pid === serverPid || pid === process.pid) continue;
    const stat = read(`/proc/${pid}/stat`);
    if (!stat || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue; // gone, or a zombie its parent will reap
    const names = () => {
      const text = (read(`/proc/${pid}/cmdline`) ?? '') + '\0' + (read(`/proc/${pid}/environ`) ?? '');
      return dirs.some((d) => text.includes(d));
    };
    if (!descends(pid) && !names()) continue;
    const comm = (read(`/proc/${pid}/comm`) ?? '?').trim();
    if (comm === 'esbuild') continue; // tsx's compiler service, part of the server's runtime
    if (/chrom/i.test(comm)) out.chromium++;
    else if (/xvfb/i.test(comm)) out.xvfb++;
    else if (/ffmpeg/i.test(comm)) out.ffmpeg++;
    else out.other++;
    out.list.push({ pid, comm });
  }
  return out;
}

/** The browser process (not a renderer, GPU or utility child) of the Chromium whose user-data dir is under root. */
export function browserPidOf(root: string): number | undefined {
  for (const pid of pids()) {
    const argv = (read(`/proc/${pid}/cmdline`) ?? '').split('\0');
    if (argv.some((a) => a.startsWith('--user-data-dir=') && a.slice('--user-data-dir='.length).startsWith(root)) && !argv.some((a) => a.startsWith('--type=')))
      return pid;
  }
  return undefined;
}

/** Least-squares slope of y over x, and the fit's value at the first and last x. */
export function linearFit(points: { x: number; y: number }[]): { slope: number; first: number; last: number } {
  const n = points.length;
  if (n < 2) return { slope: 0, first: points[0]?.y ?? 0, last: points[0]?.y ?? 0 };
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.x - mx) * (p.y - my);
    sxx += (p.x - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, first: my + slope * (points[0]!.x - mx), last: my + slope * (points[n - 1]!.x - mx) };
}

/**
 * Least-squares slope of y over x with other quantities held still: y = a + b·x + Σ cᵢ·zᵢ,
 * answering b. Open fds follow what is in flight at each sample (sessions, webhook
 * deliveries); in a short run on a loaded machine a few sessions more at the end than at
 * the start would read as a rise. A z that never changes, or moves with another, drops out.
 */
export function slopeBeside(points: { x: number; y: number; z: number[] }[]): number {
  const k = (points[0]?.z.length ?? 0) + 2;
  const A = Array.from({ length: k }, () => new Array<number>(k).fill(0));
  const B = new Array<number>(k).fill(0);
  for (const p of points) {
    const r = [1, p.x, ...p.z];
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < k; j++) A[i]![j]! += r[i]! * r[j]!;
      B[i]! += r[i]! * p.y;
    }
  }
  // Gauss-Jordan; a column left without a pivot is a quantity the samples cannot tell apart
  // from the others: its coefficient is 0.
  const scale = Math.max(...A.map((row, i) => Math.abs(row[i]!)), 1);
  const pivotOf = new Map<number, number>();
  for (let c = 0; c < k; c++) {
    let best = -1;
    for (let r = 0; r < k; r++) {
      if ([...pivotOf.values()].includes(r)) continue;
      if (best < 0 || Math.abs(A[r]![c]!) > Math.abs(A[best]![c]!)) best = r;
    }
    if (best < 0 || Math.abs(A[best]![c]!) < 1e-9 * scale) continue;
    pivotOf.set(c, best);
    for (let r = 0; r < k; r++) {
      if (r === best) continue;
      const f = A[r]![c]! / A[best]![c]!;
      for (let j = 0; j < k; j++) A[r]![j]! -= f * A[best]![j]!;
      B[r]! -= f * B[best]!;
    }
  }
  const p = pivotOf.get(1);
  return p === undefined ? 0 : B[p]! / A[p]![1]!;
}
