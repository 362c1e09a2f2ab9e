// The delivery worker's counters, as stats() reports them: attempts recorded since start, by
// outcome, beside what is in flight and what is sent but not yet recorded.
import type { AttemptStatus } from './delivery-record.js';

export interface DeliveryWorkerStats {
  inFlight: number;
  attempts: number;
  succeeded: number;
  failed: number;
  dead: number;
  /** Results sent but not yet recorded. */
  unrecorded: number;
}

export type DeliveryCounters = Pick<DeliveryWorkerStats, 'attempts' | 'succeeded' | 'failed' | 'dead'>;

export function newCounters(): DeliveryCounters {
  return { attempts: 0, succeeded: 0, failed: 0, dead: 0 };
}

/** Counts one attempt recorded with this status. */
export function countAttempt(counters: DeliveryCounters, status: AttemptStatus): void {
  counters.attempts++;
  if (status === 'succeeded') counters.succeeded++;
  else if (status === 'failed') counters.failed++;
  else counters.dead++;
}

export function deliveryStats(inFlight: number, counters: DeliveryCounters, unrecorded: number): DeliveryWorkerStats {
  return { inFlight, ...counters, unrecorded };
}
