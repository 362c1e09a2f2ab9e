// The page PDF tool's refusals: print options the contract accepts but the page cannot
// honour (a range past its last page, a range that ends before it starts, margins with no
// room left, a margin too long for a number) answer 400 saying what to change, not 500. The happy path is in fetch.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { startTestServer, type TestServer } from '../testing/harness.js';

let fx: FixtureServer;
let srv: TestServer;

beforeAll(async () => {
  fx = await startFixtureServer();
  srv = await startTestServer({ env: { FETCH_BROWSERS: '1', MAX_CONCURRENT_BROWSERS: '1' } });
}, 120_000);

afterAll(async () => {
  await srv?.close();
  await fx?.close();
});

const pdf = (body: Record<string, unknown>) =>
  srv.request('/v1/tools/page-pdf', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${fx.url}/site/script-rendered.html`, ...body }),
  });

describe('page PDF: options the page cannot honour', () => {
  it.each([
    [{ page_ranges: '5-9' }, 'page_ranges names a page past the last page of the document'],
    [{ page_ranges: '0' }, 'page_ranges is invalid: pages are numbered from 1, and a range cannot end before it starts'],
    [{ page_ranges: '3-1' }, 'page_ranges is invalid: pages are numbered from 1, and a range cannot end before it starts'],
    [{ page_ranges: '99999999999999999999' }, 'page_ranges is invalid: pages are numbered from 1, and a range cannot end before it starts'],
    [{ margin: { top: '100in' } }, 'margin leaves no room for the page on the paper: make the margins smaller than the paper'],
    [{ format: 'A6', margin: { left: '3in', right: '3in' } }, 'margin leaves no room for the page on the paper: make the margins smaller than the paper'],
    // 400 digits read as Infinity, which reached Chromium as null: "Invalid parameters", a 500.
    [{ margin: { bottom: `${'9'.repeat(400)}cm` } }, 'margin leaves no room for the page on the paper: make the margins smaller than the paper'],
  ])('%j answers 400', async (options, message) => {
    const res = await pdf(options);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { code: 400, message } });
  });

  it('the same options within the document print: its one page, margins that leave room', async () => {
    for (const options of [{ page_ranges: '1' }, { page_ranges: '1-1, 1' }, { format: 'A6', margin: { left: '1in', right: '1in' } }]) {
      const res = await pdf(options);
      expect(res.status, JSON.stringify(options)).toBe(200);
      expect(
        Buffer.from(await res.arrayBuffer())
          .subarray(0, 5)
          .toString(),
      ).toBe('%PDF-');
    }
  });
});
