// The service proxy pool: the operator's upstream proxies (config/service-proxy-pool.ts
// reads them from SERVICE_PROXY_POOL), one of which a session asking for a service proxy is
// given, by country_code, region and city.
//
// Health is judged on TCP connects, the one thing every scheme shares and the failure that
// makes a proxy useless: a pick connects to its candidate first, and a candidate whose
// connect fails is rested (left out of picks) for REST_MS while the next match is tried. A
// session whose proxy fails later keeps it (its exit address does not change under its
// pages: sites tie logins and challenges to it), and its traffic proxy reports the failed
// connects here; the report is checked with a connect of our own before the proxy is
// rested, so a connection the browser dropped on its own does not rest a healthy proxy.
// Sessions created meanwhile get the next healthy match.
//
// Picks go round the matches (the least recently picked first), so sessions spread over the
// proxies of a country. A preferred id (a profile's sticky proxy) comes first while it
// matches and is healthy.
import net from 'node:net';
import type { Logger } from 'pino';
import type { ServiceProxyEntry } from '../config/service-proxy-pool.js';

export type { ServiceProxyEntry };

/** What a session asks for; every field given must match (names without regard to case). */
export interface ServiceProxyCriteria {
  country_code?: string;
  region?: string;
  city?: string;
}

export type ServiceProxyPick =
  | { ok: true; proxy: ServiceProxyEntry }
  /** 400: no pool, or nothing in it for what was asked, whatever the proxies' health. */
  | { ok: false; status: 400; message: string }
  /** 503: there are matches, but every one is resting. */
  | { ok: false; status: 503; message: string; retryAfterSeconds: number };

/**
 * How long a proxy whose connect failed is left out of picks. A minute: long enough that a
 * burst of sessions does not each wait out a dead proxy's connect (up to PROBE_TIMEOUT_MS),
 * short enough that a proxy back from a restart or a network blip takes sessions again soon.
 */
export const REST_MS = 60_000;
/** Longest wait for a TCP connect to a proxy before it counts as failed. */
export const PROBE_TIMEOUT_MS = 3_000;
/**
 * A session's report of a failed connect is not checked again within this long of a connect
 * of ours that succeeded: a page with many failing requests reports each, and the proxy
 * would get a connect of ours for every one.
 */
const REPORT_QUIET_MS = 2_000;
/** Most names listed in a 400's "the pool offers". */
const MAX_OFFERS = 20;

export const NO_POOL_MESSAGE =
  'Service proxies are not available: the operator of this server has not configured a proxy pool (SERVICE_PROXY_POOL); use a proxy of type custom';

interface Health {
  /** Left out of picks until then (ms since the epoch); 0 when not resting. */
  restUntil: number;
  /** Last successful connect. */
  okAt: number;
  lastPicked: number;
  probing?: Promise<boolean>;
}

export interface ServiceProxyPoolOptions {
  log: Logger;
  /** Tests shorten these. */
  restMs?: number;
  probeTimeoutMs?: number;
}

export class ServiceProxyPool {
  /** false: the operator configured no pool. */
  readonly configured: boolean;
  private readonly entries: readonly ServiceProxyEntry[];
  private readonly health = new Map<string, Health>();
  private readonly restMs: number;
  private readonly probeTimeoutMs: number;
  private readonly log: Logger;
  /** Order of picks with equal lastPicked: the file's. */
  private picks = 0;

  /** entries undefined: the operator configured no pool. */
  constructor(entries: readonly ServiceProxyEntry[] | undefined, o: ServiceProxyPoolOptions) {
    this.entries = entries ?? [];
    this.configured = entries !== undefined;
    this.restMs = o.restMs ?? REST_MS;
    this.probeTimeoutMs = o.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
    this.log = o.log.child({ component: 'service-proxies' });
    for (const e of this.entries) this.health.set(e.id, { restUntil: 0, okAt: 0, lastPicked: 0 });
    if (this.configured) {
      this.log.info({ proxies: this.entries.length, countries: distinct(this.entries.map((e) => e.country_code)) }, 'service proxy pool loaded');
    }
  }

  get(id: string): ServiceProxyEntry | undefined {
    return this.entries.find((e) => e.id === id);
  }

  /** Whether the proxy is left out of picks now. */
  resting(id: string): boolean {
    return (this.health.get(id)?.restUntil ?? 0) > Date.now();
  }

  /** Why no proxy of the pool can serve these criteria, whatever their health (the 400's message); undefined when some can. */
  refusal(criteria: ServiceProxyCriteria): string | undefined {
    if (!this.configured) return NO_POOL_MESSAGE;
    if (this.entries.some((e) => matches(e, criteria))) return undefined;
    return `No service proxy for ${describe(criteria)}; ${this.offers(criteria)}`;
  }

  /**
   * A healthy proxy matching the criteria, `prefer` first when it matches; or why not. Each
   * candidate is connected to first, and rested when that fails.
   */
  async pick(criteria: ServiceProxyCriteria, options: { prefer?: string } = {}): Promise<ServiceProxyPick> {
    const refused = this.refusal(criteria);
    if (refused) return { ok: false, status: 400, message: refused };
    const candidates = this.entries
      .map((entry, index) => ({ entry, index, health: this.health.get(entry.id)! }))
      .filter((c) => matches(c.entry, criteria))
      .sort(
        (a, b) =>
          Number(b.entry.id === options.prefer) - Number(a.entry.id === options.prefer) || a.health.lastPicked - b.health.lastPicked || a.index - b.index,
      );
    for (const c of candidates) {
      if (c.health.restUntil > Date.now()) continue;
      if (await this.healthy(c.entry)) {
        c.health.lastPicked = ++this.picks;
        return { ok: true, proxy: c.entry };
      }
    }
    const wakes = Math.min(...candidates.map((c) => c.health.restUntil));
    const retryAfterSeconds = Math.max(1, Math.ceil((wakes - Date.now()) / 1000));
    const n = candidates.length;
    return {
      ok: false,
      status: 503,
      message:
        `No healthy service proxy for ${describe(criteria)} right now: ${n === 1 ? 'its proxy' : `its ${n} proxies`} in the pool ` +
        `failed ${n === 1 ? 'its' : 'their'} last connects; try again in ${retryAfterSeconds} s`,
      retryAfterSeconds,
    };
  }

  /**
   * A session's connect to this proxy failed (its traffic proxy says so). Checked with a
   * connect of our own, which rests the proxy when it fails too; a proxy already resting or
   * being checked, or checked moments ago, is left as it is.
   */
  reportFailure(id: string): void {
    const entry = this.get(id);
    const h = this.health.get(id);
    if (!entry || !h || h.probing || h.restUntil > Date.now() || Date.now() - h.okAt < REPORT_QUIET_MS) return;
    void this.healthy(entry, 'a session could not connect to it');
  }

  /** Connects to the proxy (one connect at a time per proxy); rests it when that fails. */
  private healthy(entry: ServiceProxyEntry, why?: string): Promise<boolean> {
    const h = this.health.get(entry.id)!;
    h.probing ??= connectProbe(entry, this.probeTimeoutMs)
      .then((failure) => {
        if (failure === undefined) {
          h.okAt = Date.now();
          return true;
        }
        h.restUntil = Date.now() + this.restMs;
        // The label has no credentials; the URL is never logged.
        this.log.warn(
          { serviceProxy: entry.label, id: entry.id, failure, restSeconds: Math.round(this.restMs / 1000), ...(why ? { why } : {}) },
          'service proxy failed a connect; resting it',
        );
        return false;
      })
      .finally(() => {
        h.probing = undefined;
      });
    return h.probing;
  }

  /** "the pool offers …" at the first level (country, region, city) where nothing matched. */
  private offers(c: ServiceProxyCriteria): string {
    let pool = this.entries;
    const levels = [
      ['country_code', (e: ServiceProxyEntry) => e.country_code],
      ['region', (e: ServiceProxyEntry) => e.region],
      ['city', (e: ServiceProxyEntry) => e.city],
    ] as const;
    const within: string[] = [];
    for (const [field, value] of levels) {
      const asked = c[field];
      if (asked === undefined) continue;
      const narrowed = pool.filter((e) => same(value(e), asked));
      if (narrowed.length === 0) {
        const names = distinct(pool.map(value).filter((v): v is string => v !== undefined));
        const where = within.length ? `for ${within.join(', ')} ` : '';
        if (names.length === 0) return `${where}the pool has no proxy with a ${field}`;
        const shown = names.slice(0, MAX_OFFERS).join(', ') + (names.length > MAX_OFFERS ? ` and ${names.length - MAX_OFFERS} more` : '');
        return `${where}the pool offers ${field} ${shown}`;
      }
      within.push(`${field}=${asked}`);
      pool = narrowed;
    }
    return 'the pool offers none';
  }
}

function same(a: string | undefined, b: string): boolean {
  return a !== undefined && a.toLowerCase() === b.trim().toLowerCase();
}

function matches(e: ServiceProxyEntry, c: ServiceProxyCriteria): boolean {
  return (
    (c.country_code === undefined || same(e.country_code, c.country_code)) &&
    (c.region === undefined || same(e.region, c.region)) &&
    (c.city === undefined || same(e.city, c.city))
  );
}

function describe(c: ServiceProxyCriteria): string {
  const parts = (['country_code', 'region', 'city'] as const).filter((k) => c[k] !== undefined).map((k) => `${k}=${c[k]}`);
  return parts.length ? parts.join(', ') : 'any country';
}

function distinct(values: string[]): string[] {
  const byKey = new Map<string, string>();
  for (const v of values) if (!byKey.has(v.toLowerCase())) byKey.set(v.toLowerCase(), v);
  return [...byKey.values()].sort((a, b) => a.localeCompare(b));
}

/** Opens a TCP connection to the proxy and closes it: undefined when it connected, else why not. */
function connectProbe(entry: ServiceProxyEntry, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: entry.host, port: entry.port });
    const done = (failure: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(failure);
    };
    const timer = setTimeout(() => done(`no connection within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}
