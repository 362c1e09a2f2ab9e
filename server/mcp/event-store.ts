// Resumable streams: the SSE events an MCP session sent, kept a while so that a client whose
// stream broke (a proxy's time-out, a network change) reconnects with Last-Event-ID and gets
// what it missed, a tool's answer included. In memory, one store per MCP session, bounded
// in count, bytes and age: a client that does not come back within the window has lost
// them, and the store never grows with a session's length.
import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface EventStoreLimits {
  /** Most events kept. */
  maxEvents: number;
  /** Most bytes of JSON kept (screenshots and PDFs are large); the newest event is kept whatever its size. */
  maxBytes: number;
  /** Longest an event is kept, in ms. */
  maxAgeMs: number;
}

export const EVENT_STORE_LIMITS: EventStoreLimits = { maxEvents: 1_000, maxBytes: 16 * 1024 * 1024, maxAgeMs: 5 * 60_000 };

interface Stored {
  seq: number;
  streamId: StreamId;
  message: JSONRPCMessage;
  bytes: number;
  at: number;
}

export class BoundedEventStore implements EventStore {
  /** Oldest first: seq grows with each event. */
  private readonly events: Stored[] = [];
  private readonly bySeq = new Map<number, Stored>();
  private seq = 0;
  private bytes = 0;

  constructor(
    private readonly limits: EventStoreLimits = EVENT_STORE_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): { events: number; bytes: number } {
    this.evict();
    return { events: this.events.length, bytes: this.bytes };
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const stored: Stored = { seq: ++this.seq, streamId, message, bytes: Buffer.byteLength(JSON.stringify(message)), at: this.now() };
    this.events.push(stored);
    this.bySeq.set(stored.seq, stored);
    this.bytes += stored.bytes;
    this.evict();
    return String(stored.seq);
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    this.evict();
    return this.bySeq.get(seqOf(eventId))?.streamId;
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    this.evict();
    const last = this.bySeq.get(seqOf(lastEventId));
    // The transport asked getStreamIdForEventId first: an unknown id was answered 400 there.
    if (!last) throw new Error(`event ${lastEventId} is no longer kept`);
    for (const e of this.events) {
      // Priming events (an empty object, sent so the client holds an id) carry nothing to replay.
      if (e.seq > last.seq && e.streamId === last.streamId && 'jsonrpc' in e.message) await send(String(e.seq), e.message);
    }
    return last.streamId;
  }

  private evict(): void {
    const oldest = this.now() - this.limits.maxAgeMs;
    while (this.events.length > 1 && (this.events.length > this.limits.maxEvents || this.bytes > this.limits.maxBytes || this.events[0]!.at < oldest)) {
      this.drop();
    }
    if (this.events.length === 1 && this.events[0]!.at < oldest) this.drop();
  }

  private drop(): void {
    const e = this.events.shift()!;
    this.bySeq.delete(e.seq);
    this.bytes -= e.bytes;
  }
}

const seqOf = (eventId: EventId): number => (/^\d{1,15}$/.test(eventId) ? Number(eventId) : NaN);
