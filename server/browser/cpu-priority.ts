// A browser's share of the CPU while it is started ahead of need (the warm pool's refills).
// Chromium runs in a session of its own (it is spawned detached), and with the scheduler's
// autogroups (Linux's default for a desktop or server kernel) CPU is shared between
// sessions, not processes: a process's nice value only orders it within its own session.
// So the weight is set on the autogroup (/proc/PID/autogroup), which covers Chromium and
// every process it forks. A refill then takes what a client's own launch or page leaves
// over instead of half the machine, and its browser is given its full share back when a
// session takes it.
import { readFileSync, writeFileSync } from 'node:fs';

/** The nice value of a browser being started ahead of need. */
const BACKGROUND_NICE = 15;

function setAutogroupNice(pid: number, nice: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/autogroup`, String(nice));
    return true;
  } catch {
    return false; // no autogroups on this kernel, not permitted, or the process is gone
  }
}

/** Lowers the CPU weight of the process's session (autogroup); false when it could not. */
export function toBackground(pid: number): boolean {
  return setAutogroupNice(pid, BACKGROUND_NICE);
}

/** Gives the process's session its ordinary CPU weight back. */
export function toForeground(pid: number): boolean {
  return setAutogroupNice(pid, 0);
}

/** The autogroup nice value of a process, or undefined where there is none to read. */
export function autogroupNice(pid: number): number | undefined {
  try {
    const m = /nice (-?\d+)/.exec(readFileSync(`/proc/${pid}/autogroup`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether this server may both lower and raise a session's CPU weight: its own autogroup's
 * nice written back unchanged (raising it again needs the privilege a root server has).
 */
export function prioritiesWork(): boolean {
  const own = autogroupNice(process.pid);
  return own !== undefined && setAutogroupNice(process.pid, own) && own >= 0 && canRaise();
}

function canRaise(): boolean {
  // Raising a weight needs CAP_SYS_NICE; a root server has it.
  return process.getuid?.() === 0;
}
