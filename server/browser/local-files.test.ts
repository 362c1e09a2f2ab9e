// The CDP commands that would open the server's own files are refused, however they are
// spelled; everything else passes untouched (undefined: sent as it came).
import { describe, expect, it } from 'vitest';
import { refuseLocalFiles } from './local-files.js';

const uploads = '/tmp/cb-x/s-1/uploads';
const msg = (m: object) => Buffer.from(JSON.stringify(m));

describe('refuseLocalFiles', () => {
  it('refuses navigations and new targets to file: URLs, in any spelling, keeping the id and the session', () => {
    for (const url of [
      'file:///etc/passwd',
      'FILE:///etc/passwd',
      '  file:/etc/passwd',
      'fi\tle:///etc',
      'view-source:file:///etc/passwd',
      'VIEW-SOURCE:FILE:///x',
    ]) {
      expect(refuseLocalFiles(msg({ id: 7, sessionId: 'S', method: 'Page.navigate', params: { url } }), uploads), url).toEqual({
        id: 7,
        sessionId: 'S',
        message: 'Page.navigate: local files (file: URLs) are not available in this browser',
      });
    }
    expect(refuseLocalFiles(msg({ id: 1, method: 'Target.createTarget', params: { url: 'file:///' } }), uploads)?.message).toMatch(/^Target.createTarget/);
    // Spelled in escapes, and wrapped in Target.sendMessageToTarget.
    expect(refuseLocalFiles(Buffer.from('{"id":2,"method":"Page.navigate","params":{"url":"\\u0066ile:///etc"}}'), uploads)).toBeDefined();
    const inner = JSON.stringify({ id: 9, method: 'Page.navigate', params: { url: 'file:///etc' } });
    expect(refuseLocalFiles(msg({ id: 3, method: 'Target.sendMessageToTarget', params: { message: inner, sessionId: 'T' } }), uploads)).toBeDefined();
  });

  it('lets web URLs and everything else through unparsed or untouched', () => {
    expect(refuseLocalFiles(msg({ id: 1, method: 'Page.navigate', params: { url: 'https://example.com/file:x' } }), uploads)).toBeUndefined();
    expect(refuseLocalFiles(msg({ id: 1, method: 'Runtime.evaluate', params: { expression: '"file:///"' } }), uploads)).toBeUndefined();
    expect(refuseLocalFiles(msg({ id: 1, method: 'Page.navigate', params: { url: 'view-source:https://example.com' } }), uploads)).toBeUndefined();
  });

  it("gives a file input only files of the session's uploads folder", () => {
    expect(refuseLocalFiles(msg({ id: 1, method: 'DOM.setFileInputFiles', params: { nodeId: 4, files: [`${uploads}/a.txt`] } }), uploads)).toBeUndefined();
    for (const files of [['/etc/passwd'], [`${uploads}/../../other/x`], [`${uploads}/ok`, '/srv/data/db'], [`${uploads}-evil/x`]]) {
      expect(refuseLocalFiles(msg({ id: 5, method: 'DOM.setFileInputFiles', params: { nodeId: 4, files } }), uploads)?.message, files.join()).toMatch(
        /^DOM.setFileInputFiles: .* is not a file of this session: upload it first/,
      );
    }
  });
});
