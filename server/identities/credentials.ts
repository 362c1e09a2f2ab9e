// An identity's credentials: checked and sealed one value at a time (each bound to
// 'identity:<id>:<field>', so a value copied to another identity or field does not open),
// opened only for a login, and otherwise known only by which fields are set. TOTP codes
// (RFC 6238) come from otplib.
import { createGuardrails, generate, verify } from 'otplib';
import type { components } from '../../generated/types.js';
import type { Secrets } from '../secrets/index.js';

type CredentialInput = components['schemas']['IdentityCredential'];
type CredentialFields = components['schemas']['IdentityCredentialsResponse']['credentials'];

/** What is stored: every string a sealed value. */
export interface SealedCredentials {
  username_password?: { username: string; password: string };
  authenticator?: { secret: string };
  custom?: { fields: { name: string; value: string }[] };
}

/** Opened for a login, and never kept past it. */
export interface PlainCredentials {
  username?: string;
  password?: string;
  totpSecret?: string;
  custom: Record<string, string>;
}

// Authenticator apps accept the 80-bit seeds many sites still issue; otplib's default
// refuses seeds under 128 bits.
const guardrails = createGuardrails({ MIN_SECRET_BYTES: 1 });

const context = (identityId: string, field: string) => `identity:${identityId}:${field}`;

export class CredentialError extends Error {}

type Kind = NonNullable<CredentialInput['type']>;
type Typed = { [K in Kind]: Extract<CredentialInput, { type?: K }> & { type: K } }[Kind];

/**
 * A credential with its `type`, which the vendor's SDKs let a client leave out. The
 * contract's forms share no field (each refuses the others'), so a credential that passed
 * validation has the fields of exactly one kind.
 */
function typed(c: CredentialInput): Typed {
  if ('username' in c) return { ...c, type: 'username_password' };
  if ('secret' in c) return { ...c, type: 'authenticator' };
  return { ...c, type: 'custom' };
}

/** Checks and seals the credentials of a create or update; throws CredentialError with the 400's message. */
export async function sealCredentials(secrets: Secrets, identityId: string, list: CredentialInput[]): Promise<SealedCredentials> {
  const sealed: SealedCredentials = {};
  for (const c of list.map(typed)) {
    if (sealed[c.type]) throw new CredentialError(`credentials: at most one credential of type ${c.type}`);
    if (c.type === 'username_password') {
      sealed.username_password = {
        username: secrets.seal(c.username, context(identityId, 'username')),
        password: secrets.seal(c.password, context(identityId, 'password')),
      };
    } else if (c.type === 'authenticator') {
      const secret = c.secret.replace(/=+$/, '').toUpperCase();
      let code: string;
      try {
        code = await totp(secret);
      } catch (err) {
        throw new CredentialError(`credentials: the authenticator secret is not a usable TOTP seed (${(err as Error).message})`);
      }
      if (c.otp !== undefined && c.otp !== code && !(await verify({ secret, token: c.otp, guardrails, epochTolerance: 30 })).valid) {
        throw new CredentialError('credentials: the authenticator code (otp) does not match the secret');
      }
      sealed.authenticator = { secret: secrets.seal(secret, context(identityId, 'secret')) };
    } else {
      const names = new Set<string>();
      for (const f of c.fields) {
        if (names.has(f.name)) throw new CredentialError(`credentials: custom field ${f.name} is given twice`);
        names.add(f.name);
      }
      sealed.custom = { fields: c.fields.map((f) => ({ name: f.name, value: secrets.seal(f.value, context(identityId, `custom:${f.name}`)) })) };
    }
  }
  return sealed;
}

export function openCredentials(secrets: Secrets, identityId: string, sealed: SealedCredentials): PlainCredentials {
  const up = sealed.username_password;
  const custom: Record<string, string> = {};
  for (const f of sealed.custom?.fields ?? []) custom[f.name] = secrets.open(f.value, context(identityId, `custom:${f.name}`));
  return {
    username: up && secrets.open(up.username, context(identityId, 'username')),
    password: up && secrets.open(up.password, context(identityId, 'password')),
    totpSecret: sealed.authenticator && secrets.open(sealed.authenticator.secret, context(identityId, 'secret')),
    custom,
  };
}

/** Which fields are set, by credential type: all a read may say. */
export function credentialFields(sealed: SealedCredentials): CredentialFields {
  const out: CredentialFields = [];
  if (sealed.username_password) out.push({ type: 'username_password', fields: ['username', 'password'] });
  if (sealed.authenticator) out.push({ type: 'authenticator', fields: ['secret'] });
  if (sealed.custom) out.push({ type: 'custom', fields: sealed.custom.fields.map((f) => f.name) });
  return out;
}

/** The current TOTP code of a base32 seed (6 digits, 30 s, SHA-1: what authenticator apps use). */
export function totp(secret: string): Promise<string> {
  return generate({ secret, guardrails });
}
