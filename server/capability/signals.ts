// The in-process word capabilities give each other, one object per server: created once in
// the assembly (server.ts) and handed through the composition, so a capability's deps say
// which signals it gives and which it waits for, and two servers in one process (the tests
// run several) never hear each other. Every signal is a hint that saves a look at the
// database, never the truth: another node may do the thing instead, so whoever waits keeps
// its own limit or its own polling.

/** A signal without a key: every listener hears every emit. */
export class Signal<T = void> {
  private readonly listeners = new Set<(value: T) => void>();

  /** Calls `listener` at every emit until the answered unsubscribe is called. */
  on(listener: (value: T) => void): () => void {
    const l = (value: T) => listener(value); // its own entry, even if the same function listens twice
    this.listeners.add(l);
    return () => void this.listeners.delete(l);
  }

  emit(value: T): void {
    for (const l of [...this.listeners]) call(l, value);
  }
}

/** A signal per key (a session id, an event id): a listener hears only its own key. */
export class KeyedSignal<T = void> {
  private readonly listeners = new Map<string, Set<(value: T) => void>>();

  /** Calls `listener` at every emit for `key` until the answered unsubscribe is called. */
  on(key: string, listener: (value: T) => void): () => void {
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    const l = (value: T) => listener(value);
    set.add(l);
    return () => {
      set.delete(l);
      if (set.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key);
    };
  }

  /** Resolves at the next emit for `key` or after `limitMs`, whichever comes first, and
   *  leaves nothing behind: the waiter goes on either way (a hint, not the truth). */
  next(key: string, limitMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        off();
        resolve();
      };
      const off = this.on(key, done);
      const timer = setTimeout(done, limitMs);
      timer.unref?.();
    });
  }

  emit(key: string, value: T): void {
    const set = this.listeners.get(key);
    if (set) for (const l of [...set]) call(l, value);
  }
}

/** A listener's failure is not the emitter's problem. */
function call<T>(listener: (value: T) => void, value: T): void {
  try {
    listener(value);
  } catch {
    // ignored: the emitter goes on to the next listener
  }
}

/** The signals of one server. */
export interface Signals {
  /**
   * A session's end was recorded here: committed, its credits settled. Keyed by session id.
   * A task run's outcome carries its session's settled credits; it waits for this instead of
   * reading the row again and again (and still reads it now and then, for an end recorded on
   * another node).
   */
  readonly endRecorded: KeyedSignal<{ credits_used: number | null }>;
  /**
   * An event with deliveries was written (emitEvents), or deliveries became due (a webhook
   * enabled, a delivery retried). Its transaction may not have committed yet, so the delivery
   * worker looks now and again shortly after; its polling covers other processes and nodes.
   */
  readonly deliveriesWritten: Signal;
  /**
   * An attempt to deliver an event ended (answered, failed or timed out). Keyed by event id.
   * A task run holds its browser's teardown until then: killing Chromium and removing its
   * root took both cores for 50-140 ms, and the run's event waited behind it. Another node
   * may deliver the event, or no webhook want it, so every wait has its own limit.
   */
  readonly deliveryAttempted: KeyedSignal;
}

/** A server's signals, heard by nobody yet. */
export function createSignals(): Signals {
  return { endRecorded: new KeyedSignal(), deliveriesWritten: new Signal(), deliveryAttempted: new KeyedSignal() };
}
