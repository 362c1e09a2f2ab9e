// One MCP session: a client's conversation with /mcp, owned by the project of the key that
// opened it. It has its own MCP server object and transport, the browser session its tools
// act on (the current one), and the browser sessions it started, which end with it.
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Logger } from 'pino';
import type { EndReason, RunningSession } from '../capability/index.js';
import type { KeyOwner } from '../auth/api-keys.js';
import { assertPublicUrl, UrlPolicyError } from '../net/address-policy.js';
import type { SessionCreateBody, SessionLifecycle, SessionLookup, SessionUrls } from '../sessions/index.js';
import type { RecordingHandlers } from '../recording/index.js';
import type { ToolHandlers } from '../tools/index.js';
import type { Driver, Drivers } from './driver.js';
import { BoundedEventStore } from './event-store.js';
import { registerPageTools } from './page-tools.js';
import { registerResources } from './resources.js';
import { ToolFailure } from './results.js';
import { registerServiceTools } from './service-tools.js';
import { registerSessionTools } from './session-tools.js';

export interface McpSessionDeps {
  sessions: SessionLookup & SessionLifecycle & SessionUrls;
  drivers: Drivers;
  toolHandlers: ToolHandlers;
  recordingHandlers: Pick<RecordingHandlers, 'listSessionRecordings'>;
  allowPrivateNetworks: boolean;
  log: Logger;
  version: string;
}

const INSTRUCTIONS = `Cloud browsers for agents. The page tools (anchor_*, browser_*) act on the current browser session, started with the defaults on first use or by session_start with options. Read a page with anchor_snapshot and act on its elements by their refs (e.g. ref "e12"); refs are valid until the page changes. session_live_view gives a URL a person can watch or take over with. Browser sessions this MCP session started end when it ends.`;

export class McpSession {
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly server: McpServer;
  /** Browser sessions this MCP session started: they end with it. */
  readonly started = new Set<string>();
  private current: string | undefined;
  private autoStart: Promise<string> | undefined;
  lastSeen = Date.now();
  /** HTTP requests being handled. */
  inflight = 0;
  /** The client's JSON-RPC requests not answered yet: a tool call outlives its POST when answered over SSE. */
  private readonly unanswered = new Set<string | number>();
  private closing: Promise<void> | undefined;

  constructor(
    readonly owner: KeyOwner,
    private readonly d: McpSessionDeps,
    onOpen: (s: McpSession) => void,
    onClosed: (s: McpSession) => void,
  ) {
    this.transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Resumable streams: a client that lost an SSE stream reconnects with Last-Event-ID.
      eventStore: new BoundedEventStore(),
      onsessioninitialized: () => onOpen(this),
      // DELETE /mcp.
      onsessionclosed: () => void this.close('api'),
    });
    this.transport.onclose = () => onClosed(this);
    this.server = new McpServer({ name: 'cloud-browser', version: d.version }, { instructions: INSTRUCTIONS });
    registerSessionTools(this.server, {
      start: async (body) => this.start(body),
      list: async () =>
        d.sessions.runningOf(owner.projectId).map((s) => ({
          id: s.id,
          createdAt: s.createdAt,
          current: s.id === this.current,
          startedHere: this.started.has(s.id),
          liveViewUrl: d.sessions.liveViewUrl(s.id, s.liveViewToken),
        })),
      end: async (id) => {
        const s = await this.running(id);
        await d.sessions.end(s.id, 'completed', 'api');
        if (this.current === s.id) this.current = undefined;
        return `Ended browser session ${s.id}.`;
      },
      liveViewUrl: async (id) => {
        const s = id ? await this.running(id) : (await this.target(undefined)).session;
        return { id: s.id, url: d.sessions.liveViewUrl(s.id, s.liveViewToken) };
      },
    });
    registerPageTools(this.server, {
      target: (id, kind) => this.target(id, kind),
      checkUrl: async (url) => {
        try {
          await assertPublicUrl(url, { allowPrivate: d.allowPrivateNetworks });
        } catch (err) {
          if (err instanceof UrlPolicyError) throw new ToolFailure(err.message);
          throw err;
        }
      },
      endCurrent: async () => {
        const id = this.current;
        this.current = undefined;
        if (!id || !d.sessions.get(id)) return undefined;
        await d.sessions.end(id, 'completed', 'api');
        return id;
      },
    });
    const context = () => ({
      requestId: randomUUID(),
      log: d.log.child({ mcpSessionId: this.transport.sessionId }),
      clientIp: 'mcp',
      projectId: owner.projectId,
      apiKeyId: owner.apiKeyId,
    });
    registerServiceTools(this.server, d.toolHandlers, context);
    registerResources(this.server, {
      sessions: () => {
        const running = d.sessions.runningOf(owner.projectId).map((s) => s.id);
        return { running, ended: [...this.started].filter((id) => !running.includes(id)) };
      },
      open: async (id, kind) => {
        const s = await this.running(id);
        d.sessions.touch(s.id, kind);
        return { session: s, driver: await d.drivers.get(s.id, s.browser.wsEndpoint) };
      },
      liveViewUrl: async (id) => {
        const s = await this.running(id);
        return d.sessions.liveViewUrl(s.id, s.liveViewToken);
      },
      recordings: async (id) =>
        d.recordingHandlers.listSessionRecordings({ params: { session_id: id }, query: {}, body: undefined, headers: new Headers() }, context()),
    });
  }

  /** The project's browser sessions changed: resources/list answers differently now. */
  resourcesChanged(): void {
    if (this.id && !this.closing && this.server.isConnected()) this.server.sendResourceListChanged();
  }

  get id(): string | undefined {
    return this.transport.sessionId;
  }

  async connect(): Promise<void> {
    await this.server.connect(this.transport);
    const receive = this.transport.onmessage!;
    this.transport.onmessage = (message, extra) => {
      if ('method' in message && 'id' in message) this.unanswered.add(message.id);
      receive(message, extra);
    };
    const send = this.transport.send.bind(this.transport);
    this.transport.send = (message, options) => {
      if (('result' in message || 'error' in message) && message.id !== undefined) {
        this.unanswered.delete(message.id);
        this.lastSeen = Date.now();
      }
      return send(message, options);
    };
  }

  /** Neither a request nor a call has been under way for ms. */
  idleFor(ms: number, now: number): boolean {
    return this.inflight === 0 && this.unanswered.size === 0 && now - this.lastSeen >= ms;
  }

  /** Starts a browser session for the project and makes it current. */
  private async start(body: SessionCreateBody): Promise<{ id: string; cdpUrl: string; liveViewUrl: string }> {
    if (this.closing) throw new ToolFailure('This MCP session is closing');
    const r = await this.d.sessions.create(this.owner, body);
    if (!r.ok) {
      const retry = r.retryAfterSeconds === undefined ? '' : ` (retry after ${r.retryAfterSeconds} s)`;
      throw new ToolFailure(`The browser session could not start: ${r.message}${retry}`);
    }
    this.started.add(r.id);
    // Closed meanwhile: what it started ends with it.
    if (this.closing) {
      await this.d.sessions.end(r.id, 'completed', 'api');
      throw new ToolFailure('This MCP session is closing');
    }
    this.current = r.id;
    return r;
  }

  /** A running browser session of the project, by id. */
  private async running(id: string): Promise<RunningSession> {
    const s = await this.d.sessions.lookup(this.owner.projectId, id);
    if ('status' in s) throw new ToolFailure(s.status === 404 ? `No browser session ${id} in this project` : `Browser session ${id}: ${s.message}`);
    return s;
  }

  /** The browser session a page tool acts on, and its Playwright driver. */
  private async target(id: string | undefined, kind: 'input' | 'screenshot' = 'input'): Promise<{ session: RunningSession; driver: Driver }> {
    let s: RunningSession;
    if (id) {
      s = await this.running(id);
      this.current = s.id;
    } else if (this.current) {
      const live = this.d.sessions.get(this.current);
      if (!live) {
        const ended = this.current;
        this.current = undefined;
        throw new ToolFailure(`The current browser session ${ended} has ended: call again to start a new one with the defaults, or session_start with options`);
      }
      s = live;
    } else {
      // Concurrent first calls share one start.
      this.autoStart ??= this.start({})
        .then((r) => r.id)
        .finally(() => (this.autoStart = undefined));
      s = await this.running(await this.autoStart);
    }
    this.d.sessions.touch(s.id, kind);
    return { session: s, driver: await this.d.drivers.get(s.id, s.browser.wsEndpoint) };
  }

  /** Ends the browser sessions it started and closes the transport. */
  close(reason: EndReason): Promise<void> {
    return (this.closing ??= (async () => {
      await Promise.all(
        [...this.started].map((id) =>
          this.d.sessions
            .end(id, 'completed', reason)
            .catch((err: unknown) => this.d.log.error({ err, sessionId: id }, "could not end an MCP session's browser session")),
        ),
      );
      await this.server.close().catch(() => {});
    })());
  }
}
