// In-process wake-ups: a post on this node wakes this node's waits for the name at once.
// Waits on other nodes find the row by polling (wait.ts), as the database is all nodes share.
type Wake = () => void;

export class Wakeups {
  private readonly waiting = new Map<string, Set<Wake>>();

  /** Calls `wake` on every post of the name on this node until the returned function is called. */
  on(projectId: string, name: string, wake: Wake): () => void {
    const key = keyOf(projectId, name);
    let set = this.waiting.get(key);
    if (!set) this.waiting.set(key, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.waiting.get(key) === set) this.waiting.delete(key);
    };
  }

  posted(projectId: string, name: string): void {
    for (const wake of this.waiting.get(keyOf(projectId, name)) ?? []) wake();
  }

  /** Waits under way on this node, for the metrics and the tests. */
  get size(): number {
    let n = 0;
    for (const set of this.waiting.values()) n += set.size;
    return n;
  }
}

const keyOf = (projectId: string, name: string) => `${projectId}\u0000${name}`;
