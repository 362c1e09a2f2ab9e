// A first start on an empty DATA_DIR, as `pnpm start` and `docker run` make it: PGlite's
// initdb, every migration, then the database opened again (server.ts says why) before the
// bootstrap key is written. Everything made before the reopen and after it is there at the
// next start, which migrates nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../log.js';
import { startServer } from '../server.js';

const dataDir = mkdtempSync(join(tmpdir(), 'cb-first-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;

async function start(logs: string[]) {
  const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, BOOTSTRAP_API_KEY: apiKey, BROWSER_POOL_SIZE: '0', LOG_LEVEL: 'info' });
  const server = await startServer(config, createLogger(config.logLevel, { write: (line: string) => void logs.push(line) }));
  const status = (await fetch(`${server.url}/v1/sessions`, { headers: { 'service-api-key': apiKey } })).status;
  await server.close();
  return { status, migrated: logs.some((l) => JSON.parse(l).msg === 'database migrated') };
}

describe('a first start on an empty DATA_DIR', () => {
  it('migrates, opens the database again, and keeps what it made at the next start', { timeout: 120_000 }, async () => {
    const first = await start([]);
    expect(first).toEqual({ status: 200, migrated: true });
    const second = await start([]);
    expect(second).toEqual({ status: 200, migrated: false });
  });
});
