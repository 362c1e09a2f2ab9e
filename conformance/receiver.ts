// A webhook receiver on the suite's fixture server, for rules that watch what the server
// under test sends: every POST to its path is recorded as received (headers, the raw body
// that signatures cover, the time), answered with the status the rule chooses (2xx to
// acknowledge, 500 to make the server retry), and a rule can wait for the deliveries it
// expects. The server under test reaches it at `url()`: the fixture server's address,
// http://127.0.0.1:PORT by default, or under --fixtures-url.
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FixtureServer } from './fixtures.js';

export interface ReceivedRequest {
  method: string;
  /** Header names in lower case; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  /** The body exactly as sent. */
  body: Buffer;
  /** The body as UTF-8 text. */
  text: string;
  /** The body parsed as JSON; undefined when it does not parse (see `jsonError`). */
  json?: unknown;
  jsonError?: string;
  /** Date.now() when it arrived. */
  receivedAt: number;
  /** The status the receiver answered. */
  answered: number;
}

/** The status to answer a request with: a number, or one chosen from the request. */
export type ReceiverAnswer = number | ((req: Omit<ReceivedRequest, 'answered'>, index: number) => number);

export interface ReceiverOptions {
  /** Part of the path, to tell receivers apart in logs. */
  name?: string;
  /** Default 204. */
  status?: ReceiverAnswer;
}

export function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export class Receiver {
  readonly path: string;
  readonly received: ReceivedRequest[] = [];
  private readonly listeners = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly fixtures: FixtureServer,
    private readonly options: ReceiverOptions = {},
  ) {
    const name = (options.name ?? 'hook').replace(/[^A-Za-z0-9_-]/g, '-');
    this.path = `/conformance/receiver/${name}-${randomBytes(6).toString('hex')}`;
    fixtures.route('POST', this.path, (req, res, body) => {
      const text = body.toString('utf8');
      let json: unknown;
      let jsonError: string | undefined;
      try {
        json = JSON.parse(text);
      } catch (err) {
        jsonError = (err as Error).message;
      }
      const got = { method: req.method ?? 'POST', headers: flattenHeaders(req.headers), body, text, json, jsonError, receivedAt: Date.now() };
      const choice = this.options.status ?? 204;
      const status = typeof choice === 'function' ? choice(got, this.received.length) : choice;
      this.received.push({ ...got, answered: status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status >= 200 && status < 300 ? '' : 'conformance receiver: failing on purpose');
      for (const listener of [...this.listeners]) listener();
    });
  }

  /** The receiver's address as the server under test reaches it. */
  url(): Promise<string> {
    return this.fixtures.url(this.path);
  }

  /** The requests received so far that `match` accepts. */
  matching(match: (r: ReceivedRequest) => boolean = () => true): ReceivedRequest[] {
    return this.received.filter(match);
  }

  /**
   * Resolves with the first `count` requests `match` accepts once that many have arrived
   * (those received already count), or with as many as arrived by `timeoutMs`.
   */
  waitFor(match: (r: ReceivedRequest) => boolean, timeoutMs: number, count = 1): Promise<ReceivedRequest[]> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve(this.matching(match).slice(0, count));
      };
      const check = () => {
        if (this.matching(match).length >= count) done();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      this.listeners.add(check);
      check();
    });
  }

  /** Stops receiving: the path answers 404 from now on. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.fixtures.unroute('POST', this.path);
  }
}
