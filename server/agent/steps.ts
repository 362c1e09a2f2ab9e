// What the result of a web task shows of each step: the action, what it acted on, and what
// came of it.

export const BROWSER_ACTIONS = ['navigate', 'click', 'type', 'select', 'scroll', 'wait', 'extract', 'read_file', 'upload_file'] as const;
export type BrowserAction = (typeof BROWSER_ACTIONS)[number];

export interface StepRecord {
  action: BrowserAction;
  /** The URL, or the element (its ref and the model's description of it). */
  target?: string;
  /** What happened, as the model was told; never a secret's value. */
  outcome: string;
  /** false when the action failed (the agent goes on, and may try otherwise). */
  ok: boolean;
  /** Milliseconds the action took. */
  duration_ms: number;
}
