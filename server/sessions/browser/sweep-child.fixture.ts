// Run by sweep.test.ts in a separate Node process that the test then kills with SIGKILL:
// a server dying with its browsers running. Prints the roots, then waits to be killed.
import { join } from 'node:path';
import { launchBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { silentLog } from './log.js';

const [browsersDir, chromiumPath] = process.argv.slice(2) as [string, string];
const viewport = { width: 800, height: 600 };
const headful = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, viewport }, { chromiumPath, rootDir: join(browsersDir, 'orphan-headful'), log: silentLog });
const headless = await launchBrowser(
  { ...DEFAULT_LAUNCH_OPTIONS, viewport, headless: true },
  { chromiumPath, rootDir: join(browsersDir, 'orphan-headless'), log: silentLog },
);
process.stdout.write(`${JSON.stringify({ roots: [headful.rootDir, headless.rootDir], display: headful.display })}\n`);
setInterval(() => {}, 60_000);
