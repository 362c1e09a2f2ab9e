// What an input backend does. Coordinates are pixels of the session's screenshot: the
// page's viewport, (0, 0) below the browser's toolbar, in headless and headful sessions
// alike, so an agent clicks what it sees (docs/decisions/0002-input-in-screenshot-pixels.md).
// The X backend moves them onto its display.
import type { KeyDef } from './keys.js';

export type Button = 'left' | 'middle' | 'right';

export interface InputBackend {
  move(x: number, y: number): Promise<void>;
  click(x: number, y: number, button: Button, count: 1 | 2): Promise<void>;
  down(x: number, y: number, button: Button): Promise<void>;
  up(x: number, y: number, button: Button): Promise<void>;
  drag(from: { x: number; y: number }, to: { x: number; y: number }, button: Button): Promise<void>;
  scroll(x: number, y: number, deltaX: number, deltaY: number, steps: number): Promise<void>;
  type(text: string, delayMs: number): Promise<void>;
  shortcut(keys: KeyDef[], holdMs: number): Promise<void>;
  getClipboard(): Promise<string>;
  setClipboard(text: string): Promise<void>;
  /** Copies the selection (as Control+C); answers the text copied, '' when nothing was selected. */
  copy(): Promise<string>;
  /** Puts the text on the clipboard and pastes it (as Control+V). */
  paste(text: string): Promise<void>;
}

/** The steps of a drag, from one point to another, start and end excluded. */
export function path(from: { x: number; y: number }, to: { x: number; y: number }, steps: number): { x: number; y: number }[] {
  const out: { x: number; y: number }[] = [];
  for (let i = 1; i < steps; i++) {
    out.push({ x: Math.round(from.x + ((to.x - from.x) * i) / steps), y: Math.round(from.y + ((to.y - from.y) * i) / steps) });
  }
  return out;
}

/** Splits `total` into `steps` integer parts that add up to it. */
export function split(total: number, steps: number): number[] {
  const n = Math.max(1, Math.min(steps, Math.abs(total) || 1));
  const out: number[] = [];
  let done = 0;
  for (let i = 1; i <= n; i++) {
    const upTo = Math.round((total * i) / n);
    out.push(upTo - done);
    done = upTo;
  }
  return out;
}
