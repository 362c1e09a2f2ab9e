// Jobs on one key (a session's folder) run one at a time, in the order they came: a job that
// checks a limit sees what the one before it wrote. A failed job does not stop the next, and
// a key with nothing queued is forgotten.
export class OneAtATime {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, job: () => Promise<T>): Promise<T> {
    const next = (this.tails.get(key) ?? Promise.resolve()).then(job);
    const settled = next.catch(() => {});
    this.tails.set(key, settled);
    void settled.then(() => this.tails.get(key) === settled && this.tails.delete(key));
    return next;
  }

  /** Keys with a job queued or running. */
  get busy(): number {
    return this.tails.size;
  }
}
