// Every benchmark names the machine its figures come from, and shares these helpers.
import { cpus, totalmem, release } from 'node:os';

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

export const ms = (n: number) => `${n.toFixed(1)} ms`;

export function progress(label: string, i: number, n: number): void {
  if (i === n || i % Math.max(1, Math.floor(n / 10)) === 0) process.stderr.write(`  ${label}: ${i}/${n}\n`);
}

/** Times fn `rounds` times, sequentially, with an untimed `between` step after each. */
export async function rounds(label: string, n: number, fn: () => Promise<void>, between?: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 1; i <= n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
    progress(label, i, n);
    if (between) await between();
  }
  return out;
}
