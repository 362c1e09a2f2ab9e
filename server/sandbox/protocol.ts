// What the runner inside the sandbox and the server say to each other: one JSON object a
// line on the child's fd 3; the run's settings, one JSON line on the child's stdin, then
// the server's answers (ServerMessage), one a line on stdin while the user's code runs.
// Types and the checks both sides make, shared (the child's bundle inlines what it uses).

/** Where things are inside the sandbox (bind targets). */
export const INSIDE = {
  root: '/run/sbx',
  runner: '/run/sbx/runner.cjs',
  code: '/run/sbx/code/user.mjs',
  socket: '/run/sbx/cdp.sock',
  nodeModules: '/run/node_modules',
} as const;

/**
 * Optional, before the run's settings (a warm pair, server/tasks/warm-pair.ts): connect
 * Playwright now, to the browser that is to be the run's session, and wait for the run. The
 * settings' cdpPath must then be the same.
 */
export interface ChildConnect {
  t: 'connect';
  cdpPath: string;
}

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
  /** Whether ctx.requestIntervention can reach a person (task runs); false: it rejects. */
  interventions: boolean;
  /** Written to stdout and stderr just before the last word (result or error): the server
   *  then has all of the code's output without waiting for the sandbox's processes to end. */
  endMark: string;
}

export const INTERVENTION_INPUT_TYPES = ['confirm', 'text', 'otp', 'takeover'] as const;
export type InterventionInputType = (typeof INTERVENTION_INPUT_TYPES)[number];
export const INTERVENTION_MESSAGE_MAX = 2000;
/** The longest a request may wait, whatever the code asks (the run's time limit still applies). */
export const INTERVENTION_TIMEOUT_MAX_SECONDS = 86_400;
export const NO_INTERVENTIONS = 'interventions are not available here: only a task run can ask a person';

export interface InterventionAsk {
  message: string;
  input_type: InterventionInputType;
  timeout_seconds?: number;
}

/** Why a request for a person is malformed, or undefined when it is well formed. Both the
 * child (the user sees it at once) and the server (the child is not trusted) check. */
export function interventionProblem(q: unknown): string | undefined {
  if (typeof q !== 'object' || q === null) return 'requestIntervention takes {message, input_type, timeout_seconds?}';
  const { message, input_type: inputType, timeout_seconds: timeout } = q as Record<string, unknown>;
  if (typeof message !== 'string' || message.trim() === '') return 'requestIntervention: message must be a non-empty string';
  if (message.length > INTERVENTION_MESSAGE_MAX) return `requestIntervention: message must be at most ${INTERVENTION_MESSAGE_MAX} characters`;
  if (typeof inputType !== 'string' || !(INTERVENTION_INPUT_TYPES as readonly string[]).includes(inputType)) {
    return `requestIntervention: input_type must be one of ${INTERVENTION_INPUT_TYPES.join(', ')}`;
  }
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 1 || timeout > INTERVENTION_TIMEOUT_MAX_SECONDS)) {
    return `requestIntervention: timeout_seconds must be a number from 1 to ${INTERVENTION_TIMEOUT_MAX_SECONDS}`;
  }
  return undefined;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type ChildMessage =
  /** Playwright is loaded and the relay listens: the child waits for its run on stdin. */
  | { t: 'ready' }
  /** Answer to ChildConnect: Playwright is connected; the child waits for its run. */
  | { t: 'connected' }
  /** The bootstrap is done (relay up, Playwright connected): user code starts now. */
  | { t: 'start' }
  | { t: 'log'; level: LogLevel; message: string }
  | { t: 'artifact'; name: string; contentType: string; data: string /* base64 */ }
  | { t: 'result'; value: unknown }
  /** ctx.requestIntervention: the server answers with the same id. */
  | ({ t: 'intervention'; id: number } & InterventionAsk)
  | { t: 'error'; type: 'automation_failure' | 'system_error'; message: string; line?: number; rootCause?: string };

/** On stdin after the settings: the outcome of a request for a person. */
export type ServerMessage = { t: 'answer'; id: number; value: string } | { t: 'refused'; id: number; message: string };
