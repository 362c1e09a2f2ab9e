// notifications/progress for the long tools (navigation, waits, the service's fetch, PDFs,
// a browser's start), sent when the client asked for them with a progressToken: a step
// when something happens, and a beat every few seconds while nothing does, so that a client
// resetting its time-out on progress (the SDK's resetTimeoutOnProgress) does not give up on
// a slow page. Without a token nothing is sent and nothing is timed.
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Reports a step of the work in progress; a no-op when the client sent no token. */
export type Progress = (message: string) => void;

export const HEARTBEAT_MS = 2_000;

/** Runs fn with a Progress for the call; heartbeats stop when it settles. */
export async function withProgress<T>(extra: ToolExtra | undefined, fn: (progress: Progress) => T | Promise<T>, heartbeatMs = HEARTBEAT_MS): Promise<T> {
  const token = extra?._meta?.progressToken;
  if (token === undefined || !extra) return await fn(() => {});
  let count = 0;
  let done = false;
  const started = Date.now();
  const send: Progress = (message) => {
    if (done) return;
    // A notification that cannot go out (the client went away) is not the tool's failure.
    extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++count, message } }).catch(() => {});
  };
  const beat = setInterval(() => send(`Still working (${Math.round((Date.now() - started) / 1000)} s)`), heartbeatMs);
  try {
    return await fn(send);
  } finally {
    done = true;
    clearInterval(beat);
  }
}
