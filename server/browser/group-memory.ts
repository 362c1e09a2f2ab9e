// The memory a browser holds: the proportional set size (Pss) of every process of its group,
// each page shared between processes counted once in all (the Chromium binary's pages are
// shared by all of a browser's processes: their summed RSS counts those several times).
import { readFileSync } from 'node:fs';
import { listPids, readStat } from './procfs.js';

export function groupPssBytes(pgid: number): number {
  let kib = 0;
  for (const pid of listPids()) {
    const stat = readStat(pid);
    if (!stat || stat.pgid !== pgid) continue;
    try {
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      if (m) kib += Number(m[1]);
    } catch {
      // exited meanwhile
    }
  }
  return kib * 1024;
}
