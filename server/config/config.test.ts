import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, variables } from './config.js';

describe('loadConfig', () => {
  it('fills in the embedded defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, host: '127.0.0.1', databaseUrl: undefined, chromiumPath: '/usr/bin/chromium', allowPrivateNetworks: false });
    expect(c.publicUrl).toBeUndefined();
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

  it('is documented: README.md has a row for every variable', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    for (const name of Object.keys(variables)) expect(readme).toContain(`| \`${name}\` |`);
  });
});
