// Playwright on a session's browser, for the MCP server's page tools: one connection per
// browser session in this process (on the browser's own DevTools WebSocket, not through the
// CDP proxy, so the tools' traffic is counted by touch() instead), shared by the MCP
// sessions that drive it, dropped when the browser session ends. The socket carries its
// messages uncompressed (cdp-socket.ts): inflating each one cost every action several ms.
import type { Browser, BrowserContext, Dialog, Page } from 'playwright-core';
import { connectOverSocket } from '../browser/cdp-socket.js';

export class Driver {
  /** The tab the tools act on; the first open one when it closes. */
  private current: Page | undefined;
  /** A JavaScript dialog waiting for anchor_handle_dialog; the page is blocked until then. */
  dialog: Dialog | undefined;
  private readonly dialogWaiters = new Set<(d: Dialog) => void>();

  private constructor(
    readonly browser: Browser,
    readonly context: BrowserContext,
  ) {
    for (const p of context.pages()) this.watch(p);
    context.on('page', (p) => this.watch(p));
  }

  static async connect(wsEndpoint: string): Promise<Driver> {
    const browser = await connectOverSocket(wsEndpoint, { timeout: 15_000 });
    // The session's browser has its default context, whose pages are those CDP clients see.
    return new Driver(browser, browser.contexts()[0] ?? (await browser.newContext()));
  }

  get connected(): boolean {
    return this.browser.isConnected();
  }

  pages(): Page[] {
    return this.context.pages();
  }

  /** The current tab, opening one when the browser has none. */
  async page(): Promise<Page> {
    if (this.current && !this.current.isClosed()) return this.current;
    this.current = this.context.pages()[0] ?? (await this.context.newPage());
    return this.current;
  }

  select(page: Page): void {
    this.current = page;
  }

  /** Resolves with the next dialog any page opens (an action may be what opens it). */
  nextDialog(): { promise: Promise<Dialog>; cancel(): void } {
    let waiter!: (d: Dialog) => void;
    const promise = new Promise<Dialog>((resolve) => {
      waiter = resolve;
      this.dialogWaiters.add(waiter);
    });
    return { promise, cancel: () => this.dialogWaiters.delete(waiter) };
  }

  /** Disconnects Playwright; the browser and its pages stay as they are. */
  async close(): Promise<void> {
    await this.browser.close().catch(() => {});
  }

  private watch(p: Page): void {
    // With a listener Playwright leaves dialogs open: the model decides how to answer.
    p.on('dialog', (d) => {
      this.dialog = d;
      for (const w of this.dialogWaiters) w(d);
      this.dialogWaiters.clear();
    });
  }
}

/** The drivers of this process, by browser session id. */
export class Drivers {
  private readonly byId = new Map<string, Promise<Driver>>();

  get(sessionId: string, wsEndpoint: string): Promise<Driver> {
    const known = this.byId.get(sessionId);
    if (known) return known;
    const connecting = Driver.connect(wsEndpoint).then((d) => {
      d.browser.on('disconnected', () => {
        if (this.byId.get(sessionId) === connecting) this.byId.delete(sessionId);
      });
      return d;
    });
    connecting.catch(() => this.byId.delete(sessionId));
    this.byId.set(sessionId, connecting);
    return connecting;
  }

  /** The browser session is ending: disconnect before its browser goes. */
  async drop(sessionId: string): Promise<void> {
    const d = this.byId.get(sessionId);
    this.byId.delete(sessionId);
    await (await d?.catch(() => undefined))?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.byId.keys()].map((id) => this.drop(id)));
  }
}
