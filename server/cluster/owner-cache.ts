// Which node owns a session, remembered: a session's node never changes (sessions.node_id is
// written once, at creation), so a forwarding node need not ask the database again for every
// request and WebSocket of the same session. What may change is whether that node is alive
// and where it answers, so an entry is trusted for a short time only (one heartbeat period:
// a node claimed dead, or registered again at another address, is out of every cache within
// one period of the database saying so), and the router drops it sooner when a forward to it
// fails or is refused as misdirected, and when the session is ended through this node.
import { Lru } from '../store/lru.js';
import type { Peer } from './routing-store.js';

interface Entry {
  peer: Peer;
  until: number;
}

export class OwnerCache {
  private readonly entries: Lru<string, Entry>;

  constructor(private readonly o: { max: number; ttlMs: number; now?: () => number }) {
    this.entries = new Lru(o.max);
  }

  private now(): number {
    return this.o.now ? this.o.now() : Date.now();
  }

  /** The remembered owner of a session, while it may still be trusted. */
  get(sessionId: string): Peer | undefined {
    const e = this.entries.get(sessionId);
    if (!e) return undefined;
    if (e.until > this.now()) return e.peer;
    this.entries.delete(sessionId);
    return undefined;
  }

  /** What the database just said. Bounded: the least recently used entry goes first. */
  set(sessionId: string, peer: Peer): void {
    this.entries.set(sessionId, { peer, until: this.now() + this.o.ttlMs });
  }

  drop(sessionId: string): void {
    this.entries.delete(sessionId);
  }

  /** A node that could not be reached, or is not where it was: none of its entries is trusted. */
  dropNode(nodeId: string): void {
    this.entries.deleteWhere((e) => e.peer.nodeId === nodeId);
  }

  get size(): number {
    return this.entries.size;
  }
}
