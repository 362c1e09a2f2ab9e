// Shared by the identities tests: a JSON call that keeps the answer's text (to look for secrets
// in), and the bench of the sign-in tests (a fixture login site, a server whose logs are kept).
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { loadEventSchemas } from '../events/schema.js';
import { startTestServer, type Backend, type TestServer } from '../testing/harness.js';
import { createSession, eventually, getSession, HEADLESS, type Created, type Requester } from '../sessions/test-support.js';

export async function call(server: Requester, method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const res = await server.request(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

/** What the session's first tab shows at /app/home: the signed-in user, or null. */
export async function signedInAs(site: FixtureServer, s: Created): Promise<string | null> {
  const browser = await chromium.connectOverCDP(s.cdp_url);
  try {
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(`${site.url}/app/home`);
    const heading = page.locator('#signed-in');
    return (await heading.count()) ? (await heading.innerText()).replace('Welcome, ', '') : null;
  } finally {
    await browser.close();
  }
}

/** The secrets the sign-in tests use: none may appear in any log line. */
export const SIGN_IN_SECRETS = [LOGIN_USERS.alice.password, LOGIN_USERS.bob.password, LOGIN_USERS.bob.totpSecret, 'echoed-Secret-9f2'];

/**
 * The bench of the sign-in tests, started in the calling describe's beforeAll: the fixture
 * login site, and a server on the backend whose log lines (debug and up) are kept in logs;
 * `env`, read then, adds to the server's variables (a model's, for the login agent).
 */
export function signInBench(backend: Backend, o: { env?: () => Record<string, string> } = {}) {
  let server: TestServer;
  let site: FixtureServer;
  const logs: string[] = [];
  const schemas = loadEventSchemas();
  const api = (method: string, path: string, body?: unknown) => call(server, method, path, body);

  beforeAll(async () => {
    site = await startFixtureServer();
    server = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'debug', ...o.env?.() } });
  });
  afterAll(async () => {
    await server?.close();
    await site?.close();
  });

  const progressOf = async (sessionId: string) => (await getSession(server, sessionId)).body.data.identities;
  return {
    get server() {
      return server;
    },
    get site() {
      return site;
    },
    logs,
    api,
    /** The identity's events, each checked against its schema. */
    async identityEvents(identityId: string) {
      const rows = await server.db.query<{ id: string; type: string; created: Date | string; project_id: string; text: string; data: any }>(
        `SELECT * FROM events WHERE type LIKE 'identity.%' AND data->>'identity_id' = $1 ORDER BY created`,
        [identityId],
      );
      for (const r of rows) {
        const envelope = { id: r.id, type: r.type, created: new Date(r.created).toISOString(), project_id: r.project_id, text: r.text, data: r.data };
        const validate = schemas.validator(r.type)!;
        expect(validate(envelope), JSON.stringify(validate.errors)).toBe(true);
      }
      return rows;
    },
    /** An identity of its own application at `path` of the fixture site (made first: an identity joins its origin's oldest one), with a flow's `login` when given. */
    async identityAt(path: string, credentials: object[], login?: object) {
      const app = await api('POST', '/v1/applications', { source: `${site.url}${path}` });
      if (login) {
        const methods = credentials.map((c: any) => (c.type === 'authenticator' ? 'authenticator' : 'username_password'));
        await api('POST', `/v1/applications/${app.body.id}/auth-flows`, { name: 'Flow', methods, login });
      }
      const identity = await api('POST', '/v1/identities', { source: `${site.url}${path}`, credentials });
      expect(identity.body.application_id).toBe(app.body.id);
      return identity.body.id as string;
    },
    sessionWith: (identityId: string, extra: object = {}) => createSession(server, { ...HEADLESS, identities: [{ id: identityId }], ...extra }),
    progressOf,
    /** The session's first identity once its login is no longer under way (in the background, or after a person answered). */
    loginSettled: (sessionId: string, withinMs: number) =>
      eventually(
        async () => {
          const [p] = await progressOf(sessionId);
          return p.status === 'authenticating' ? undefined : p;
        },
        withinMs,
        'the login to end',
      ),
  };
}
