// What the tools' tests share: a POST to the server as the project (or another key).
import type { TestServer } from '../testing/harness.js';

export const post = (s: TestServer, path: string, body: unknown, key?: string) =>
  s.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'service-api-key': key } : {}) },
    body: JSON.stringify(body),
  });

/** The web fetch tool on one URL. */
export const fetchUrl = (s: TestServer, url: string, key?: string) => post(s, '/v1/tools/fetch/webpage', { url }, key);
