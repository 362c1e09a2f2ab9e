// What the runner inside the sandbox and the server say to each other: one JSON object a
// line on the child's fd 3; the run's settings, one JSON line on the child's stdin.
// Types only, shared by both sides (the child's bundle inlines nothing from here).

/** Where things are inside the sandbox (bind targets). */
export const INSIDE = {
  root: '/run/sbx',
  runner: '/run/sbx/runner.cjs',
  code: '/run/sbx/code/user.mjs',
  socket: '/run/sbx/cdp.sock',
  nodeModules: '/run/node_modules',
} as const;

export interface ChildConfig {
  kind: 'task' | 'snippet';
  /** Path and query of the session's CDP endpoint, as the relay outside expects them. */
  cdpPath: string;
  input: unknown;
  /** The page to hand the code, by CDP target id; undefined: the first page. */
  pageTargetId?: string;
  /** Lines of wrapper before the user's first line (snippets): subtracted from stack lines. */
  lineOffset: number;
  outputMaxBytes: number;
  artifacts: { enabled: boolean; maxBytes: number; maxCount: number };
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type ChildMessage =
  /** Playwright is loaded and the relay listens: the child waits for its run on stdin. */
  | { t: 'ready' }
  /** The bootstrap is done (relay up, Playwright connected): user code starts now. */
  | { t: 'start' }
  | { t: 'log'; level: LogLevel; message: string }
  | { t: 'artifact'; name: string; contentType: string; data: string /* base64 */ }
  | { t: 'result'; value: unknown }
  | { t: 'error'; type: 'automation_failure' | 'system_error'; message: string; line?: number; rootCause?: string };
