// The EventCoordination operations: post a named value, wait for one.
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';
import { waitFor } from './wait.js';
import type { Wakeups } from './wakeups.js';

export type SignalOperation = 'signalEvent' | 'waitForEvent';

/** The largest `data`, as JSON bytes: a value to pass on, not a store of files. */
export const MAX_DATA_BYTES = 64 * 1024;
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface SignalDeps {
  db: Db;
  secrets: Secrets;
  wakeups: Wakeups;
  retentionSeconds: number;
  maxPendingPerProject: number;
}

/** The sealing context of a value: it opens only in its own row. */
const dataContext = (id: string) => `event-signal:${id}`;

export function signalHandlers(d: SignalDeps): Pick<AppHandlers, SignalOperation> {
  return {
    async signalEvent(req, ctx) {
      const json = JSON.stringify(req.body.data);
      const bytes = Buffer.byteLength(json);
      if (bytes > MAX_DATA_BYTES) return fail(400, `body/data is ${bytes} bytes as JSON; at most ${MAX_DATA_BYTES} are kept`);
      // Counted before the insert: two posts racing may pass it together, which only bends the cap.
      if ((await store.pendingCount(d.db, ctx.projectId)) >= d.maxPendingPerProject) {
        return {
          ...fail(429, `The project already has ${d.maxPendingPerProject} posted values that no wait has taken; wait for some, or let them expire`),
          headers: { 'Retry-After': '60' },
        };
      }
      await store.insert(d.db, ctx.projectId, req.params.event_name, (id) => d.secrets.seal(json, dataContext(id)), d.retentionSeconds);
      d.wakeups.posted(ctx.projectId, req.params.event_name);
      ctx.log.info({ event: req.params.event_name, bytes }, 'event signaled');
      return { status: 200, body: { data: { status: 'signaled' } } };
    },

    async waitForEvent(req, ctx) {
      const timeoutMs = req.body?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const result = await waitFor(d, ctx.projectId, req.params.event_name, timeoutMs, ctx.signal);
      ctx.log.info({ event: req.params.event_name, outcome: result.kind, timeoutMs }, 'event wait ended');
      if (result.kind === 'value') {
        return { status: 200, body: { data: JSON.parse(d.secrets.open(result.row.data, dataContext(result.row.id))) as Record<string, unknown> } };
      }
      // Also what a client that left gets, which no one reads.
      return {
        ...fail(408, 'Event was not signaled within the specified timeout'),
        // The vendor SDK retries a 408 by default: the wait would run twice more than asked.
        headers: { 'x-should-retry': 'false' },
      };
    },
  };
}
