// A DNS lookup pinned to addresses already resolved and checked by the address policy:
// a connection made with it goes to exactly what the policy saw, so DNS rebinding between
// the check and the connection cannot slip through.
import type { LookupAddress, lookup as dnsLookupFn } from 'node:dns';
import net from 'node:net';

export type LookupFunction = typeof dnsLookupFn;

/**
 * A `lookup` that answers with addresses already resolved and checked, whatever name it is
 * asked about: the connection goes to exactly what the policy saw.
 */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const list: LookupAddress[] = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
  const fn = (
    hostname: string,
    options: unknown,
    callback?: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    let opts: { family?: number | string; all?: boolean } = {};
    let cb = callback;
    if (typeof options === 'function') cb = options as typeof callback;
    else if (typeof options === 'number') opts = { family: options };
    else if (typeof options === 'object' && options !== null) opts = options as typeof opts;
    const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : typeof opts.family === 'number' ? opts.family : 0;
    const matches = family === 4 || family === 6 ? list.filter((a) => a.family === family) : list;
    process.nextTick(() => {
      if (!cb) return;
      if (matches.length === 0) {
        const err: NodeJS.ErrnoException = new Error(`host ${hostname} has no usable checked address`);
        err.code = 'ENOTFOUND';
        cb(err, opts.all ? [] : '', undefined);
      } else if (opts.all) {
        cb(
          null,
          matches.map((a) => ({ ...a })),
        );
      } else {
        cb(null, matches[0].address, matches[0].family);
      }
    });
  };
  return fn as unknown as LookupFunction;
}
