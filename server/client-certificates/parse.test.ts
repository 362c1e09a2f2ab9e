// Reading uploads with the real openssl: every accepted form gives the same certificate and a
// bundle NSS imports, and every bad input is refused with the reason a user can act on.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importIntoNssDb } from './nssdb.js';
import { CertificateError, distinguishedName, readClientCertificate } from './parse.js';
import { runTool } from './tool.js';
import { makeTestPki, type TestPki } from './test-support.js';

describe('reading a client certificate upload', () => {
  let pki: TestPki;
  beforeAll(() => {
    pki = makeTestPki();
  });
  afterAll(() => pki?.remove());

  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => 'accepted',
      (err: Error) => (err instanceof CertificateError ? err.message : `unexpected: ${err.message}`),
    );

  it('accepts PEM (plain and encrypted key), PKCS#12 and legacy PKCS#12, all as the same certificate', async () => {
    const fingerprint = new X509Certificate(pki.client.cert).fingerprint256;
    const forms = [
      { file: Buffer.from(pki.client.cert + pki.client.key), passphrase: undefined, format: 'pem' },
      { file: Buffer.from(pki.encryptedKey('pem pass') + pki.client.cert + pki.caPem), passphrase: 'pem pass', format: 'pem' },
      { file: pki.pkcs12('p12 pass'), passphrase: 'p12 pass', format: 'pkcs12' },
      { file: pki.pkcs12('old pass', true), passphrase: 'old pass', format: 'pkcs12' },
      { file: pki.pkcs12(''), passphrase: undefined, format: 'pkcs12' },
    ];
    for (const f of forms) {
      const m = await readClientCertificate(f.file, f.passphrase, 'nick');
      expect({ format: m.format, fingerprint: m.leaf.fingerprint256 }).toEqual({ format: f.format, fingerprint });
      expect(distinguishedName(m.leaf.subject)).toBe('CN=Test Client, O=Acme');
      expect(distinguishedName(m.leaf.issuer)).toBe('CN=Test Client CA, O=Cloud Browser Tests');
      // The leaf first, whatever order the file had.
      expect(new X509Certificate(m.certificatePem).fingerprint256).toBe(fingerprint);
      expect(m.bundle.pkcs12.length).toBeGreaterThan(100);
      expect(m.bundle.password).toMatch(/^[\w-]{32}$/);
    }
  });

  it('refuses what is not a usable client certificate, saying why', async () => {
    const p12 = pki.pkcs12('right');
    expect(await refusal(readClientCertificate(Buffer.alloc(0), undefined, 'n'))).toBe('The file is empty');
    expect(await refusal(readClientCertificate(Buffer.from('just some text, not a certificate'), undefined, 'n'))).toBe(
      'The file is neither PEM nor a readable PKCS#12 file',
    );
    expect(await refusal(readClientCertificate(p12, 'wrong', 'n'))).toBe('The PKCS#12 file cannot be read with the passphrase given');
    expect(await refusal(readClientCertificate(p12, undefined, 'n'))).toBe('The PKCS#12 file cannot be read with the passphrase given');
    expect(await refusal(readClientCertificate(Buffer.from(pki.client.cert), undefined, 'n'))).toBe(
      'The file holds no private key: a client certificate needs its key',
    );
    expect(await refusal(readClientCertificate(Buffer.from(pki.client.key), undefined, 'n'))).toBe('The file holds no PEM certificate');
    expect(await refusal(readClientCertificate(Buffer.from(pki.client.cert + pki.strayKey), undefined, 'n'))).toBe(
      'The private key does not match the certificate',
    );
    expect(await refusal(readClientCertificate(Buffer.from(pki.client.cert + pki.encryptedKey('k')), undefined, 'n'))).toBe(
      'The private key is encrypted: give its passphrase',
    );
    expect(await refusal(readClientCertificate(Buffer.from(pki.client.cert + pki.encryptedKey('k')), 'not k', 'n'))).toBe(
      'The private key cannot be decrypted with the passphrase given',
    );
    expect(await refusal(readClientCertificate(Buffer.from(pki.ca.cert + pki.ca.key), undefined, 'n'))).toBe(
      'The certificate is a CA certificate (basicConstraints CA:TRUE): browsers present only end-entity certificates as client certificates',
    );
    const garbled = pki.client.cert.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA');
    expect(await refusal(readClientCertificate(Buffer.from(garbled + pki.client.key), undefined, 'n'))).toBe(
      'A CERTIFICATE block of the file is not a valid X.509 certificate',
    );
    const expiry = new Date(new X509Certificate(pki.client.cert).validTo);
    const later = new Date(expiry.getTime() + 1000);
    expect(await refusal(readClientCertificate(Buffer.from(pki.client.cert + pki.client.key), undefined, 'n', later))).toBe(
      `The certificate expired on ${expiry.toISOString()}`,
    );
  });

  it('writes a bundle that NSS imports with its key, under the nickname given', async () => {
    const m = await readClientCertificate(pki.pkcs12('x'), 'x', 'cert-nick-1');
    const home = mkdtempSync(join(tmpdir(), 'cb-nss-'));
    try {
      await importIntoNssDb(join(home, 'home'), join(home, 'tmp'), [m.bundle]);
      const db = `sql:${join(home, 'home', '.pki', 'nssdb')}`;
      const certs = (await runTool('certutil', ['-L', '-d', db])).stdout.toString();
      expect(certs).toMatch(/cert-nick-1\s+u,u,u/);
      const keys = await runTool('certutil', ['-K', '-d', db]);
      expect(keys.stdout.toString()).toContain('cert-nick-1');
      // The scratch files that carried the bundle and its password are gone.
      expect((await runTool('ls', ['-A', join(home, 'tmp')])).stdout.toString()).toBe('');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
