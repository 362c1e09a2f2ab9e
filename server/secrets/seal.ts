// Sealing a secret for storage: AES-256-GCM under the installation's key, with the place
// the value is kept for (a context such as "identity:<id>:password") bound in as associated
// data, so a sealed value copied into another row or column does not open there.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/** What a capability keeps secrets with; the key never leaves this object. */
export interface Secrets {
  /** A printable sealed form of `plain` for the place named by `context`. */
  seal(plain: string, context: string): string;
  /** The plain text; throws when the value was sealed for another context, altered, or under another key. */
  open(sealed: string, context: string): string;
  /** A key of its own for `purpose` (signing links, say): the installation's key never
   * leaves, every node sharing it derives the same, and no derived key tells another. */
  derive(purpose: string): Buffer;
}

const VERSION = 'v1';

export function sealer(key: Buffer): Secrets {
  if (key.length !== 32) throw new Error('a secrets key is 32 bytes');
  return {
    seal(plain, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
    },
    open(sealed, context) {
      const [version, data] = sealed.split(':');
      if (version !== VERSION || !data) throw new Error('not a sealed secret');
      const raw = Buffer.from(data, 'base64url');
      if (raw.length < 28) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
    derive(purpose) {
      return createHmac('sha256', key).update(`cloud-browser derived key: ${purpose}`).digest();
    },
  };
}

/** Names a key without revealing it: stored, so a start with another key is caught before it writes. */
export function fingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('cloud-browser secrets key fingerprint').digest('base64url').slice(0, 22);
}
