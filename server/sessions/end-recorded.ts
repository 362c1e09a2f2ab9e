// In-process word that sessions' ends were recorded (committed, credits settled), for whoever
// here waits on one (a task run's outcome carries its session's settled credits) instead of
// reading the row again and again. Only ends recorded by this process are announced: a
// waiter still looks at the row now and then for an end recorded elsewhere.
type Listener = (row: { credits_used: number | null }) => void;
const listeners = new Map<string, Set<Listener>>();

/** Calls `listener` once the end of `sessionId` is recorded here; answers the unsubscribe. */
export function onEndRecorded(sessionId: string, listener: Listener): () => void {
  let set = listeners.get(sessionId);
  if (!set) listeners.set(sessionId, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && listeners.get(sessionId) === set) listeners.delete(sessionId);
  };
}

/** Announces committed ends (rows that had already ended are undefined and skipped). */
export function endsRecorded(rows: ReadonlyArray<{ id: string; credits_used: number | null } | undefined>): void {
  if (listeners.size === 0) return;
  for (const row of rows) {
    if (!row) continue;
    for (const l of [...(listeners.get(row.id) ?? [])]) {
      try {
        l(row);
      } catch {
        // a listener's failure is not the recorder's problem
      }
    }
  }
}
