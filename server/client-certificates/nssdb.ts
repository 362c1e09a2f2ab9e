// A session's NSS database: Chromium on Linux keeps client certificates and their keys in
// $HOME/.pki/nssdb, and the launcher gives every session a HOME inside its root (launch.ts),
// so what is imported here belongs to that one browser and goes with its root.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runTool } from './tool.js';

export interface NssImport {
  /** The bundle's PKCS#12 bytes and its password (parse.ts wrote it). */
  pkcs12: Buffer;
  password: string;
}

/** A CA certificate the browser trusts to sign servers' certificates. */
export interface NssAuthority {
  name: string;
  pem: string;
}

/**
 * Creates the database (no password: Chromium opens it unattended), imports each bundle, and
 * each CA certificate as trusted for servers (`C,,`): on Linux, Chromium's verifier takes the
 * roots its user added to NSS besides its own root store.
 */
export async function importIntoNssDb(
  homeDir: string,
  scratchDir: string,
  bundles: readonly NssImport[],
  authorities: readonly NssAuthority[] = [],
): Promise<void> {
  const dir = join(homeDir, '.pki', 'nssdb');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const db = `sql:${dir}`;
  check('certutil', await runTool('certutil', ['-N', '-d', db, '--empty-password']));
  await mkdir(scratchDir, { recursive: true });
  for (const [i, bundle] of bundles.entries()) {
    // pk12util reads files only; they live a moment in the root's own tmp and are removed
    // whatever happens (the key then lives in key4.db, inside the same root).
    const file = join(scratchDir, `client-certificate-${i}.p12`);
    const pwFile = join(scratchDir, `client-certificate-${i}.pw`);
    try {
      await writeFile(file, bundle.pkcs12, { mode: 0o600 });
      await writeFile(pwFile, bundle.password, { mode: 0o600 });
      check('pk12util', await runTool('pk12util', ['-i', file, '-d', db, '-w', pwFile]));
    } finally {
      await rm(file, { force: true });
      await rm(pwFile, { force: true });
    }
  }
  for (const [i, ca] of authorities.entries()) {
    const file = join(scratchDir, `ca-certificate-${i}.pem`);
    try {
      await writeFile(file, ca.pem);
      check('certutil', await runTool('certutil', ['-A', '-d', db, '-n', `ca-${ca.name}`, '-t', 'C,,', '-a', '-i', file]));
    } finally {
      await rm(file, { force: true });
    }
  }
}

function check(tool: string, r: { code: number | null; stderr: string }): void {
  if (r.code !== 0) throw new Error(`${tool} failed (${r.code}): ${r.stderr.trim().split('\n').slice(-1)[0] ?? ''}`);
}
