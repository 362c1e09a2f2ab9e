// bench/web-task: perform-web-task end to end on the two-page sign-up form of the agent's
// fixture site (server/agent/test-site.ts), driven by a local model server answering the
// same scripted conversation every round (3 model turns, 6 browser actions, a screenshot
// with each observation), in a running headless session without recording. The server's
// own time per step is the call's time minus the model's answer time (measured at the model
// server). Against it: Playwright on a headless Chromium launched before the clock starts,
// doing the same work directly (the same goto, the same three observations, aria snapshot
// plus JPEG screenshot, and the same six actions on the refs they gave). The sides take
// turns, each round on a quiet machine. The server runs as its own process.
// Goal: the server's time per step at most 50 ms above Playwright's, at p50.
// Usage: pnpm exec tsx bench/web-task.ts [--rounds 15]
import { chromium, type Page } from 'playwright-core';
import { lastObservation, refOf } from '../server/agent/test-support.js';
import { startTestSite } from '../server/agent/test-site.js';
import { startScriptedModel, type ScriptStep } from '../server/llm/scripted-server.js';
import { machine, ms, percentile, progress, quiet } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 15;
const GOAL_MS = 50;
const STEPS = 6;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const conversation: ScriptStep[] = [
  (body) => {
    const seen = lastObservation(body);
    return {
      toolCalls: [
        call('type', { ref: refOf(seen, 'textbox', 'Full name'), text: 'Ada Lovelace' }),
        call('type', { ref: refOf(seen, 'textbox', 'Email'), text: 'ada@example.com' }),
        call('click', { ref: refOf(seen, 'button', 'Next') }),
      ],
    };
  },
  (body) => {
    const seen = lastObservation(body);
    return {
      toolCalls: [
        call('select', { ref: refOf(seen, 'combobox', 'Plan'), values: ['Pro'] }),
        call('click', { ref: refOf(seen, 'checkbox', 'I accept the terms') }),
        call('click', { ref: refOf(seen, 'button', 'Submit') }),
      ],
    };
  },
  () => ({ toolCalls: [call('finish', { answer: 'done' })] }),
];

/** What the agent does to observe, done directly. */
const observe = async (page: Page) => {
  const snapshot = await page.ariaSnapshot({ mode: 'ai' });
  await page.title();
  await page.screenshot({ type: 'jpeg', quality: 60 });
  return snapshot;
};
const ref = (page: Page, r: string) => page.locator(`aria-ref=${r}`);

const site = await startTestSite();
const model = await startScriptedModel();
console.log(`bench/web-task on ${machine()}; ${N} rounds, the sides taking turns`);
const server = await startServerProcess({ LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_MODEL: 'bench', BROWSER_POOL_SIZE: '0' });
const raw = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
try {
  const created = await server.request('/v1/sessions', {
    method: 'POST',
    body: JSON.stringify({
      browser: { headless: { active: true } },
      session: { recording: { active: false }, timeout: { idle_timeout: 30, max_duration: 60 } },
    }),
  });
  if (created.status !== 200) throw new Error(`session: ${created.status} ${await created.text()}`);
  const sessionId = ((await created.json()) as { data: { id: string } }).data.id;
  const page = await (await raw.newContext({ viewport: { width: 1280, height: 720 } })).newPage();

  const service = async () => {
    model.script(conversation);
    const before = model.answerMs.length;
    const t = performance.now();
    const res = await server.request(`/v1/tools/perform-web-task?sessionId=${sessionId}`, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'Sign up as Ada Lovelace (ada@example.com) on the Pro plan', url: site.url('/form/1') }),
    });
    const body = (await res.json()) as { data?: { result: { steps: unknown[] } } };
    const total = performance.now() - t;
    if (res.status !== 200 || body.data?.result.steps.length !== STEPS) throw new Error(`perform-web-task: ${res.status} ${JSON.stringify(body)}`);
    if (model.errors.length) throw new Error(model.errors.join('\n'));
    const modelMs = model.answerMs.slice(before).reduce((a, b) => a + b, 0);
    return { total, modelMs };
  };
  const direct = async () => {
    const t = performance.now();
    await page.goto(site.url('/form/1'));
    let seen = await observe(page);
    await ref(page, refOf(seen, 'textbox', 'Full name')).fill('Ada Lovelace');
    await ref(page, refOf(seen, 'textbox', 'Email')).fill('ada@example.com');
    await ref(page, refOf(seen, 'button', 'Next')).click();
    seen = await observe(page);
    await ref(page, refOf(seen, 'combobox', 'Plan')).selectOption(['Pro']);
    await ref(page, refOf(seen, 'checkbox', 'I accept the terms')).click();
    await ref(page, refOf(seen, 'button', 'Submit')).click();
    await observe(page);
    return performance.now() - t;
  };

  // One untimed round each: connections, the injected script, caches.
  await service();
  await direct();
  const ours: number[] = [];
  const modelTimes: number[] = [];
  const theirs: number[] = [];
  for (let i = 1; i <= N; i++) {
    await quiet();
    const s = await service();
    ours.push((s.total - s.modelMs) / STEPS);
    modelTimes.push(s.modelMs);
    await quiet();
    theirs.push((await direct()) / STEPS);
    progress('service / raw', i, N);
  }
  const p50 = percentile(ours, 50);
  const ref50 = percentile(theirs, 50);
  console.log(
    `per step, model time excluded: server p50 ${ms(p50)} p95 ${ms(percentile(ours, 95))} | raw Playwright p50 ${ms(ref50)} p95 ${ms(percentile(theirs, 95))} | ratio ${(p50 / ref50).toFixed(2)}x`,
  );
  console.log(
    `the server's overhead per step above raw Playwright, p50: ${ms(p50 - ref50)} (model answer time per run p50 ${ms(percentile(modelTimes, 50))}, not counted)`,
  );
  console.log(`goal: overhead ≤ ${GOAL_MS} ms per step at p50: ${p50 - ref50 <= GOAL_MS ? 'met' : 'NOT met'}`);
  await server.request(`/v1/sessions/${sessionId}`, { method: 'DELETE' });
} finally {
  await raw.close();
  await server.stop();
  await model.close();
  await site.close();
}
