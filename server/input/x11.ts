// Input on a headful session: XTest through xdotool on the session's own X display, so the
// page gets it as from a real mouse and keyboard (isTrusted, real X events, the browser's
// own double-click and wheel handling). The clipboard is the display's CLIPBOARD
// selection, through xclip.
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import type { Button, InputBackend } from './backend.js';
import { path } from './backend.js';
import type { KeyDef } from './keys.js';

const BUTTON: Record<Button, string> = { left: '1', middle: '2', right: '3' };
/** Chromium on X11 scrolls 120 px a wheel notch (one XTest button 4/5/6/7 click). */
export const PIXELS_PER_NOTCH = 120;
const TIMEOUT_MS = 60_000;
/** Time for the browser to take in X events before input that goes another way. */
const SETTLE_MS = 50;

export class ProcessError extends Error {}

/** What the X backend needs of the page in front, through CDP. */
export interface PageAccess {
  /** Makes the browser window the active one (a window nobody clicked yet takes no keys). */
  activate(): Promise<void>;
  /** Waits until the page in front can take input (it has painted), best effort. */
  painted(): Promise<void>;
  /** Text as an input method commits it. */
  insertText(text: string): Promise<void>;
  /** Starts noting, in the page in front, the last pointer event it has taken in. */
  watchPointer(): Promise<void>;
  /** That last pointer event since watchPointer(), and whether a drag session began; undefined
   *  when the page cannot tell (it navigated, or the script could not run). */
  pointer(): Promise<PointerSeen | undefined>;
}

/** The last pointer event a page has taken in: a move, or in a drag session a `drag` or `dragover`. */
export interface PointerSeen {
  x: number;
  y: number;
  type: string;
  /** A dragstart has fired since the watch began. */
  dragging: boolean;
}

/** How long a drag's release waits for the page to take in the pointer at its target. */
const REACH_MS = 5_000;
/** Between two looks at the page, and how many looks before the pointer is nudged again. */
const REACH_POLL_MS = 50;
const NUDGE_EVERY = 5;

export class X11Input implements InputBackend {
  private activated = false;

  constructor(
    private readonly display: string,
    /** Where the page's viewport sits on the display (below the toolbar, unless fullscreen). */
    private readonly origin: { x: number; y: number },
    private readonly page: PageAccess,
  ) {}

  /** xdotool's arguments for a point of the page. */
  private at(p: { x: number; y: number }): [string, string] {
    return [String(p.x + this.origin.x), String(p.y + this.origin.y)];
  }

  /**
   * Once per session: Chromium on a display without a window manager takes keys only
   * after its window was activated (clicked, or brought to the front). Only once, so a
   * focus the client moved since (Control+L into the address bar) is left alone.
   */
  private async activate(): Promise<void> {
    if (this.activated) return;
    await this.page.activate();
    this.activated = true;
  }

  async move(x: number, y: number): Promise<void> {
    await this.xdotool(['mousemove', ...this.at({ x, y })]);
  }

  async click(x: number, y: number, button: Button, count: 1 | 2): Promise<void> {
    // Without --sync: XTest motion and button events reach the X server, and Chromium, in
    // order; --sync can wait forever when the pointer is already there.
    await this.xdotool(['mousemove', ...this.at({ x, y }), 'click', '--repeat', String(count), '--delay', '60', BUTTON[button]]);
  }

  async down(x: number, y: number, button: Button): Promise<void> {
    await this.xdotool(['mousemove', ...this.at({ x, y }), 'mousedown', BUTTON[button]]);
  }

  async up(x: number, y: number, button: Button): Promise<void> {
    await this.xdotool(['mousemove', ...this.at({ x, y }), 'mouseup', BUTTON[button]]);
  }

  async drag(from: { x: number; y: number }, to: { x: number; y: number }, button: Button): Promise<void> {
    // Small steps with pauses: HTML drag and drop starts only after a few moves with the
    // button down. The release waits for the page (reach): a drop needs the target's
    // dragover before it, and on a loaded machine Chromium takes in the X events late, and
    // starts its drag session (a pointer grab, the drag image) after the first moves.
    await this.page.watchPointer().catch(() => {});
    const [first, ...rest] = path(from, to, 12);
    const steps = rest.flatMap((p) => ['mousemove', ...this.at(p), 'sleep', '0.02']);
    await this.xdotool([
      'mousemove',
      ...this.at(from),
      'mousedown',
      BUTTON[button],
      'sleep',
      '0.05',
      'mousemove',
      ...this.at(first!),
      'sleep',
      '0.05',
      ...steps,
      'mousemove',
      ...this.at(to),
    ]);
    await this.reach(to);
    await this.xdotool(['mouseup', BUTTON[button]]);
  }

  /**
   * Waits until the page has taken in the pointer at `to`: as a move, or in a drag session as
   * a dragover there (a `drag` alone is the source's, and the target has not yet said whether
   * it takes the drop). A motion the drag session missed while it began is made again: every
   * few looks the pointer goes a pixel aside and back. A page whose events the watch cannot
   * see (a frame of another origin) gets its release after REACH_MS; one that cannot tell at
   * all (it navigated away) gets it after a pause of a few frames.
   */
  private async reach(to: { x: number; y: number }): Promise<void> {
    const deadline = Date.now() + REACH_MS;
    for (let look = 1; Date.now() < deadline; look++) {
      const seen = await this.page.pointer().catch(() => undefined);
      if (!seen) return void (await sleep(200));
      if (seen.x === to.x && seen.y === to.y && (!seen.dragging || seen.type === 'dragover')) return;
      await sleep(REACH_POLL_MS);
      if (look % NUDGE_EVERY === 0) await this.xdotool(['mousemove', ...this.at({ x: to.x + 1, y: to.y }), 'mousemove', ...this.at(to)]);
    }
  }

  async scroll(x: number, y: number, deltaX: number, deltaY: number, steps: number): Promise<void> {
    // A wheel turns in notches: the distance is rounded to whole ones (at least one).
    const notches = (d: number) => (d === 0 ? 0 : Math.max(1, Math.round(Math.abs(d) / PIXELS_PER_NOTCH)));
    const ny = notches(deltaY);
    const nx = notches(deltaX);
    // The pause between notches spreads the turn over about 0.4 s (as `steps` wheel events),
    // and a long turn (up to 833 notches) over at most a second: never minutes of one call.
    const pause = Math.max(10, Math.min(200, Math.round(400 / Math.max(1, steps))));
    const delay = String(Math.min(pause, Math.floor(1_000 / Math.max(1, ny, nx))));
    const args = ['mousemove', ...this.at({ x, y })];
    if (ny) args.push('click', '--repeat', String(ny), '--delay', delay, deltaY > 0 ? '5' : '4');
    if (nx) args.push('click', '--repeat', String(nx), '--delay', delay, deltaX > 0 ? '7' : '6');
    await this.xdotool(args);
  }

  async type(text: string, delayMs: number): Promise<void> {
    await this.activate();
    await this.page.painted();
    for (const run of text.replace(/\r\n?/g, '\n').match(/[\x20-\x7e\n\t]+|[^\x20-\x7e\n\t]+/g) ?? []) {
      if (/^[\x20-\x7e\n\t]/.test(run)) {
        // Through stdin: a long text would not fit in one argument.
        await this.run('xdotool', ['type', '--delay', String(delayMs), '--file', '-'], run, TIMEOUT_MS + run.length * (delayMs + 10));
        continue;
      }
      // A character the keyboard map lacks would need a keycode bound to it for the
      // keystroke, and Chromium reads such bindings back too late to be reliable: it
      // arrives as an input method's text instead, once the keys before it are handled.
      await sleep(SETTLE_MS);
      for (const ch of run) {
        await this.page.insertText(ch);
        if (delayMs > 0) await sleep(delayMs);
      }
    }
  }

  async shortcut(keys: KeyDef[], holdMs: number): Promise<void> {
    await this.activate();
    const args = keys.flatMap((k) => ['keydown', k.keysym]);
    if (holdMs > 0) args.push('sleep', (holdMs / 1000).toFixed(3));
    args.push(...[...keys].reverse().flatMap((k) => ['keyup', k.keysym]));
    await this.xdotool(args);
  }

  async getClipboard(): Promise<string> {
    try {
      return await this.run('xclip', ['-selection', 'clipboard', '-o'], undefined, 5_000);
    } catch (err) {
      // An empty clipboard: "target STRING not available".
      if (err instanceof ProcessError) return '';
      throw err;
    }
  }

  async setClipboard(text: string): Promise<void> {
    // xclip forks a process that owns the selection until another owner takes it (the
    // browser copying) or the display goes; the command itself returns at once.
    await new Promise<void>((resolve, reject) => {
      const child = spawn('xclip', ['-selection', 'clipboard', '-i'], { env: this.env(), stdio: ['pipe', 'ignore', 'ignore'] });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new ProcessError(`xclip exited with ${code}`))));
      child.stdin!.on('error', () => {});
      child.stdin!.end(text);
    });
  }

  async copy(): Promise<string> {
    // Empty first: Control+C with nothing selected leaves the clipboard as it was.
    await this.activate();
    await this.setClipboard('');
    await this.xdotool(['key', '--clearmodifiers', 'ctrl+c']);
    const deadline = Date.now() + 500;
    for (;;) {
      const text = await this.getClipboard();
      if (text !== '' || Date.now() > deadline) return text;
      await sleep(25);
    }
  }

  async paste(text: string): Promise<void> {
    await this.activate();
    await this.setClipboard(text);
    await this.xdotool(['key', '--clearmodifiers', 'ctrl+v']);
    // The browser asks xclip for the text after the key: give it that moment.
    await sleep(100);
  }

  private env(): NodeJS.ProcessEnv {
    // A UTF-8 locale: xdotool reads text as multibyte characters of the locale.
    return { DISPLAY: this.display, PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C.UTF-8' };
  }

  /** Every X input goes here or through type(): both wait for the page to take it. */
  private async xdotool(args: string[]): Promise<string> {
    await this.page.painted();
    return this.run('xdotool', args, undefined, TIMEOUT_MS);
  }

  private run(command: string, args: string[], stdin: string | undefined, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { env: this.env(), stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-1000)));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve(stdout);
        else reject(new ProcessError(`${command} ${args[0]} failed (${code ?? signal}): ${stderr.trim()}`));
      });
      if (stdin !== undefined) {
        child.stdin!.on('error', () => {});
        child.stdin!.end(stdin);
      }
    });
  }
}
