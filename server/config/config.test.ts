import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, SETTINGS } from './config.js';

describe('loadConfig', () => {
  it('fills in the embedded defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, host: '127.0.0.1', databaseUrl: undefined, chromiumPath: '/usr/bin/chromium', allowPrivateNetworks: false });
    expect(c.publicUrl).toBeUndefined();
  });

  it('counts rate limits in Redis with REDIS_URL, else PostgreSQL with DATABASE_URL, else memory; never memory in a cluster', () => {
    const pg = 'postgres://postgres@127.0.0.1/x';
    expect(loadConfig({}).rateLimitStore).toBe('memory');
    expect(loadConfig({ DATABASE_URL: pg }).rateLimitStore).toBe('postgres');
    expect(loadConfig({ DATABASE_URL: pg, REDIS_URL: 'redis://127.0.0.1:6379' })).toMatchObject({ rateLimitStore: 'redis', redisKeyPrefix: 'cloud-browser:' });
    expect(loadConfig({ DATABASE_URL: pg, RATE_LIMIT_STORE: 'memory' }).rateLimitStore).toBe('memory');
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
      return '';
    };
    expect(problems({ REDIS_URL: 'http://u:sekrit@h' })).toContain('REDIS_URL must start with redis://');
    expect(problems({ REDIS_URL: 'http://u:sekrit@h' })).not.toContain('sekrit');
    expect(problems({ RATE_LIMIT_STORE: 'redis' })).toContain('RATE_LIMIT_STORE=redis needs REDIS_URL');
    expect(problems({ RATE_LIMIT_STORE: 'postgres' })).toContain('RATE_LIMIT_STORE=postgres needs DATABASE_URL');
    expect(problems({ RATE_LIMIT_STORE: 'disk' })).toContain('must be memory, postgres or redis');
    expect(problems({ REDIS_KEY_PREFIX: 'has space' })).toContain('REDIS_KEY_PREFIX');
    expect(problems({ DATABASE_URL: pg, RATE_LIMIT_STORE: 'memory', NODE_INTERNAL_URL: 'http://10.0.0.5:8080', CLUSTER_SECRET: 'x'.repeat(32) })).toContain(
      'RATE_LIMIT_STORE=memory counts on each node apart',
    );
  });

  it('names every bad variable in one error, without echoing a database URL', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', ALLOW_PRIVATE_NETWORKS: 'maybe', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://u:hunter2@h/db', PUBLIC_URL: 'ftp://x' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'ALLOW_PRIVATE_NETWORKS', 'LOG_LEVEL', 'DATABASE_URL', 'PUBLIC_URL']) expect(problems).toContain(name);
    expect(problems).not.toContain('hunter2');
  });

  it('refuses a TMPDIR too long for the socket paths of Chromium, unless the node runs no browser', () => {
    expect(() => loadConfig({ TMPDIR: '/var/lib/a-long-temporary-directory' })).toThrow(
      /TMPDIR="\/var\/lib\/a-long-temporary-directory" is 35 characters: .* at most 17/,
    );
    expect(loadConfig({ TMPDIR: '/dev/shm/' }).dataDir).toBeDefined();
    expect(
      loadConfig({
        TMPDIR: '/var/lib/a-long-temporary-directory',
        MAX_CONCURRENT_BROWSERS: '0',
        NODE_INTERNAL_URL: 'http://10.0.0.2:8080',
        CLUSTER_SECRET: 'x'.repeat(32),
        DATABASE_URL: 'postgres://h/db',
        RATE_LIMIT_STORE: 'postgres',
      }).maxConcurrentBrowsers,
    ).toBe(0);
  });

  it('is documented: docs/configuration.md has a row for every variable', () => {
    const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    for (const name of Object.keys(SETTINGS)) expect(page).toContain(`| \`${name}\` |`);
  });
  it('takes MAX_CONCURRENT_BROWSERS=0 for a node that routes for a cluster, never alone; it keeps no warm browser', () => {
    const cluster = { DATABASE_URL: 'postgres://u@h/db', NODE_INTERNAL_URL: 'http://10.0.0.1:8080', CLUSTER_SECRET: 's'.repeat(40) };
    expect(loadConfig({ ...cluster, MAX_CONCURRENT_BROWSERS: '0', BROWSER_POOL_SIZE: '3' })).toMatchObject({ maxConcurrentBrowsers: 0, browserPoolSize: 0 });
    expect(() => loadConfig({ MAX_CONCURRENT_BROWSERS: '0' })).toThrow(/MAX_CONCURRENT_BROWSERS=0 .* needs NODE_INTERNAL_URL/);
  });
});
