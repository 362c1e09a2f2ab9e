// bench/session-captcha: what browser.captcha_solver costs a session, and how fast it passes
// a challenge, against raw Playwright in the same run.
//   off / on: a headless session without recording through a custom proxy (the contract
//         wants one with the solver), with the option off and on, the sides taking turns:
//         the creation (POST /v1/sessions: on, its started hook opens the watch's CDP
//         connection), Playwright's connectOverCDP to cdp_url (what a second Playwright
//         client of the server's own would cost each session, the road not taken), and five
//         gotos of an ordinary page (on, each load is looked at once for a challenge).
//   pass: in the "on" session, the fixture's proof of work (ALTCHA): goto → the page behind
//         it, the script doing nothing else; against raw Playwright passing the same
//         challenge with the same code (challenges.ts on a Playwright page, as the web fetch
//         tool does) in a Chromium launched before the clock starts.
// Usage: pnpm exec tsx bench/session-captcha.ts [--rounds 10]
import { chromium } from 'playwright-core';
import { Server as ProxyChainServer } from 'proxy-chain';
import { createLogger } from '../server/log.js';
import { startFixtureServer } from '../fixtures/server.js';
import { passChallenges, playwrightPage } from '../server/page/challenges.js';
import { machine, ms, percentile, takingTurns } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 10;
const GOTOS = 5;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const fx = await startFixtureServer();
const proxy = new ProxyChainServer({ port: 0, host: '127.0.0.1', verbose: false });
await proxy.listen();
const server = await startServerProcess({ BROWSER_POOL_SIZE: '0' });
const raw = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });

const figures = {
  create: { on: [] as number[], off: [] as number[] },
  connect: { on: [] as number[], off: [] as number[] },
  goto: { on: [] as number[], off: [] as number[] },
  pass: [] as number[],
  rawPass: [] as number[],
};

async function session(solver: boolean): Promise<void> {
  const side = solver ? 'on' : 'off';
  const body = {
    browser: { headless: { active: true }, captcha_solver: { active: solver } },
    session: { recording: { active: false }, proxy: { active: true, type: 'custom', server: `http://127.0.0.1:${proxy.port}` } },
  };
  let t = performance.now();
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify(body) });
  const created = (await res.json()) as { data: { id: string; cdp_url: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(created)}`);
  figures.create[side].push(performance.now() - t);
  t = performance.now();
  const browser = await chromium.connectOverCDP(created.data.cdp_url);
  figures.connect[side].push(performance.now() - t);
  try {
    const context = browser.contexts()[0]!;
    const page = context.pages()[0] ?? (await context.newPage());
    for (let i = 0; i < GOTOS; i++) {
      t = performance.now();
      await page.goto(`${fx.url}/site/script-rendered.html`);
      figures.goto[side].push(performance.now() - t);
    }
    if (solver) {
      t = performance.now();
      await page.goto(`${fx.url}/challenge/pow`);
      await page.waitForSelector('#protected', { timeout: 60_000 });
      figures.pass.push(performance.now() - t);
    }
  } finally {
    await browser.close();
    await server.request(`/v1/sessions/${created.data.id}`, { method: 'DELETE' });
  }
}

async function rawPass(): Promise<void> {
  const context = await raw.newContext();
  try {
    const page = await context.newPage();
    const t = performance.now();
    await page.goto(`${fx.url}/challenge/pow`);
    await passChallenges(playwrightPage(page), { deadline: Date.now() + 60_000, timeoutSeconds: 60, log: createLogger('silent') });
    await page.waitForSelector('#protected', { timeout: 60_000 });
    figures.rawPass.push(performance.now() - t);
  } finally {
    await context.close();
  }
}

console.log(`bench/session-captcha on ${machine()}; ${N} rounds, the sides taking turns`);
try {
  await takingTurns(N, { off: { run: () => session(false) }, on: { run: () => session(true) }, raw: { run: rawPass } });
} finally {
  await raw.close();
  await server.stop();
  await proxy.close(true);
  await fx.close();
}

const p50 = (v: number[]) => percentile(v, 50);
const p95 = (v: number[]) => percentile(v, 95);
const row = (what: string, off: number[], on: number[]) =>
  console.log(
    `${what.padEnd(34)} off p50 ${ms(p50(off))} p95 ${ms(p95(off))}   on p50 ${ms(p50(on))} p95 ${ms(p95(on))}   on/off p50 ${(p50(on) / p50(off)).toFixed(2)}`,
  );
row('create (POST /v1/sessions)', figures.create.off, figures.create.on);
row('connectOverCDP to cdp_url', figures.connect.off, figures.connect.on);
row(`goto an ordinary page (${GOTOS} a session)`, figures.goto.off, figures.goto.on);
console.log(
  `proof of work, goto → page behind it: session p50 ${ms(p50(figures.pass))} p95 ${ms(p95(figures.pass))}; raw Playwright + challenges.ts p50 ${ms(p50(figures.rawPass))} p95 ${ms(p95(figures.rawPass))}; ratio p50 ${(p50(figures.pass) / p50(figures.rawPass)).toFixed(2)}`,
);
