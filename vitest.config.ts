import { defineConfig } from 'vitest/config';
import { LongestFirst } from './server/testing/sequencer.js';

// Real browsers and real databases: generous timeouts, and each file in a fork of its own,
// so Chromium processes left by a failing file are reaped with its process. Two files run at
// once: most of a browser test's time is spent waiting (for a page, a time-out, a child
// server's start), not on the CPU, and every test owns its ports, directories, schemas and
// Xvfb displays (-displayfd), so two files never see each other's browsers. Longest first
// (server/testing/sequencer.ts), so that no long file runs alone at the end.
export default defineConfig({
  test: {
    // One migrated PGlite database for the run, copied for each test's (server/testing/pglite-template.ts).
    globalSetup: ['server/testing/pglite-template.ts'],
    include: ['server/**/*.test.ts', 'conformance/**/*.test.ts', 'scripts/**/*.test.ts', 'fixtures/**/*.test.ts', 'bench/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    // What a passing test prints is noise; a failing one's is kept.
    silent: 'passed-only',
    reporters: ['default'],
  },
});
