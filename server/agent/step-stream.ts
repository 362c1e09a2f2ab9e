// GET /ws?sessionId=S: the WebSocket the hosted vendor's SDK opens for `onAgentStep`. Every
// step the agent takes in the session is sent as it is made, one text message each: a JSON
// string (the SDK JSON-parses each message and hands it on as the `string` its type
// declares). A client that connects while a task runs first gets that task's steps so far:
// the SDK opens the socket and starts the task side by side, so it may connect a step late.
//
// Who may listen: a key that is sent (header or `apiKey` query) must be one of the session's
// project. The SDK sends none on this socket, so without one the session id, a random UUID
// only its project is told, opens the stream, unless AGENT_STEPS_REQUIRE_KEY says otherwise
// (docs/decisions/0003-agent-steps-without-a-key.md).
// Only the node that runs the session knows its agent: in a cluster the router forwards
// the upgrade there (cluster/requests.ts).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { findKey } from '../auth/api-keys.js';
import { apiKeyOf, apiKeyRefusal } from '../auth/key-header.js';
import type { StepRecord } from './steps.js';

export const STEPS_PATH = '/ws';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the runner tells the stream of each task. */
export interface StepSink {
  begin(sessionId: string): void;
  /** The task's steps so far (the runner's whole list each time). */
  publish(sessionId: string, steps: readonly StepRecord[]): void;
  end(sessionId: string): void;
}

export interface StepStreamOptions {
  db: Parameters<typeof findKey>[0];
  /** AGENT_STEPS_REQUIRE_KEY. */
  requireKey: boolean;
  /** The project of a session running on this node; undefined when it runs nowhere here. */
  projectOf(sessionId: string): string | undefined;
}

export type Admission = { ok: true; sessionId: string } | { ok: false; status: 400 | 401 | 404; message: string };

/** One line for a step: the action, what it acted on, and what came of it. */
export function stepLine(s: StepRecord): string {
  return `${s.action}${s.target ? ` ${s.target}` : ''}: ${s.ok ? 'ok' : 'failed'}, ${s.outcome}`;
}

export class AgentStepStream implements StepSink {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly listeners = new Map<string, Set<WebSocket>>();
  /** The lines of the task running in each session. */
  private readonly current = new Map<string, string[]>();
  private closed = false;

  constructor(private readonly o: StepStreamOptions) {}

  /** Whether this caller may follow this session's agent here. */
  async admit(sessionId: string | null, header: (name: string) => string | undefined, queryKey: string | null): Promise<Admission> {
    if (!sessionId || !UUID.test(sessionId)) return { ok: false, status: 400, message: 'sessionId: a session id (uuid) is required' };
    const given = apiKeyOf(header) ?? (queryKey ? { key: queryKey, header: undefined } : undefined);
    let projectId: string | undefined;
    if (given) {
      const owner = await findKey(this.o.db, given.key);
      if (!owner)
        return {
          ok: false,
          status: 401,
          message: given.header ? apiKeyRefusal({ header: given.header }) : 'Invalid API key (read from the apiKey query parameter)',
        };
      projectId = owner.projectId;
    } else if (this.o.requireKey) {
      return { ok: false, status: 401, message: apiKeyRefusal(undefined, ', or in the apiKey query parameter') };
    }
    const owner = this.o.projectOf(sessionId);
    // Another project's session is not found, as everywhere in the API.
    if (!owner || (projectId !== undefined && owner !== projectId)) return { ok: false, status: 404, message: 'Session not found or not running' };
    return { ok: true, sessionId };
  }

  /** Takes the upgrade of /ws; false for any other path. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://node');
    if (url.pathname !== STEPS_PATH) return false;
    const header = (n: string) => {
      const v = req.headers[n];
      return Array.isArray(v) ? v[0] : v;
    };
    socket.on('error', () => socket.destroy());
    this.admit(url.searchParams.get('sessionId'), header, url.searchParams.get('apiKey')).then(
      (a) => {
        if (!a.ok) return refuse(socket, a.status, a.message);
        if (this.closed) return refuse(socket, 503, 'The server is shutting down');
        this.wss.handleUpgrade(req, socket, head, (ws) => this.listen(a.sessionId, ws));
      },
      () => refuse(socket, 503, 'The API key could not be checked'),
    );
    return true;
  }

  private listen(sessionId: string, ws: WebSocket): void {
    // The session may have ended while the key was looked up.
    if (!this.o.projectOf(sessionId)) return ws.close(1000, 'The session has ended');
    let set = this.listeners.get(sessionId);
    if (!set) this.listeners.set(sessionId, (set = new Set()));
    set.add(ws);
    ws.on('close', () => {
      set.delete(ws);
      if (set.size === 0 && this.listeners.get(sessionId) === set) this.listeners.delete(sessionId);
    });
    ws.on('error', () => ws.terminate());
    for (const line of this.current.get(sessionId) ?? []) ws.send(JSON.stringify(line));
  }

  begin(sessionId: string): void {
    this.current.set(sessionId, []);
  }

  publish(sessionId: string, steps: readonly StepRecord[]): void {
    const lines = this.current.get(sessionId);
    if (!lines) return;
    for (const step of steps.slice(lines.length)) {
      const line = stepLine(step);
      lines.push(line);
      for (const ws of this.listeners.get(sessionId) ?? []) if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(line));
    }
  }

  end(sessionId: string): void {
    this.current.delete(sessionId);
  }

  /** The session ended: its listeners are told so by a normal close. */
  sessionEnded(sessionId: string): void {
    this.current.delete(sessionId);
    for (const ws of this.listeners.get(sessionId) ?? []) ws.close(1000, 'The session has ended');
    this.listeners.delete(sessionId);
  }

  close(): void {
    this.closed = true;
    for (const id of [...this.listeners.keys()]) this.sessionEnded(id);
    this.wss.close();
  }
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' };

/** A plain HTTP answer, in the contract's error shape, on a socket that asked to upgrade. */
function refuse(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error: { code: status, message } });
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
