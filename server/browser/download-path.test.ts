// The download behavior a CDP client sets is pointed at the browser's own folder, however
// the message spells it; every other message is left as it came.
import { describe, expect, it } from 'vitest';
import { pinDownloadPath } from './download-path.js';

const DIR = '/tmp/cb-x/s-1/downloads';
const pinned = (message: unknown) => {
  const out = pinDownloadPath(Buffer.from(typeof message === 'string' ? message : JSON.stringify(message)), DIR);
  return out && JSON.parse(out.toString());
};

describe('pinDownloadPath', () => {
  it("points Playwright's and Puppeteer's download behaviors at the root, keeping what they allow", () => {
    expect(
      pinned({
        id: 7,
        method: 'Browser.setDownloadBehavior',
        params: { behavior: 'allowAndName', downloadPath: '/tmp/playwright-artifacts-x', eventsEnabled: true },
      }),
    ).toEqual({ id: 7, method: 'Browser.setDownloadBehavior', params: { behavior: 'allowAndName', downloadPath: DIR, eventsEnabled: true } });
    expect(
      pinned({ id: 1, method: 'Browser.setDownloadBehavior', params: { behavior: 'allow', browserContextId: 'C1', downloadPath: '/home/me' } }).params,
    ).toEqual({
      behavior: 'allow',
      browserContextId: 'C1',
      downloadPath: DIR,
    });
    // On a page's session, the older Page domain.
    expect(pinned({ id: 2, sessionId: 'S', method: 'Page.setDownloadBehavior', params: { behavior: 'allow', downloadPath: '/etc' } })).toEqual({
      id: 2,
      sessionId: 'S',
      method: 'Page.setDownloadBehavior',
      params: { behavior: 'allow', downloadPath: DIR },
    });
    // A folder the client left out is given (Chromium would refuse the command without it).
    expect(pinned({ id: 3, method: 'Browser.setDownloadBehavior', params: { behavior: 'allow' } }).params.downloadPath).toBe(DIR);
    // deny and default need no folder: left so.
    expect(pinned({ id: 4, method: 'Browser.setDownloadBehavior', params: { behavior: 'deny' } }).params).toEqual({ behavior: 'deny' });
  });

  it('sees through escapes, duplicate keys and messages wrapped for a target', () => {
    // "B" written as \u0042: the substring test misses it, the parse does not.
    const escaped = '{"id":5,"method":"Browser.setDownload\\u0042ehavior","params":{"behavior":"allow","downloadPath":"/root/.ssh"}}';
    expect(pinned(escaped).params.downloadPath).toBe(DIR);
    // The method given twice: what is sent is what was checked, once.
    const twice = '{"id":6,"method":"Browser.setDownloadBehavior","method":"Runtime.evaluate","params":{"behavior":"allow","downloadPath":"/x"}}';
    expect(pinned(twice)).toEqual({ id: 6, method: 'Runtime.evaluate', params: { behavior: 'allow', downloadPath: '/x' } });
    const inner = { id: 1, method: 'Page.setDownloadBehavior', params: { behavior: 'allow', downloadPath: '/var/lib' } };
    const wrapped = pinned({ id: 8, method: 'Target.sendMessageToTarget', params: { sessionId: 'S', message: JSON.stringify(inner) } });
    expect(JSON.parse(wrapped.params.message).params.downloadPath).toBe(DIR);
    const deeper = {
      id: 9,
      method: 'Target.sendMessageToTarget',
      params: { sessionId: 'B', message: JSON.stringify({ id: 2, method: 'Target.sendMessageToTarget', params: { message: JSON.stringify(inner) } }) },
    };
    expect(JSON.parse(JSON.parse(pinned(deeper).params.message).params.message).params.downloadPath).toBe(DIR);
  });

  it('leaves every other message as it came, without parsing it', () => {
    expect(pinDownloadPath(Buffer.from('{"id":1,"method":"Page.navigate","params":{"url":"https://example.com/download"}}'), DIR)).toBeUndefined();
    expect(pinDownloadPath(Buffer.from('not json mentioning DownloadBehavior'), DIR)).toBeUndefined();
    // Parsed (it has an escape) but nothing to pin: sent as parsed, meaning the same.
    expect(pinned('{"id":2,"method":"Runtime.evaluate","params":{"expression":"\\u0031+1"}}')).toEqual({
      id: 2,
      method: 'Runtime.evaluate',
      params: { expression: '1+1' },
    });
  });
});
