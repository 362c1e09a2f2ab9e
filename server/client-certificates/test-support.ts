// A small PKI for the tests, made with the openssl CLI in a temporary folder: a CA, a server
// certificate for 127.0.0.1 and localhost, and client certificates signed by the CA, in the
// forms users upload (PEM, encrypted PEM, PKCS#12 modern and legacy).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  dir: string;
  caPem: string;
  server: { cert: string; key: string };
  /** A client certificate (CN=Test Client, O=Acme) and its key, unencrypted PEM. */
  client: { cert: string; key: string };
  /** The client certificate as PKCS#12 under `passphrase` (legacy: RC2/3DES, as old tools write it). */
  pkcs12(passphrase: string, legacy?: boolean): Buffer;
  /** The client key as encrypted PKCS#8 PEM. */
  encryptedKey(passphrase: string): string;
  /** A key that belongs to no certificate here. */
  strayKey: string;
  /** The CA's certificate and key: a CA certificate, not a client's. */
  ca: { cert: string; key: string };
  remove(): void;
}

const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

export function makeTestPki(clientSubject = '/CN=Test Client/O=Acme'): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'cb-pki-'));
  const run = (args: string[]) => openssl(dir, args);
  run([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-noenc',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '30',
    '-subj',
    '/CN=Test Client CA/O=Cloud Browser Tests',
  ]);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  run(['req', '-newkey', 'rsa:2048', '-noenc', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  run([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '30',
    '-extfile',
    'server.ext',
  ]);
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-noenc', '-keyout', 'client.key', '-out', 'client.csr', '-subj', clientSubject]);
  run([
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'client.crt',
    '-days',
    '30',
    '-extfile',
    'client.ext',
  ]);
  run(['genpkey', '-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'stray.key']);
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    dir,
    caPem: read('ca.crt'),
    server: { cert: read('server.crt'), key: read('server.key') },
    client: { cert: read('client.crt'), key: read('client.key') },
    pkcs12: (passphrase, legacy = false) =>
      run([
        'pkcs12',
        '-export',
        '-inkey',
        'client.key',
        '-in',
        'client.crt',
        '-certfile',
        'ca.crt',
        '-passout',
        `pass:${passphrase}`,
        ...(legacy ? ['-legacy'] : []),
      ]),
    encryptedKey: (passphrase) => run(['pkcs8', '-topk8', '-in', 'client.key', '-passout', `pass:${passphrase}`, '-v2', 'aes-256-cbc']).toString('utf8'),
    strayKey: read('stray.key'),
    ca: { cert: read('ca.crt'), key: read('ca.key') },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface ClientAuthServer {
  url: string;
  /** The subjects (CN) of the client certificates presented, one an accepted request. */
  seen: string[];
  /** Handshakes refused (no certificate, or one the CA did not sign). */
  refused: number;
  close(): Promise<void>;
}

/** An HTTPS server that completes a handshake only with a client certificate the test CA signed. */
export async function startClientAuthServer(pki: TestPki): Promise<ClientAuthServer> {
  const seen: string[] = [];
  const state = { refused: 0 };
  const server: Server = createServer(
    { key: pki.server.key, cert: pki.server.cert, ca: pki.caPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const cn = (req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN ?? '';
      seen.push(String(cn));
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>client certificate</title><h1 id="who">${cn}</h1>`);
    },
  );
  server.on('tlsClientError', () => state.refused++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    seen,
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
