// One wait for a named value: look, then sleep until a post on this node wakes it or the poll
// interval passes (a post on another node is seen then), until the deadline or the client
// leaves. Polling, not LISTEN/NOTIFY: the same code serves PGlite and PostgreSQL, and a
// quarter second is well inside what a person typing a one-time code notices.
import type { Db } from '../store/db.js';
import * as store from './store.js';
import type { Wakeups } from './wakeups.js';

/** How often a wait looks for a value posted on another node. */
export const POLL_MS = 250;

export type WaitResult = { kind: 'value'; row: store.SignalRow } | { kind: 'timeout' } | { kind: 'aborted' };

export async function waitFor(d: { db: Db; wakeups: Wakeups }, projectId: string, name: string, timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
  const deadline = Date.now() + timeoutMs;
  let woken = false;
  let wake: (() => void) | undefined;
  const off = d.wakeups.on(projectId, name, () => {
    woken = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  try {
    // Read before the first look: a value posted between the two is above it, so not missed.
    const after = await store.cursor(d.db, projectId, name);
    for (;;) {
      if (signal?.aborted) return { kind: 'aborted' };
      woken = false;
      const row = await store.take(d.db, projectId, name, after);
      if (row) return { kind: 'value', row };
      const left = deadline - Date.now();
      if (left <= 0) return { kind: 'timeout' };
      if (woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(POLL_MS, left));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        if (signal?.aborted) wake();
      });
      wake = undefined;
    }
  } finally {
    off();
    signal?.removeEventListener('abort', onAbort);
  }
}
