// Every resource the suite creates during a run: checks take ids from here (a session to
// tag, a webhook to patch), G11 asks another project for them, and the cleanup at the end
// deletes whatever is still alive (ends sessions, deletes webhooks, profiles, …).

export interface Resource {
  /** The collection path, e.g. /v1/webhooks. */
  collection: string;
  id: string;
  /** The item path's parameters: the id, and the parents' ids of a nested collection. */
  pathParams: Record<string, string>;
  /** The operation that created it (or "harvested from …"). */
  createdBy: string;
  /** The key it was created with; cleanup and G11 use it. */
  apiKey?: string;
  /** Made for one check, which removes it when it ends (a DELETE's own session): never handed to another check. */
  own?: boolean;
  deleted: boolean;
  seq: number;
}

export class Registry {
  private items: Resource[] = [];
  private seq = 0;

  /** Adds a resource, or returns the one already registered under the same id. */
  add(r: Omit<Resource, 'deleted' | 'seq'>): Resource {
    const existing = this.items.find((x) => x.collection === r.collection && x.id === r.id);
    if (existing) return existing;
    const item: Resource = { ...r, deleted: false, seq: ++this.seq };
    this.items.push(item);
    return item;
  }

  get(collection: string, id: string): Resource | undefined {
    return this.items.find((x) => x.collection === collection && x.id === id);
  }

  markDeleted(collection: string, id: string | undefined): void {
    const r = id === undefined ? undefined : this.get(collection, id);
    if (r) r.deleted = true;
  }

  /** Live resources, oldest first; of one collection and one key when given. */
  live(collection?: string, apiKey?: string | null): Resource[] {
    return this.items.filter(
      (r) => !r.deleted && (collection === undefined || r.collection === collection) && (apiKey === null || apiKey === undefined || r.apiKey === apiKey),
    );
  }

  /** The newest live resource checks share: none that one check made for itself. */
  latest(collection: string, apiKey?: string | null): Resource | undefined {
    const list = this.live(collection, apiKey).filter((r) => !r.own);
    return list[list.length - 1];
  }

  all(): readonly Resource[] {
    return this.items;
  }
}
