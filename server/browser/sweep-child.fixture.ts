// Run by sweep.test.ts in a separate Node process that the test then kills with SIGKILL:
// a server dying with its browsers running. Prints the roots, then waits to be killed.
// With "hung", every process of both browsers is stopped (SIGSTOP) first: browsers that do
// not exit when the server's pipe closes, which only the sweep can end.
import { join } from 'node:path';
import { launchBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { silentLog } from './log.js';

const [browsersDir, chromiumPath, mode] = process.argv.slice(2) as [string, string, string | undefined];
const viewport = { width: 800, height: 600 };
const headful = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, viewport }, { chromiumPath, rootDir: join(browsersDir, 'orphan-headful'), log: silentLog });
const headless = await launchBrowser(
  { ...DEFAULT_LAUNCH_OPTIONS, viewport, headless: true },
  { chromiumPath, rootDir: join(browsersDir, 'orphan-headless'), log: silentLog },
);
if (mode === 'hung') for (const b of [headful, headless]) process.kill(-b.pid, 'SIGSTOP');
// "frozen": stopped the way the server stops them (RunningBrowser.freeze), which has them
// killed when this process dies (reaper.ts).
if (mode === 'frozen') for (const b of [headful, headless]) b.freeze();
process.stdout.write(`${JSON.stringify({ roots: [headful.rootDir, headless.rootDir], display: headful.display })}\n`);
setInterval(() => {}, 60_000);
