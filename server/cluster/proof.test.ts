// The cluster proof and the table of requests that need a browser's node, as plain functions.
import { describe, expect, it } from 'vitest';
import { checkProof, HOP_HEADER, PROOF_HEADER, proofHeaders } from './proof.js';
import { needsOf } from './requests.js';

const SECRET = 's'.repeat(40);
const asRequest = (method: string, path: string, headers: Record<string, string>) => ({ method, path, header: (n: string) => headers[n] });

describe('cluster proof', () => {
  const now = Date.UTC(2026, 10, 25, 18, 0, 0);
  const signed = proofHeaders(SECRET, 'node-a', 'GET', '/v1/sessions/x/pages?a=1', now);

  it('holds for the same method, path and node within the window, and never carries the secret', () => {
    expect(checkProof(SECRET, asRequest('GET', '/v1/sessions/x/pages?a=1', signed), now + 20_000)).toEqual({ forwarded: true, ok: true, from: 'node-a' });
    expect(JSON.stringify(signed)).not.toContain(SECRET);
  });

  it('fails for another path, method, node, secret, an old or future timestamp, a missing part', () => {
    const fails = (req: ReturnType<typeof asRequest>, secret = SECRET, at = now) => checkProof(secret, req, at);
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=2', signed))).toMatchObject({ ok: false });
    expect(fails(asRequest('POST', '/v1/sessions/x/pages?a=1', signed))).toMatchObject({ ok: false });
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=1', { ...signed, [HOP_HEADER]: 'node-b' }))).toMatchObject({ ok: false });
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=1', signed), 't'.repeat(40))).toMatchObject({ ok: false });
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=1', signed), SECRET, now + 31_000)).toMatchObject({
      ok: false,
      why: expect.stringMatching(/window/),
    });
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=1', signed), SECRET, now - 31_000)).toMatchObject({ ok: false });
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=1', { [HOP_HEADER]: 'node-a' }))).toMatchObject({ ok: false, why: 'missing cluster proof' });
    expect(fails(asRequest('GET', '/v1/sessions/x/pages?a=1', { [PROOF_HEADER]: signed[PROOF_HEADER] }))).toMatchObject({ ok: false });
    // A node without a secret refuses every claim.
    expect(checkProof(undefined, asRequest('GET', '/v1/sessions/x/pages?a=1', signed), now)).toMatchObject({ ok: false });
  });

  it('is not asked of a request that does not claim to be forwarded', () => {
    expect(checkProof(SECRET, asRequest('GET', '/', {}), now)).toEqual({ forwarded: false });
  });
});

describe('requests that need the node of a browser', () => {
  const needs = (method: string, path: string, headers: Record<string, string> = {}) => needsOf(method, new URL(path, 'http://x'), (n) => headers[n]);
  it('routes every operation on a running session, and leaves database answers where they land', () => {
    for (const [m, p] of [
      ['GET', '/v1/sessions/abc/screenshot'],
      ['POST', '/v1/sessions/abc/mouse/click'],
      ['GET', '/v1/sessions/abc/pages'],
      ['POST', '/v1/sessions/abc/uploads'],
      ['GET', '/v1/sessions/abc/downloads/d1'],
      ['POST', '/v1/sessions/abc/recordings/pause'],
      ['GET', '/v1/sessions/abc/recordings/primary/fetch'],
      ['DELETE', '/v1/sessions/abc'],
      ['GET', '/v1/cdp/abc'],
      ['GET', '/v1/cdp/abc/json/version'],
      ['GET', '/live/abc'],
      ['GET', '/live/abc/ws?ticket=t'],
      ['POST', '/live/abc/interventions'],
      ['POST', '/v1/tools/execute-code?sessionId=abc'],
      ['POST', '/v1/tools/perform-web-task?sessionId=abc'],
      // The vendor SDK's CDP address: its WebSocket and its discovery document.
      ['GET', '/?apiKey=k&sessionId=abc'],
      ['GET', '/json/version?apiKey=k&sessionId=abc'],
      ['GET', '/json/version/?apiKey=k&sessionId=abc'],
      // The vendor SDK's agent-step stream.
      ['GET', '/ws?sessionId=abc'],
    ])
      expect(needs(m, p), `${m} ${p}`).toEqual({ kind: 'session', id: 'abc' });
    for (const [m, p] of [
      ['GET', '/v1/sessions/abc'],
      ['PUT', '/v1/sessions/abc/tags'],
      ['GET', '/v1/sessions'],
      ['GET', '/v1/sessions/history'],
      ['GET', '/v1/sessions/all/status'],
      ['POST', '/v1/tools/execute-code'],
      ['GET', '/healthz'],
      ['POST', '/mcp'],
      ['GET', '/?sessionId=abc'],
      ['GET', '/console?apiKey=k&sessionId=abc'],
      ['GET', '/ws'],
      ['GET', '/'],
    ])
      expect(needs(m, p), `${m} ${p}`).toBeUndefined();
    expect(needs('POST', '/v1/sessions')).toEqual({ kind: 'placement' });
    expect(needs('POST', '/v1/tools/perform-web-task')).toEqual({ kind: 'placement' });
    // The browser tools render on browsers of their own (a node without browsers sends them on),
    // or read a session's page on its node.
    for (const p of ['/v1/tools/fetch/webpage', '/v1/tools/fetch-webpage', '/v1/tools/screenshot', '/v1/tools/page-pdf'])
      expect(needs('POST', p), p).toEqual({ kind: 'browsers' });
    expect(needs('POST', '/v1/tools/fetch-webpage?sessionId=abc')).toEqual({ kind: 'session', id: 'abc' });
    expect(needs('DELETE', '/v1/sessions/all')).toEqual({ kind: 'end-all' });
    expect(needs('POST', '/v1/profiles')).toEqual({ kind: 'session-in-body', field: 'session_id' });
    expect(needs('GET', '/files/recordings/0b0e4f4e-7a43-4d38-9d0e-3b5d1b1e2f00.mp4?expires=1')).toEqual({
      kind: 'recording',
      id: '0b0e4f4e-7a43-4d38-9d0e-3b5d1b1e2f00',
    });
    expect(needs('GET', '/mcp', { 'mcp-session-id': 'm1' })).toEqual({ kind: 'mcp', id: 'm1' });
    expect(needs('POST', '/v2/tasks/runs/r1/cancel')).toEqual({ kind: 'task-run', id: 'r1' });
    // Ids no store holds are answered where they land (validation), never looked up.
    expect(needs('GET', '/v1/sessions/%00/downloads')).toBeUndefined();
    expect(needs('GET', `/v1/sessions/${'a'.repeat(300)}/downloads`)).toBeUndefined();
  });
});
