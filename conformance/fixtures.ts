// The fixture server the suite starts itself, on first use: the files of fixtures/ plus
// routes that rule modules add (pages, downloads, webhook receivers). The server under test
// reaches it at `url()`: http://127.0.0.1:PORT by default; with --fixtures-url the server
// listens on that URL's port on every interface and hands out that URL, for a server under
// test that runs elsewhere. Given as a session's proxy, it also answers for other host names
// (`proxied`): a browser asks its proxy for absolute URLs (`GET http://host/path`).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';

export type FixtureHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.svg': 'image/svg+xml',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
};

export const defaultFixturesDir = fileURLToPath(new URL('../fixtures/', import.meta.url));

export class FixtureServer {
  private server?: Server;
  private starting?: Promise<string>;
  private routes = new Map<string, FixtureHandler>();
  private proxiedHandler?: (req: IncomingMessage, res: ServerResponse) => boolean;

  constructor(private readonly options: { publicUrl?: string; dir?: string } = {}) {}

  /** Adds a route; `path` is matched exactly, without the query string. */
  route(method: string, path: string, handler: FixtureHandler): void {
    this.routes.set(`${method.toUpperCase()} ${path}`, handler);
  }

  /**
   * Answers requests for other hosts, as the proxy of a session under test: absolute-form
   * requests go to `handler` first (it answers true when it took the request).
   */
  proxied(handler: (req: IncomingMessage, res: ServerResponse) => boolean): void {
    this.proxiedHandler = handler;
  }

  /** Removes a route added by `route`; the path then answers like any unknown path (404). */
  unroute(method: string, path: string): void {
    this.routes.delete(`${method.toUpperCase()} ${path}`);
  }

  /** The address of `path` as the server under test reaches it; starts the server on first use. */
  async url(path = '/'): Promise<string> {
    const base = await (this.starting ??= this.start());
    return base + (path.startsWith('/') ? path : `/${path}`);
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async start(): Promise<string> {
    const publicUrl = this.options.publicUrl ? new URL(this.options.publicUrl) : undefined;
    const port = publicUrl ? Number(publicUrl.port || (publicUrl.protocol === 'https:' ? 443 : 80)) : 0;
    const host = publicUrl ? '0.0.0.0' : '127.0.0.1';
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    if (publicUrl) return publicUrl.toString().replace(/\/+$/, '');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      // For other hosts only: requests for this server's own address, absolute-form too (a
      // session whose proxy this is opens the suite's pages that way), are its own to answer.
      if (req.url?.startsWith('http://') && !this.isOwn(req.url) && this.proxiedHandler?.(req, res)) return;
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const path = new URL(req.url ?? '/', 'http://fixtures').pathname;
      const handler = this.routes.get(`${req.method} ${path}`);
      if (handler) return void (await handler(req, res, Buffer.concat(chunks)));
      const file = this.file(path);
      if (file && (req.method === 'GET' || req.method === 'HEAD')) {
        res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
        return void res.end(req.method === 'HEAD' ? undefined : readFileSync(file));
      }
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such fixture');
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    }
  }

  private isOwn(url: string): boolean {
    const host = new URL(url).host;
    const own = this.server?.address();
    if (own && typeof own === 'object' && (host === `127.0.0.1:${own.port}` || host === `localhost:${own.port}`)) return true;
    return this.options.publicUrl !== undefined && host === new URL(this.options.publicUrl).host;
  }

  private file(path: string): string | undefined {
    const dir = this.options.dir ?? defaultFixturesDir;
    const full = normalize(join(dir, decodeURIComponent(path)));
    if (!full.startsWith(normalize(dir + sep)) && full !== normalize(dir)) return undefined;
    const candidate = existsSync(full) && statSync(full).isDirectory() ? join(full, 'index.html') : full;
    return existsSync(candidate) && statSync(candidate).isFile() ? candidate : undefined;
  }
}
