// bench/identity-login: from session create to signed in, for an identity made from only its
// login page and credentials (the `auto` login: no flow, no selectors), on the fixture
// site's identifier-first login with a TOTP code on a third page (fixtures/login-app.ts,
// /login/two-page) — POST /v1/sessions with the identity (answered once the login ran) until
// the answer says `authenticated` — against raw Playwright doing the same steps with known
// selectors in the same run: launch, goto, fill the user name, Next, fill the password,
// Continue, fill the code, Verify, wait for /app/home. Both headless and launched cold (no
// browser pool on our side); ours records nothing. Ending (the session, the browser) is untimed. A new identity each round (made untimed),
// so every round signs in rather than reusing a saved profile.
// Goal: p50 within 1.5x of the reference.
// Usage: pnpm exec tsx bench/identity-login.ts [--rounds 15]
import { loadavg } from 'node:os';
import { createGuardrails, generate } from 'otplib';
import { chromium, type Browser } from 'playwright-core';
import { LOGIN_USERS } from '../fixtures/login-app.js';
import { startFixtureServer } from '../fixtures/server.js';
import { machine, ms, percentile, takingTurns } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 15;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };
const guardrails = createGuardrails({ MIN_SECRET_BYTES: 1 });

console.log(
  `bench/identity-login on ${machine()}; ${N} rounds, the sides taking turns; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
const site = await startFixtureServer();
const server = await startServerProcess({ BROWSER_POOL_SIZE: '0', SESSION_CREATE_RATE_PER_MINUTE: '100000' });
const api = async (method: string, path: string, body?: object) => {
  const res = await server.request(path, { method, ...(body ? { body: JSON.stringify(body) } : {}) });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
};
const credentials = [
  { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
  { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
];
try {
  let identityId = '';
  let sessionId = '';
  const ours = {
    run: async () => {
      const s = await api('POST', '/v1/sessions', { ...HEADLESS, identities: [{ id: identityId }] });
      sessionId = s.data.id;
      // The answer came once the login ran; the session's record says how it went.
      const progress = (await api('GET', `/v1/sessions/${sessionId}`)).data.identities?.[0];
      if (progress?.status !== 'authenticated') throw new Error(`not signed in: ${JSON.stringify(progress)}`);
    },
    // Untimed: the session ends (saving the identity's profile), and the next round's identity is made, pending.
    between: async () => {
      if (sessionId) await api('DELETE', `/v1/sessions/${sessionId}`);
      identityId = (await api('POST', '/v1/identities', { source: `${site.url}/login/two-page`, credentials })).id;
    },
  };
  await ours.between();
  let browser: Browser | undefined;
  const raw = {
    run: async () => {
      browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
      const page = await browser.newPage();
      await page.goto(`${site.url}/login/two-page`);
      await page.fill('input[name=login]', 'bob');
      await page.click('text=Next');
      await page.fill('input[name=pw]', LOGIN_USERS.bob.password);
      await page.click('button[type=submit]');
      await page.fill('input[name=code]', await generate({ secret: LOGIN_USERS.bob.totpSecret, guardrails }));
      await page.click('text=Verify');
      await page.waitForURL('**/app/home');
    },
    between: async () => void (await browser?.close()),
  };
  const t = await takingTurns(N, { ours, raw });
  const ratio = percentile(t.ours, 50) / percentile(t.raw, 50);
  console.log(
    `create to signed in: ours p50 ${ms(percentile(t.ours, 50))} p95 ${ms(percentile(t.ours, 95))} | raw Playwright p50 ${ms(percentile(t.raw, 50))} p95 ${ms(percentile(t.raw, 95))} | p50 ratio ${ratio.toFixed(2)}x (goal ≤ 1.5x: ${ratio <= 1.5 ? 'met' : 'NOT met'}); load average after ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
} finally {
  await server.stop();
  await site.close();
}
