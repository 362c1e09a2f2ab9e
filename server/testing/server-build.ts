// The server's code as JavaScript, transpiled once per test run, for the tests that start it as
// a process of its own (child servers, cluster nodes, the soak, the conformance runs). Under
// tsx every start transpiles the server's few hundred modules again: measured on this
// project's 2-core machine, 3.3 CPU-s a start on PostgreSQL against 2.1 CPU-s from
// JavaScript, and a run starts about seventy. The transpile is the image's own (Dockerfile:
// each .ts becomes a .js beside it, no bundle, because the server reads its own files
// relative to its modules), into a copy of the tree with `node_modules` linked in, so
// packages resolve as they do from the checkout. Outside a test run (a test file run on its
// own, a benchmark) nothing is built and servers start under tsx, as `pnpm start` does.
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const VARIABLE = 'CB_TEST_SERVER_BUILD';
const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The command that starts the server: from this run's build when there is one, else under tsx. Run it in the project's root. */
export function serverCommand(): [string, string[]] {
  const build = process.env[VARIABLE];
  return build ? [process.execPath, [join(build, 'server', 'main.js')]] : [process.execPath, ['--import', 'tsx', 'server/main.ts']];
}

/** Every .ts below dir but declarations and tests. */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.test.ts'))
    .map((f) => join(dir, f));
}

/** Copies the tree the server runs from into `into` and transpiles it there. */
export function buildServer(into: string): void {
  for (const part of ['server', 'generated']) cpSync(join(projectRoot, part), join(into, part), { recursive: true });
  for (const file of ['package.json', 'openapi.yaml', 'tsconfig.json']) cpSync(join(projectRoot, file), join(into, file));
  symlinkSync(join(projectRoot, 'node_modules'), join(into, 'node_modules'), 'dir');
  const entryPoints = [...sources(join(into, 'server')), ...sources(join(into, 'generated'))];
  buildSync({ entryPoints, outdir: into, outbase: into, format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' });
}

/** Builds once for a process tree: a build made by a parent (pnpm test) is reused. Answers how to remove what it made. */
export function ensureServerBuild(): () => void {
  if (process.env[VARIABLE]) return () => {};
  const dir = mkdtempSync(join(tmpdir(), 'cb-build-'));
  buildServer(dir);
  process.env[VARIABLE] = dir;
  return () => {
    delete process.env[VARIABLE];
    rmSync(dir, { recursive: true, force: true });
  };
}

/** vitest's global setup. */
export default function setup(): () => void {
  return ensureServerBuild();
}
