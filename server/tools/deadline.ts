// A tool's time limit as a race: the answer is `timedOut()` once `deadline` passes, whatever
// the work is still waiting for (a browser's launch, a page that never loads, a screenshot
// of a huge page). The work goes on unobserved and cleans up after itself as it would on
// its own failure; its later rejection is handled by the race.
import type { ToolError } from './tool-error.js';

export async function withDeadline<T>(deadline: number, timedOut: () => ToolError, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
