// What a tool answers: content for the model, and errors as results (isError) with a message
// the model can act on, never a transport failure.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { missingRef } from '../page/aria.js';

/** A failure whose message is meant for the model as it is. */
export class ToolFailure extends Error {}

export const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

export const failure = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }], isError: true });

/** Runs a tool's body; what it throws becomes an error result. */
export async function run(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    return failure(explain(err));
  }
}

function explain(err: unknown): string {
  if (err instanceof ToolFailure) return err.message;
  const message = err instanceof Error ? err.message : String(err);
  // Playwright's messages carry a call log after the first line: the model needs the first.
  const first = message.split('\n')[0].replace(/^\w+\.\w+: /, '');
  const ref = missingRef(err);
  if (ref) {
    return `Element ref ${ref} is not on the page (the page changed since the snapshot, or the ref is mistyped): take a new anchor_snapshot and use its refs`;
  }
  if (/has been closed|Target closed|Browser closed/i.test(message)) {
    return 'The page or its browser session has closed: anchor_tab_list shows the open tabs, session_list the running sessions, session_start starts a new one';
  }
  if ((err as Error).name === 'TimeoutError') return `Timed out: ${first}`;
  return first;
}
