import { defineConfig } from 'vitest/config';
import { LongestFirst } from './server/testing/sequencer.js';

const include = ['server/**/*.test.ts', 'conformance/**/*.test.ts', 'scripts/**/*.test.ts', 'fixtures/**/*.test.ts', 'bench/**/*.test.ts'];
// A file that replaces one of the server's modules for its own tests (vi.mock) runs in a
// process of its own: in a shared one the module may already be loaded, or stay replaced.
const ownProcess = ['server/net/traffic-proxy.test.ts'];
// Files that `pnpm test` runs in a lane of their own beside the two workers, a vitest process
// (scripts/test.ts; the figures in docs/testing.md). Measured, the suite used about one of
// the two cores on average: most of its wall time is waiting, not work.
export const lanes = {
  // They wait out one of the contract's whole-minute limits on the server's own timer, idle:
  // one at a time (scripts/test.ts). In the workers each held one for a minute.
  waits: [
    'server/sessions/timeouts.test.ts',
    'server/profiles/idle-timeout.test.ts',
    'server/execute-code/timeout.test.ts',
    'server/tasks/run-timeout.test.ts',
  ],
};

// Real browsers and real databases: generous timeouts. Two files run at once, not three
// (docs/decisions/0001-two-test-workers.md). The workers are processes that run
// file after file (isolate: false): a fork a file, each importing the server anew, cost
// about a fifth of the run's CPU. Every test owns its ports, directories, schemas and Xvfb
// displays (-displayfd), closes what it started and restores what it changed, so files
// never see each other's browsers; a display number one file released may be taken by
// another's Xvfb at once, so tests compare the X socket's identity (xSocket), never its
// existence. Longest first (server/testing/sequencer.ts), so that no long file runs alone
// at the end.
export default defineConfig({
  test: {
    // One migrated PGlite database for the run, copied for each test's (server/testing/pglite-template.ts),
    // and the server transpiled once for the tests that start it as a process (server/testing/server-build.ts).
    globalSetup: ['server/testing/pglite-template.ts', 'server/testing/server-build.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    // What a passing test prints is noise; a failing one's is kept.
    silent: 'passed-only',
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'shared', include, exclude: [...ownProcess, ...lanes.waits], isolate: false } },
      { extends: true, test: { name: 'own process', include: ownProcess } },
      { extends: true, test: { name: 'waits', include: lanes.waits, isolate: false } },
    ],
  },
});
