// Outbound requests made for a user (webhooks, web fetch, screenshots, initial URLs) must
// not reach private, loopback, link-local or otherwise non-public addresses unless the
// operator allows it (ALLOW_PRIVATE_NETWORKS). Two checks, both needed:
//  - assertPublicUrl: before accepting a URL (and before a request), resolve the host and
//    refuse if ANY address it resolves to is non-public;
//  - guardedLookup: a `lookup` for node:net / node:http that applies the same rule to the
//    addresses a connection actually uses, so DNS rebinding between the check and the
//    connection cannot slip through.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

export type UrlPolicyReason = 'invalid_url' | 'unsupported_scheme' | 'private_address' | 'unresolvable';

export class UrlPolicyError extends Error {
  constructor(
    readonly reason: UrlPolicyReason,
    message: string,
  ) {
    super(message);
    this.name = 'UrlPolicyError';
  }
}

export interface UrlPolicyOptions {
  /** true lets private, loopback and link-local targets through (the operator's choice). */
  allowPrivate: boolean;
  /** Schemes accepted; default http and https. */
  schemes?: readonly string[];
  /** Resolver, for tests; default node:dns lookup with all addresses. */
  resolve?: (hostname: string) => Promise<string[]>;
}

// [first address, prefix length, name]
const V4_BLOCKED: ReadonlyArray<readonly [string, number, string]> = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared address space (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V6_BLOCKED: ReadonlyArray<readonly [string, number, string]> = [
  ['::', 96, 'unspecified, loopback or IPv4-compatible'],
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:10::', 28, 'ORCHID'],
  ['2001:20::', 28, 'ORCHIDv2'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'segment routing SIDs'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

/** 32-bit value of a dotted IPv4 address, or null. */
export function parseIPv4(s: string): number | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

/** The eight 16-bit groups of an IPv6 address (zone id and brackets allowed), or null. */
export function parseIPv6(input: string): number[] | null {
  let s = input.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(':')) return null;
  // A trailing dotted IPv4 becomes two groups.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${((v4 >>> 16) & 0xffff).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parseGroups = (part: string): number[] | null => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = parseGroups(halves[0]);
  if (head === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const rest = parseGroups(halves[1]);
  if (rest === null || head.length + rest.length > 7) return null;
  return [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest];
}

function v4InRange(ip: number, base: string, prefix: number): boolean {
  const b = parseIPv4(base)!;
  if (prefix === 0) return true;
  const size = 2 ** (32 - prefix);
  return Math.floor(ip / size) === Math.floor(b / size);
}

function v6InRange(groups: number[], base: string, prefix: number): boolean {
  const b = parseIPv6(base)!;
  let bits = prefix;
  for (let i = 0; i < 8 && bits > 0; i++) {
    const take = Math.min(16, bits);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if ((groups[i] & mask) !== (b[i] & mask)) return false;
    bits -= take;
  }
  return true;
}

function v4Name(ip: number): string | null {
  for (const [base, prefix, name] of V4_BLOCKED) if (v4InRange(ip, base, prefix)) return `${name} (${base}/${prefix})`;
  return null;
}

/**
 * Why an IP address is not a public unicast address (a short description of its range),
 * or null when it is public. Unparseable input counts as blocked. IPv4-mapped IPv6
 * (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) are judged by the IPv4
 * address they carry.
 */
export function blockedRange(address: string): string | null {
  const v4 = parseIPv4(address);
  if (v4 !== null) return v4Name(v4);
  const g = parseIPv6(address);
  if (g === null) return 'not an IP address';
  const embedded = (hi: number, lo: number) => hi * 65536 + lo;
  // ::ffff:0:0/96, IPv4-mapped
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    const name = v4Name(embedded(g[6], g[7]));
    return name === null ? null : `IPv4-mapped ${name}`;
  }
  // ::ffff:0:0:0/96, IPv4-translated (SIIT)
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0xffff && g[5] === 0) {
    const name = v4Name(embedded(g[6], g[7]));
    return name === null ? null : `IPv4-translated ${name}`;
  }
  if (v6InRange(g, '64:ff9b::', 96)) {
    const name = v4Name(embedded(g[6], g[7]));
    return name === null ? null : `NAT64 ${name}`;
  }
  if (v6InRange(g, '2002::', 16)) {
    const name = v4Name(embedded(g[1], g[2]));
    return name === null ? null : `6to4 ${name}`;
  }
  for (const [base, prefix, name] of V6_BLOCKED) if (v6InRange(g, base, prefix)) return `${name} (${base}/${prefix})`;
  // Only global unicast (2000::/3) is public; everything else is reserved.
  if ((g[0] & 0xe000) !== 0x2000) return 'reserved (outside 2000::/3)';
  return null;
}

export function isPublicAddress(address: string): boolean {
  return blockedRange(address) === null;
}

/** The host of a URL without IPv6 brackets. */
export function urlHost(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

const defaultResolve = (hostname: string): Promise<string[]> =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => a.address));
    });
  });

/**
 * Parses `input`, checks its scheme, and unless `allowPrivate` resolves its host and checks
 * every address. Returns the parsed URL and the addresses checked (empty when allowed
 * without looking). Throws UrlPolicyError.
 */
export async function assertPublicUrl(input: string | URL, options: UrlPolicyOptions): Promise<{ url: URL; addresses: string[] }> {
  let url: URL;
  try {
    url = typeof input === 'string' ? new URL(input) : new URL(input.href);
  } catch {
    throw new UrlPolicyError('invalid_url', 'url must be an absolute URL');
  }
  const schemes = options.schemes ?? ['http', 'https'];
  const scheme = url.protocol.replace(/:$/, '');
  if (!schemes.includes(scheme)) {
    throw new UrlPolicyError('unsupported_scheme', `url must use ${schemes.join(' or ')}, not ${scheme}`);
  }
  const host = urlHost(url);
  if (host === '') throw new UrlPolicyError('invalid_url', 'url has no host');
  if (options.allowPrivate) return { url, addresses: [] };
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await (options.resolve ?? defaultResolve)(host);
    } catch {
      throw new UrlPolicyError('unresolvable', `host ${host} does not resolve`);
    }
    if (addresses.length === 0) throw new UrlPolicyError('unresolvable', `host ${host} does not resolve`);
  }
  for (const address of addresses) {
    const why = blockedRange(address);
    if (why !== null) {
      throw new UrlPolicyError('private_address', `host ${host} resolves to ${address}, a ${why} address; requests to private networks are not allowed`);
    }
  }
  return { url, addresses };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect / http.request that refuses non-public addresses at connection
 * time (unless allowPrivate). Handles both the single-address and the `all: true` forms.
 * IP-literal hosts never reach a lookup: check those with assertPublicUrl or blockedRange.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { family?: number | string; all?: boolean; hints?: number } | undefined, callback: LookupCallback) => {
    const opts = typeof options === 'object' && options !== null ? options : {};
    const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : typeof opts.family === 'number' ? opts.family : 0;
    dnsLookup(hostname, { family: family as 0 | 4 | 6, hints: opts.hints, all: true, verbatim: true }, (err, list) => {
      if (err) return callback(err, opts.all ? [] : '', undefined);
      if (!allowPrivate) {
        for (const a of list) {
          const why = blockedRange(a.address);
          if (why !== null) {
            const e: NodeJS.ErrnoException = new UrlPolicyError(
              'private_address',
              `host ${hostname} resolves to ${a.address}, a ${why} address; requests to private networks are not allowed`,
            );
            e.code = 'EPRIVATEADDRESS';
            return callback(e, opts.all ? [] : '', undefined);
          }
        }
      }
      if (list.length === 0) {
        const e: NodeJS.ErrnoException = new Error(`host ${hostname} does not resolve`);
        e.code = 'ENOTFOUND';
        return callback(e, opts.all ? [] : '', undefined);
      }
      if (opts.all) callback(null, list);
      else callback(null, list[0].address, list[0].family);
    });
  };
}
