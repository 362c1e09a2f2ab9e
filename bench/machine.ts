// Every benchmark names the machine its figures come from, and shares these helpers.
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, totalmem, release } from 'node:os';
import { silentLog } from '../server/browser/log.js';
import { startXvfb, type RunningXvfb } from '../server/browser/xvfb.js';

export function machine(): string {
  const cpu = cpus();
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()}, Node ${process.version}`;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** Two-sided 95 % quantiles of Student's t by degrees of freedom, 1 to 30 (1.96 beyond). */
const T95 = [
  12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069,
  2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** The 95 % interval of the geometric mean of ratios (t on their logarithms). */
export function ratioInterval(ratios: number[]): [number, number] {
  const n = ratios.length;
  if (n < 2) return [NaN, NaN];
  const logs = ratios.map(Math.log);
  const mean = logs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
  const t = T95[n - 2] ?? 1.96;
  const half = (t * sd) / Math.sqrt(n);
  return [Math.exp(mean - half), Math.exp(mean + half)];
}

export const ms = (n: number) => `${n.toFixed(1)} ms`;

export function progress(label: string, i: number, n: number): void {
  if (i === n || i % Math.max(1, Math.floor(n / 10)) === 0) process.stderr.write(`  ${label}: ${i}/${n}\n`);
}

/** Times fn `n` times, one after the other. */
export async function rounds(label: string, n: number, fn: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 1; i <= n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
    progress(label, i, n);
  }
  return out;
}

/** Busy share of all cores over `ms` (from /proc/stat). */
async function busyShare(ms: number): Promise<number> {
  const sample = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3]! + f[4]!;
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  const a = sample();
  await new Promise((r) => setTimeout(r, ms));
  const b = sample();
  return b.total === a.total ? 0 : 1 - (b.idle - a.idle) / (b.total - a.total);
}

/** Waits until the machine is quiet (under 15 % busy over 100 ms), 3 s at most. */
export async function quiet(): Promise<void> {
  for (const deadline = Date.now() + 3_000; Date.now() < deadline; ) {
    if ((await busyShare(100)) < 0.15) return;
  }
}

/**
 * Times each side `n` times, the sides taking turns round by round (each side's `between`
 * step untimed after its round), so that drift over the run (other load, caches, the
 * CPU's clock) hits every side alike. Every round starts on a quiet machine: what one
 * side left running (a browser still starting, an encoder) does not run into the other's.
 */
export async function takingTurns<K extends string>(
  n: number,
  sides: Record<K, { run: () => Promise<void>; between?: () => Promise<void> }>,
): Promise<Record<K, number[]>> {
  const names = Object.keys(sides) as K[];
  const out = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 1; i <= n; i++) {
    for (const k of names) {
      await quiet();
      const t = performance.now();
      await sides[k].run();
      out[k].push(performance.now() - t);
      await sides[k].between?.();
    }
    progress(names.join(' / '), i, n);
  }
  return out;
}

/**
 * CPU time (ms) this process and every process under it have used so far: each live one's
 * own and its reaped children's (utime, stime, cutime, cstime from /proc), so a browser that
 * already exited is counted in the parent that reaped it. Where the CPU of a piece of work
 * went, whatever process did it (Chromium, Xvfb, ffmpeg, the server).
 */
export function treeCpuMs(): number {
  const tick = 100; // USER_HZ on Linux
  const procs = new Map<number, { ppid: number; cpu: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(name), { ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
    } catch {
      // exited meanwhile: its time is in its parent's cutime from now on
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      if (p === process.pid) return true;
      const next = procs.get(p)?.ppid;
      if (next === undefined) return false;
      p = next;
    }
    return false;
  };
  let ticks = 0;
  for (const [pid, p] of procs) if (inTree(pid)) ticks += p.cpu;
  return (ticks * 1000) / tick;
}

/** Runs `fn` `n` times with `c` at once; resolves with the wall time. */
export async function atConcurrency(n: number, c: number, fn: () => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < n) {
        next++;
        await fn();
      }
    }),
  );
  return performance.now() - t0;
}

/** An X display for a reference browser that runs headful, as our default session does (the server's own Xvfb start). */
export function referenceDisplay(): Promise<RunningXvfb> {
  return startXvfb({ xvfbPath: 'Xvfb', width: 1600, height: 1100, env: process.env, log: silentLog });
}
