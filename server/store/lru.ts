// A bounded map in memory that forgets its least recently used entry first: what a cache of
// this process (a transpiled task's code, a session's owning node) keeps.
export class Lru<K, V> {
  // A Map keeps insertion order: its first key is the least recently used (get re-inserts).
  private readonly entries = new Map<K, V>();

  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Forgets every entry `drop` says to. */
  deleteWhere(drop: (value: V, key: K) => boolean): void {
    for (const [key, value] of this.entries) if (drop(value, key)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
