// bench/session-start: session create → connectOverCDP → goto a local page → end, against
// raw Playwright doing the same in the same run.
//   warm: our default session (served by the warm pool, headful on Xvfb) vs a Chromium
//         launched before the clock starts (headful on Xvfb): new context, goto, close.
//   cold: a headless session without recording, launched on demand, vs
//         chromium.launch({headless}) in the clock: the same work, as the reference neither
//         shows a window nor records. The default cold session (recording on) is measured
//         too and reported beside it: what the recording costs (a screencast the browser
//         encodes, ffmpeg at the end), not held to the goal.
// The sides take turns round by round, so drift over the run hits them alike, and each
// round starts on a quiet machine (takingTurns): the recording encoded after one of our
// sessions ends, or a pooled browser still starting, does not run into the next round.
// The server runs as its own process, as deployed (bench/server-process.ts).
// Goal: warm p50 within 1.3x of the warm reference, cold p50 within 1.1x.
// Usage: pnpm exec tsx bench/session-start.ts [--rounds 50]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { machine, ms, percentile, referenceDisplay, takingTurns } from './machine.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { sessionLife } from './session-life.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 50;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];

const page = createServer((_req, res) => {
  res.setHeader('content-type', 'text/html');
  res.end('<!doctype html><title>bench</title><h1>bench page</h1><script>document.body.append("ready")</script>');
});
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;

const ours = (server: ServerProcess, body: object) => sessionLife(server.request, body, pageUrl);

async function waitWarm(server: ServerProcess): Promise<void> {
  for (;;) {
    const health = (await (await fetch(`${server.base}/healthz`)).json()) as { browsers: { warm: number } };
    if (health.browsers.warm > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function report(label: string, mine: number[], ref: number[], goal?: number) {
  const [p50, p95, r50, r95] = [percentile(mine, 50), percentile(mine, 95), percentile(ref, 50), percentile(ref, 95)];
  const ratio = p50 / r50;
  const verdict = goal === undefined ? '' : ` (goal ≤ ${goal}x: ${ratio <= goal ? 'met' : 'NOT met'})`;
  console.log(`${label}: ours p50 ${ms(p50)} p95 ${ms(p95)} | raw Playwright p50 ${ms(r50)} p95 ${ms(r95)} | p50 ratio ${ratio.toFixed(2)}x${verdict}`);
}

console.log(`bench/session-start on ${machine()}; ${N} rounds each, the sides taking turns`);

// Warm. The reference's browser is launched before its clock starts; each of its rounds
// is a fresh context, a page, the same goto, and closing the context. After each of ours,
// untimed: the pool full again.
const xvfb = await referenceDisplay();
const warmServer = await startServerProcess({ BROWSER_POOL_SIZE: '1', SESSION_CREATE_RATE_PER_MINUTE: '100000' });
await waitWarm(warmServer);
const pre = await chromium.launch({ executablePath: chromiumPath, headless: false, args: flags, env: { ...process.env, DISPLAY: xvfb.display } });
const warm = await takingTurns(N, {
  ours: { run: () => ours(warmServer, {}), between: () => waitWarm(warmServer) },
  raw: {
    run: async () => {
      const context = await pre.newContext();
      const p = await context.newPage();
      await p.goto(pageUrl);
      await context.close();
    },
  },
});
await warmServer.stop();
await pre.close();
await xvfb.stop();
report('warm (pool vs pre-launched)', warm.ours, warm.raw, 1.3);

// Cold.
const coldServer = await startServerProcess({ BROWSER_POOL_SIZE: '0', SESSION_CREATE_RATE_PER_MINUTE: '100000' });
const cold = await takingTurns(N, {
  ours: { run: () => ours(coldServer, { browser: { headless: { active: true } }, session: { recording: { active: false } } }) },
  recorded: { run: () => ours(coldServer, { browser: { headless: { active: true } } }) },
  raw: {
    run: async () => {
      const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
      const p = await browser.newPage();
      await p.goto(pageUrl);
      await browser.close();
    },
  },
});
await coldServer.stop();
report('cold (launch on demand)', cold.ours, cold.raw, 1.1);
report('cold, recording on (default; the reference records nothing)', cold.recorded, cold.raw);
page.close();
