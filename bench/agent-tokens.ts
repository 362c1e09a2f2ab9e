// bench/agent-tokens: what perform-web-task costs a model, per task on the agent's fixture
// site (server/agent/test-site.ts): steps, model calls, and tokens sent, with the full
// snapshot (LLM_CONTEXT_TOKENS=0) and with the snapshot trimmed to what is in view
// (LLM_CONTEXT_TOKENS=8192, a small local model's setting). A local model server answers
// each task with a scripted conversation that reads refs off what it was sent, as a model
// would (it scrolls when the element it wants is out of view). Text only (LLM_IMAGES=false):
// the figures are text tokens, counted as the agent counts them (characters ÷ 3, on the
// safe side of real tokenizers, which give 3 to 4 characters a token on snapshots). Against
// it, raw Playwright's own snapshot of each task's first page (ariaSnapshot, mode ai) beside
// the trimmed one: the ratio of the two is what trimming saves on the page itself.
// Usage: pnpm exec tsx bench/agent-tokens.ts
import { loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import { estimateTokens } from '../server/agent/observation.js';
import { trimSnapshot } from '../server/agent/snapshot-trim.js';
import { lastObservation, refOf } from '../server/agent/test-support.js';
import { startTestSite, PRODUCTS } from '../server/agent/test-site.js';
import { startScriptedModel, type ScriptStep, type ScriptedReply } from '../server/llm/scripted-server.js';
import { machine } from './machine.js';
import { startServerProcess } from './server-process.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name, arguments: args }] });
const has = (body: any, role: string, name: string) => lastObservation(body).includes(`${role} "${name}"`);
/** Clicks the element, scrolling first while it is out of view. */
const clickWhenSeen =
  (role: string, name: string): ((body: any) => ScriptedReply) =>
  (body) =>
    has(body, role, name) ? call('click', { ref: refOf(lastObservation(body), role, name) }) : call('scroll', { direction: 'down' });

/** Buys (scrolling to the button first) until the page says it is bought. */
const buyOnce: ScriptStep = (body) =>
  /paragraph \[ref=\w+\]: Bought$/m.test(lastObservation(body)) ? { text: 'Bought.' } : clickWhenSeen('button', 'Buy')(body);

interface Task {
  name: string;
  prompt: string;
  path: string;
  output_schema?: Record<string, unknown>;
  conversation: ScriptStep[];
}

const productsSchema = {
  type: 'object',
  required: ['products'],
  properties: {
    products: { type: 'array', items: { type: 'object', required: ['name', 'price'], properties: { name: { type: 'string' }, price: { type: 'number' } } } },
  },
};
const TASKS: Task[] = [
  {
    name: 'sign-up form (2 pages)',
    prompt: 'Sign up as Ada Lovelace (ada@example.com) on the Pro plan',
    path: '/form/1',
    conversation: [
      (body) => {
        const seen = lastObservation(body);
        return {
          toolCalls: [
            { name: 'type', arguments: { ref: refOf(seen, 'textbox', 'Full name'), text: 'Ada Lovelace' } },
            { name: 'type', arguments: { ref: refOf(seen, 'textbox', 'Email'), text: 'ada@example.com' } },
            { name: 'click', arguments: { ref: refOf(seen, 'button', 'Next') } },
          ],
        };
      },
      (body) => {
        const seen = lastObservation(body);
        return {
          toolCalls: [
            { name: 'select', arguments: { ref: refOf(seen, 'combobox', 'Plan'), values: ['Pro'] } },
            { name: 'click', arguments: { ref: refOf(seen, 'checkbox', 'I accept the terms') } },
            { name: 'click', arguments: { ref: refOf(seen, 'button', 'Submit') } },
          ],
        };
      },
      call('finish', { answer: 'Signed up' }),
    ],
  },
  {
    name: 'table into an output_schema',
    prompt: 'List the products with their price',
    path: '/table',
    output_schema: productsSchema,
    conversation: [call('extract', {}), call('finish', { answer: { products: PRODUCTS.map((p) => ({ name: p.name, price: p.price })) } })],
  },
  {
    name: 'moving button (below the fold)',
    prompt: 'Show the details of the offer, then buy it',
    path: '/moving',
    conversation: [clickWhenSeen('button', 'Show details'), ...Array.from({ length: 4 }, () => buyOnce)],
  },
  {
    name: 'catalog (60 products, long page)',
    prompt: 'Add the Coffee grinder to the cart and say its price',
    path: '/catalog',
    // The third card's button: the first two "Add to cart" belong to the products above it.
    conversation: [
      (body) => {
        const buttons = lastObservation(body).match(/button "Add to cart" \[ref=(\w+)\]/g)!;
        return call('click', { ref: /ref=(\w+)/.exec(buttons[2])![1] });
      },
      { text: 'Added; it costs 89.99 EUR.' },
    ],
  },
];

/** Tokens of one request as the agent counts them: the system prompt, the messages, the tools. */
const requestTokens = (body: any) => estimateTokens(JSON.stringify(body.messages).length + JSON.stringify(body.tools ?? []).length);
const snapshotOf = (observation: string) => /```yaml\n([\s\S]*?)\n```/.exec(observation)?.[1] ?? '';

const site = await startTestSite();
const model = await startScriptedModel();
console.log(
  `bench/agent-tokens on ${machine()}; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
type Row = { steps: number; calls: number; tokens: number; snapshotTokens: number };
const results: Record<string, Record<string, Row>> = {};
try {
  // Raw Playwright: each task's first page, its own snapshot against the trimmed one.
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 720 } })).newPage();
  const raw: Record<string, { full: number; trimmed: number }> = {};
  for (const task of TASKS) {
    await page.goto(site.url(task.path));
    const full = await page.ariaSnapshot({ mode: 'ai' });
    const trimmed = trimSnapshot(await page.ariaSnapshot({ mode: 'ai', boxes: true }), 720).text;
    raw[task.name] = { full: estimateTokens(full.length), trimmed: estimateTokens(trimmed.length) };
  }
  await browser.close();
  for (const task of TASKS) {
    const r = raw[task.name];
    console.log(`${task.name}: first page, raw Playwright's snapshot ${r.full} tokens, trimmed ${r.trimmed} (${((r.trimmed / r.full) * 100).toFixed(0)} %)`);
  }
  for (const [mode, contextTokens] of [
    ['full', '0'],
    ['trimmed', '8192'],
  ] as const) {
    const server = await startServerProcess({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: model.baseUrl('openai'),
      LLM_MODEL: 'bench',
      LLM_IMAGES: 'false',
      LLM_CONTEXT_TOKENS: contextTokens,
      BROWSER_POOL_SIZE: '0',
    });
    try {
      for (const task of TASKS) {
        model.script(task.conversation);
        const before = model.received.length;
        const res = await server.request('/v1/tools/perform-web-task', {
          method: 'POST',
          body: JSON.stringify({ prompt: task.prompt, url: site.url(task.path), ...(task.output_schema ? { output_schema: task.output_schema } : {}) }),
        });
        const body = (await res.json()) as { data?: { result: { steps: unknown[] } } };
        if (res.status !== 200 || model.errors.length)
          throw new Error(`${mode} ${task.name}: ${res.status} ${JSON.stringify(body)} ${model.errors.join('\n')}`);
        const sent = model.received.slice(before).map((r) => r.body);
        (results[task.name] ??= {})[mode] = {
          steps: body.data!.result.steps.length,
          calls: sent.length,
          tokens: sent.reduce((n, b) => n + requestTokens(b), 0),
          snapshotTokens: sent.reduce((n, b) => n + estimateTokens(snapshotOf(lastObservation(b)).length), 0),
        };
      }
    } finally {
      await server.stop();
    }
  }

  console.log(
    '| task | steps | model calls | tokens sent, full | tokens sent, trimmed | of which snapshot, full / trimmed | first page alone (raw Playwright), full / trimmed |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const task of TASKS) {
    const { full, trimmed } = results[task.name];
    const r = raw[task.name];
    console.log(
      `| ${task.name} | ${full.steps} / ${trimmed.steps} | ${full.calls} / ${trimmed.calls} | ${full.tokens} | ${trimmed.tokens} (${((trimmed.tokens / full.tokens) * 100).toFixed(0)} %) | ${full.snapshotTokens} / ${trimmed.snapshotTokens} | ${r.full} / ${r.trimmed} (${((r.trimmed / r.full) * 100).toFixed(0)} %) |`,
    );
  }
  console.log(
    `load average at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
} finally {
  await model.close();
  await site.close();
}
