// `pnpm bench`: runs every benchmark in bench/, one after another, each printing its own
// figures beside raw Playwright's from the same run.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('.', import.meta.url).pathname;
const skip = new Set(['run.ts', 'machine.ts', 'server-process.ts']);
const only = process.argv.slice(2);
const benches = readdirSync(dir).filter(
  (f) => f.endsWith('.ts') && !skip.has(f) && !f.endsWith('.test.ts') && (only.length === 0 || only.some((o) => f.startsWith(o))),
);
let failed = 0;
for (const bench of benches) {
  console.log(`\n### ${bench}`);
  const r = spawnSync(join(dir, '..', 'node_modules', '.bin', 'tsx'), [join(dir, bench)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
