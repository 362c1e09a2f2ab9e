// pnpm sdk-suite, checked: the vendor's generated SDK tests (0.16.3 and main) against a real server
// with a local model and proxy pool: none fails, and each refusal on purpose is still the one
// named (a stale entry of DELIBERATE fails too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/testing/harness.js';
import { DELIBERATE, classify, runSdkSuite, suiteServices } from './sdk-suite.js';

describe('pnpm sdk-suite', () => {
  let services: Awaited<ReturnType<typeof suiteServices>>;
  let server: TestServer;

  beforeAll(async () => {
    services = await suiteServices();
    server = await startTestServer({ env: services.env });
  });
  afterAll(async () => {
    await server?.close();
    await services?.close();
  });

  it('classifies a failure by its answer: a placeholder id, a refusal on purpose, or a failure', () => {
    const some = Object.keys(DELIBERATE)[0]!;
    expect(classify('x', 'passed', [])).toBe('pass');
    expect(classify('x', 'failed', ['NotFoundError: 404 {"error":{"code":404,"message":"Session not found"}}'])).toBe('placeholder');
    expect(classify('x', 'failed', ['Error: 400 {"error":{"code":400,"message":"path/session_id must match format \\"uuid\\""}}'])).toBe('placeholder');
    expect(classify('x', 'failed', ['NotFoundError: 404 {"error":{"code":404,"message":"No route for POST /v1/x"}}'])).toBe('fail');
    expect(classify('x', 'failed', ['Error: 400 {"error":{"code":400,"message":"body/url must match format \\"uri\\""}}'])).toBe('fail');
    expect(classify(some, 'failed', ['Error: 500 {"error":{"code":500,"message":"Internal error"}}'])).toBe('fail');
  });

  it("runs every generated test of the vendor's SDK: none fails", async () => {
    const results = await runSdkSuite(server.url, server.apiKey);
    expect(results.length).toBe(79);
    expect(results.filter((r) => r.outcome === 'fail')).toEqual([]);
    expect(results.filter((r) => r.outcome === 'refused').map((r) => r.name)).toEqual(Object.keys(DELIBERATE).sort((a, b) => a.localeCompare(b)));
    expect(results.filter((r) => r.outcome === 'pass').length).toBeGreaterThanOrEqual(23);
  }, 180_000);
});
