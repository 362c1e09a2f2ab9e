// In-process signal from the delivery worker to whoever waits for an event to be out: "an
// attempt to deliver this event ended" (answered, failed or timed out). A task run holds its
// browser's teardown until then: killing Chromium and removing its root took both cores for
// 50-140 ms, and the run's event waited behind it. A hint only: another node may deliver
// the event, or no webhook want it, so every wait has its own limit.
const waiters = new Map<string, Set<() => void>>();

/** Resolves when an attempt to deliver `eventId` ends in this process, or after `limitMs`. */
export function firstAttempt(eventId: string, limitMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    let set = waiters.get(eventId);
    if (!set) waiters.set(eventId, (set = new Set()));
    const done = () => {
      clearTimeout(timer);
      set.delete(done);
      if (set.size === 0 && waiters.get(eventId) === set) waiters.delete(eventId);
      resolve();
    };
    const timer = setTimeout(done, limitMs);
    timer.unref?.();
    set.add(done);
  });
}

export function deliveryAttempted(eventId: string): void {
  const set = waiters.get(eventId);
  if (!set) return;
  for (const done of [...set]) done();
}
