// What `pnpm test` runs, as one line per test and per conformance check, so that a change
// which makes the suite faster can be shown to have dropped nothing: scripts/inventory.txt
// holds the lines of the suite before the speed-up (docs/testing.md), and every line of it
// must still run, or stand in scripts/inventory-moved.txt with the test that now asserts it.
import { readFileSync } from 'node:fs';

/** The part of vitest's JSON report read here. */
export interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: {
    name: string;
    status: string;
    message?: string;
    startTime?: number;
    endTime?: number;
    assertionResults: { fullName: string; status: string; failureMessages: string[] }[];
  }[];
}

/** The part of a conformance run's JSON report read here. */
export interface ConformanceReport {
  summary: { passed: number; failed: number; skipped: number };
  checks: { id: string; name: string; status: string; message?: string }[];
}

/** Whether a test ran: passed or failed, not skipped (a skipped test proves nothing). */
const ran = (status: string) => status === 'passed' || status === 'failed';

/** One line a test that ran: `vitest FILE › FULL NAME`, FILE relative to the project's root. */
export function vitestLines(report: VitestReport, root: string): string[] {
  return report.testResults.flatMap((file) =>
    file.assertionResults.filter((a) => ran(a.status)).map((a) => `vitest ${file.name.replace(root, '')} › ${oneLine(a.fullName)}`),
  );
}

/**
 * One line a check the run reported: `conformance:LABEL ID NAME` (LABEL: mock, pglite,
 * postgres). Skipped ones too: a check may skip on what the server answered (G5 skips a
 * response that documents only optional headers when none came, and which response a
 * recording's link gets depends on whether its encode has ended), so whether it ran varies
 * from run to run; that it is still in the suite does not.
 */
export function conformanceLines(label: string, report: ConformanceReport): string[] {
  return report.checks.map((c) => `conformance:${label} ${c.id} ${oneLine(c.name)}`);
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The lines of an inventory file (blank lines and # comments left out). */
export function readLines(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l && !l.startsWith('#'));
}

/** The moved list: `OLD LINE => WHERE IT IS ASSERTED NOW`; a test split in several names
 *  each part on a line of its own, with the same OLD LINE. */
export function readMoved(file: string): Map<string, string[]> {
  const moved = new Map<string, string[]>();
  for (const line of readLines(file)) {
    const at = line.lastIndexOf(' => ');
    if (at < 0) throw new Error(`${file}: a line without ' => ': ${line}`);
    const old = line.slice(0, at);
    moved.set(old, [...(moved.get(old) ?? []), line.slice(at + 4)]);
  }
  return moved;
}

export interface Comparison {
  /** Inventory lines that did not run and are not in the moved list. */
  lost: string[];
  /** Moved lines whose new place (any of them, for a split test) did not run. */
  movedNowhere: string[];
  /** Lines that ran and are not in the inventory. */
  added: number;
}

/**
 * Compares what ran with the inventory. A moved line's new place must itself have run: it
 * names a line of this run (`vitest FILE › NAME` or `conformance:LABEL ID NAME`).
 */
export function compare(inventory: readonly string[], moved: ReadonlyMap<string, readonly string[]>, ran: readonly string[]): Comparison {
  const now = new Set(ran);
  const before = new Set(inventory);
  const lost = inventory.filter((l) => !now.has(l) && !moved.has(l));
  const movedNowhere = [...moved]
    .filter(([old]) => before.has(old) && !now.has(old))
    .flatMap(([old, places]) => places.filter((to) => !now.has(to)).map((to) => `${old} => ${to}`));
  return { lost, movedNowhere, added: ran.filter((l) => !before.has(l)).length };
}
