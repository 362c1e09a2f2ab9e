import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { openTestDb, type TestDb } from '../events/test-support.js';
import { KEY_FILE, openSecrets, SecretsKeyError, sealer } from './index.js';

describe('sealing', () => {
  const s = sealer(randomBytes(32));

  it('opens what it sealed, in the same context only', () => {
    const sealed = s.seal('hunter2 ✓', 'identity:a:password');
    expect(sealed).not.toContain('hunter2');
    expect(s.open(sealed, 'identity:a:password')).toBe('hunter2 ✓');
    expect(() => s.open(sealed, 'identity:b:password')).toThrow();
  });

  it('seals the same text differently each time, and refuses an altered value or another key', () => {
    const a = s.seal('x', 'c');
    expect(s.seal('x', 'c')).not.toBe(a);
    const raw = Buffer.from(a.slice(3), 'base64url');
    raw[raw.length - 1]! ^= 1;
    expect(() => s.open(`v1:${raw.toString('base64url')}`, 'c')).toThrow();
    expect(() => sealer(randomBytes(32)).open(a, 'c')).toThrow();
    expect(() => s.open('plain text', 'c')).toThrow(/not a sealed secret/);
  });

  it('derives a key per purpose: the same from the same installation key, another for another purpose or key, never the key itself', () => {
    const key = randomBytes(32);
    const one = sealer(key);
    const links = one.derive('recording links');
    expect(links).toHaveLength(32);
    expect(sealer(Buffer.from(key)).derive('recording links').equals(links)).toBe(true);
    expect(one.derive('task artifact links').equals(links)).toBe(false);
    expect(sealer(randomBytes(32)).derive('recording links').equals(links)).toBe(false);
    expect(links.equals(key)).toBe(false);
  });
});

describe('the key', () => {
  let t: TestDb;
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'secrets-'));
    dirs.push(d);
    return d;
  };
  beforeAll(async () => {
    t = await openTestDb();
  });
  afterAll(async () => {
    await t?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('is made once in DATA_DIR, private to its owner, and used again; another key is refused at start', async () => {
    const dataDir = dir();
    const first = await openSecrets(t.db, { secretsKey: undefined, dataDir });
    const file = join(dataDir, KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const sealed = first.seal('s3cret', 'ctx');
    const again = await openSecrets(t.db, { secretsKey: undefined, dataDir });
    expect(again.open(sealed, 'ctx')).toBe('s3cret');
    expect(readFileSync(file, 'utf8').trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/);

    // The key file lost (or a second node with its own DATA_DIR): a clear error, not a new key.
    await expect(openSecrets(t.db, { secretsKey: undefined, dataDir: dir() })).rejects.toThrow(SecretsKeyError);
    await expect(openSecrets(t.db, { secretsKey: randomBytes(32), dataDir })).rejects.toThrow(/SECRETS_KEY/);

    // SECRETS_KEY holding the same key works on any node.
    const shared = loadConfig({ SECRETS_KEY: readFileSync(file, 'utf8').trim() }).secretsKey;
    const node2 = await openSecrets(t.db, { secretsKey: shared, dataDir: dir() });
    expect(node2.open(sealed, 'ctx')).toBe('s3cret');
  });

  it('refuses a key file that holds no key', async () => {
    const t2 = await openTestDb();
    try {
      const dataDir = dir();
      writeFileSync(join(dataDir, KEY_FILE), 'not a key\n');
      await expect(openSecrets(t2.db, { secretsKey: undefined, dataDir })).rejects.toThrow(/does not hold a 32-byte key/);
    } finally {
      await t2.close();
    }
  });

  it('SECRETS_KEY is checked at start without being echoed', () => {
    expect(loadConfig({ SECRETS_KEY: 'ab'.repeat(32) }).secretsKey).toEqual(Buffer.alloc(32, 0xab));
    expect(() => loadConfig({ SECRETS_KEY: 'too-short-key-value' })).toThrow(/SECRETS_KEY must be 32 bytes/);
    expect(() => loadConfig({ SECRETS_KEY: 'too-short-key-value' })).not.toThrow(/too-short-key-value/);
  });
});
