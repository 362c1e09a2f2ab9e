// The redaction list: keys never reach the logs, in either header a key is read from, even
// when a caller logs a request's headers by mistake.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { API_KEY_HEADERS } from './auth/key-header.js';
import { createLogger } from './log.js';

describe('log redaction', () => {
  it('censors the API key in every header it is read from', () => {
    const lines: string[] = [];
    const log = createLogger('info', new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }));
    for (const header of API_KEY_HEADERS) log.info({ req: { headers: { [header]: `sk_secret_in_${header}`, accept: '*/*' } } }, 'request');
    const text = lines.join('');
    expect(lines).toHaveLength(API_KEY_HEADERS.length);
    for (const header of API_KEY_HEADERS) expect(text).not.toContain(`sk_secret_in_${header}`);
    expect(lines.map((l) => JSON.parse(l).req.headers)).toEqual(API_KEY_HEADERS.map((h) => ({ [h]: '[redacted]', accept: '*/*' })));
  });
});
