// Input on a headless session, which has no display: CDP Input.* on the page in front,
// the events Chromium's own input pipeline would make (isTrusted, default actions, editing
// shortcuts). The clipboard is the browser's, read and written through navigator.clipboard
// in a throwaway page of a secure origin (a page's own navigator.clipboard exists only on
// https and localhost), so it works whatever the session's page is.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningSession } from '../capability/index.js';
import { activePage, type PageSessions } from '../browser/pages.js';
import type { Button, InputBackend } from './backend.js';
import { path, split } from './backend.js';
import { characterKey, resolveKey, type KeyDef } from './keys.js';

const BUTTON_BIT: Record<Button, number> = { left: 1, right: 2, middle: 4 };
const CLIPBOARD_ORIGIN = 'https://clipboard.invalid';

export class NoPageError extends Error {
  constructor() {
    super('The session has no open page');
  }
}

export class CdpInput implements InputBackend {
  private buttons = 0;
  private target: string | undefined;

  constructor(
    private readonly s: RunningSession,
    private readonly pages: PageSessions,
  ) {}

  async move(x: number, y: number): Promise<void> {
    const t = await this.page();
    // With a button held (mouse/down before), the move drags.
    await this.mouse(t, 'mouseMoved', x, y, this.held(), this.buttons);
  }

  async click(x: number, y: number, button: Button, count: 1 | 2): Promise<void> {
    const t = await this.page();
    await this.mouse(t, 'mouseMoved', x, y, this.held(), this.buttons);
    for (let i = 1; i <= count; i++) {
      await this.press(t, x, y, button, i);
      await this.release(t, x, y, button, i);
    }
  }

  async down(x: number, y: number, button: Button): Promise<void> {
    const t = await this.page();
    await this.mouse(t, 'mouseMoved', x, y, this.held(), this.buttons);
    await this.press(t, x, y, button, 1);
  }

  async up(x: number, y: number, button: Button): Promise<void> {
    const t = await this.page();
    await this.mouse(t, 'mouseMoved', x, y, this.held(), this.buttons);
    await this.release(t, x, y, button, 1);
  }

  async drag(from: { x: number; y: number }, to: { x: number; y: number }, button: Button): Promise<void> {
    const t = await this.page();
    // HTML drag and drop has no OS drag session to run in headless Chromium: intercept the
    // drag it starts and deliver it as CDP drag events, as the browser would.
    let drag: unknown;
    const off = this.s.cdp.on((method, params) => {
      if (method === 'Input.dragIntercepted') drag = params.data;
    });
    await this.pages.send(t, 'Input.setInterceptDrags', { enabled: true });
    try {
      await this.mouse(t, 'mouseMoved', from.x, from.y, this.held(), this.buttons);
      await this.press(t, from.x, from.y, button, 1);
      let entered = false;
      for (const p of [...path(from, to, 12), to]) {
        if (drag) {
          if (!entered) await this.dragEvent(t, 'dragEnter', p.x, p.y, drag);
          entered = true;
          await this.dragEvent(t, 'dragOver', p.x, p.y, drag);
        } else {
          await this.mouse(t, 'mouseMoved', p.x, p.y, button, this.buttons);
          await sleep(10);
        }
      }
      if (drag) {
        // The release is the drop, and ends the drag (no mouseup reaches the page, as with a real drag).
        await this.dragEvent(t, 'drop', to.x, to.y, drag);
        this.buttons &= ~BUTTON_BIT[button];
      } else {
        await this.release(t, to.x, to.y, button, 1);
      }
    } finally {
      off();
      await this.pages.send(t, 'Input.setInterceptDrags', { enabled: false }).catch(() => {});
    }
  }

  async scroll(x: number, y: number, deltaX: number, deltaY: number, steps: number): Promise<void> {
    const t = await this.page();
    await this.mouse(t, 'mouseMoved', x, y, this.held(), this.buttons);
    const ys = split(deltaY, steps);
    const xs = split(deltaX, steps);
    const n = Math.max(ys.length, xs.length);
    for (let i = 0; i < n; i++) {
      await this.pages.send(t, 'Input.dispatchMouseEvent', { type: 'mouseWheel', x, y, deltaX: xs[i] ?? 0, deltaY: ys[i] ?? 0, modifiers: 0 });
      if (i + 1 < n) await sleep(16);
    }
    await this.delivered(t);
  }

  async type(text: string, delayMs: number): Promise<void> {
    const t = await this.page();
    const chars = [...text.replace(/\r\n?/g, '\n')];
    for (let i = 0; i < chars.length; i++) {
      const ch = chars[i]!;
      const def = characterKey(ch);
      if (def?.shift) await this.key(t, 'down', resolveKey('Shift')!, 8);
      if (def) {
        await this.key(t, 'down', def, def.shift ? 8 : 0);
        await this.key(t, 'up', def, def.shift ? 8 : 0);
      } else {
        // Not on a US keyboard: the character alone, as an input method would send it.
        const any: KeyDef = { key: ch, code: '', keyCode: 0, keysym: '', text: ch };
        await this.key(t, 'down', any, 0);
        await this.key(t, 'up', any, 0);
      }
      if (def?.shift) await this.key(t, 'up', resolveKey('Shift')!, 0);
      if (delayMs > 0 && i + 1 < chars.length) await sleep(delayMs);
    }
  }

  async shortcut(keys: KeyDef[], holdMs: number): Promise<void> {
    const t = await this.page();
    await this.chord(t, keys, holdMs);
  }

  async getClipboard(): Promise<string> {
    return this.withClipboard((clip) => clip.read());
  }

  async setClipboard(text: string): Promise<void> {
    await this.withClipboard((clip) => clip.write(text));
  }

  async copy(): Promise<string> {
    const t = await this.page();
    return this.withClipboard(async (clip) => {
      // Empty first: Control+C with nothing selected leaves the clipboard as it was.
      await clip.write('');
      await this.chord(t, [resolveKey('Control')!, resolveKey('c')!], 0);
      await sleep(50);
      return clip.read();
    });
  }

  async paste(text: string): Promise<void> {
    const t = await this.page();
    await this.withClipboard((clip) => clip.write(text));
    await this.chord(t, [resolveKey('Control')!, resolveKey('v')!], 0);
  }

  /** The page in front; the one input went to before while it still is. */
  private async page(): Promise<string> {
    const p = await activePage(this.s.cdp, this.pages, this.target);
    if (!p) throw new NoPageError();
    this.target = p.targetId;
    return p.targetId;
  }

  /**
   * Waits until the page has handled the input sent so far. A wheel's Input.dispatchMouseEvent
   * answers before the page sees the event (wheel listeners are passive, so Chromium queues it
   * for the page's next frame): two animation frames later it has been dispatched. Bounded, for
   * a page that renders no frames; best effort.
   */
  private async delivered(t: string): Promise<void> {
    await this.pages
      .send(
        t,
        'Runtime.evaluate',
        { expression: 'new Promise((r) => { requestAnimationFrame(() => requestAnimationFrame(() => r(0))); setTimeout(r, 250); })', awaitPromise: true },
        2_000,
      )
      .catch(() => {});
  }

  /** The button a move reports: the first one held, or none. */
  private held(): Button | 'none' {
    return this.buttons & 1 ? 'left' : this.buttons & 4 ? 'middle' : this.buttons & 2 ? 'right' : 'none';
  }

  private mouse(t: string, type: string, x: number, y: number, button: Button | 'none', buttons: number, clickCount = 0): Promise<unknown> {
    return this.pages.send(t, 'Input.dispatchMouseEvent', { type, x, y, button, buttons, clickCount, modifiers: 0 });
  }

  private async press(t: string, x: number, y: number, button: Button, clickCount: number): Promise<void> {
    this.buttons |= BUTTON_BIT[button];
    await this.mouse(t, 'mousePressed', x, y, button, this.buttons, clickCount);
  }

  private async release(t: string, x: number, y: number, button: Button, clickCount: number): Promise<void> {
    this.buttons &= ~BUTTON_BIT[button];
    await this.mouse(t, 'mouseReleased', x, y, button, this.buttons, clickCount);
  }

  private dragEvent(t: string, type: 'dragEnter' | 'dragOver' | 'drop', x: number, y: number, data: unknown): Promise<unknown> {
    return this.pages.send(t, 'Input.dispatchDragEvent', { type, x, y, data, modifiers: 0 });
  }

  /** Presses the keys in order, holds them, releases them in reverse order. */
  private async chord(t: string, keys: KeyDef[], holdMs: number): Promise<void> {
    let mods = 0;
    for (const k of keys) {
      mods |= k.modifier ?? 0;
      await this.key(t, 'down', k, mods);
    }
    if (holdMs > 0) await sleep(holdMs);
    for (const k of [...keys].reverse()) {
      mods &= ~(k.modifier ?? 0);
      await this.key(t, 'up', k, mods);
    }
  }

  private async key(t: string, kind: 'down' | 'up', k: KeyDef, modifiers: number): Promise<void> {
    // Shift makes a letter upper-case; Control, Alt and Meta make a key a command, not text.
    const shifted = modifiers & 8 && /^[a-z]$/.test(k.key) ? k.key.toUpperCase() : undefined;
    const key = shifted ?? k.key;
    const text = kind === 'down' && k.text !== undefined && k.key !== 'Tab' && (modifiers & 7) === 0 ? (shifted ?? k.text) : undefined;
    await this.pages.send(t, 'Input.dispatchKeyEvent', {
      type: kind === 'up' ? 'keyUp' : text !== undefined ? 'keyDown' : 'rawKeyDown',
      key,
      code: k.code,
      windowsVirtualKeyCode: k.keyCode,
      nativeVirtualKeyCode: k.keyCode,
      modifiers,
      location: k.location ?? 0,
      ...(text !== undefined ? { text, unmodifiedText: text } : {}),
    });
  }

  /** Runs fn with a page of a secure origin whose navigator.clipboard is the browser's clipboard. */
  private async withClipboard<T>(fn: (clip: { read(): Promise<string>; write(text: string): Promise<void> }) => Promise<T>): Promise<T> {
    const cdp = this.s.cdp;
    const { browserContextId } = await cdp.send<{ browserContextId: string }>('Target.createBrowserContext', { disposeOnDetach: true });
    let targetId: string | undefined;
    try {
      targetId = (await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank', browserContextId, background: true })).targetId;
      const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
      // The origin's page never touches the network: the request is answered here.
      const off = cdp.on((method, params, sid) => {
        if (method !== 'Fetch.requestPaused' || sid !== sessionId) return;
        cdp
          .send(
            'Fetch.fulfillRequest',
            {
              requestId: params.requestId,
              responseCode: 200,
              responseHeaders: [{ name: 'content-type', value: 'text/html' }],
              body: Buffer.from('<!doctype html><title>clipboard</title>').toString('base64'),
            },
            sessionId,
          )
          .catch(() => {});
      });
      try {
        await cdp.send('Fetch.enable', { patterns: [{ urlPattern: `${CLIPBOARD_ORIGIN}/*` }] }, sessionId);
        await cdp.send('Page.enable', {}, sessionId);
        const loaded = cdp.waitFor('Page.loadEventFired', sessionId, 10_000);
        loaded.catch(() => {});
        await cdp.send('Page.navigate', { url: `${CLIPBOARD_ORIGIN}/` }, sessionId);
        await loaded;
      } finally {
        off();
      }
      await cdp.send('Browser.grantPermissions', {
        permissions: ['clipboardReadWrite', 'clipboardSanitizedWrite'],
        origin: CLIPBOARD_ORIGIN,
        browserContextId,
      });
      // The clipboard API wants a focused document; a background page is focused this way.
      await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: true }, sessionId);
      const evaluate = async (expression: string): Promise<unknown> => {
        const r = await cdp.send<{ result: { value?: unknown }; exceptionDetails?: { exception?: { description?: string }; text?: string } }>(
          'Runtime.evaluate',
          { expression, awaitPromise: true, returnByValue: true, userGesture: true },
          sessionId,
        );
        if (r.exceptionDetails) throw new Error(`clipboard: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
        return r.result.value;
      };
      return await fn({
        read: async () => String((await evaluate('navigator.clipboard.readText()')) ?? ''),
        write: async (text) => {
          await evaluate(`navigator.clipboard.writeText(${JSON.stringify(text)})`);
        },
      });
    } finally {
      if (targetId) await cdp.send('Target.closeTarget', { targetId }).catch(() => {});
      await cdp.send('Target.disposeBrowserContext', { browserContextId }).catch(() => {});
    }
  }
}
