import { defineConfig } from 'vitest/config';

// Real browsers and real databases: generous timeouts, and files run one at a time in
// forks so two files never fight over the machine's two cores and Chromium processes
// left by a failing file are reaped with its process.
export default defineConfig({
  test: {
    include: ['server/**/*.test.ts', 'conformance/**/*.test.ts', 'scripts/**/*.test.ts', 'fixtures/**/*.test.ts', 'bench/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
    reporters: ['default'],
  },
});
