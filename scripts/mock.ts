// `pnpm mock [--port N]`: serves openapi.yaml with Prism, answering from its examples, for
// frontend work without browsers. Prism validates requests against the contract. In front
// of it sits a thin layer for the three things Prism answers differently from the contract:
// an undocumented method on a documented path (405 with Allow, not Prism's 405 without
// it, or 400), a malformed JSON body (400 at once; Prism waits for its own timeout), and a
// plain GET of a WebSocket operation (426; Prism would answer its 101 and never switch).
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { routes } from '../generated/routes.js';
import { errorBody } from '../server/http/errors.js';
import { keepIdleConnections } from '../server/http/keep-alive.js';
import { freePort } from '../server/testing/free-port.js';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const portAt = args.indexOf('--port');
const port = Number(portAt >= 0 ? args[portAt + 1] : (process.env.PORT ?? '4010'));
// Prism listens on a port of its own choosing, not port + 1: that one may be taken, and
// Prism would then end at once, leaving the layer in front answering 502.
const prismPort = await freePort();

const prism = spawn(
  join(root, 'node_modules', '.bin', 'prism'),
  ['mock', join(root, 'openapi.yaml'), '--host', '127.0.0.1', '--port', String(prismPort), '--errors'],
  // No analytics from any dependency of Prism's.
  { stdio: 'inherit', env: { ...process.env, SCARF_ANALYTICS: 'false', DO_NOT_TRACK: '1' } },
);

// Paths in the route table's order: literal segments before parameters, as the server.
const paths = [...new Set(routes.map((r) => r.path))].map((path) => ({
  path,
  pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  methods: routes.filter((r) => r.path === path).map((r) => r.method),
  json: routes.filter((r) => r.path === path && r.body?.mediaTypes.includes('application/json')),
  /** Operations that switch to a WebSocket (101), answering 426 without an upgrade. */
  sockets: routes.filter((r) => r.path === path && r.statuses.includes(101) && r.statuses.includes(426)),
}));

const error = (code: number, message: string) => JSON.stringify({ error: { code, message } });
const docsUrl = `http://127.0.0.1:${port}/docs`;

const front = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://mock');
  const match = paths.find((p) => p.pattern.test(url.pathname));
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (match && !match.methods.includes(req.method as never)) {
      res.writeHead(405, { 'content-type': 'application/json', allow: match.methods.join(', ') });
      return res.end(error(405, `Method ${req.method} is not allowed here; allowed: ${match.methods.join(', ')}`));
    }
    const socket = match?.sockets.find((r) => r.method === req.method);
    if (socket && !/websocket/i.test(req.headers.upgrade ?? '')) {
      res.writeHead(426, { 'content-type': 'application/json', upgrade: 'websocket', connection: 'Upgrade' });
      return res.end(JSON.stringify(errorBody(socket.errors[426], 426, 'This operation takes a WebSocket upgrade', docsUrl)));
    }
    const route = match?.json.find((r) => r.method === req.method);
    if (route && /application\/json/.test(req.headers['content-type'] ?? '') && body.length) {
      try {
        JSON.parse(body.toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(errorBody(route.errors[400], 400, 'Malformed JSON body', docsUrl)));
      }
    }
    const upstream = request(
      { host: '127.0.0.1', port: prismPort, method: req.method, path: req.url, headers: { ...req.headers, 'content-length': String(body.length) } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(error(502, `Prism is not answering: ${err.message}`));
    });
    upstream.end(body);
  });
});
keepIdleConnections(front, 65);
front.listen(port, '127.0.0.1', () => console.log(`mock: http://127.0.0.1:${port} (Prism on ${prismPort})`));

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    front.close();
    prism.kill(signal);
  });
}
prism.on('exit', (code) => process.exit(code ?? 0));
