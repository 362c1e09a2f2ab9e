// Identity tokens: the way an end user links their own account to an application without
// handing the credentials to the project's developers. The project creates a short-lived
// token (POST /v1/applications/{id}/tokens) and sends its user to {PUBLIC_URL}/connect/{token};
// the page there asks for the application's sign-in (user name, password, and an
// authenticator secret when the account has 2FA), makes a pending identity of it (sealed as
// any identity's credentials), and redirects to the callback URL with the identity's id and
// the token's hash. A token works once and for 15 minutes; only its hash is stored.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { CredentialError, sealCredentials } from './credentials.js';
import * as store from './store.js';

export type TokenOperation = 'createIdentityToken';

export const TOKEN_TTL_MS = 15 * 60_000;

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

interface TokenRow {
  token_hash: string;
  project_id: string;
  application_id: string;
  callback_url: string;
  expires_at: Date;
  used_at: Date | null;
}

export function tokenHandlers(d: { db: Db }): Pick<AppHandlers, TokenOperation> {
  return {
    async createIdentityToken(req, ctx) {
      const app = await store.getApplication(d.db, ctx.projectId, req.params.id);
      if (!app) return fail(404, 'Application not found');
      const token = `idt_${randomBytes(24).toString('base64url')}`;
      const expires = new Date(Date.now() + TOKEN_TTL_MS);
      await d.db.query('INSERT INTO identity_tokens (token_hash, project_id, application_id, callback_url, expires_at) VALUES ($1, $2, $3, $4, $5)', [
        hashOf(token),
        ctx.projectId,
        app.id,
        req.body.callbackUrl,
        expires,
      ]);
      return { status: 201, body: { data: { token, expires_at: expires.toISOString(), token_hash: hashOf(token) } } };
    },
  };
}

/** The page an end user opens with a token, and the form it sends. */
export function connectRoutes(app: Hono, d: { db: Db; secrets: Secrets }): void {
  // form-action also governs where the form's answer redirects: the callback's origin too.
  const headersFor = (callbackUrl?: string) => ({
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${callbackUrl ? ` ${new URL(callbackUrl).origin}` : ''}; base-uri 'none'; frame-ancestors 'none'`,
  });
  /** The token's row while it can still be used; undefined for unknown, used or expired. */
  const usable = async (token: string): Promise<TokenRow | undefined> => {
    const [row] = await d.db.query<TokenRow>('SELECT * FROM identity_tokens WHERE token_hash = $1', [hashOf(token)]);
    return row && !row.used_at && row.expires_at.getTime() > Date.now() ? row : undefined;
  };
  const gone = (c: Context) =>
    c.html(page('Link expired', html`<p>This link is not valid any more: it was used, or it expired. Ask for a new one.</p>`), 410, headersFor());

  app.get('/connect/:token', async (c) => {
    const row = await usable(c.req.param('token'));
    if (!row) return gone(c);
    const application = await store.getApplication(d.db, row.project_id, row.application_id);
    if (!application) return gone(c);
    return c.html(form(application.name, new URL(application.url).host), 200, headersFor(row.callback_url));
  });

  app.post('/connect/:token', async (c) => {
    const token = c.req.param('token');
    const row = await usable(token);
    if (!row) return gone(c);
    const application = await store.getApplication(d.db, row.project_id, row.application_id);
    if (!application) return gone(c);
    const f = await c.req.parseBody();
    const text = (name: string) => (typeof f[name] === 'string' ? (f[name] as string) : '').trim();
    const username = text('username');
    const password = typeof f.password === 'string' ? f.password : '';
    const secret = text('totp_secret').replace(/\s+/g, '').toUpperCase();
    const again = (message: string) => c.html(form(application.name, new URL(application.url).host, message, username), 400, headersFor(row.callback_url));
    if (!username || !password) return again('Enter your user name and password.');
    if (username.length > 1024 || password.length > 1024 || secret.length > 256) return again('A field is too long.');
    const id = randomUUID();
    let credentials;
    try {
      credentials = await sealCredentials(d.secrets, id, [
        { type: 'username_password', username, password },
        ...(secret ? [{ type: 'authenticator' as const, secret }] : []),
      ]);
    } catch (err) {
      if (err instanceof CredentialError) return again(err.message);
      throw err;
    }
    // Used up first: two submissions of one link make one identity.
    const claimed = await d.db.query(
      'UPDATE identity_tokens SET used_at = now(), identity_id = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING token_hash',
      [hashOf(token), id],
    );
    if (claimed.length === 0) return gone(c);
    await store.insertIdentity(d.db, {
      id,
      projectId: row.project_id,
      applicationId: application.id,
      name: username,
      source: application.url,
      metadata: { linked_by: 'identity_token' },
      credentials,
    });
    const back = new URL(row.callback_url);
    back.searchParams.set('identity_id', id);
    back.searchParams.set('token_hash', row.token_hash);
    return c.redirect(back.href, 303);
  });
}

function page(title: string, body: unknown) {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title}</title>
        <style>
          body {
            font:
              15px/1.45 system-ui,
              sans-serif;
            max-width: 26em;
            margin: 10vh auto;
            padding: 0 1em;
            color: #222;
          }
          label {
            display: block;
            margin: 0.8em 0 0.2em;
          }
          input {
            width: 100%;
            box-sizing: border-box;
            padding: 0.45em;
            font: inherit;
          }
          button {
            margin-top: 1.2em;
            padding: 0.5em 1.4em;
            font: inherit;
          }
          .error {
            color: #a00;
          }
          .note {
            color: #666;
            font-size: 13px;
          }
        </style>
      </head>
      <body>
        <h1>${title}</h1>
        ${body}
      </body>
    </html>`;
}

function form(applicationName: string, host: string, error?: string, username = '') {
  return page(
    `Link your ${applicationName} account`,
    html`<p>Sign-in details for <strong>${host}</strong>. They are stored encrypted and used only to sign in there for you.</p>
      ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
      <form method="post">
        <label for="username">User name or e-mail</label><input id="username" name="username" autocomplete="username" required value="${username}" />
        <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required />
        <label for="totp_secret">Authenticator secret (optional)</label><input id="totp_secret" name="totp_secret" autocomplete="off" spellcheck="false" />
        <p class="note">Only if the account asks for a code from an authenticator app: the setup key it showed you.</p>
        <button type="submit">Link account</button>
      </form>`,
  );
}
