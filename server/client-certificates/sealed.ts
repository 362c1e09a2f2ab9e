// The sealed form of a certificate's bundle (its PKCS#12 with the key, and that bundle's
// password), bound to the certificate's row by the sealing context.
import type { Secrets } from '../secrets/index.js';
import type { NssImport } from './nssdb.js';

const context = (id: string) => `client-certificate:${id}:key`;

export function sealBundle(secrets: Secrets, id: string, bundle: NssImport): string {
  return secrets.seal(JSON.stringify({ pkcs12: bundle.pkcs12.toString('base64'), password: bundle.password }), context(id));
}

export function openBundle(secrets: Secrets, id: string, sealed: string): NssImport {
  const { pkcs12, password } = JSON.parse(secrets.open(sealed, context(id))) as { pkcs12: string; password: string };
  return { pkcs12: Buffer.from(pkcs12, 'base64'), password };
}
