// /mcp: the Streamable HTTP transport (POST, GET, DELETE), authenticated by an API key in
// the service-api-key header (or the vendor's anchor-api-key) or as a Bearer token, one
// McpSession per Mcp-Session-Id, each held by the project that opened it. Sessions with no
// request for the idle time-out close.
import type { Context, Hono } from 'hono';
import type { Logger } from 'pino';
import type { KeyOwner } from '../auth/api-keys.js';
import { apiKeyOf, apiKeyRefusal } from '../auth/key-header.js';
import type { EndReason } from '../capability/index.js';
import { McpSession, type McpSessionDeps } from './mcp-session.js';

export interface EndpointOptions extends Omit<McpSessionDeps, 'log'> {
  log: Logger;
  authenticate(key: string): Promise<KeyOwner | undefined>;
  idleTimeoutMs: number;
}

/** JSON-RPC errors answered before a session's transport is reached. */
const rpcError = (c: Context, status: 400 | 404, code: number, message: string) => c.json({ jsonrpc: '2.0', error: { code, message }, id: null }, status);

export class McpEndpoint {
  private readonly open = new Map<string, McpSession>();
  /** Sessions not yet initialized, or closing: shutdown closes them too. */
  private readonly all = new Set<McpSession>();
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly o: EndpointOptions) {
    this.timer = setInterval(() => this.expire(), Math.min(1_000, o.idleTimeoutMs / 4));
    this.timer.unref();
  }

  routes(app: Hono): void {
    app.on(['POST', 'GET', 'DELETE'], '/mcp', (c) => this.handle(c));
    app.all('/mcp', (c) =>
      c.json({ error: { code: 405, message: `Method ${c.req.method} is not allowed here; allowed: POST, GET, DELETE` } }, 405, { Allow: 'POST, GET, DELETE' }),
    );
  }

  get size(): number {
    return this.open.size;
  }

  private async handle(c: Context): Promise<Response> {
    const given = apiKeyOf((n) => c.req.header(n));
    const key = given?.key ?? /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
    const owner = key ? await this.o.authenticate(key) : undefined;
    if (!owner) {
      const message = key && !given ? 'Invalid API key (read from the Authorization header)' : apiKeyRefusal(given, ', or as Authorization: Bearer <key>');
      return c.json({ error: { code: 401, message } }, 401, { 'WWW-Authenticate': `Bearer realm="mcp"${key ? ', error="invalid_token"' : ''}` });
    }
    if (this.stopped) return c.json({ error: { code: 503, message: 'The server is shutting down' } }, 503);
    const id = c.req.header('mcp-session-id');
    let session: McpSession;
    if (id) {
      const found = this.open.get(id);
      // Another project's session is not found, as everywhere in the API.
      if (!found || found.owner.projectId !== owner.projectId) return rpcError(c, 404, -32001, 'MCP session not found: initialize a new one');
      session = found;
    } else {
      if (c.req.method !== 'POST') return rpcError(c, 400, -32000, 'Mcp-Session-Id header is required; POST an initialize request to open a session');
      session = new McpSession(
        owner,
        { ...this.o, log: this.o.log },
        (s) => this.open.set(s.id!, s),
        (s) => {
          if (s.id) this.open.delete(s.id);
          this.all.delete(s);
        },
      );
      this.all.add(session);
      await session.connect();
    }
    session.inflight++;
    session.lastSeen = Date.now();
    try {
      return await session.transport.handleRequest(c.req.raw);
    } finally {
      session.inflight--;
      session.lastSeen = Date.now();
      // A first request that was not an initialize opened nothing.
      if (!id && !session.id) void session.close('api');
    }
  }

  /** Tells the project's MCP sessions that their resources changed (a browser session started or ended). */
  resourcesChanged(projectId: string): void {
    for (const s of this.open.values()) if (s.owner.projectId === projectId) s.resourcesChanged();
  }

  private expire(): void {
    const now = Date.now();
    for (const s of this.open.values()) {
      if (s.idleFor(this.o.idleTimeoutMs, now)) {
        this.o.log.info({ mcpSessionId: s.id, startedSessions: s.started.size }, 'MCP session idle: closing it');
        this.open.delete(s.id!);
        void s.close('idle_timeout');
      }
    }
  }

  /** Closes every MCP session, ending the browser sessions they started. */
  async close(reason: EndReason = 'server_shutdown'): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const sessions = [...this.all];
    this.open.clear();
    await Promise.all(sessions.map((s) => s.close(reason)));
  }
}
