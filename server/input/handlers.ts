// The Input operations of the contract (OS-level control of a running session): mouse,
// keyboard, clipboard, goto and screenshot. Headful sessions get XTest input on their
// display (x11.ts), headless ones CDP input (cdp.ts). One operation at a time per session,
// each counted as activity (idle timeout) and as a step of session.completed.
import type { Logger } from 'pino';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { RunningSession } from '../capability/index.js';
import type { SessionLookup } from '../sessions/index.js';
import { navigate } from '../browser/cdp-client.js';
import { assertPublicUrl, UrlPolicyError } from '../net/address-policy.js';
import { PageSessions, activePage } from '../browser/pages.js';
import type { Button, InputBackend } from './backend.js';
import { CdpInput, NoPageError } from './cdp.js';
import { X11Input, type PointerSeen } from './x11.js';
import { elementPoint } from './selector.js';
import type { components } from '../../generated/types.js';
import { resolveKey, type KeyDef } from './keys.js';

export type InputHandlers = Pick<
  AppHandlers,
  | 'mouseClick'
  | 'mouseDoubleClick'
  | 'mouseDown'
  | 'mouseUp'
  | 'mouseMove'
  | 'dragAndDrop'
  | 'scroll'
  | 'keyboardType'
  | 'keyboardShortcut'
  | 'getClipboard'
  | 'setClipboard'
  | 'copySelection'
  | 'pasteText'
  | 'gotoUrl'
  | 'takeSessionScreenshot'
>;

export interface InputDeps {
  sessions: SessionLookup;
  allowPrivateNetworks: boolean;
  log: Logger;
}

interface Driver {
  backend: InputBackend;
  /** Input through the browser's own pipeline (CDP): the backend itself when headless. */
  pipeline: CdpInput;
  pages: PageSessions;
  /** The page in front. */
  front(): Promise<string>;
  /** The operation running now; the next waits for it. */
  queue: Promise<unknown>;
}

type MouseClickBody = components['schemas']['MouseClickRequest'];

/**
 * Most time one keyboard/type may take: its pauses and about a millisecond a key (0.6 ms
 * measured on a slow day, X11). The session's input is held while it types: a call of
 * minutes (20,000 keys, or seconds between keys) would keep every call after it waiting past
 * any client's time-out, the caller's own included.
 */
const MAX_TYPING_MS = 10_000;
const MS_PER_KEY = 1;

/** A refusal that answers a documented 4xx. */
class Refused extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

const NAVIGATION_TIMEOUT_MS = 30_000;
/**
 * Blink drops the input a page gets before its first non-empty paint. A page that has
 * painted answers at once, and so does one older than UNPAINTED_AGE_MS (a page with
 * nothing to paint would otherwise cost two frames on every input); a younger one that
 * has not (a fresh document, a busy or slow machine) is given its first paint, or two
 * frames, up to PAINT_WAIT_MS. Evaluated in the page, so it also waits out a main thread
 * still busy with the page's own scripts.
 */
const PAINT_WAIT_MS = 1_000;
const UNPAINTED_AGE_MS = 10_000;
const PAINTED = `new Promise((resolve) => {
  if (performance.getEntriesByType('paint').length > 0 || performance.now() > ${UNPAINTED_AGE_MS}) return resolve(0);
  const observer = new PerformanceObserver(() => done());
  const done = () => (observer.disconnect(), resolve(0));
  observer.observe({ type: 'paint' });
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0)));
  setTimeout(done, ${PAINT_WAIT_MS});
})`;
/** The page's last pointer event, noted in capture on its window, for a drag's release (x11.ts). */
const WATCH_POINTER = `(() => {
  const key = Symbol.for('cloud-browser.pointer');
  const old = window[key];
  const seen = old ?? { x: -1, y: -1, type: '', dragging: false };
  Object.assign(seen, { x: -1, y: -1, type: '', dragging: false });
  if (old) return;
  const note = (e) => { seen.x = e.clientX; seen.y = e.clientY; seen.type = e.type; };
  for (const type of ['mousemove', 'drag', 'dragover']) window.addEventListener(type, note, true);
  window.addEventListener('dragstart', () => { seen.dragging = true; }, true);
  Object.defineProperty(window, key, { value: seen });
})()`;
const POINTER_SEEN = `window[Symbol.for('cloud-browser.pointer')] ?? null`;
// `status` at the top is what the vendor's SDKs read; `data.status`, what this server's other status answers carry.
const ok = { status: 200 as const, body: { status: 'ok', data: { status: 'ok' } } };

export function inputHandlers(d: InputDeps): InputHandlers {
  const drivers = new WeakMap<RunningSession, Driver>();

  const driverOf = (s: RunningSession): Driver => {
    let drv = drivers.get(s);
    if (!drv) {
      const pages = new PageSessions(s.cdp);
      const front = async () => {
        const page = await activePage(s.cdp, pages);
        if (!page) throw new NoPageError();
        return page.targetId;
      };
      const pipeline = new CdpInput(s, pages);
      const { content } = s.browser.geometry;
      const backend = s.browser.display
        ? new X11Input(s.browser.display, content, {
            activate: async () => void (await pages.send(await front(), 'Page.bringToFront')),
            painted: async () => {
              // Best effort: a page that never paints still gets its input after the wait.
              await pages.send(await front(), 'Runtime.evaluate', { expression: PAINTED, awaitPromise: true }, PAINT_WAIT_MS + 2_000).catch(() => {});
            },
            insertText: async (text) => void (await pages.send(await front(), 'Input.insertText', { text })),
            watchPointer: async () => void (await pages.send(await front(), 'Runtime.evaluate', { expression: WATCH_POINTER })),
            pointer: async () => {
              const r = await pages.send<{ result: { value?: PointerSeen | null } }>(await front(), 'Runtime.evaluate', {
                expression: POINTER_SEEN,
                returnByValue: true,
              });
              return r.result.value ?? undefined;
            },
          })
        : pipeline;
      drv = { pages, backend, pipeline, front, queue: Promise.resolve() };
      drivers.set(s, drv);
    }
    return drv;
  };

  /** The running session of this project, or why not (404 unknown, 409 not running). */
  const find = async (projectId: string, id: string): Promise<RunningSession> => {
    const s = await d.sessions.lookup(projectId, id);
    if ('status' in s) throw new Refused(s.status, s.message);
    return s;
  };

  /**
   * Runs one operation on a session, after the ones before it; maps refusals to answers.
   * `check` refuses bad input first: a refused request is not a step.
   */
  const perform = async <T>(
    projectId: string,
    id: string,
    check: ((s: RunningSession) => unknown) | undefined,
    fn: (s: RunningSession, drv: Driver) => Promise<T>,
  ): Promise<T | ReturnType<typeof fail<400 | 404 | 409>>> => {
    try {
      const s = await find(projectId, id);
      await check?.(s);
      d.sessions.touch(s.id, 'input');
      const drv = driverOf(s);
      const run = drv.queue.then(() => fn(s, drv));
      drv.queue = run.catch(() => {});
      return await run;
    } catch (err) {
      if (err instanceof Refused) return fail(err.status, err.message);
      if (err instanceof NoPageError) return fail(409, err.message);
      // The session ended under the operation.
      if (!d.sessions.get(id)) return fail(409, 'Session is not running');
      throw err;
    }
  };

  /** Refuses a point outside the screenshot (the page's viewport), the coordinate space of input. */
  const onPage = (s: RunningSession, ...points: { x: number; y: number; name?: string }[]) => {
    const { width, height } = s.browser.geometry.content;
    for (const p of points) {
      const name = p.name ?? '';
      if (p.x >= width) throw new Refused(400, `${name}x=${p.x} is outside the screenshot (${width}x${height}: x must be below ${width})`);
      if (p.y >= height) throw new Refused(400, `${name}y=${p.y} is outside the screenshot (${width}x${height}: y must be below ${height})`);
    }
  };

  /** Where a click goes: its coordinates, or the element its selector names (vendor form). */
  type ClickAt = { x: number; y: number } | { selector: string; index: number; timeoutMs: number };
  const clickAt = (s: RunningSession, b: MouseClickBody): ClickAt => {
    const hasPoint = b.x !== undefined || b.y !== undefined;
    if (b.selector === undefined) {
      if (b.x === undefined || b.y === undefined) throw new Refused(400, 'Give x and y, or a selector');
      for (const k of ['index', 'selectorTimeoutMs', 'timeout'] as const) {
        if (b[k] !== undefined) throw new Refused(400, `${k} goes with a selector, and there is none`);
      }
      onPage(s, { x: b.x, y: b.y });
      return { x: b.x, y: b.y };
    }
    if (hasPoint) throw new Refused(400, 'Give either x and y or a selector, not both');
    if (b.selectorTimeoutMs !== undefined && b.timeout !== undefined) throw new Refused(400, 'Give selectorTimeoutMs or timeout, not both (they are the same)');
    return { selector: b.selector, index: b.index ?? 0, timeoutMs: b.selectorTimeoutMs ?? b.timeout ?? 5_000 };
  };

  const keysOf = (names: string[]): KeyDef[] =>
    names.map((n) => {
      const k = resolveKey(n);
      if (!k) throw new Refused(400, `Unknown key: ${JSON.stringify(n)} (use KeyboardEvent.key names such as Control, Shift, Enter, ArrowDown, a)`);
      return k;
    });

  const button = (b: Button | undefined): Button => b ?? 'left';
  const publicUrl = async (url: string) => {
    try {
      await assertPublicUrl(url, { allowPrivate: d.allowPrivateNetworks });
    } catch (err) {
      if (err instanceof UrlPolicyError) throw new Refused(400, err.message);
      throw err;
    }
  };
  const notEmpty = (text: string) => {
    if (text.length === 0) throw new Refused(400, 'text must not be empty');
  };
  // A request holds the session's input (the next waits for it): its pauses are bounded.
  const typingTime = (text: string, delay: number) => {
    notEmpty(text);
    const keys = [...text].length;
    const ms = keys * (delay + MS_PER_KEY);
    if (ms > MAX_TYPING_MS) {
      throw new Refused(
        400,
        `typing ${keys} characters with a delay of ${delay} ms would take about ${Math.round(ms / 1000)} s; at most ${MAX_TYPING_MS / 1000} s a request ((delay + ${MS_PER_KEY}) × characters ≤ ${MAX_TYPING_MS}): type it in parts, or paste it`,
      );
    }
  };

  return {
    mouseClick: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => clickAt(s, req.body),
        async (s, { backend, pages, front }) => {
          const at = clickAt(s, req.body);
          const point = 'selector' in at ? await elementPoint(pages, await front(), at.selector, at.index, at.timeoutMs) : at;
          if ('refused' in point) throw new Refused(400, point.refused);
          await backend.click(point.x, point.y, button(req.body.button), 1);
          return ok;
        },
      ),

    mouseDoubleClick: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => onPage(s, req.body),
        async (_s, { backend }) => {
          await backend.click(req.body.x, req.body.y, button(req.body.button), 2);
          return ok;
        },
      ),

    mouseDown: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => onPage(s, req.body),
        async (_s, { backend }) => {
          await backend.down(req.body.x, req.body.y, button(req.body.button));
          return ok;
        },
      ),

    mouseUp: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => onPage(s, req.body),
        async (_s, { backend }) => {
          await backend.up(req.body.x, req.body.y, button(req.body.button));
          return ok;
        },
      ),

    mouseMove: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => onPage(s, req.body),
        async (_s, { backend }) => {
          await backend.move(req.body.x, req.body.y);
          return ok;
        },
      ),

    dragAndDrop: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => onPage(s, { x: req.body.startX, y: req.body.startY, name: 'start ' }, { x: req.body.endX, y: req.body.endY, name: 'end ' }),
        async (_s, { backend }) => {
          const b = req.body;
          await backend.drag({ x: b.startX, y: b.startY }, { x: b.endX, y: b.endY }, button(b.button));
          return ok;
        },
      ),

    scroll: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        (s) => onPage(s, req.body),
        async (_s, { backend, pipeline }) => {
          const b = req.body;
          await (b.useOs === false ? pipeline : backend).scroll(b.x, b.y, b.deltaX ?? 0, b.deltaY, Math.max(1, b.steps ?? 1));
          return ok;
        },
      ),

    keyboardType: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        () => typingTime(req.body.text, req.body.delay ?? 0),
        async (_s, { backend }) => {
          await backend.type(req.body.text, req.body.delay ?? 0);
          return ok;
        },
      ),

    keyboardShortcut: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        () => keysOf(req.body.keys),
        async (_s, { backend }) => {
          await backend.shortcut(keysOf(req.body.keys), req.body.holdTime ?? 0);
          return ok;
        },
      ),

    getClipboard: (req, ctx) =>
      perform(ctx.projectId, req.params.sessionId, undefined, async (_s, { backend }) => ({
        status: 200 as const,
        body: { data: { text: await backend.getClipboard() } },
      })),

    setClipboard: (req, ctx) =>
      perform(ctx.projectId, req.params.sessionId, undefined, async (_s, { backend }) => {
        await backend.setClipboard(req.body.text);
        return ok;
      }),

    copySelection: (req, ctx) =>
      perform(ctx.projectId, req.params.sessionId, undefined, async (_s, { backend }) => ({
        status: 200 as const,
        body: { data: { text: await backend.copy() } },
      })),

    pasteText: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        () => notEmpty(req.body.text),
        async (_s, { backend }) => {
          await backend.paste(req.body.text);
          return ok;
        },
      ),

    gotoUrl: (req, ctx) =>
      perform(
        ctx.projectId,
        req.params.sessionId,
        () => publicUrl(req.body.url),
        async (s, { pages }) => {
          const page = await activePage(s.cdp, pages);
          if (!page) throw new NoPageError();
          try {
            await navigate(s.cdp, page.targetId, req.body.url, NAVIGATION_TIMEOUT_MS);
          } catch (err) {
            const message = (err as Error).message;
            if (/^navigation failed: /.test(message)) throw new Refused(400, `Navigation failed: ${message.slice('navigation failed: '.length)}`);
            // Committed, still loading after the time limit: the page is there, its load is not.
            if (/timed out/.test(message)) return { status: 200 as const, body: { status: 'loading', data: { status: 'loading' } } };
            throw err;
          }
          return ok;
        },
      ),

    takeSessionScreenshot: (req, ctx) =>
      perform(ctx.projectId, req.params.sessionId, undefined, async (s, { pages }) => {
        const page = await activePage(s.cdp, pages);
        if (!page) throw new NoPageError();
        const { data } = await pages.send<{ data: string }>(page.targetId, 'Page.captureScreenshot', { format: 'png' }, 30_000);
        return { status: 200 as const, contentType: 'image/png' as const, body: new Uint8Array(Buffer.from(data, 'base64')) };
      }),
  };
}
