// The LLM_* variables: no model unless LLM_PROVIDER is set, the protocol's default base URL,
// and mistakes named at start without echoing a key or a URL that may hold credentials.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config/config.js';

const problems = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return '';
};

describe('LLM configuration', () => {
  it('none by default; each protocol its default base URL; images on unless turned off', () => {
    expect(loadConfig({}).llm).toBeUndefined();
    expect(loadConfig({ LLM_PROVIDER: 'openai', LLM_MODEL: 'gpt-4o' }).llm).toEqual({
      provider: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: undefined,
      model: 'gpt-4o',
      images: true,
    });
    expect(
      loadConfig({ LLM_PROVIDER: 'anthropic', LLM_MODEL: 'claude', LLM_API_KEY: 'k', LLM_IMAGES: 'false', LLM_BASE_URL: 'http://gw.local/anthropic/' }).llm,
    ).toEqual({
      provider: 'anthropic',
      baseUrl: 'http://gw.local/anthropic',
      apiKey: 'k',
      model: 'claude',
      images: false,
    });
    const c = loadConfig({});
    expect([c.llmTimeoutSeconds, c.webTaskTimeoutSeconds, c.pricePerAgentStep]).toEqual([120, 600, 0.01]);
  });

  it('names what is wrong, never the key or the URL', () => {
    expect(problems({ LLM_PROVIDER: 'gemini', LLM_MODEL: 'm' })).toContain('LLM_PROVIDER="gemini" must be openai or anthropic');
    expect(problems({ LLM_PROVIDER: 'openai' })).toContain('LLM_MODEL is required with LLM_PROVIDER');
    expect(problems({ LLM_MODEL: 'm' })).toContain('LLM_MODEL and LLM_BASE_URL need LLM_PROVIDER');
    const bad = problems({ LLM_PROVIDER: 'openai', LLM_MODEL: 'm', LLM_BASE_URL: 'ftp://user:s3cret@host', LLM_API_KEY: 'sk-zzz' });
    expect(bad).toContain('LLM_BASE_URL must be an http:// or https:// URL');
    expect(bad).not.toContain('s3cret');
    expect(bad).not.toContain('sk-zzz');
    expect(problems({ LLM_TIMEOUT_SECONDS: '0', WEB_TASK_TIMEOUT_SECONDS: '99999', PRICE_PER_AGENT_STEP: '-1' })).toMatch(
      /LLM_TIMEOUT_SECONDS[\s\S]*WEB_TASK_TIMEOUT_SECONDS[\s\S]*PRICE_PER_AGENT_STEP/,
    );
  });
});
