import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import tls from 'node:tls';
import pino from 'pino';
import { chromium } from 'playwright-core';
import { Server as ProxyChainServer } from 'proxy-chain';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventually } from '../browser/test-support.js';
import { startSocks5Server, type Socks5Server } from './test-support.js';
import { pinnedLookup } from './pinned-lookup.js';
import { startTrafficProxy, type TrafficProxy, type TrafficProxyOptions } from './traffic-proxy.js';
import { upstreamProxyUrl } from './upstream-proxy.js';

// Names under .pinned.test "resolve" to a public-looking answer that really is 127.0.0.1 (as
// a DNS-rebinding attacker would arrange), so the check passes and the test can see that the
// proxy connects to the checked address rather than resolving the name again.
vi.mock('./address-policy.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('./address-policy.js')>();
  return {
    ...real,
    assertPublicUrl: async (input: string | URL, options: Parameters<typeof real.assertPublicUrl>[1]) => {
      const url = new URL(String(input));
      if (url.hostname.endsWith('.pinned.test')) return { url, addresses: ['127.0.0.1'] };
      return real.assertPublicUrl(input, options);
    },
  };
});

// ---- helpers -------------------------------------------------------------------------

/** A pino logger whose lines are kept, to check what is (not) logged. */
function captureLog() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

const DATA = JSON.stringify({ hello: 'world', filler: 'x'.repeat(3000) });
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>t</title><link rel="icon" href="data:,"></head>
<body><p id="out">loading</p><script>
fetch('/data.json').then((r) => r.json()).then((j) => { document.getElementById('out').textContent = 'got ' + j.hello; });
</script><!-- ${'p'.repeat(2000)} --></body></html>`;

let target: http.Server;
let targetPort: number;
const targetHits: string[] = [];
let echo: net.Server;
let echoPort: number;

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function closeServer(server: net.Server | undefined): Promise<void> {
  return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
}

/** A plain HTTP request sent through the proxy (absolute-form, as a browser does). */
function proxiedGet(proxy: TrafficProxy, url: string): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxy.port, method: 'GET', path: url, headers: { host: u.host }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends CONNECT host:port; resolves with the status and, on 200, the tunnel socket. */
function connectTunnel(proxy: TrafficProxy, authority: string): Promise<{ status: number; socket: net.Socket; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxy.port, method: 'CONNECT', path: authority, headers: { host: authority }, agent: false });
    req.on('connect', (res, socket, head) => {
      if (head.length) socket.unshift(head);
      if (res.statusCode === 200) {
        resolve({ status: 200, socket, body: '' });
        return;
      }
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('close', () => resolve({ status: res.statusCode ?? 0, socket, body: Buffer.concat(chunks).toString() }));
      socket.on('error', () => undefined);
    });
    // proxy-chain answers errors on the raw socket; Node surfaces those as 'response' for CONNECT sometimes.
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: res.socket as net.Socket, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Writes `payload` into an echo tunnel and waits for it to come back. */
function echoThrough(socket: net.Socket, payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    let n = 0;
    const onData = (c: Buffer) => {
      got.push(c);
      n += c.length;
      if (n >= payload.length) {
        socket.off('data', onData);
        resolve(Buffer.concat(got));
      }
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(payload);
  });
}

function closed(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) resolve();
    else socket.once('close', () => resolve());
  });
}

/** true when something accepts TCP connections on 127.0.0.1:port. */
function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

const proxies: TrafficProxy[] = [];
async function start(options: Omit<TrafficProxyOptions, 'log'> & { log?: TrafficProxyOptions['log'] }): Promise<TrafficProxy> {
  const p = await startTrafficProxy({ log: pino({ level: 'silent' }), ...options });
  proxies.push(p);
  return p;
}

beforeAll(async () => {
  target = http.createServer((req, res) => {
    targetHits.push(req.url ?? '');
    if (req.url === '/' || req.url === '/page') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(PAGE) });
      res.end(PAGE);
    } else if (req.url === '/data.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(DATA) });
      res.end(DATA);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  targetPort = await listen(target);
  echo = net.createServer((s) => {
    s.on('error', () => undefined);
    s.pipe(s);
  });
  echoPort = await listen(echo);
});

afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await closeServer(target);
  await closeServer(echo);
});

// ---- tests ---------------------------------------------------------------------------

describe('traffic proxy: direct', () => {
  it('forwards plain HTTP and counts bytes, requests and domains', async () => {
    const proxy = await start({ allowPrivateNetworks: true });
    expect(proxy.url).toBe(`http://127.0.0.1:${proxy.port}`);
    expect(proxy.stats()).toEqual({ networkBytes: 0, proxyBytes: 0, requests: 0, domains: [] });

    const r1 = await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`);
    expect(r1.status).toBe(200);
    expect(r1.body).toBe(DATA);
    const r2 = await proxiedGet(proxy, `http://localhost:${targetPort}/page`);
    expect(r2.status).toBe(200);
    expect(r2.body).toBe(PAGE);

    const s = proxy.stats();
    expect(s.requests).toBe(2);
    expect(s.domains).toEqual(['127.0.0.1', 'localhost']);
    expect(s.proxyBytes).toBe(0);
    const bodies = Buffer.byteLength(DATA) + Buffer.byteLength(PAGE);
    // bodies plus request and response headers, both ways
    expect(s.networkBytes).toBeGreaterThan(bodies + 200);
    expect(s.networkBytes).toBeLessThan(bodies + 2000);
  });

  it('tunnels CONNECT (any TCP) and counts open tunnels as they go', async () => {
    const proxy = await start({ allowPrivateNetworks: true });
    const { status, socket } = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    const payload = Buffer.alloc(10_000, 7);
    const back = await echoThrough(socket, payload);
    expect(back.equals(payload)).toBe(true);

    // Still open: the bytes so far are already counted (10 kB each way).
    const open = proxy.stats();
    expect(open.networkBytes).toBeGreaterThanOrEqual(20_000);
    expect(open.networkBytes).toBeLessThan(21_000);
    expect(open.requests).toBe(1);
    expect(open.domains).toEqual(['127.0.0.1']);

    socket.end();
    await closed(socket);
    // Negative: the close adds no byte past the 10 kB each way; a window a late count would fall in.
    await new Promise((r) => setTimeout(r, 50));
    const after = proxy.stats();
    expect(after.networkBytes).toBeGreaterThanOrEqual(open.networkBytes);
    expect(after.networkBytes).toBeLessThan(21_000);
  });

  const openssl = (() => {
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

  it.skipIf(!openssl)('tunnels TLS to a local HTTPS server (self-signed certificate)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-cert-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=DNS:localhost',
        ],
        { stdio: 'ignore' },
      );
      const key = readFileSync(join(dir, 'key.pem'));
      const cert = readFileSync(join(dir, 'cert.pem'));
      const body = 'secret over tls '.repeat(500);
      const server = https.createServer({ key, cert }, (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), connection: 'close' });
        res.end(body);
      });
      const port = await listen(server);
      try {
        const proxy = await start({ allowPrivateNetworks: true });
        const { status, socket } = await connectTunnel(proxy, `localhost:${port}`);
        expect(status).toBe(200);
        const text = await new Promise<string>((resolve, reject) => {
          const t = tls.connect({ socket, servername: 'localhost', ca: cert }, () => {
            t.write(`GET / HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`);
          });
          const chunks: Buffer[] = [];
          t.on('data', (c: Buffer) => chunks.push(c));
          t.on('end', () => resolve(Buffer.concat(chunks).toString()));
          t.on('error', reject);
        });
        expect(text.startsWith('HTTP/1.1 200')).toBe(true);
        expect(text.endsWith(body)).toBe(true);
        await closed(socket);
        const s = proxy.stats();
        expect(s.domains).toEqual(['localhost']);
        expect(s.requests).toBe(1);
        expect(s.networkBytes).toBeGreaterThan(body.length);
      } finally {
        await closeServer(server);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('traffic proxy: private address policy', () => {
  it('refuses loopback destinations with 403 (plain HTTP and CONNECT) unless allowed', async () => {
    const { log, lines } = captureLog();
    const proxy = await start({ allowPrivateNetworks: false, log });
    const hitsBefore = targetHits.length;

    const plain = await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`);
    expect(plain.status).toBe(403);
    expect(plain.body).toMatch(/private address/);
    expect(plain.body).toMatch(/not allowed private networks/);

    const named = await proxiedGet(proxy, `http://localhost:${targetPort}/data.json`);
    expect(named.status).toBe(403);

    const v6 = await proxiedGet(proxy, `http://[::1]:${targetPort}/data.json`);
    expect(v6.status).toBe(403);

    const tunnel = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.body).toMatch(/private address/);

    const tunnelByName = await connectTunnel(proxy, `localhost:${echoPort}`);
    expect(tunnelByName.status).toBe(403);

    const metadata = await connectTunnel(proxy, '169.254.169.254:80');
    expect(metadata.status).toBe(403);

    expect(targetHits.length).toBe(hitsBefore); // nothing reached the target
    const s = proxy.stats();
    expect(s).toEqual({ networkBytes: 0, proxyBytes: 0, requests: 0, domains: [] });
    expect(lines.join('')).toMatch(/refused a private address/);
  });

  it('allows them when allowPrivateNetworks is true', async () => {
    const proxy = await start({ allowPrivateNetworks: true });
    expect((await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`)).status).toBe(200);
    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).toBe(200);
    t.socket.destroy();
  });

  it('connects to the checked address (plain HTTP and CONNECT), not to a fresh resolution', async () => {
    const proxy = await start({ allowPrivateNetworks: false });
    // *.pinned.test does not exist in DNS: only the pinned lookup can reach the servers.
    const r = await proxiedGet(proxy, `http://www.pinned.test:${targetPort}/data.json`);
    expect(r.status).toBe(200);
    expect(r.body).toBe(DATA);
    const t = await connectTunnel(proxy, `ws.pinned.test:${echoPort}`);
    expect(t.status).toBe(200);
    const payload = Buffer.from('hello through a pinned tunnel');
    expect((await echoThrough(t.socket, payload)).equals(payload)).toBe(true);
    t.socket.destroy();
    const s = proxy.stats();
    expect(s.domains).toEqual(['ws.pinned.test', 'www.pinned.test']);
    expect(s.requests).toBe(2);
  });

  it('answers an unresolvable host with 502 when checking', async () => {
    const proxy = await start({ allowPrivateNetworks: false });
    const r = await proxiedGet(proxy, 'http://no-such-host.invalid/');
    expect(r.status).toBe(502);
    expect(proxy.stats().domains).toEqual([]);
  });

  it('pinnedLookup connects to the checked address whatever name is asked', async () => {
    const lookup = pinnedLookup(['127.0.0.1']);
    for (const autoSelectFamily of [true, false]) {
      const s = net.connect({ host: 'rebinding.example', port: echoPort, lookup, autoSelectFamily });
      await new Promise<void>((resolve, reject) => {
        s.once('connect', () => resolve());
        s.once('error', reject);
      });
      expect(s.remoteAddress).toBe('127.0.0.1');
      s.destroy();
    }
    const v6only = net.connect({ host: 'x.example', port: echoPort, lookup, family: 6 });
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => v6only.once('error', resolve));
    expect(err.code).toBe('ENOTFOUND');
  });
});

describe('traffic proxy: upstream', () => {
  const USER = 'sess-user';
  const PASS = 'p@ss:w/rd%41 secret';
  let upstream: ProxyChainServer;
  const seen: Array<{ hostname: string; username: string; password: string; isHttp: boolean }> = [];

  beforeAll(async () => {
    upstream = new ProxyChainServer({
      port: 0,
      host: '127.0.0.1',
      verbose: false,
      prepareRequestFunction: ({ hostname, username, password, isHttp }) => {
        seen.push({ hostname, username, password, isHttp });
        return { requestAuthentication: username !== USER || password !== PASS };
      },
    });
    await upstream.listen();
  });
  afterAll(async () => {
    await upstream?.close(true);
  });

  it('chains plain HTTP and CONNECT through an authenticated upstream and counts proxyBytes', async () => {
    const { log, lines } = captureLog();
    seen.length = 0;
    const proxy = await start({
      allowPrivateNetworks: true,
      upstream: { server: `http://127.0.0.1:${upstream.port}`, username: USER, password: PASS },
      log,
    });
    const r = await proxiedGet(proxy, `http://localhost:${targetPort}/data.json`);
    expect(r.status).toBe(200);
    expect(r.body).toBe(DATA);

    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).toBe(200);
    const payload = Buffer.alloc(5000, 1);
    expect((await echoThrough(t.socket, payload)).equals(payload)).toBe(true);
    t.socket.end();
    await closed(t.socket);
    // Negative: nothing more is counted after the close (networkBytes stays within 1 kB of proxyBytes).
    await new Promise((res) => setTimeout(res, 50));

    expect(seen).toEqual([
      { hostname: 'localhost', username: USER, password: PASS, isHttp: true },
      { hostname: '127.0.0.1', username: USER, password: PASS, isHttp: false },
    ]);
    const s = proxy.stats();
    expect(s.requests).toBe(2);
    expect(s.domains).toEqual(['127.0.0.1', 'localhost']);
    expect(s.proxyBytes).toBeGreaterThan(Buffer.byteLength(DATA) + 10_000);
    expect(s.networkBytes).toBeGreaterThanOrEqual(s.proxyBytes);
    expect(s.networkBytes).toBeLessThan(s.proxyBytes + 1000);

    await proxy.close();
    const all = lines.join('');
    expect(all).not.toContain(PASS);
    expect(all).not.toContain(encodeURIComponent(PASS));
    expect(all).not.toContain(Buffer.from(`${USER}:${PASS}`).toString('base64'));
  });

  it('switches upstream at run time (warm browser), bytes split accordingly', async () => {
    seen.length = 0;
    const proxy = await start({ allowPrivateNetworks: true });
    expect((await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`)).status).toBe(200);
    const s1 = proxy.stats();
    expect(s1.proxyBytes).toBe(0);
    expect(s1.networkBytes).toBeGreaterThan(Buffer.byteLength(DATA));
    expect(seen).toEqual([]);

    proxy.setUpstream({ server: `http://127.0.0.1:${upstream.port}`, username: USER, password: PASS });
    expect((await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`)).status).toBe(200);
    const s2 = proxy.stats();
    expect(seen.length).toBe(1);
    expect(s2.proxyBytes).toBeGreaterThan(Buffer.byteLength(DATA));
    expect(s2.networkBytes).toBeGreaterThan(s1.networkBytes + Buffer.byteLength(DATA));

    proxy.setUpstream(undefined);
    expect((await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`)).status).toBe(200);
    const s3 = proxy.stats();
    expect(seen.length).toBe(1);
    expect(s3.proxyBytes).toBe(s2.proxyBytes);
    expect(s3.requests).toBe(3);
  });

  it('wrong upstream credentials fail the request (not a 200)', async () => {
    const proxy = await start({
      allowPrivateNetworks: true,
      upstream: { server: `http://127.0.0.1:${upstream.port}`, username: USER, password: 'wrong' },
    });
    const r = await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`);
    expect(r.status).not.toBe(200);
    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).not.toBe(200);
  });

  it('refuses a private upstream unless allowed, without checking the destination itself', async () => {
    const proxy = await start({
      allowPrivateNetworks: false,
      upstream: { server: `http://127.0.0.1:${upstream.port}`, username: USER, password: PASS },
    });
    const r = await proxiedGet(proxy, `http://example.com/`);
    expect(r.status).toBe(403);
    expect(r.body).toMatch(/upstream proxy 127\.0\.0\.1 is a private address/);
    const t = await connectTunnel(proxy, 'example.com:443');
    expect(t.status).toBe(403);
    expect(proxy.stats().requests).toBe(0);
  });

  it('with checking on, connects to the checked upstream address; the destination is left to the upstream', async () => {
    const { log, lines } = captureLog();
    seen.length = 0;
    const proxy = await start({
      allowPrivateNetworks: false,
      upstream: { server: `http://proxy.pinned.test:${upstream.port}`, username: USER, password: PASS },
      log,
    });
    // The destination is loopback, but it is the upstream's business (it resolves it).
    const r = await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`);
    expect(r.status).toBe(200);
    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).toBe(200);
    t.socket.destroy();
    expect(seen.map((x) => x.username)).toEqual([USER, USER]);
    expect(proxy.stats().proxyBytes).toBeGreaterThan(0);
    await proxy.close();
    expect(lines.join('')).not.toContain(PASS);
  });

  it('validates upstream settings and encodes credentials', () => {
    expect(() => upstreamProxyUrl({ server: 'socks4://1.2.3.4:1080' })).toThrow(/http, https or socks5/);
    expect(() => upstreamProxyUrl({ server: 'ftp://1.2.3.4:21' })).toThrow(/http, https or socks5/);
    // SOCKS5: names are resolved by the upstream (socks5h), and the port defaults to 1080.
    const socks = upstreamProxyUrl({ server: 'socks5://proxy.example', username: 'u', password: 'p w' });
    expect(socks.socks).toBe(true);
    expect(new URL(socks.proxyUrl).protocol).toBe('socks5h:');
    expect(new URL(socks.proxyUrl).port).toBe('1080');
    expect(decodeURIComponent(new URL(socks.proxyUrl).password)).toBe('p w');
    expect(() => upstreamProxyUrl({ server: 'not a url' })).toThrow(/absolute URL/);
    expect(() => upstreamProxyUrl({ server: 'http://1.2.3.4:8080', username: 'a:b', password: 'x' })).toThrow(/username/);
    const u = upstreamProxyUrl({ server: 'http://proxy.example:8080/ignored', username: 'u@x', password: 'p@ss:w/rd%41' });
    expect(u.host).toBe('proxy.example');
    const parsed = new URL(u.proxyUrl);
    expect(decodeURIComponent(parsed.username)).toBe('u@x');
    expect(decodeURIComponent(parsed.password)).toBe('p@ss:w/rd%41');
    expect(parsed.pathname).toBe('/');
  });
});

describe('traffic proxy: SOCKS5 upstream', () => {
  const USER = 'socks-user';
  const PASS = 's0cks:p@ss/word';
  let socks: Socks5Server;

  beforeAll(async () => {
    socks = await startSocks5Server({ username: USER, password: PASS });
  });
  afterAll(async () => {
    await socks?.close();
  });

  it('chains plain HTTP and CONNECT through an authenticated SOCKS5 upstream, names resolved there, and counts proxyBytes', async () => {
    const { log, lines } = captureLog();
    socks.connections.length = 0;
    const proxy = await start({ allowPrivateNetworks: true, upstream: { server: `socks5://127.0.0.1:${socks.port}`, username: USER, password: PASS }, log });
    const bytesBefore = socks.bytes();
    const r = await proxiedGet(proxy, `http://localhost:${targetPort}/data.json`);
    expect(r.status).toBe(200);
    expect(r.body).toBe(DATA);

    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).toBe(200);
    const payload = Buffer.alloc(5000, 2);
    expect((await echoThrough(t.socket, payload)).equals(payload)).toBe(true);

    // The name reached the SOCKS server unresolved (socks5h), with the credentials.
    expect(socks.connections).toEqual([
      { destination: `localhost:${targetPort}`, username: USER, opened: true, firstLine: 'GET /data.json HTTP/1.1' },
      { destination: `127.0.0.1:${echoPort}`, username: USER, opened: true, firstLine: expect.any(String) },
    ]);
    // Counted while the tunnel is open, and after it closed.
    const open = proxy.stats().proxyBytes;
    expect(open).toBeGreaterThan(Buffer.byteLength(DATA) + 10_000);
    t.socket.end();
    await closed(t.socket);
    // Negative: nothing more is counted after the close (it stays within 100 bytes of the SOCKS server's).
    await new Promise((res) => setTimeout(res, 50));
    const s = proxy.stats();
    expect(s.proxyBytes).toBeGreaterThanOrEqual(open);
    // What the SOCKS server exchanged with us is what we counted.
    expect(Math.abs(s.proxyBytes - (socks.bytes() - bytesBefore))).toBeLessThan(100);
    expect(s.networkBytes).toBeGreaterThanOrEqual(s.proxyBytes);
    expect(s.requests).toBe(2);
    await proxy.close();
    const all = lines.join('');
    expect(all).not.toContain(PASS);
    expect(all).not.toContain(encodeURIComponent(PASS));
  });

  it('wrong SOCKS credentials fail the request (not a 200)', async () => {
    const proxy = await start({ allowPrivateNetworks: true, upstream: { server: `socks5://127.0.0.1:${socks.port}`, username: USER, password: 'wrong' } });
    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).not.toBe(200);
    expect((await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`)).status).not.toBe(200);
  });

  it('refuses a private SOCKS upstream unless allowed, and connects to the checked address when checking', async () => {
    const refused = await start({ allowPrivateNetworks: false, upstream: { server: `socks5://127.0.0.1:${socks.port}`, username: USER, password: PASS } });
    const t = await connectTunnel(refused, 'example.com:443');
    expect(t.status).toBe(403);
    expect(t.body).toMatch(/upstream proxy 127\.0\.0\.1 is a private address/);

    socks.connections.length = 0;
    const pinned = await start({
      allowPrivateNetworks: false,
      upstream: { server: `socks5://proxy.pinned.test:${socks.port}`, username: USER, password: PASS },
    });
    const ok = await connectTunnel(pinned, `127.0.0.1:${echoPort}`);
    expect(ok.status).toBe(200);
    ok.socket.destroy();
    expect(socks.connections.map((c) => c.destination)).toEqual([`127.0.0.1:${echoPort}`]);
  });

  it("an operator's upstream (the service proxy pool) is not held to the private-network policy", async () => {
    socks.connections.length = 0;
    const proxy = await start({
      allowPrivateNetworks: false,
      upstream: { server: `socks5://${encodeURIComponent(USER)}:${encodeURIComponent(PASS)}@127.0.0.1:${socks.port}`, operator: true },
    });
    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).toBe(200);
    t.socket.destroy();
    expect(socks.connections).toEqual([expect.objectContaining({ destination: `127.0.0.1:${echoPort}`, username: USER })]);
  });
});

describe('traffic proxy: upstream connect failures', () => {
  /** A port nothing listens on (bound, then closed). */
  async function closedPort(): Promise<number> {
    const s = net.createServer();
    const port = await listen(s);
    await closeServer(s);
    return port;
  }

  it("tells the upstream's owner when an HTTP or SOCKS5 upstream refuses the connection", async () => {
    for (const scheme of ['http', 'socks5']) {
      const failures: string[] = [];
      const proxy = await start({
        allowPrivateNetworks: true,
        upstream: { server: `${scheme}://127.0.0.1:${await closedPort()}`, operator: true, onConnectFailure: () => failures.push(scheme) },
      });
      const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
      expect(t.status, scheme).not.toBe(200);
      await eventually(() => failures.length >= 1, 5_000, `the ${scheme} upstream's owner told`);
      expect(proxy.stats().proxyBytes, scheme).toBe(0);
    }
  });

  it('says nothing while the upstream connects, even when the destination fails behind it', async () => {
    const failures: number[] = [];
    const socks = await startSocks5Server();
    try {
      const proxy = await start({
        allowPrivateNetworks: true,
        upstream: { server: `socks5://127.0.0.1:${socks.port}`, onConnectFailure: () => failures.push(1) },
      });
      const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
      expect(t.status).toBe(200);
      t.socket.end();
      await closed(t.socket);
      expect((await proxiedGet(proxy, `http://127.0.0.1:${targetPort}/data.json`)).status).toBe(200);
      await proxy.close();
      expect(failures).toEqual([]);
    } finally {
      await socks.close();
    }
  });
});

describe('traffic proxy: lifecycle', () => {
  it('close() stops listening and ends open connections', async () => {
    const proxy = await startTrafficProxy({ allowPrivateNetworks: true, log: pino({ level: 'silent' }) });
    const t = await connectTunnel(proxy, `127.0.0.1:${echoPort}`);
    expect(t.status).toBe(200);
    expect(await isListening(proxy.port)).toBe(true);
    await proxy.close();
    await closed(t.socket);
    expect(await isListening(proxy.port)).toBe(false);
    await proxy.close(); // idempotent
    expect(proxy.stats().requests).toBe(1);
  });
});

// Chromium (156, Debian build) contacts Google services on its own even with
// --disable-background-networking/--disable-component-update: update.googleapis.com,
// accounts.google.com, clients2.google.com. The proxy rightly records them; the page's
// own traffic is what these tests check.
const chromiumOwn = (d: string) => /(^|\.)(google\.com|googleapis\.com|gstatic\.com|gvt1\.com)$/.test(d);

// Playwright refuses --user-data-dir with launch(); launchPersistentContext is the same
// Chromium command line with that flag.
async function launchChromium(proxy: TrafficProxy) {
  const userDataDir = mkdtempSync(join(tmpdir(), 'tp-chromium-'));
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless=new',
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      '--disable-quic',
    ],
    proxy: { server: proxy.url, bypass: '<-loopback>' },
  });
  return {
    browser,
    done: async () => {
      await browser.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

describe('traffic proxy: Chromium end to end', () => {
  it('a page and the resource it fetches go through the proxy and are counted', async () => {
    const proxy = await start({ allowPrivateNetworks: true });
    const { browser, done } = await launchChromium(proxy);
    try {
      const page = await browser.newPage();
      const hitsBefore = targetHits.length;
      await page.goto(`http://127.0.0.1:${targetPort}/page`);
      await page.waitForFunction(() => document.getElementById('out')?.textContent === 'got world');
      await page.close();
      expect(targetHits.slice(hitsBefore)).toEqual(expect.arrayContaining(['/page', '/data.json']));
      const s = proxy.stats();
      expect(s.domains).toContain('127.0.0.1');
      expect(s.domains.filter((d) => !chromiumOwn(d))).toEqual(['127.0.0.1']);
      expect(s.requests).toBeGreaterThanOrEqual(2);
      expect(s.networkBytes).toBeGreaterThan(Buffer.byteLength(PAGE) + Buffer.byteLength(DATA));
      expect(s.proxyBytes).toBe(0);
    } finally {
      await done();
    }
  });

  it('Chromium gets a refusal for a private destination when not allowed', async () => {
    const proxy = await start({ allowPrivateNetworks: false });
    const { browser, done } = await launchChromium(proxy);
    try {
      const page = await browser.newPage();
      const hitsBefore = targetHits.length;
      const res = await page.goto(`http://127.0.0.1:${targetPort}/page`);
      expect(res?.status()).toBe(403);
      expect(await page.textContent('body')).toMatch(/private address/);
      expect(targetHits.length).toBe(hitsBefore);
      expect(proxy.stats().domains.filter((d) => !chromiumOwn(d))).toEqual([]);
    } finally {
      await done();
    }
  });
});
