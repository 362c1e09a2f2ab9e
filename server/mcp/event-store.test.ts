// The resumable streams' event store: replays one stream's events after an id, and forgets
// the oldest by count, bytes and age.
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { BoundedEventStore } from './event-store.js';

const note = (n: number, pad = ''): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n, pad } });

async function replay(store: BoundedEventStore, after: string): Promise<{ stream: string; got: [string, JSONRPCMessage][] }> {
  const got: [string, JSONRPCMessage][] = [];
  const stream = await store.replayEventsAfter(after, { send: async (id, m) => void got.push([id, m]) });
  return { stream, got };
}

describe('BoundedEventStore', () => {
  it("replays the events of the given event's stream that came after it, without priming events", async () => {
    const store = new BoundedEventStore();
    const primed = await store.storeEvent('a', {} as JSONRPCMessage);
    const a1 = await store.storeEvent('a', note(1));
    await store.storeEvent('b', note(2));
    const a3 = await store.storeEvent('a', note(3));
    expect(await store.getStreamIdForEventId(a1)).toBe('a');
    expect(await replay(store, primed)).toEqual({
      stream: 'a',
      got: [
        [a1, note(1)],
        [a3, note(3)],
      ],
    });
    expect((await replay(store, a1)).got).toEqual([[a3, note(3)]]);
    expect((await replay(store, a3)).got).toEqual([]);
    expect(await store.getStreamIdForEventId('nonsense')).toBeUndefined();
    await expect(replay(store, '12345')).rejects.toThrow(/no longer kept/);
  });

  it('keeps at most maxEvents, the newest', async () => {
    const store = new BoundedEventStore({ maxEvents: 3, maxBytes: 1e9, maxAgeMs: 1e9 });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await store.storeEvent('s', note(i)));
    expect(store.size.events).toBe(3);
    expect(await store.getStreamIdForEventId(ids[1]!)).toBeUndefined();
    expect((await replay(store, ids[2]!)).got.map(([, m]) => (m as unknown as { params: { n: number } }).params.n)).toEqual([3, 4]);
  });

  it('keeps at most maxBytes, but always the newest event', async () => {
    const store = new BoundedEventStore({ maxEvents: 100, maxBytes: 1_000, maxAgeMs: 1e9 });
    for (let i = 0; i < 4; i++) await store.storeEvent('s', note(i, 'x'.repeat(300)));
    expect(store.size.bytes).toBeLessThanOrEqual(1_000);
    expect(store.size.events).toBe(2);
    const big = await store.storeEvent('s', note(9, 'x'.repeat(5_000)));
    expect(store.size.events).toBe(1);
    expect(await store.getStreamIdForEventId(big)).toBe('s');
  });

  it('forgets events older than maxAgeMs', async () => {
    let now = 0;
    const store = new BoundedEventStore({ maxEvents: 100, maxBytes: 1e9, maxAgeMs: 1_000 }, () => now);
    const old = await store.storeEvent('s', note(1));
    now = 600;
    const young = await store.storeEvent('s', note(2));
    now = 1_200;
    expect(await store.getStreamIdForEventId(old)).toBeUndefined();
    expect(await store.getStreamIdForEventId(young)).toBe('s');
    now = 2_000;
    expect(store.size).toEqual({ events: 0, bytes: 0 });
  });
});
