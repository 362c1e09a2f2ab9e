import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';
import { camel, DIRECT, SETTINGS, type Setting, type VariableName } from './settings.js';

const problemsOf = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as ConfigError).problems.join('\n');
  }
  return '';
};
const entries = Object.entries(SETTINGS) as [VariableName, Setting][];
// What a value needs beside it: a node without browsers (0) routes for the others, so it is
// a cluster's node (its address, the shared secret and database, a shared rate limit).
const cluster = {
  NODE_INTERNAL_URL: 'http://10.0.0.7:8080',
  CLUSTER_SECRET: 'c'.repeat(32),
  DATABASE_URL: 'postgres://db.internal/cb',
  RATE_LIMIT_STORE: 'postgres',
};
const needs: Partial<Record<VariableName, Record<string, string>>> = { MAX_CONCURRENT_BROWSERS: cluster };

describe('the settings table', () => {
  it('gives every variable that stands alone its Config field, under its camel-case name, with its default', () => {
    const config = loadConfig({}) as unknown as Record<string, unknown>;
    for (const name of DIRECT) {
      expect(Object.keys(config), name).toContain(camel(name));
      const s: Setting = SETTINGS[name];
      if (s.type === 'path') expect(config[camel(name)]).toMatch(/^\//);
      else if ('default' in s && s.default !== undefined) expect(config[camel(name)], name).toBe(s.default);
    }
    expect(camel('MAX_CONCURRENT_BROWSERS')).toBe('maxConcurrentBrowsers');
  });

  it('reads a value within its limits and refuses one past them, naming the variable and the limits', () => {
    for (const [name, s] of entries) {
      if (s.type !== 'int') continue;
      expect((loadConfig({ ...needs[name], [name]: String(s.min) }) as unknown as Record<string, unknown>)[camel(name)], name).toBe(s.min);
      expect(problemsOf({ [name]: String(s.min - 1) })).toContain(
        `${name}="${s.min - 1}" must be a whole number from ${s.min} to ${s.max ?? Number.MAX_SAFE_INTEGER}`,
      );
      if (s.max !== undefined) expect(problemsOf({ [name]: String(s.max + 1) }), name).toContain(name);
      expect(problemsOf({ [name]: '1.5' }), name).toContain(`${name}="1.5" must be a whole number`);
    }
    for (const [name, s] of entries) {
      if (s.type === 'number' || s.type === 'number?') expect(problemsOf({ [name]: 'lots' })).toContain(`${name}="lots" must be a number of at least ${s.min}`);
      if (s.type === 'bool') expect(problemsOf({ [name]: 'maybe' })).toContain(`${name}="maybe" must be true or false`);
      if (s.type === 'enum') expect(problemsOf({ [name]: 'nonsense' })).toContain(`${name}="nonsense" must be `);
    }
  });

  it('never echoes a secret that breaks its rule', () => {
    let checked = 0;
    for (const [name, s] of entries) {
      if (!s.secret || s.type !== 'text' || !s.rule) continue;
      const problems = problemsOf({ [name]: 'm7f3a b' });
      expect(problems, name).toContain(`${name} ${s.rule.says}`);
      expect(problems).not.toContain('m7f3a');
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(6);
  });

  it('puts every variable in a section, with a description', () => {
    for (const [name, s] of entries) expect(s.description.length, name).toBeGreaterThan(10);
    expect(entries.length).toBeGreaterThanOrEqual(72);
  });
});
