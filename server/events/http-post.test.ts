// postJson against a raw TCP receiver that controls exactly when it closes a kept-alive
// connection: the race the soak met (3 of 835 deliveries to an instant receiver failed
// with a reset, the receiver having closed an idle connection as the next request was
// sent on it) is made deterministic here.
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgents, postJson } from './http-post.js';

/**
 * A receiver that answers 204 to each request, except that `drop(connection, request)`
 * decides to close the connection instead, without an answer, when a request arrives.
 */
async function receiver(drop: (connection: number, request: number) => boolean): Promise<{ url: string; answered: () => number; server: Server }> {
  let connections = 0;
  let answered = 0;
  const server = createServer((socket: Socket) => {
    const connection = connections++;
    let requests = 0;
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length:\s*(\d+)/i.exec(buffered.subarray(0, end).toString())?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.subarray(end + 4 + length);
        if (drop(connection, requests++)) {
          socket.destroy();
          return;
        }
        answered++;
        socket.write('HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n');
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, answered: () => answered, server };
}

const options = (agents: ReturnType<typeof createAgents>) => ({
  timeoutMs: 5_000,
  maxResponseBytes: 1024,
  keepResponseBytes: 1024,
  allowPrivate: true,
  agents,
});

describe('postJson on kept-alive connections', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });

  it('sends a request again when the receiver closed the reused connection under it', async () => {
    // Connection 0 answers its first request and is closed when the second arrives.
    const r = await receiver((connection, request) => connection === 0 && request === 1);
    servers.push(r.server);
    const agents = createAgents();
    const first = await postJson(r.url, '{"n":1}', {}, options(agents));
    expect(first.ok).toBe(true);
    const second = await postJson(r.url, '{"n":2}', {}, options(agents));
    expect(second).toMatchObject({ ok: true, status: 204, error: null });
    expect(r.answered()).toBe(2);
    agents.http.destroy();
  });

  it('does not repeat a request whose fresh connection was closed: that is the receiver failing', async () => {
    const r = await receiver(() => true);
    servers.push(r.server);
    const agents = createAgents();
    const result = await postJson(r.url, '{}', {}, options(agents));
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/reset|hang up/i);
    expect(r.answered()).toBe(0);
    agents.http.destroy();
  });
});
