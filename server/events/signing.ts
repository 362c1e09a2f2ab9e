// Signing per the Standard Webhooks specification (https://www.standardwebhooks.com):
//   webhook-id         the event id (stable across retries, so receivers can deduplicate)
//   webhook-timestamp  seconds since the epoch, of this attempt
//   webhook-signature  space-separated `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`
// Secrets are `whsec_<base64 of 32 random bytes>`; the key is the decoded bytes, as the
// `standardwebhooks` libraries expect.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** After a rotation the previous secret keeps signing (beside the new one) this long. */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function secretKey(secret: string): Buffer {
  const raw = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(raw, 'base64');
  if (key.length === 0) throw new Error('empty webhook secret');
  return key;
}

/** One `v1,<base64>` signature. */
export function sign(secret: string, msgId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${msgId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface SigningSecrets {
  secret: string;
  previous_secret?: string | null;
  previous_secret_expires_at?: Date | string | null;
}

/** The secrets that sign at `now`: the current one, and the previous one during its grace. */
export function activeSecrets(s: SigningSecrets, now: Date = new Date()): string[] {
  const out = [s.secret];
  if (s.previous_secret && s.previous_secret_expires_at) {
    const until = new Date(s.previous_secret_expires_at).getTime();
    if (until > now.getTime()) out.push(s.previous_secret);
  }
  return out;
}

/** The three Standard Webhooks headers for one attempt. */
export function signatureHeaders(
  secrets: readonly string[],
  msgId: string,
  body: string,
  now: Date = new Date(),
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const ts = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(ts),
    'webhook-signature': secrets.map((s) => sign(s, msgId, ts, body)).join(' '),
  };
}
