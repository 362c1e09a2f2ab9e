// How long each test file took in the last full run (durations.json beside this file, which
// `pnpm test` rewrites), for the order vitest starts them in (sequencer.ts).
import { readFileSync } from 'node:fs';

export const DURATIONS_FILE = new URL('./durations.json', import.meta.url);

/** Seconds each test file took, by its path from the project's root. */
export type Durations = Record<string, number>;

export function readDurations(): Durations {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Durations;
  } catch {
    return {};
  }
}

/** Longest first; files without a duration before all others, in their given order. */
export function longestFirst<T>(files: readonly T[], pathOf: (f: T) => string, durations: Durations): T[] {
  const seconds = (f: T) => durations[pathOf(f)] ?? Infinity;
  return [...files].sort((a, b) => seconds(b) - seconds(a));
}
