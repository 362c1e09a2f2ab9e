// deploy/compose.yaml's topology without containers: two real nodes on PostgreSQL (a schema of
// DATABASE_URL of their own), one S3 server from npm standing in for MinIO, a round-robin
// front standing in for nginx, every shared setting taken from deploy/.env.example (the file
// compose.yaml's .env is copied from) with its secrets filled in, so the two cannot drift.
// Then the README's first-session curl, run by curl itself against the front, and its
// cdp_url driven through the front. Needs DATABASE_URL; skipped with a printed reason without.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startTestCluster, type TestCluster } from '../server/cluster/test-support.js';
import { SETTINGS } from '../server/config/settings.js';
import { startLocalS3, type LocalS3 } from '../server/testing/s3-server.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('scripts/deploy-compose.test.ts skipped: two nodes need PostgreSQL, and DATABASE_URL is not set');

const file = (name: string) => readFileSync(fileURLToPath(new URL(`../deploy/${name}`, import.meta.url)), 'utf8');

/** deploy/.env.example's NAME=value lines, empty values filled as the file says (openssl rand -hex 32). */
export function envExample(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of file('.env.example').matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)) env[m[1]] = m[2] || randomBytes(32).toString('hex');
  return env;
}

/** The README's first session: its ```sh block with `curl ... /v1/sessions`. */
function readmeCurl(): string {
  const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
  const block = /```sh\n(curl[^`]*?\/v1\/sessions[^`]*?)```/.exec(readme);
  if (!block) throw new Error('README.md has no ```sh block with the first session curl');
  return block[1].replace(/\\\n\s*/g, ' ').trim();
}

// The variables compose.yaml passes its nodes that the test's own pieces replace: the database
// and the store are local, their credentials theirs.
const COMPOSE_ONLY = ['POSTGRES_PASSWORD', 'MINIO_ROOT_USER', 'MINIO_ROOT_PASSWORD'];

describe('deploy/.env.example', () => {
  it('names only settings of the server, or the variables compose.yaml uses for PostgreSQL and MinIO', () => {
    const names = Object.keys(envExample());
    const compose = file('compose.yaml');
    for (const name of names) {
      if (COMPOSE_ONLY.includes(name)) expect(compose, `${name} is used by compose.yaml`).toContain(`\${${name}`);
      else expect(Object.keys(SETTINGS), `${name} is a setting`).toContain(name);
    }
    // Both nodes read the file, and nginx fronts exactly them.
    const services = (parse(compose, { merge: true }) as { services: Record<string, { env_file?: string }> }).services;
    expect(services['node-a'].env_file).toBe('.env');
    expect(services['node-b'].env_file).toBe('.env');
    expect(file('nginx.conf')).toMatch(/server node-a:8080;\s+server node-b:8080;/);
  });
});

describe.skipIf(!databaseUrl)("compose.yaml's topology: two nodes, PostgreSQL, S3, a round-robin front", () => {
  let s3: LocalS3;
  let cluster: TestCluster;
  const env = envExample();

  beforeAll(async () => {
    const bucket = /^s3:\/\/([^/]+)/.exec(env.STORAGE_URL)![1];
    s3 = await startLocalS3(bucket);
    const shared = Object.fromEntries(Object.entries(env).filter(([k]) => !COMPOSE_ONLY.includes(k) && k !== 'PUBLIC_URL'));
    cluster = await startTestCluster({
      databaseUrl: databaseUrl!,
      count: 2,
      // The store's address and keys, as compose.yaml gives its nodes MinIO's.
      env: { ...shared, S3_ENDPOINT: s3.endpoint, AWS_ACCESS_KEY_ID: s3.env().AWS_ACCESS_KEY_ID!, AWS_SECRET_ACCESS_KEY: s3.env().AWS_SECRET_ACCESS_KEY! },
    });
  }, 180_000); // two nodes starting: each may take up to child-server.ts's 120 s on a loaded machine
  afterAll(async () => {
    await cluster?.close();
    await s3?.stop();
  }, 30_000);

  it("the README's curl creates a session through the front, and its cdp_url drives it", async () => {
    const command = readmeCurl().replace('http://localhost:8080', cluster.front.url);
    const { stdout } = await promisify(execFile)('sh', ['-c', command], { env: { PATH: process.env.PATH, KEY: env.BOOTSTRAP_API_KEY } });
    const session = JSON.parse(stdout) as { data: { id: string; cdp_url: string } };
    expect(session.data.cdp_url.startsWith(cluster.front.url.replace('http', 'ws'))).toBe(true);
    const browser = await chromium.connectOverCDP(session.data.cdp_url);
    try {
      const page = browser.contexts()[0].pages()[0] ?? (await browser.contexts()[0].newPage());
      await page.setContent('<p id="p">through the front</p>');
      expect(await page.textContent('#p')).toBe('through the front');
    } finally {
      await browser.close();
    }
    // Both nodes took requests from the front, and the end is asked of whichever node gets it.
    expect(cluster.front.targets.every((t) => (cluster.front.counts.get(t) ?? 0) > 0)).toBe(true);
    const ended = await fetch(`${cluster.front.url}/v1/sessions/${session.data.id}`, {
      method: 'DELETE',
      headers: { 'service-api-key': env.BOOTSTRAP_API_KEY },
    });
    expect(ended.status).toBe(200);
  }, 90_000);
});
