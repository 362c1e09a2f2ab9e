// A tiny SOCKS5 proxy for tests (RFC 1928 CONNECT, with RFC 1929 user name and password when
// asked for): no dependency of the project serves SOCKS, and the traffic proxy's SOCKS
// upstreams and the service proxy pool need a real one to go through. It records what each
// connection asked for and the first line the client sent through it (the request line of
// plain HTTP), so a test can tell whose traffic it carried.
import net, { type AddressInfo } from 'node:net';

export interface Socks5Connection {
  /** host:port as asked (a name is not resolved by the client: socks5h). */
  destination: string;
  username?: string;
  /** The destination answered: the tunnel opened. */
  opened: boolean;
  /** The first line sent through the tunnel once open (for plain HTTP, its request line). */
  firstLine?: string;
}

export interface Socks5Server {
  port: number;
  /** socks5://user:pass@127.0.0.1:port (credentials when the server asks for them). */
  url: string;
  connections: Socks5Connection[];
  /** Bytes this server exchanged with its clients, both ways. */
  bytes(): number;
  close(): Promise<void>;
}

export async function startSocks5Server(options: { username?: string; password?: string } = {}): Promise<Socks5Server> {
  const connections: Socks5Connection[] = [];
  const sockets = new Set<net.Socket>();
  let closedBytes = 0;
  const auth = options.username !== undefined;

  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => {
      sockets.delete(client);
      closedBytes += client.bytesRead + client.bytesWritten;
    });
    client.on('error', () => undefined);
    let buffer = Buffer.alloc(0);
    let stage: 'greeting' | 'auth' | 'request' | 'open' = 'greeting';
    let username: string | undefined;

    const take = (): void => {
      if (stage === 'greeting') {
        if (buffer.length < 2 || buffer.length < 2 + buffer[1]) return;
        const methods = [...buffer.subarray(2, 2 + buffer[1])];
        buffer = buffer.subarray(2 + buffer[1]);
        const method = auth ? 0x02 : 0x00;
        if (!methods.includes(method)) {
          client.end(Buffer.from([0x05, 0xff]));
          return;
        }
        client.write(Buffer.from([0x05, method]));
        stage = auth ? 'auth' : 'request';
        return take();
      }
      if (stage === 'auth') {
        if (buffer.length < 2) return;
        const ulen = buffer[1];
        if (buffer.length < 3 + ulen) return;
        const plen = buffer[2 + ulen];
        if (buffer.length < 3 + ulen + plen) return;
        username = buffer.subarray(2, 2 + ulen).toString();
        const password = buffer.subarray(3 + ulen, 3 + ulen + plen).toString();
        buffer = buffer.subarray(3 + ulen + plen);
        if (username !== options.username || password !== options.password) {
          client.end(Buffer.from([0x01, 0x01]));
          return;
        }
        client.write(Buffer.from([0x01, 0x00]));
        stage = 'request';
        return take();
      }
      if (stage === 'request') {
        if (buffer.length < 5) return;
        const type = buffer[3];
        let host: string;
        let end: number;
        if (type === 0x01) {
          end = 4 + 4;
          if (buffer.length < end + 2) return;
          host = [...buffer.subarray(4, 8)].join('.');
        } else if (type === 0x03) {
          end = 5 + buffer[4];
          if (buffer.length < end + 2) return;
          host = buffer.subarray(5, end).toString();
        } else if (type === 0x04) {
          end = 4 + 16;
          if (buffer.length < end + 2) return;
          host = (buffer.subarray(4, 20).toString('hex').match(/.{4}/g) ?? []).join(':');
        } else {
          client.destroy();
          return;
        }
        const port = buffer.readUInt16BE(end);
        const rest = buffer.subarray(end + 2);
        buffer = Buffer.alloc(0);
        stage = 'open';
        const record: Socks5Connection = { destination: `${host}:${port}`, ...(username !== undefined ? { username } : {}), opened: false };
        connections.push(record);
        const upstream = net.connect({ host, port });
        upstream.on('error', () => {
          // 0x05: connection refused.
          if (client.writable) client.end(Buffer.from([0x05, 0x05, 0x00, 0x01, 0, 0, 0, 0, 0, 0]));
        });
        upstream.once('connect', () => {
          record.opened = true;
          client.write(Buffer.from([0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0, 0]));
          const firstData = (chunk: Buffer) => {
            record.firstLine ??= chunk.toString('latin1').split('\r\n')[0];
          };
          client.once('data', firstData);
          if (rest.length) {
            firstData(rest);
            upstream.write(rest);
          }
          client.pipe(upstream);
          upstream.pipe(client);
          client.on('close', () => upstream.destroy());
          upstream.on('close', () => client.destroy());
        });
      }
    };

    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      take();
      if (stage === 'open') {
        // Held until the tunnel is open (pipe() resumes it); nothing is sent before the reply anyway.
        client.off('data', onData);
        client.pause();
      }
    };
    client.on('data', onData);
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const credentials = auth ? `${encodeURIComponent(options.username!)}:${encodeURIComponent(options.password ?? '')}@` : '';
  return {
    port,
    url: `socks5://${credentials}127.0.0.1:${port}`,
    connections,
    bytes: () => {
      let n = closedBytes;
      for (const s of sockets) n += s.bytesRead + s.bytesWritten;
      return n;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
