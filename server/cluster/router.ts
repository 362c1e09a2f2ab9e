// Any node serves any session: the routing of a cluster. One rule for HTTP (a Hono
// middleware that runs before every route) and one for WebSocket upgrades: a request that
// needs a browser's node (requests.ts) and lands elsewhere is forwarded to the owner
// (forward.ts) with the cluster proof (proof.ts); a forwarded request is answered where it
// arrives, never forwarded again. A node without NODE_INTERNAL_URL runs alone and forwards
// nothing, but still refuses requests that claim to be forwarded.
//
// A session's owner is looked up in the database once and then remembered (owner-cache.ts)
// for a heartbeat period; a session running here is answered here without a lookup. A
// remembered owner that cannot be reached, or that says it is not the node meant (421), is
// forgotten and looked up again, once.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { KeyOwner } from '../auth/api-keys.js';
import type { AroundUpgrade } from '../capability/index.js';
import { apiKeyOf } from '../auth/key-header.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import { AGAIN, forwardHttp, forwardUpgrade, MISDIRECTED_HEADER, REPLAYABLE_BYTES } from './forward.js';
import { heartbeatPeriodMs } from './node.js';
import { OwnerCache } from './owner-cache.js';
import { checkProof, proofHeaders, TARGET_HEADER } from './proof.js';
import { needsOf, type Needs } from './requests.js';
import * as routing from './routing-store.js';

export interface ClusterRouter {
  /** Installed before every route of the HTTP app. */
  readonly middleware: MiddlewareHandler;
  /** Takes every upgrade (true): forwards it to the owner, or hands it to `local`, the
   *  capabilities' own upgrades (none taking it: the socket is destroyed). */
  readonly upgrade: AroundUpgrade;
  start(): Promise<void>;
}

export interface ClusterRouterOptions {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  /** This node, as its SessionManager sees it. */
  node: { id: string; capacity(): number; running(): number; has(sessionId: string): boolean };
  authenticate(key: string): Promise<KeyOwner | undefined>;
}

/** The node a request goes to, and whether the database just said so or it was remembered. */
interface Owner {
  peer: routing.Peer;
  /** Remembered (it may be stale): a failed forward to it is tried again once, after a fresh look. */
  cached: boolean;
}

/** Sessions whose owner a node remembers: far more than run at once on a cluster of this design. */
const OWNER_CACHE_SIZE = 10_000;

/** Hono's marker for "the response was written to the socket already" (@hono/node-server). */
const alreadySent = (status: number) => new Response(null, { status, headers: { 'x-hono-already-sent': 'true' } });

export function clusterRouter(o: ClusterRouterOptions): ClusterRouter {
  const { db, config, log, node } = o;
  const secret = config.clusterSecret;
  // Several nodes: this one is reachable by the others, and they by it.
  const clustered = config.nodeInternalUrl !== undefined && secret !== undefined;
  const dead = config.nodeDeadAfterSeconds;
  // A node without browsers (MAX_CONCURRENT_BROWSERS=0) sends what needs one elsewhere.
  const runsBrowsers = config.maxConcurrentBrowsers > 0;

  const owners = new OwnerCache({ max: OWNER_CACHE_SIZE, ttlMs: heartbeatPeriodMs(dead) });

  /** The session a request acts on, if it names one. */
  const sessionOf = (needs: Needs, body?: Buffer): string | undefined =>
    needs.kind === 'session' ? needs.id : needs.kind === 'session-in-body' ? fieldOf(body, needs.field) : undefined;

  /** The owner of a session: none when it runs here; remembered, or from the database (`fresh`: from the database). */
  const ownerOfSession = async (id: string, fresh: boolean): Promise<Owner | undefined> => {
    if (node.has(id)) return undefined;
    const remembered = fresh ? undefined : owners.get(id);
    if (remembered) return { peer: remembered, cached: true };
    const peer = await routing.nodeOfSession(db, id, dead);
    if (!peer || peer.nodeId === node.id) return undefined;
    owners.set(id, peer);
    return { peer, cached: false };
  };

  /** The other node that must answer, or undefined: this one answers. `body`: the request's, when needs names a field of it. */
  const ownerOf = async (needs: Needs, body?: Buffer, fresh = false): Promise<Owner | undefined> => {
    let peer: routing.Peer | undefined;
    switch (needs.kind) {
      case 'session':
      case 'session-in-body': {
        const id = sessionOf(needs, body);
        return id === undefined ? undefined : ownerOfSession(id, fresh);
      }
      case 'recording':
        peer = await routing.nodeOfRecording(db, needs.id, dead);
        break;
      case 'mcp':
        peer = await routing.nodeOfMcpSession(db, needs.id, dead);
        break;
      case 'task-run':
        peer = await routing.nodeOfTaskRun(db, needs.id, dead);
        break;
      case 'placement':
        // Room here: here. Otherwise the node with the most room; none: here, which says 429
        // (a node without browsers says 503 before its handler would).
        peer = node.capacity() > 0 ? undefined : await routing.nodeWithRoom(db, node.id, dead);
        break;
      case 'browsers':
        peer = runsBrowsers ? undefined : await routing.nodeWithRoom(db, node.id, dead);
        break;
      case 'end-all':
        return undefined;
    }
    return !peer || peer.nodeId === node.id ? undefined : { peer, cached: false };
  };

  /** A remembered owner failed: none of its node's entries is trusted until looked up again. */
  const forget = (owner: Owner) => owners.dropNode(owner.peer.nodeId);

  /** What a forwarded request carries: the proof, and the node it is meant for. */
  const forwardHeaders = (peer: routing.Peer, method: string, target: string) => ({
    ...proofHeaders(secret!, node.id, method, target),
    [TARGET_HEADER]: peer.nodeId,
  });

  const misdirected = (meant: string) => `This node is ${node.id}, not ${meant}: the forwarding node looks again`;

  const refusal = (why: string) => `Refused a request that claims to come from another node: ${why}`;

  /** DELETE /v1/sessions/all: the caller's sessions on other nodes end there, first (their browsers are there). */
  const endRemote = async (c: Context): Promise<number> => {
    // The key may have come in either header; the owners are sent it in the primary one.
    const key = apiKeyOf((n) => c.req.header(n))?.key;
    const owner = key ? await o.authenticate(key) : undefined;
    if (!key || !owner) return 0;
    const remote = await routing.remoteRunningOfProject(db, owner.projectId, node.id, dead);
    const ended = await Promise.all(
      remote.map(async (r) => {
        const path = `/v1/sessions/${encodeURIComponent(r.sessionId)}`;
        const answer = await fetch(r.internalUrl + path, {
          method: 'DELETE',
          headers: { 'service-api-key': key, ...proofHeaders(secret!, node.id, 'DELETE', path) },
        }).catch((err: Error) => (log.warn({ sessionId: r.sessionId, node: r.nodeId, err: err.message }, 'could not end a session on its node'), undefined));
        await answer?.body?.cancel();
        return answer?.ok ? 1 : 0;
      }),
    );
    return ended.reduce<number>((a, b) => a + b, 0);
  };

  /** MCP sessions opened or closed here: the table that tells the other nodes where they are. */
  const noteMcp = async (c: Context) => {
    const asked = c.req.header('mcp-session-id');
    if (!asked && c.req.method === 'POST') {
      const opened = c.res.headers.get('mcp-session-id');
      if (opened) await routing.rememberMcpSession(db, opened, node.id);
    } else if (asked && c.req.method === 'DELETE' && c.res.ok) await routing.forgetMcpSession(db, asked);
  };

  const middleware: MiddlewareHandler<{ Bindings: HttpBindings }> = async (c, next) => {
    const incoming = c.env?.incoming;
    const target = incoming?.url ?? new URL(c.req.url).pathname + new URL(c.req.url).search;
    const proof = checkProof(secret, { method: c.req.method, path: target, header: (n) => c.req.header(n) });
    if (proof.forwarded && !proof.ok) {
      log.warn({ path: c.req.path, why: proof.why }, 'refused a forwarded request');
      return c.json({ error: { code: 401, message: refusal(proof.why) } }, 401);
    }
    const meant = proof.forwarded ? c.req.header(TARGET_HEADER) : undefined;
    if (meant !== undefined && meant !== node.id) {
      c.header(MISDIRECTED_HEADER, node.id);
      return c.json({ error: { code: 421, message: misdirected(meant) } }, 421);
    }
    const url = new URL(c.req.url);
    if (!clustered) return next();
    const needs = needsOf(c.req.method, url, (n) => c.req.header(n));
    if (!proof.forwarded && needs && incoming) {
      // A body that names the session is read from a copy: the handler reads the original if it is answered here.
      let body = needs.kind === 'session-in-body' ? await smallBody(c.req.raw.clone(), BODY_LOOKUP_LIMIT) : undefined;
      // A failed lookup (the database briefly away) is answered here, as a node alone would.
      const lookupFailed = (err: Error) => void log.error({ err: err.message, path: c.req.path }, 'could not look up the node that owns a request');
      let owner = await ownerOf(needs, body).catch(lookupFailed);
      if (owner?.cached && body === undefined && hasBody(incoming)) {
        // A remembered owner may be stale: its request's body is kept (read from a copy), so
        // that it can be sent again, or answered here. One too large to keep asks the database.
        // The length is checked before the request's body stream is touched: making it takes
        // chunks from `incoming`, which a forward that streams `incoming` would then miss.
        const declared = Number(incoming.headers['content-length'] ?? NaN);
        body = declared <= REPLAYABLE_BYTES ? await smallBody(c.req.raw.clone(), REPLAYABLE_BYTES) : undefined;
        if (body === undefined) owner = await ownerOf(needs, undefined, true).catch(lookupFailed);
      }
      const send = (o: Owner) =>
        forwardHttp(incoming, c.env.outgoing, o.peer.internalUrl, forwardHeaders(o.peer, c.req.method, target), body, { again: o.cached });
      let status = owner ? await send(owner) : undefined;
      if (status === AGAIN) {
        forget(owner!);
        owner = await ownerOf(needs, body, true).catch(lookupFailed);
        status = owner ? await send(owner) : undefined;
      }
      if (status !== undefined && status !== AGAIN) {
        // The session ended through here: its owner need not be remembered any longer.
        if (needs.kind === 'session' && c.req.method === 'DELETE' && status === 200 && url.pathname === `/v1/sessions/${encodeURIComponent(needs.id)}`)
          owners.drop(needs.id);
        return alreadySent(status);
      }
    }
    if (!runsBrowsers && (needs?.kind === 'placement' || needs?.kind === 'browsers')) {
      // No node with room answered: this one has no browser to fall back on.
      c.header('Retry-After', '5');
      return c.json(
        { error: { code: 503, message: 'No node of the cluster has a free browser: this node runs none (MAX_CONCURRENT_BROWSERS=0). Try again later.' } },
        503,
      );
    }
    const endedElsewhere = needs?.kind === 'end-all' && !proof.forwarded ? await endRemote(c) : 0;
    await next();
    if (url.pathname === '/mcp') await noteMcp(c).catch((err: Error) => log.error({ err: err.message }, 'could not record where an MCP session is'));
    if (endedElsewhere > 0 && c.res.ok) {
      // The count covers the sessions ended on their own nodes too.
      const body = (await c.res.json()) as { data: { ended: number } };
      body.data.ended += endedElsewhere;
      c.res = new Response(JSON.stringify(body), { status: c.res.status, headers: c.res.headers });
    }
  };

  const refuseMisdirected = (socket: Duplex, meant: string) => {
    const text = JSON.stringify({ error: { code: 421, message: misdirected(meant) } });
    socket.end(
      `HTTP/1.1 421 Misdirected Request\r\nConnection: close\r\n${MISDIRECTED_HEADER}: ${node.id}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    );
  };

  const refuseUpgrade = (socket: Duplex, why: string) => {
    const text = JSON.stringify({ error: { code: 401, message: refusal(why) } });
    socket.end(`HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
  };

  return {
    middleware: middleware as MiddlewareHandler,
    upgrade(req, socket, head, local) {
      const handLocal = () => {
        if (!local(req, socket, head)) socket.destroy();
      };
      route(req, socket, head, handLocal);
      return true;
    },
    async start() {
      if (!clustered) return;
      // The node's registration, heartbeat, drain and death detection are node.ts's (the
      // cluster capability, started before this).
      await routing.forgetMcpSessionsOf(db, node.id);
    },
  };

  /** An upgrade forwarded to its owner, or handed to `handLocal`. */
  function route(req: IncomingMessage, socket: Duplex, head: Buffer, handLocal: () => void): void {
    const header = (n: string) => {
      const v = req.headers[n];
      return Array.isArray(v) ? v[0] : v;
    };
    const proof = checkProof(secret, { method: req.method ?? 'GET', path: req.url ?? '/', header });
    if (proof.forwarded && !proof.ok) return refuseUpgrade(socket, proof.why);
    const meant = proof.forwarded ? header(TARGET_HEADER) : undefined;
    if (meant !== undefined && meant !== node.id) return refuseMisdirected(socket, meant);
    const needs = clustered && !proof.forwarded ? needsOf(req.method ?? 'GET', new URL(req.url ?? '/', 'http://node'), header) : undefined;
    if (!needs) return handLocal();
    socket.on('error', () => socket.destroy());
    const lookupFailed = (err: Error) => {
      log.error({ err: err.message }, 'could not look up the owner of an upgrade');
      handLocal();
    };
    const forward = (owner: Owner | undefined) => {
      if (!owner) return handLocal();
      const again = () => {
        forget(owner);
        ownerOf(needs, undefined, true).then(forward, lookupFailed);
      };
      forwardUpgrade(req, socket, head, owner.peer.internalUrl, forwardHeaders(owner.peer, req.method ?? 'GET', req.url ?? '/'), owner.cached ? { again } : {});
    };
    ownerOf(needs).then(forward, lookupFailed);
  }
}

/** Bodies that name a session are small JSON; a larger one is not read (it is answered here, and refused there if wrong). */
const BODY_LOOKUP_LIMIT = 64 * 1024;

async function smallBody(req: Request, limit: number): Promise<Buffer | undefined> {
  if (!req.body || Number(req.headers.get('content-length') ?? 0) > limit) return undefined;
  const buf = Buffer.from(await req.arrayBuffer());
  return buf.length > limit ? undefined : buf;
}

/** Whether a request has a body (to keep before forwarding to a remembered owner). */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

function fieldOf(body: Buffer | undefined, field: string): string | undefined {
  if (!body) return undefined;
  try {
    const value = (JSON.parse(body.toString('utf8')) as Record<string, unknown> | null)?.[field];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
