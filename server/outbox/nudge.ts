// In-process signal from emitEvent to the delivery worker: "an event with deliveries was
// written". The event's transaction may not have committed yet when this fires, so the
// worker treats it as a hint (it looks now and again shortly after); polling still covers
// events written by other processes or nodes.
type Listener = () => void;
const listeners = new Set<Listener>();

export function onDeliveriesWritten(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function deliveriesWritten(): void {
  for (const l of listeners) {
    try {
      l();
    } catch {
      // a listener's failure is not the emitter's problem
    }
  }
}
