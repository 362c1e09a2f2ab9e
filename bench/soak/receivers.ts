// The soak's webhook receivers, one local HTTP server: /fast answers every delivery at once
// and keeps what it received; /hang answers half of its deliveries after the server's
// delivery deadline (10 s) and never answers the other half, holding the connection open
// until the soak ends, as a receiver that has stopped working does.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface Received {
  /** webhook-id header: the event id. */
  webhookId: string;
  id: string;
  type: string;
  sessionId: string | undefined;
}

export interface Receivers {
  fastUrl: string;
  hangUrl: string;
  received: Received[];
  hung: () => { answeredLate: number; neverAnswered: number };
  /** Connections open to the receivers now (a delivery never answered holds one). */
  open: () => number;
  close(): Promise<void>;
}

const LATE_MS = 12_000;

export async function startReceivers(): Promise<Receivers> {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let hangCount = 0;
  let answeredLate = 0;
  let neverAnswered = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/fast') {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; type: string; data?: { session_id?: string } };
          received.push({ webhookId: String(req.headers['webhook-id'] ?? ''), id: body.id, type: body.type, sessionId: body.data?.session_id });
        } catch {
          received.push({ webhookId: String(req.headers['webhook-id'] ?? ''), id: '', type: 'unparseable', sessionId: undefined });
        }
        res.writeHead(204).end();
      } else if (req.url === '/hang') {
        if (hangCount++ % 2 === 0) {
          answeredLate++;
          const t = setTimeout(() => {
            timers.delete(t);
            if (!res.destroyed) res.writeHead(200).end();
          }, LATE_MS);
          timers.add(t);
        } else {
          neverAnswered++; // the request stays open until close()
        }
      } else {
        res.writeHead(404).end();
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    fastUrl: `http://127.0.0.1:${port}/fast`,
    hangUrl: `http://127.0.0.1:${port}/hang`,
    received,
    hung: () => ({ answeredLate, neverAnswered }),
    open: () => sockets.size,
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
