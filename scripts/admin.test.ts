// `pnpm admin` against a real server over real HTTP: every command, the key printed once
// and then refused once revoked, limits set back to the configuration's with "default",
// the server's refusals and usage errors as exit codes, and the entry point run as the
// operator runs it (a child process reading ADMIN_TOKEN and ADMIN_URL).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../server/testing/harness.js';
import { main } from './admin.js';

const ADMIN_TOKEN = 'adm_cli_0123456789abcdef0123456789abcdef';
const root = join(import.meta.dirname, '..');

async function admin(t: TestServer, ...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['--url', t.url, ...args], { ADMIN_TOKEN }, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe.each(backends)('pnpm admin on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend, env: { ADMIN_TOKEN } });
  });
  afterAll(() => t?.close());

  it('manages projects and keys', async () => {
    const made = await admin(t, '--json', 'projects', 'create', '--name', 'cli-team', '--included-credits', '25', '--max-browsers', '2');
    expect(made.code, made.err).toBe(0);
    const project = JSON.parse(made.out).data;
    expect(project).toMatchObject({ name: 'cli-team', included_credits: 25, max_concurrent_browsers: 2, cost_limit: null });

    const list = await admin(t, 'projects', 'list');
    expect(list.code).toBe(0);
    const lines = list.out.split('\n');
    expect(lines[0]).toMatch(/^id\s+name\s+tier\s+included_credits/);
    expect(lines.find((l) => l.startsWith(project.id))).toMatch(/cli-team\s+self-hosted\s+25\s+-\s+2/);

    const updated = await admin(
      t,
      'projects',
      'update',
      project.id,
      '--max-browsers',
      'default',
      '--cost-limit',
      '9.5',
      '--memory-mb',
      '0',
      '--cpus',
      'default',
    );
    expect(updated.code, updated.err).toBe(0);
    expect(JSON.parse(updated.out)).toMatchObject({ max_concurrent_browsers: null, cost_limit: 9.5, browser_memory_limit_mb: 0, browser_cpu_limit: null });
    expect(JSON.parse((await admin(t, 'projects', 'get', project.id)).out).cost_limit).toBe(9.5);

    const key = await admin(t, 'keys', 'create', project.id, '--name', 'deploy');
    expect(key.code).toBe(0);
    const [, keyId] = /key id: (\S+)/.exec(key.out)!;
    const [, secret] = /key: +(sk_\S+)/.exec(key.out)!;
    expect((await fetch(`${t.url}/v1/billing`, { headers: { 'service-api-key': secret } })).status).toBe(200);
    const keys = await admin(t, 'keys', 'list', project.id);
    expect(keys.out).toContain(keyId);
    expect(keys.out).toContain('deploy');
    expect(keys.out).not.toContain(secret);

    expect((await admin(t, 'keys', 'revoke', keyId)).code).toBe(0);
    expect((await fetch(`${t.url}/v1/billing`, { headers: { 'service-api-key': secret } })).status).toBe(401);

    expect((await admin(t, 'projects', 'delete', project.id)).code).toBe(0);
    const gone = await admin(t, 'projects', 'get', project.id);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/404 Project not found/);
  });

  it('reports usage errors (2) and refusals (1)', async () => {
    for (const args of [
      [],
      ['projects'],
      ['projects', 'create'],
      ['projects', 'get'],
      ['projects', 'update', 'x'],
      ['keys', 'fly'],
      ['projects', 'create', '--name', 'x', '--max-browsers', '1.5'],
      ['--bogus'],
    ]) {
      const r = await admin(t, ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toContain('Usage: pnpm admin');
    }
    const refused = await admin(t, 'projects', 'create', '--name', 'x', '--tier', 'gold');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/POST \/admin\/v1\/projects: 400 .*tier/);
    const wrong = await main(['--url', t.url, '--token', `${ADMIN_TOKEN}x`, 'projects', 'list'], {}, { out: () => {}, err: (l) => expect(l).toMatch(/401/) });
    expect(wrong).toBe(1);
    const noToken = await main(['--url', t.url, 'projects', 'list'], {}, { out: () => {}, err: (l) => expect(l).toMatch(/no admin token/) });
    expect(noToken).toBe(2);
  });

  it('runs as a command, with the token and address from the environment', async () => {
    const { stdout } = await promisify(execFile)(join(root, 'node_modules/.bin/tsx'), ['scripts/admin.ts', 'projects', 'list'], {
      cwd: root,
      env: { ...process.env, ADMIN_TOKEN, ADMIN_URL: t.url },
    });
    expect(stdout).toMatch(/^id\s+name/);
    expect(stdout).toContain('default');
  });
});

describe('pnpm admin against a server without ADMIN_TOKEN', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('says why it answers 404', async () => {
    const r = await admin(t, 'projects', 'list');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/404 .*is ADMIN_TOKEN set on the server/);
  });
});
