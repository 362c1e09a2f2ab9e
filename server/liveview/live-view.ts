// The live view: GET /live/{session_id}?token=T serves the page (page.ts); its WebSocket at
// /live/{session_id}/ws streams the session's screen and takes the viewer's input.
//
// Access: the session's live-view token (compared in constant time). Opening the page
// mints a viewer ticket, written into the page, that the page's WebSocket (and its
// reconnects) present instead of the token. A one_time_url token opens the page, or a
// WebSocket, once; the ticket keeps working for that viewer. read_only is enforced here:
// input from a viewer of a read-only session is dropped before it reaches the browser.
// A takeover link (`?takeover=T`, minted when code in the session asks a person for help:
// interventions/) opens the page with input even in a read-only session; the web console
// (console/) uses those for its take-over, and watch links (`?watch=T`) to show the screen
// without input and without using up a one_time_url link.
// Everything a session has here (viewers, tickets, takeover links) goes when it ends.
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { sameToken } from '../auth/tokens.js';
import type { RunningSession, SessionHooks } from '../capability/index.js';
import type { SessionLookup } from '../sessions/index.js';
import type { Frame, ScreencastHub, Screencasts, Tab } from './screencast.js';
import { livePage, messagePage } from './page.js';

/** What a viewer ticket allows: input to the browser, or watching only. */
export interface TicketGrant {
  input: boolean;
}

export interface LiveViewOptions {
  sessions: Pick<SessionLookup, 'get' | 'touch'>;
  screencasts: Screencasts;
  log: Logger;
  maxViewers: number;
}

/** Close codes the page understands (page.ts). */
export const CLOSE = { invalid: 4401, notFound: 4404, ended: 4410, tooMany: 4429 } as const;

const WS_PATH = /^\/live\/([0-9a-fA-F-]{36})\/ws\/?$/;
/** A viewer this far behind gets no new frame until it has caught up (then the newest). */
const MAX_BUFFERED = 4 * 1024 * 1024;
const CATCH_UP_MS = 100;
/** Viewing is activity: the idle timeout counts from the last of these. */
const ACTIVITY_MS = 5_000;
const MAX_INPUT_BYTES = 1_100_000;

interface Viewer {
  ws: WebSocket;
  session: RunningSession;
  hub: ScreencastHub;
  behind: boolean;
  lastSeq: number;
  timers: NodeJS.Timeout[];
  unsubscribe: () => void;
  offTabs: () => void;
}

interface SessionState {
  /** sha256 of each ticket minted for the session's viewers, and what it allows. */
  tickets: Map<string, TicketGrant>;
  /** sha256 of each takeover link's token. */
  takeovers: Set<string>;
  /** sha256 of each watch link's token (view only). */
  watches: Set<string>;
  oneTimeUsed: boolean;
  viewers: Set<Viewer>;
}

export class LiveView implements SessionHooks {
  private readonly state = new Map<string, SessionState>();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_INPUT_BYTES, perMessageDeflate: false });
  /** The packed wire form of a frame, made once for all its viewers. */
  private readonly packed = new WeakMap<Frame, Buffer>();

  constructor(private readonly o: LiveViewOptions) {}

  /** GET /live/:id, outside /v1 (the contract describes the API, not this page). */
  routes(app: Hono): void {
    app.get('/live/:id', (c) => {
      const nonce = randomBytes(16).toString('base64');
      const headers = {
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
        'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src blob: data:; connect-src 'self'; base-uri 'none'; form-action 'none'`,
      };
      const id = c.req.param('id');
      const takeover = c.req.query('takeover');
      const watch = c.req.query('watch');
      const admitted =
        takeover !== undefined
          ? this.admitTakeover(id, takeover)
          : watch !== undefined
            ? this.admitWatch(id, watch)
            : this.admit(id, c.req.query('token') ?? '');
      if (!admitted.ok) {
        const title = admitted.code === CLOSE.notFound ? 'Session not found' : 'Live view unavailable';
        return c.html(messagePage(title, admitted.message, nonce), admitted.code === CLOSE.notFound ? 404 : admitted.code === CLOSE.ended ? 410 : 401, headers);
      }
      const s = admitted.session;
      const ticket = this.mint(s.id, { input: admitted.input });
      const ws = `/live/${s.id}/ws?ticket=${ticket}`;
      const interventions = `/live/${s.id}/interventions?ticket=${ticket}`;
      return c.html(livePage({ sessionId: s.id, ws, interventions, readOnly: !admitted.input }, nonce), 200, headers);
    });
  }

  /** Takes WebSocket upgrades under /live/; false for any other path. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!url.pathname.startsWith('/live/')) return false;
    socket.on('error', () => socket.destroy());
    const m = WS_PATH.exec(url.pathname);
    const id = m?.[1]?.toLowerCase();
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', () => ws.terminate());
      // Refusals are close codes, not HTTP statuses: a browser's WebSocket cannot read
      // those, and the page must tell "ended" from "try again".
      if (!id) return ws.close(CLOSE.notFound, 'not a live-view path');
      const ticket = url.searchParams.get('ticket');
      const token = url.searchParams.get('token');
      let s: RunningSession | undefined;
      let input: boolean;
      if (ticket !== null) {
        s = this.o.sessions.get(id);
        if (!s) return ws.close(CLOSE.ended, 'session ended');
        const grant = this.ticket(id, ticket);
        if (!grant) return ws.close(CLOSE.invalid, 'invalid ticket');
        input = grant.input;
      } else {
        const admitted = this.admit(id, token ?? '');
        if (!admitted.ok) return ws.close(admitted.code, admitted.message.slice(0, 120));
        s = admitted.session;
        input = admitted.input;
      }
      const st = this.stateOf(id);
      if (st.viewers.size >= this.o.maxViewers) return ws.close(CLOSE.tooMany, 'too many viewers');
      this.attach(s, st, ws, !input);
    });
    return true;
  }

  /** Viewers of a session now (all sessions when no id). */
  viewerCount(sessionId?: string): number {
    if (sessionId !== undefined) return this.state.get(sessionId)?.viewers.size ?? 0;
    let n = 0;
    for (const st of this.state.values()) n += st.viewers.size;
    return n;
  }

  async ending(s: RunningSession): Promise<void> {
    const st = this.state.get(s.id);
    this.state.delete(s.id);
    if (!st) return;
    for (const v of st.viewers) {
      if (v.ws.readyState === v.ws.OPEN) v.ws.send(JSON.stringify({ type: 'ended' }));
      v.ws.close(CLOSE.ended, 'session ended');
      this.detach(v, st);
    }
  }

  /**
   * A takeover link's token for a running session of this node: it opens the live view with
   * input, read-only session or not, until the session ends. Undefined when the session is
   * not running here.
   */
  mintTakeover(sessionId: string): string | undefined {
    if (!this.o.sessions.get(sessionId)) return undefined;
    const token = randomBytes(24).toString('base64url');
    this.stateOf(sessionId).takeovers.add(hash(token));
    return token;
  }

  /**
   * A watch link's token for a running session of this node, for a caller that authorized
   * the viewer itself (the web console, signed in to the session's project): it opens the
   * live view without input until the session ends, and leaves a one_time_url link unused.
   * Undefined when the session is not running here.
   */
  mintWatch(sessionId: string): string | undefined {
    if (!this.o.sessions.get(sessionId)) return undefined;
    const token = randomBytes(24).toString('base64url');
    this.stateOf(sessionId).watches.add(hash(token));
    return token;
  }

  /** What a viewer ticket of the session allows; undefined when it is not one. */
  ticket(sessionId: string, ticket: string): TicketGrant | undefined {
    return this.state.get(sessionId)?.tickets.get(hash(ticket));
  }

  private stateOf(id: string): SessionState {
    let st = this.state.get(id);
    if (!st) {
      st = { tickets: new Map(), takeovers: new Set(), watches: new Set(), oneTimeUsed: false, viewers: new Set() };
      this.state.set(id, st);
    }
    return st;
  }

  /** Checks a live-view token; uses up a one-time one. */
  private admit(id: string, token: string): Admitted {
    const s = /^[0-9a-f-]{36}$/i.test(id) ? this.o.sessions.get(id.toLowerCase()) : undefined;
    if (!s) return { ok: false, code: CLOSE.notFound, message: 'This session does not exist or has ended.' };
    if (!sameToken(token, s.liveViewToken)) return { ok: false, code: CLOSE.invalid, message: 'This live-view link is not valid.' };
    if (s.options.liveView.oneTimeUrl) {
      const st = this.stateOf(s.id);
      if (st.oneTimeUsed) return { ok: false, code: CLOSE.invalid, message: 'This one-time live-view link was already used.' };
      st.oneTimeUsed = true;
    }
    return { ok: true, session: s, input: !s.options.liveView.readOnly };
  }

  /** Checks a takeover link's token (a hash lookup: the set holds only hashes of random tokens). */
  private admitTakeover(id: string, token: string): Admitted {
    const s = /^[0-9a-f-]{36}$/i.test(id) ? this.o.sessions.get(id.toLowerCase()) : undefined;
    if (!s) return { ok: false, code: CLOSE.notFound, message: 'This session does not exist or has ended.' };
    if (!this.state.get(s.id)?.takeovers.has(hash(token))) return { ok: false, code: CLOSE.invalid, message: 'This takeover link is not valid.' };
    return { ok: true, session: s, input: true };
  }

  /** Checks a watch link's token. */
  private admitWatch(id: string, token: string): Admitted {
    const s = /^[0-9a-f-]{36}$/i.test(id) ? this.o.sessions.get(id.toLowerCase()) : undefined;
    if (!s) return { ok: false, code: CLOSE.notFound, message: 'This session does not exist or has ended.' };
    if (!this.state.get(s.id)?.watches.has(hash(token))) return { ok: false, code: CLOSE.invalid, message: 'This live-view link is not valid.' };
    return { ok: true, session: s, input: false };
  }

  private mint(id: string, grant: TicketGrant): string {
    const ticket = randomBytes(24).toString('base64url');
    this.stateOf(id).tickets.set(hash(ticket), grant);
    return ticket;
  }

  private attach(s: RunningSession, st: SessionState, ws: WebSocket, readOnly: boolean): void {
    const hub = this.o.screencasts.hub(s);
    const v: Viewer = { ws, session: s, hub, behind: false, lastSeq: 0, timers: [], unsubscribe: () => {}, offTabs: () => {} };
    st.viewers.add(v);
    this.o.sessions.touch(s.id, 'liveview');
    this.o.log.info({ sessionId: s.id, viewers: st.viewers.size }, 'live-view viewer connected');

    ws.send(JSON.stringify({ type: 'hello', sessionId: s.id, readOnly }));
    v.offTabs = hub.onTabs((tabs) => this.sendTabs(v, tabs));
    v.unsubscribe = hub.subscribe((frame) => this.sendFrame(v, frame), { replay: true });
    hub.tabs().then(
      (tabs) => this.sendTabs(v, tabs),
      () => {},
    );

    v.timers.push(
      setInterval(() => this.o.sessions.touch(s.id, 'liveview'), ACTIVITY_MS),
      // A viewer that fell behind gets the newest frame once its buffer drains.
      setInterval(() => {
        if (v.behind && ws.bufferedAmount < MAX_BUFFERED / 4 && hub.latest && hub.latest.seq !== v.lastSeq) {
          v.behind = false;
          this.sendFrame(v, hub.latest);
        }
      }, CATCH_UP_MS),
    );
    for (const t of v.timers) t.unref();

    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let msg: unknown;
      try {
        msg = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (!msg || typeof msg !== 'object') return;
      const m = msg as Record<string, unknown>;
      if (m.t === 'ping') {
        if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'pong', id: typeof m.id === 'number' ? m.id : null }));
        return;
      }
      // read_only: the input stops here, whatever the page sent.
      if (readOnly) return;
      this.o.sessions.touch(s.id, 'liveview');
      this.input(v, m).catch((err: Error) => this.o.log.debug({ sessionId: s.id, err: err.message }, 'live-view input failed'));
    });
    ws.on('close', () => this.detach(v, this.state.get(s.id)));
  }

  private detach(v: Viewer, st: SessionState | undefined): void {
    for (const t of v.timers) clearInterval(t);
    v.timers = [];
    v.unsubscribe();
    v.offTabs();
    if (st?.viewers.delete(v)) this.o.log.info({ sessionId: v.session.id, viewers: st.viewers.size }, 'live-view viewer left');
  }

  private sendTabs(v: Viewer, tabs: Tab[]): void {
    if (v.ws.readyState === v.ws.OPEN) v.ws.send(JSON.stringify({ type: 'tabs', tabs }));
  }

  private sendFrame(v: Viewer, frame: Frame): void {
    if (v.ws.readyState !== v.ws.OPEN) return;
    if (v.ws.bufferedAmount > MAX_BUFFERED) {
      v.behind = true;
      return;
    }
    let wire = this.packed.get(frame);
    if (!wire) {
      const header = Buffer.from(
        JSON.stringify({
          seq: frame.seq,
          w: frame.meta.width,
          h: frame.meta.height,
          ts: Math.round(frame.meta.timestamp),
          sent: Date.now(),
          target: frame.meta.targetId,
        }),
      );
      const len = Buffer.alloc(4);
      len.writeUInt32BE(header.length);
      wire = Buffer.concat([len, header, frame.data]);
      this.packed.set(frame, wire);
    }
    v.lastSeq = frame.seq;
    v.ws.send(wire, { binary: true });
  }

  /** One input message of a viewer that may drive the session, into CDP Input.* on the page on screen. */
  private async input(v: Viewer, m: Record<string, unknown>): Promise<void> {
    const hub = v.hub;
    const mods = int(m.m, 0, 15) ?? 0;
    switch (m.t) {
      case 'mouse': {
        const x = num(m.x);
        const y = num(m.y);
        const kind = { down: 'mousePressed', up: 'mouseReleased', move: 'mouseMoved' }[String(m.e)];
        if (x === undefined || y === undefined || !kind) return;
        const button = ['left', 'middle', 'right', 'none'].includes(String(m.b)) ? String(m.b) : 'none';
        await hub.dispatch('Input.dispatchMouseEvent', {
          type: kind,
          x,
          y,
          button,
          buttons: int(m.bs, 0, 31) ?? 0,
          clickCount: kind === 'mouseMoved' ? 0 : (int(m.c, 1, 3) ?? 1),
          modifiers: mods,
        });
        return;
      }
      case 'wheel': {
        const x = num(m.x);
        const y = num(m.y);
        if (x === undefined || y === undefined) return;
        await hub.dispatch('Input.dispatchMouseEvent', {
          type: 'mouseWheel',
          x,
          y,
          deltaX: clamp(num(m.dx) ?? 0, -10_000, 10_000),
          deltaY: clamp(num(m.dy) ?? 0, -10_000, 10_000),
          modifiers: mods,
        });
        return;
      }
      case 'key': {
        const key = str(m.key, 32);
        if (!key || (m.e !== 'down' && m.e !== 'up')) return;
        const code = str(m.code, 32) ?? '';
        const keyCode = int(m.kc, 0, 255) ?? 0;
        // Text for printable keys without Ctrl, Alt or Meta; Enter types a newline.
        const text = m.e === 'down' && (mods & 7) === 0 ? (key === 'Enter' ? '\r' : [...key].length === 1 ? key : undefined) : undefined;
        await hub.dispatch('Input.dispatchKeyEvent', {
          type: m.e === 'up' ? 'keyUp' : text ? 'keyDown' : 'rawKeyDown',
          key,
          code,
          windowsVirtualKeyCode: keyCode,
          nativeVirtualKeyCode: keyCode,
          modifiers: mods,
          location: int(m.loc, 0, 3) ?? 0,
          autoRepeat: m.rep === true,
          ...(text ? { text, unmodifiedText: text } : {}),
        });
        return;
      }
      case 'paste': {
        const text = str(m.text, MAX_INPUT_BYTES);
        if (text) await hub.dispatch('Input.insertText', { text });
        return;
      }
      case 'tab': {
        const id = str(m.id, 64);
        if (id) await hub.activate(id);
        return;
      }
    }
  }
}

type Admitted = { ok: true; session: RunningSession; input: boolean } | { ok: false; code: number; message: string };

function hash(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? clamp(v, -100_000, 100_000) : undefined;
}

function int(v: unknown, min: number, max: number): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : undefined;
}

function str(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= max ? v : undefined;
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
