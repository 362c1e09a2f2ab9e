// Signing in to the console. The API key the user gives is kept, sealed with the
// installation's secrets key (secrets.seal, AES-GCM bound to its purpose), in an HttpOnly,
// SameSite=Strict cookie scoped to /console, Secure when PUBLIC_URL is https: the cookie
// holds no key in clear, and no server-side table is needed, so any node of one database
// reads it. The key itself is checked on every request (findKey reads the database), so a
// revoked key signs its console out at once. Each sign-in also draws a CSRF token, sealed
// with the key and written into every form; a POST without it is refused.
import { randomBytes } from 'node:crypto';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { findKey } from '../auth/api-keys.js';
import { sameToken } from '../auth/tokens.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';

export const SESSION_COOKIE = 'cb_console';
/** Before sign-in: the token the sign-in form carries (a forged sign-in is refused too). */
export const LOGIN_COOKIE = 'cb_console_login';
const CONTEXT = 'console-session';
const LIFETIME_SECONDS = 12 * 3600;

export interface SignedIn {
  key: string;
  csrf: string;
  projectId: string;
  apiKeyId: string;
}

interface Sealed {
  k: string;
  c: string;
  /** Expiry, ms since the epoch: a copied cookie stops working by itself. */
  e: number;
}

export class ConsoleAuth {
  private readonly secure: boolean;

  constructor(private readonly o: { db: Db; secrets: Secrets; publicUrl: string }) {
    this.secure = o.publicUrl.startsWith('https:');
  }

  /** The signed-in user of this request, or undefined (no cookie, expired, altered, or the key revoked). */
  async current(c: Context): Promise<SignedIn | undefined> {
    const raw = getCookie(c, SESSION_COOKIE);
    if (!raw) return undefined;
    let s: Sealed;
    try {
      s = JSON.parse(this.o.secrets.open(raw, CONTEXT)) as Sealed;
    } catch {
      return undefined;
    }
    if (typeof s.e !== 'number' || s.e < Date.now()) return undefined;
    const owner = await findKey(this.o.db, s.k);
    return owner && { key: s.k, csrf: s.c, ...owner };
  }

  /** Checks the key and signs in with it; false for a key that does not open a project. */
  async signIn(c: Context, key: string): Promise<boolean> {
    if (!(await findKey(this.o.db, key))) return false;
    const sealed: Sealed = { k: key, c: randomBytes(24).toString('base64url'), e: Date.now() + LIFETIME_SECONDS * 1000 };
    setCookie(c, SESSION_COOKIE, this.o.secrets.seal(JSON.stringify(sealed), CONTEXT), {
      path: '/console',
      httpOnly: true,
      secure: this.secure,
      sameSite: 'Strict',
      maxAge: LIFETIME_SECONDS,
    });
    deleteCookie(c, LOGIN_COOKIE, { path: '/console' });
    return true;
  }

  signOut(c: Context): void {
    deleteCookie(c, SESSION_COOKIE, { path: '/console', secure: this.secure });
  }

  /** A token for the sign-in form, kept in a cookie of its own until the sign-in. */
  loginToken(c: Context): string {
    const token = getCookie(c, LOGIN_COOKIE) ?? randomBytes(24).toString('base64url');
    setCookie(c, LOGIN_COOKIE, token, { path: '/console', httpOnly: true, secure: this.secure, sameSite: 'Strict', maxAge: 3600 });
    return token;
  }

  loginTokenMatches(c: Context, given: unknown): boolean {
    const expected = getCookie(c, LOGIN_COOKIE);
    return typeof given === 'string' && expected !== undefined && given.length > 0 && sameToken(given, expected);
  }
}

/** The form's token against the session's, in constant time. */
export function csrfMatches(user: SignedIn, given: unknown): boolean {
  return typeof given === 'string' && given.length > 0 && sameToken(given, user.csrf);
}
