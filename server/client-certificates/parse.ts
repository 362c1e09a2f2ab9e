// Reading an uploaded client certificate: PKCS#12 (with its passphrase) or PEM (certificate
// blocks and one private key, possibly encrypted), down to the certificate the key belongs to
// and the chain that came with it. What cannot be a client certificate is refused here with
// the reason the 400 gives. The result is rewritten as one PKCS#12 under a password of our
// own: the form the sessions' NSS database imports (pk12util), whatever the upload was, so
// the user's passphrase is not kept at all.
import { createPrivateKey, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTool } from './tool.js';

export class CertificateError extends Error {}

export interface ClientCertificateMaterial {
  format: 'pkcs12' | 'pem';
  /** The certificate the key belongs to. */
  leaf: X509Certificate;
  /** The leaf, then the chain that came with it, as PEM: public, kept in clear. */
  certificatePem: string;
  /** The key and the certificates, for NSS; secret. */
  bundle: { pkcs12: Buffer; password: string };
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g;
const KEY_LABELS = new Set(['PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY']);

/** `nickname` names the certificate in NSS databases (the id: unique, so imports never clash). */
export async function readClientCertificate(
  file: Buffer,
  passphrase: string | undefined,
  nickname: string,
  now = new Date(),
): Promise<ClientCertificateMaterial> {
  if (file.length === 0) throw new CertificateError('The file is empty');
  const format = looksLikePem(file) ? 'pem' : 'pkcs12';
  const pem = format === 'pem' ? file.toString('utf8') : await pkcs12ToPem(file, passphrase ?? '');
  const blocks = [...pem.matchAll(PEM_BLOCK)].map((m) => ({ label: m[1]!, text: m[0] }));
  const certs = blocks.filter((b) => b.label === 'CERTIFICATE').map((b) => parseCertificate(b.text));
  const keys = blocks.filter((b) => KEY_LABELS.has(b.label));
  if (certs.length === 0) throw new CertificateError(format === 'pem' ? 'The file holds no PEM certificate' : 'The PKCS#12 file holds no certificate');
  if (keys.length === 0) throw new CertificateError('The file holds no private key: a client certificate needs its key');
  if (keys.length > 1) throw new CertificateError('The file holds more than one private key');
  const key = parseKey(keys[0]!.text, passphrase);
  const leaf = certs.find((c) => c.checkPrivateKey(key));
  if (!leaf) throw new CertificateError('The private key does not match the certificate');
  // Measured: Chromium (NSS) offers no CA certificate as a client's, so one would be kept and
  // never presented.
  if (leaf.ca)
    throw new CertificateError(
      'The certificate is a CA certificate (basicConstraints CA:TRUE): browsers present only end-entity certificates as client certificates',
    );
  if (new Date(leaf.validTo).getTime() <= now.getTime()) throw new CertificateError(`The certificate expired on ${new Date(leaf.validTo).toISOString()}`);
  const ordered = [leaf, ...certs.filter((c) => c !== leaf)];
  const certificatePem = ordered.map((c) => c.toString()).join('');
  return { format, leaf, certificatePem, bundle: await toPkcs12(certificatePem, key, nickname) };
}

function looksLikePem(file: Buffer): boolean {
  return file
    .subarray(0, 64 * 1024)
    .toString('latin1')
    .includes('-----BEGIN ');
}

function parseCertificate(text: string): X509Certificate {
  try {
    return new X509Certificate(text);
  } catch {
    throw new CertificateError('A CERTIFICATE block of the file is not a valid X.509 certificate');
  }
}

function parseKey(text: string, passphrase: string | undefined): KeyObject {
  try {
    return createPrivateKey({ key: text, format: 'pem', ...(passphrase ? { passphrase } : {}) });
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    // Node 20 reports a missing passphrase as an interrupted password prompt.
    if (!passphrase && (code === 'ERR_MISSING_PASSPHRASE' || code === 'ERR_OSSL_CRYPTO_INTERRUPTED_OR_CANCELLED'))
      throw new CertificateError('The private key is encrypted: give its passphrase');
    if (/ENCRYPTED|Proc-Type: 4,ENCRYPTED/.test(text)) throw new CertificateError('The private key cannot be decrypted with the passphrase given');
    throw new CertificateError('The private key block is not a valid private key');
  }
}

/** The certificates and key of a PKCS#12 file as PEM, or why not. */
async function pkcs12ToPem(file: Buffer, passphrase: string): Promise<string> {
  const args = ['pkcs12', '-passin', 'fd:3', '-noenc'];
  let r = await runTool('openssl', args, { stdin: file, password: passphrase });
  // OpenSSL 3 reads the old RC2/3DES files (still what many tools export) only with its
  // legacy provider.
  if (r.code !== 0 && /unsupported/i.test(r.stderr)) r = await runTool('openssl', [...args, '-legacy'], { stdin: file, password: passphrase });
  if (r.code === 0) return r.stdout.toString('utf8');
  if (/mac verify error|invalid password/i.test(r.stderr)) throw new CertificateError('The PKCS#12 file cannot be read with the passphrase given');
  throw new CertificateError('The file is neither PEM nor a readable PKCS#12 file');
}

async function toPkcs12(certificatePem: string, key: KeyObject, nickname: string): Promise<{ pkcs12: Buffer; password: string }> {
  const password = randomBytes(24).toString('base64url');
  // openssl reads the key and the certificates from one file (stdin cannot be read twice);
  // the key in it is encrypted under the bundle's own password, so it never touches the disk
  // in clear. The password goes twice on fd 3: once to read the key, once for the bundle.
  const dir = await mkdtemp(join(tmpdir(), 'cb-client-cert-'));
  try {
    const file = join(dir, 'bundle.pem');
    const encrypted = key.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: password }) as string;
    await writeFile(file, certificatePem + encrypted, { mode: 0o600 });
    const args = ['pkcs12', '-export', '-in', file, '-passin', 'fd:3', '-passout', 'fd:3', '-name', nickname];
    const r = await runTool('openssl', args, { password: `${password}\n${password}` });
    if (r.code !== 0) throw new Error(`openssl could not write the PKCS#12 bundle: ${r.stderr.trim().split('\n')[0]}`);
    return { pkcs12: r.stdout, password };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A distinguished name as `X509Certificate` gives it (one attribute a line), comma-separated. */
export function distinguishedName(lines: string): string {
  return lines.split('\n').filter(Boolean).join(', ');
}

/** The first value of each attribute of a distinguished name (CN, O, OU, L...). */
export function nameAttributes(lines: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at)] ??= line.slice(at + 1);
  }
  return out;
}
