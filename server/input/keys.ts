// Key names (the DOM's KeyboardEvent.key values, plus common aliases) → what each input
// backend needs: the X keysym xdotool presses on a headful session, and the DOM key, code,
// Windows virtual key code and text CDP Input.dispatchKeyEvent sends on a headless one.
// A name that is not here is an unknown key (400).

export interface KeyDef {
  /** KeyboardEvent.key (unshifted for characters). */
  key: string;
  /** KeyboardEvent.code. */
  code: string;
  /** windowsVirtualKeyCode / keyCode. */
  keyCode: number;
  /** The X keysym name for xdotool. */
  keysym: string;
  /** The text the key types (characters, Enter, Tab). */
  text?: string;
  /** 1 left / 2 right (modifiers), 3 numpad. */
  location?: number;
  /** The CDP modifier bit this key sets while held: Alt 1, Control 2, Meta 4, Shift 8. */
  modifier?: number;
  /** The character needs Shift on a US keyboard. */
  shift?: boolean;
}

const named: Record<string, Omit<KeyDef, 'key'>> = {
  Control: { code: 'ControlLeft', keyCode: 17, keysym: 'Control_L', location: 1, modifier: 2 },
  Shift: { code: 'ShiftLeft', keyCode: 16, keysym: 'Shift_L', location: 1, modifier: 8 },
  Alt: { code: 'AltLeft', keyCode: 18, keysym: 'Alt_L', location: 1, modifier: 1 },
  Meta: { code: 'MetaLeft', keyCode: 91, keysym: 'Super_L', location: 1, modifier: 4 },
  AltGraph: { code: 'AltRight', keyCode: 225, keysym: 'ISO_Level3_Shift', location: 2 },
  Enter: { code: 'Enter', keyCode: 13, keysym: 'Return', text: '\r' },
  Tab: { code: 'Tab', keyCode: 9, keysym: 'Tab', text: '\t' },
  Escape: { code: 'Escape', keyCode: 27, keysym: 'Escape' },
  Backspace: { code: 'Backspace', keyCode: 8, keysym: 'BackSpace' },
  Delete: { code: 'Delete', keyCode: 46, keysym: 'Delete' },
  Insert: { code: 'Insert', keyCode: 45, keysym: 'Insert' },
  Home: { code: 'Home', keyCode: 36, keysym: 'Home' },
  End: { code: 'End', keyCode: 35, keysym: 'End' },
  PageUp: { code: 'PageUp', keyCode: 33, keysym: 'Page_Up' },
  PageDown: { code: 'PageDown', keyCode: 34, keysym: 'Page_Down' },
  ArrowUp: { code: 'ArrowUp', keyCode: 38, keysym: 'Up' },
  ArrowDown: { code: 'ArrowDown', keyCode: 40, keysym: 'Down' },
  ArrowLeft: { code: 'ArrowLeft', keyCode: 37, keysym: 'Left' },
  ArrowRight: { code: 'ArrowRight', keyCode: 39, keysym: 'Right' },
  CapsLock: { code: 'CapsLock', keyCode: 20, keysym: 'Caps_Lock' },
  NumLock: { code: 'NumLock', keyCode: 144, keysym: 'Num_Lock' },
  ScrollLock: { code: 'ScrollLock', keyCode: 145, keysym: 'Scroll_Lock' },
  Pause: { code: 'Pause', keyCode: 19, keysym: 'Pause' },
  PrintScreen: { code: 'PrintScreen', keyCode: 44, keysym: 'Print' },
  ContextMenu: { code: 'ContextMenu', keyCode: 93, keysym: 'Menu' },
  ' ': { code: 'Space', keyCode: 32, keysym: 'space', text: ' ' },
};
for (let i = 1; i <= 24; i++) named[`F${i}`] = { code: `F${i}`, keyCode: 111 + i, keysym: `F${i}` };

const aliases: Record<string, string> = {
  ctrl: 'Control',
  control: 'Control',
  shift: 'Shift',
  alt: 'Alt',
  option: 'Alt',
  meta: 'Meta',
  cmd: 'Meta',
  command: 'Meta',
  super: 'Meta',
  win: 'Meta',
  os: 'Meta',
  altgr: 'AltGraph',
  altgraph: 'AltGraph',
  enter: 'Enter',
  return: 'Enter',
  tab: 'Tab',
  esc: 'Escape',
  escape: 'Escape',
  backspace: 'Backspace',
  delete: 'Delete',
  del: 'Delete',
  insert: 'Insert',
  ins: 'Insert',
  home: 'Home',
  end: 'End',
  pageup: 'PageUp',
  pgup: 'PageUp',
  pagedown: 'PageDown',
  pgdn: 'PageDown',
  arrowup: 'ArrowUp',
  up: 'ArrowUp',
  arrowdown: 'ArrowDown',
  down: 'ArrowDown',
  arrowleft: 'ArrowLeft',
  left: 'ArrowLeft',
  arrowright: 'ArrowRight',
  right: 'ArrowRight',
  space: ' ',
  spacebar: ' ',
  capslock: 'CapsLock',
  numlock: 'NumLock',
  scrolllock: 'ScrollLock',
  pause: 'Pause',
  printscreen: 'PrintScreen',
  contextmenu: 'ContextMenu',
  menu: 'ContextMenu',
};

/** Printable ASCII on a US keyboard: [unshifted, shifted, code, keyCode, keysyms]. */
const punctuation: [string, string, string, number, string, string][] = [
  ['`', '~', 'Backquote', 192, 'grave', 'asciitilde'],
  ['-', '_', 'Minus', 189, 'minus', 'underscore'],
  ['=', '+', 'Equal', 187, 'equal', 'plus'],
  ['[', '{', 'BracketLeft', 219, 'bracketleft', 'braceleft'],
  [']', '}', 'BracketRight', 221, 'bracketright', 'braceright'],
  ['\\', '|', 'Backslash', 220, 'backslash', 'bar'],
  [';', ':', 'Semicolon', 186, 'semicolon', 'colon'],
  ["'", '"', 'Quote', 222, 'apostrophe', 'quotedbl'],
  [',', '<', 'Comma', 188, 'comma', 'less'],
  ['.', '>', 'Period', 190, 'period', 'greater'],
  ['/', '?', 'Slash', 191, 'slash', 'question'],
];
const digitShift = [')', '!', '@', '#', '$', '%', '^', '&', '*', '('];
const digitShiftSym = ['parenright', 'exclam', 'at', 'numbersign', 'dollar', 'percent', 'asciicircum', 'ampersand', 'asterisk', 'parenleft'];

const characters = new Map<string, KeyDef>();
for (let i = 0; i < 26; i++) {
  const lower = String.fromCharCode(97 + i);
  const upper = lower.toUpperCase();
  const code = `Key${upper}`;
  characters.set(lower, { key: lower, code, keyCode: 65 + i, keysym: lower, text: lower });
  characters.set(upper, { key: upper, code, keyCode: 65 + i, keysym: upper, text: upper, shift: true });
}
for (let d = 0; d < 10; d++) {
  const ch = String(d);
  characters.set(ch, { key: ch, code: `Digit${d}`, keyCode: 48 + d, keysym: ch, text: ch });
  characters.set(digitShift[d]!, { key: digitShift[d]!, code: `Digit${d}`, keyCode: 48 + d, keysym: digitShiftSym[d]!, text: digitShift[d]!, shift: true });
}
for (const [plain, shifted, code, keyCode, sym, shiftedSym] of punctuation) {
  characters.set(plain, { key: plain, code, keyCode, keysym: sym, text: plain });
  characters.set(shifted, { key: shifted, code, keyCode, keysym: shiftedSym, text: shifted, shift: true });
}
characters.set(' ', { key: ' ', ...named[' ']! });
characters.set('\n', { key: 'Enter', ...named.Enter! });
characters.set('\r', { key: 'Enter', ...named.Enter! });
characters.set('\t', { key: 'Tab', ...named.Tab! });

/** A key name of a shortcut → its definition, or undefined for an unknown key. */
export function resolveKey(name: string): KeyDef | undefined {
  if ([...name].length === 1) return characters.get(name) ?? (name === ' ' ? { key: ' ', ...named[' ']! } : undefined);
  const canonical = named[name] ? name : aliases[name.toLowerCase()];
  if (canonical === undefined) {
    const f = /^f([1-9]|1\d|2[0-4])$/i.exec(name);
    return f ? { key: `F${f[1]}`, ...named[`F${f[1]}`]! } : undefined;
  }
  return { key: canonical, ...named[canonical]! };
}

/** How a character of typed text is typed: a key of the US layout, or as text alone. */
export function characterKey(ch: string): KeyDef | undefined {
  return characters.get(ch);
}
