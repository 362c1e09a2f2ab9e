// G9 for applications and identities, credentials that are never answered, and sessions
// created with an identity: signed in to the suite's own login app (fixtures/login-app.ts,
// served by the suite's fixture server), observed through Playwright over cdp_url, and the
// identity events, received by a webhook at the suite's receiver, validated against their
// schemas in openapi.yaml.
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';
import { LOGIN_USERS, loginAppRoutes } from '../../fixtures/login-app.js';
import type { Exchange, SuiteContext } from '../context.js';
import { answered, exchangeLine } from '../generic/common.js';
import { Receiver } from '../receiver.js';
import { check, defineRules, type T } from '../runner.js';

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false }, timeout: { idle_timeout: 2, max_duration: 5 } } };
const EVENT_WAIT_MS = 60_000;

type Json = any;

export default defineRules((ctx: SuiteContext) => {
  const send = async (
    opId: string,
    o: { pathParams?: Record<string, string>; body?: unknown; query?: [string, string][]; timeoutMs?: number } = {},
  ): Promise<Exchange> => {
    const built = await ctx.build(ctx.contract.operation(opId), { pathParams: o.pathParams });
    built.query = o.query ?? [];
    return ctx.call(built, { ...('body' in o ? { bodyValue: o.body } : {}), ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) });
  };
  // A session with a pending identity answers once signed in, or once the sign-in failed:
  // its creation may take the sign-in's own time limit (an auth flow's timeout_seconds, by
  // the contract's default) on top of any creation's.
  const signInMs = 1000 * Number((ctx.contract.spec.components?.schemas?.AuthFlowLogin as Json)?.properties?.timeout_seconds?.default ?? 30);
  const withSignIn = () => ctx.timeoutMs + signInMs;
  const expectStatus = (t: T, ex: Exchange, status: number, what: string): Json => {
    const res = answered(t, ex);
    if (res.status === 501) t.skip(`${what}: not implemented by this server (501)`);
    t.assert(res.status === status, `${what}: ${exchangeLine(ex, 400)}, expected ${status}`);
    return res.json;
  };
  const suffix = () => randomBytes(4).toString('hex');

  /** The suite's login app on its fixture server (routes added once). */
  let mounted = false;
  const loginApp = async (path: string): Promise<string> => {
    if (!mounted) {
      mounted = true;
      for (const [key, handler] of Object.entries(loginAppRoutes)) {
        const [method, route] = key.split(' ') as [string, string];
        ctx.fixtures.route(method, route, (req, res, body) => handler(req, res, new URL(req.url ?? '/', 'http://fixture'), body));
      }
    }
    return ctx.fixtures.url(path);
  };

  const secretsAbsent = (t: T, ex: Exchange, secrets: string[], what: string) => {
    const text = answered(t, ex).text;
    for (const s of secrets) t.assert(!text.includes(s), `${what} answered a secret value: ${exchangeLine(ex, 300)}`);
  };

  return [
    check('G9 applications: create → get → delete → get answers 404', async (t: T) => {
      const made = expectStatus(
        t,
        await send('createApplication', { body: { source: `https://g9-${suffix()}.example.com/login` } }),
        201,
        'POST /v1/applications',
      );
      expectStatus(t, await send('getApplication', { pathParams: { id: made.id } }), 200, 'GET after create');
      expectStatus(t, await send('deleteApplication', { pathParams: { id: made.id } }), 200, 'DELETE');
      expectStatus(t, await send('getApplication', { pathParams: { id: made.id } }), 404, 'GET after DELETE');
    }),

    check('G9 identities: create → get → delete → get answers 404', async (t: T) => {
      const made = expectStatus(t, await send('createIdentity', { body: { source: `https://g9-${suffix()}.example.com/login` } }), 201, 'POST /v1/identities');
      expectStatus(t, await send('getIdentity', { pathParams: { id: made.id } }), 200, 'GET after create');
      expectStatus(t, await send('deleteIdentity', { pathParams: { id: made.id } }), 200, 'DELETE');
      expectStatus(t, await send('getIdentity', { pathParams: { id: made.id } }), 404, 'GET after DELETE');
      // Its application was made on the way: removed too, so the run leaves nothing.
      expectStatus(t, await send('deleteApplication', { pathParams: { id: made.application_id } }), 200, 'DELETE its application');
    }),

    check(
      'ID1 identity credentials are never echoed: create, get, list, credentials and update answer no secret value, and the credentials read names the fields set',
      async (t: T) => {
        const password = `pw-${suffix()}-${suffix()}`;
        const seed = 'KRUGS4ZANFZSAYLOEBQXK5DIMVXHI2LDMF2G64RAONSWKZDT';
        const custom = `custom-${suffix()}`;
        const secrets = [password, seed, custom];
        const source = `https://id1-${suffix()}.example.com/login`;
        const credentials = [
          { type: 'username_password', username: 'id1-user', password },
          { type: 'authenticator', secret: seed },
          { type: 'custom', fields: [{ name: 'tenant', value: custom }] },
        ];
        const createdEx = await send('createIdentity', { body: { source, credentials } });
        const made = expectStatus(t, createdEx, 201, 'POST /v1/identities');
        try {
          secretsAbsent(t, createdEx, secrets, 'POST /v1/identities');
          const get = await send('getIdentity', { pathParams: { id: made.id } });
          expectStatus(t, get, 200, 'GET /v1/identities/{id}');
          secretsAbsent(t, get, secrets, 'GET /v1/identities/{id}');
          const list = await send('listIdentities');
          expectStatus(t, list, 200, 'GET /v1/identities');
          secretsAbsent(t, list, secrets, 'GET /v1/identities');
          const creds = await send('getIdentityCredentials', { pathParams: { id: made.id } });
          const body = expectStatus(t, creds, 200, 'GET /v1/identities/{id}/credentials');
          secretsAbsent(t, creds, secrets, 'GET /v1/identities/{id}/credentials');
          t.equal(
            body.credentials,
            [
              { type: 'username_password', fields: ['username', 'password'] },
              { type: 'authenticator', fields: ['secret'] },
              { type: 'custom', fields: ['tenant'] },
            ],
            'the fields named',
          );
          const update = await send('updateIdentity', { pathParams: { id: made.id }, body: { credentials } });
          expectStatus(t, update, 200, 'PUT /v1/identities/{id}');
          secretsAbsent(t, update, secrets, 'PUT /v1/identities/{id}');
        } finally {
          await send('deleteIdentity', { pathParams: { id: made.id } });
          await send('deleteApplication', { pathParams: { id: made.application_id } });
        }
      },
    ),

    check(
      'ID2 a session with a pending identity arrives signed in (Playwright over cdp_url sees the signed-in page); identity.authenticated, and identity.authentication_failed for a wrong password, validate against their schemas',
      async (t: T) => {
        const receiver = new Receiver(ctx.fixtures, { name: 'identities' });
        const loginUrl = await loginApp('/login/one-page');
        const home = await loginApp('/app/home');
        const hook = expectStatus(
          t,
          await send('createWebhook', {
            body: { url: await receiver.url(), subscribed_events: ['identity.authenticated', 'identity.authentication_failed'], enabled: true },
          }),
          200,
          "POST /v1/webhooks at the suite's receiver",
        );
        const app = expectStatus(
          t,
          await send('createApplication', { body: { source: loginUrl, name: `conformance ${suffix()}` } }),
          201,
          'POST /v1/applications',
        );
        const made: string[] = [];
        const sessions: string[] = [];
        try {
          const good = expectStatus(
            t,
            await send('createIdentity', {
              body: { source: loginUrl, credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }] },
            }),
            201,
            'POST /v1/identities',
          );
          const bad = expectStatus(
            t,
            await send('createIdentity', {
              body: { source: loginUrl, credentials: [{ type: 'username_password', username: 'alice', password: 'wrong-password' }] },
            }),
            201,
            'POST /v1/identities (wrong password)',
          );
          made.push(good.id, bad.id);
          t.equal(good.application_id, app.id, 'the identity joins the application of its login page');

          const session = expectStatus(
            t,
            await send('createSession', { body: { ...HEADLESS, identities: [{ id: good.id }] }, timeoutMs: withSignIn() }),
            200,
            'POST /v1/sessions with the identity',
          );
          sessions.push(session.data.id);
          const browser = await chromium.connectOverCDP(session.data.cdp_url, { timeout: 30_000 });
          try {
            const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
            await page.goto(home);
            t.assert(
              (await page.locator('#signed-in').count()) === 1,
              `the session is not signed in: ${page.url()} shows ${(await page.locator('body').innerText()).slice(0, 200)}`,
            );
          } finally {
            await browser.close();
          }
          const failed = expectStatus(
            t,
            await send('createSession', { body: { ...HEADLESS, identities: [{ id: bad.id }] }, timeoutMs: withSignIn() }),
            200,
            'POST /v1/sessions with the wrong password',
          );
          sessions.push(failed.data.id);

          const schemaOf = (type: string) => ctx.contract.spec.webhooks?.[type]?.post?.requestBody?.content?.['application/json']?.schema;
          for (const [type, id, expectData] of [
            ['identity.authenticated', good.id, { session_id: session.data.id, application_id: app.id }],
            ['identity.authentication_failed', bad.id, { failure_type: 'invalid_credentials', application_id: app.id }],
          ] as const) {
            const [delivery] = await receiver.waitFor((r) => (r.json as Json)?.type === type && (r.json as Json)?.data?.identity_id === id, EVENT_WAIT_MS);
            t.assert(delivery, `${type} for identity ${id} did not reach the receiver within ${EVENT_WAIT_MS / 1000} s`);
            const event = delivery.json as Json;
            const error = ctx.contract.validate(schemaOf(type), event, 'event');
            t.assert(!error, `${type}: ${error}\nevent: ${delivery.text.slice(0, 600)}`);
            for (const [k, v] of Object.entries(expectData)) t.equal(event.data[k], v, `${type} data.${k}`);
            t.note(`${type}: ${JSON.stringify(event.data)}`);
          }
        } finally {
          receiver.close();
          for (const id of sessions) await send('endSession', { pathParams: { session_id: id } });
          for (const id of made) await send('deleteIdentity', { pathParams: { id } });
          await send('deleteApplication', { pathParams: { id: app.id } });
          await send('deleteWebhook', { pathParams: { id: hook.id } });
        }
      },
    ),
  ];
});
