// Forwarding over real loopback sockets, with an owner that may be stale (`again`): a target
// that refuses connections, or answers 421 with the misdirected marker, is handed back to the
// caller with nothing sent to the client, so it can look again; without `again` the client
// gets 502 (or the 421) as before. An upgrade handed back keeps its client, which the next
// forward then joins to a real WebSocket server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { freePort } from '../testing/free-port.js';
import { AGAIN, forwardHttp, forwardUpgrade, MISDIRECTED_HEADER } from './forward.js';

const listen = async (handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> => {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};

describe('forwarding to an owner that may be stale', () => {
  let refused: string;
  let misdirected: { server: Server; url: string };
  let owner: { server: Server; url: string };
  let wss: WebSocketServer;
  /** The node in the middle: forwards to the target named in x-target, `again` when x-again is set; says what forwardHttp answered. */
  let middle: { server: Server; url: string };
  const results: (number | string)[] = [];

  beforeAll(async () => {
    refused = `http://127.0.0.1:${await freePort()}`;
    misdirected = await listen((_req, res) => res.writeHead(421, { [MISDIRECTED_HEADER]: 'node-x', 'content-type': 'application/json' }).end('{"error":{}}'));
    owner = await listen((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () =>
        res
          .writeHead(200, { 'content-type': 'text/plain', 'x-seen-target': String(req.headers['x-cluster-target']) })
          .end(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`),
      );
    });
    wss = new WebSocketServer({ server: owner.server });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${m.toString()}`)));
    middle = await listen((req, res) => {
      const again = req.headers['x-again'] !== undefined;
      const body = req.headers['x-body'] === undefined ? undefined : Buffer.from(String(req.headers['x-body']));
      const proof: Record<string, string> = req.headers['x-meant'] === undefined ? {} : { 'x-cluster-target': String(req.headers['x-meant']) };
      void forwardHttp(req, res, String(req.headers['x-target']), proof, body, { again }).then((r) => {
        results.push(r);
        if (r === AGAIN) res.writeHead(299).end('again');
      });
    });
    middle.server.on('upgrade', (req, socket, head) => {
      // A first forward to a target that fails, handed back; the second goes to the owner.
      forwardUpgrade(req, socket, head, String(req.headers['x-target']), {}, { again: () => forwardUpgrade(req, socket, head, owner.url, {}) });
    });
  });
  afterAll(async () => {
    wss?.close();
    for (const s of [middle, misdirected, owner]) {
      s?.server.closeAllConnections();
      await new Promise((r) => s?.server.close(r));
    }
  });

  const via = (target: string, headers: Record<string, string> = {}, init: RequestInit = {}) =>
    fetch(`${middle.url}/v1/sessions/s1/pages?x=1`, { ...init, headers: { 'x-target': target, ...headers } });

  it('answers as the owner when it is reached, `again` or not, with or without a body kept by the caller', async () => {
    expect(await (await via(owner.url, { 'x-again': '1' })).text()).toBe('GET /v1/sessions/s1/pages?x=1 ');
    const posted = await via(owner.url, { 'x-again': '1', 'x-body': '{"a":1}' }, { method: 'POST', body: '{"a":1}' });
    expect([posted.status, await posted.text()]).toEqual([200, 'POST /v1/sessions/s1/pages?x=1 {"a":1}']);
    expect(results.splice(0)).toEqual([200, 200]);
  });

  it("sends the forwarder's own cluster headers, never a client's of the same name beside them", async () => {
    const r = await via(owner.url, { 'x-meant': 'node-a', 'x-cluster-target': 'node-evil' });
    expect(r.headers.get('x-seen-target')).toBe('node-a');
    // Headers the forwarder does not set pass as the client sent them.
    expect((await via(owner.url, { 'x-cluster-target': 'node-b' })).headers.get('x-seen-target')).toBe('node-b');
    results.splice(0);
  });

  it('hands back a refused connection or a misdirected answer with `again`, and sends the client nothing', async () => {
    for (const target of [refused, misdirected.url]) {
      const r = await via(target, { 'x-again': '1' });
      expect([r.status, await r.text()]).toEqual([299, 'again']);
    }
    // A body the caller did not keep is read by forwardHttp: it cannot be handed back, so the client gets 502.
    const unkept = await via(refused, { 'x-again': '1' }, { method: 'POST', body: 'x' });
    expect(unkept.status).toBe(502);
    expect(results.splice(0)).toEqual([AGAIN, AGAIN, 502]);
  });

  it('without `again`: 502 for a refused connection, and the 421 as it came', async () => {
    const r = await via(refused);
    expect(r.status).toBe(502);
    expect(await r.json()).toEqual({ error: { code: 502, message: 'The node that runs this session could not be reached' } });
    const m = await via(misdirected.url);
    expect(m.status).toBe(421);
    expect(m.headers.get(MISDIRECTED_HEADER)).toBe('node-x');
    // (fetch sends a request that got 421 once more by itself: the middle forwarded it twice.)
    const [first, ...rest] = results.splice(0);
    expect(first).toBe(502);
    expect(new Set(rest)).toEqual(new Set([421]));
  });

  it('hands an upgrade back, its client kept, when the target refuses it or is not the node meant', async () => {
    for (const target of [refused, misdirected.url]) {
      const ws = new WebSocket(`${middle.url.replace(/^http/, 'ws')}/v1/cdp/s1`, { headers: { 'x-target': target } });
      const echo = await new Promise<string>((resolve, reject) => {
        ws.once('open', () => ws.send('hi'));
        ws.once('message', (m) => resolve(m.toString()));
        ws.once('error', reject);
      });
      ws.close();
      expect(echo).toBe('echo hi');
    }
  });
});
