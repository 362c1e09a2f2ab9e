// The server's own CDP connection to a browser: a few commands (fit the window, open the
// first page, list pages, navigate, close) and the events they wait for, over one
// WebSocket, without the weight of a full client attaching to every target.
import { WebSocket } from 'ws';

interface Pending {
  resolve(value: any): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class CdpClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(method: string, params: any, sessionId?: string) => void>();
  readonly closed: Promise<void>;

  private constructor(private readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('message', (raw) => {
      let msg: any;
      try {
        msg = JSON.parse(raw.toString());
      } catch {
        return;
      }
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        clearTimeout(p.timer);
        if (msg.error) p.reject(new Error(`${msg.error.message} (${msg.error.code})`));
        else p.resolve(msg.result);
      } else if (msg.method) {
        for (const l of this.listeners) l(msg.method, msg.params, msg.sessionId);
      }
    });
    ws.once('close', () => this.failAll(new Error('CDP connection closed')));
    ws.on('error', () => {}); // 'close' follows and fails what is pending
  }

  static connect(wsEndpoint: string, timeoutMs = 10_000): Promise<CdpClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(wsEndpoint, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error('CDP connect timed out'));
      }, timeoutMs);
      ws.once('open', () => {
        clearTimeout(timer);
        resolve(new CdpClient(ws));
      });
      ws.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  send<T = any>(method: string, params: object = {}, sessionId?: string, timeoutMs = 10_000): Promise<T> {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('CDP connection closed'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`CDP ${method} timed out`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  /** Resolves with the first event of that name (optionally on one target session). */
  waitFor<T = any>(method: string, sessionId: string | undefined, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`timed out waiting for ${method}`));
      }, timeoutMs);
      const listener = (m: string, params: any, sid?: string) => {
        if (m !== method || (sessionId && sid !== sessionId)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(params);
      };
      this.listeners.add(listener);
    });
  }

  on(listener: (method: string, params: any, sessionId?: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sends without waiting for the answer (Browser.close answers by closing the socket). */
  fire(method: string, params: object = {}): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ id: this.nextId++, method, params }));
  }

  close(): void {
    this.ws.terminate();
    this.failAll(new Error('CDP connection closed'));
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}

export interface PageTarget {
  targetId: string;
  url: string;
  title: string;
  attached: boolean;
}

export async function listPages(cdp: CdpClient): Promise<PageTarget[]> {
  const { targetInfos } = await cdp.send<{ targetInfos: (PageTarget & { type: string })[] }>('Target.getTargets');
  return targetInfos.filter((t) => t.type === 'page').map(({ targetId, url, title, attached }) => ({ targetId, url, title, attached }));
}

/** Navigates a page target and waits for its load event, up to timeoutMs. */
export async function navigate(cdp: CdpClient, targetId: string, url: string, timeoutMs = 30_000): Promise<void> {
  const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
  try {
    await cdp.send('Page.enable', {}, sessionId);
    const loaded = cdp.waitFor('Page.loadEventFired', sessionId, timeoutMs);
    loaded.catch(() => {}); // awaited below unless navigation fails first
    const result = await cdp.send<{ errorText?: string }>('Page.navigate', { url }, sessionId, timeoutMs);
    if (result.errorText) throw new Error(`navigation failed: ${result.errorText}`);
    await loaded;
  } finally {
    await cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {});
  }
}
