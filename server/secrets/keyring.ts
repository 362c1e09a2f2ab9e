// Where the secrets key comes from: SECRETS_KEY, or a key file made once in DATA_DIR. The
// database keeps the key's fingerprint, so a start with a different key (a lost key file, a
// second node with its own DATA_DIR and no SECRETS_KEY) stops with a clear error instead of
// sealing new secrets that old ones cannot be read beside.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeKey } from '../config/config.js';
import type { Db } from '../store/db.js';
import { fingerprint, sealer, type Secrets } from './seal.js';

export const KEY_FILE = 'secrets.key';

export class SecretsKeyError extends Error {}

export async function openSecrets(db: Db, opts: { secretsKey: Buffer | undefined; dataDir: string }): Promise<Secrets> {
  const fromEnv = opts.secretsKey !== undefined;
  const key = opts.secretsKey ?? keyFile(opts.dataDir);
  const mine = fingerprint(key);
  await db.query('INSERT INTO secrets_key (id, fingerprint) VALUES (1, $1) ON CONFLICT (id) DO NOTHING', [mine]);
  const [row] = await db.query<{ fingerprint: string }>('SELECT fingerprint FROM secrets_key WHERE id = 1');
  if (row!.fingerprint !== mine) {
    throw new SecretsKeyError(
      `the secrets key (${fromEnv ? 'SECRETS_KEY' : join(opts.dataDir, KEY_FILE)}) is not the one this database's secrets were sealed with: ` +
        'set SECRETS_KEY to the original key (every node must share it)',
    );
  }
  return sealer(key);
}

function keyFile(dataDir: string): Buffer {
  const path = join(dataDir, KEY_FILE);
  try {
    return parseKey(readFileSync(path, 'utf8').trim(), path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  // 'wx': two processes starting at once must not overwrite each other's key.
  try {
    writeFileSync(path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return parseKey(readFileSync(path, 'utf8').trim(), path);
  }
}

function parseKey(text: string, path: string): Buffer {
  const key = decodeKey(text);
  if (!key) throw new SecretsKeyError(`${path} does not hold a 32-byte key (64 hex digits or base64)`);
  return key;
}
