// The order rules of a composition, as data. The type check already orders a capability
// after those whose services it takes; what it cannot see is an order that matters only
// through the order compose() derives: session hooks (`ending` runs in reverse, so a
// capability composed first ends last), starts, and a dead node's take-over. The assembly
// states each such rule once, with its reason, and the composition refuses to build
// against it, so that moving a line of the list cannot quietly break one.
import type { AnyCapability } from './contract.js';

/** A capability's factory, as a rule names it: the function the list adds. */
export type AnyFactory = (deps: never) => unknown;

/** A part a capability may have (a rule may name every capability that has it). */
export type Part = Exclude<keyof AnyCapability, 'name'>;

export interface OrderRule {
  /** Composed before every one of `then`: these capabilities, or every capability that has this part. */
  readonly first: readonly AnyFactory[] | { readonly everyWith: Part };
  readonly then: readonly AnyFactory[];
  /** What breaks otherwise; said when the rule is broken. */
  readonly why: string;
}

/** A composed capability and the factory that made it. */
export interface Placed {
  readonly factory: AnyFactory;
  readonly capability: AnyCapability;
}

/** Throws at the first rule the list breaks, or that names a capability the list lacks. */
export function checkOrder(list: readonly Placed[], rules: readonly OrderRule[]): void {
  const place = (f: AnyFactory) => {
    const i = list.findIndex((p) => p.factory === f);
    if (i < 0) throw new Error(`An order rule names ${f.name || 'a factory'}, which is not composed (${rules.find((r) => named(r).includes(f))?.why})`);
    return i;
  };
  for (const rule of rules) {
    const thens = rule.then.map(place);
    const firsts = 'everyWith' in rule.first ? withPart(list, rule.first.everyWith, thens) : rule.first.map(place);
    for (const t of thens)
      for (const f of firsts) if (f >= t) throw new Error(`${list[t]!.capability.name} must be composed after ${list[f]!.capability.name}: ${rule.why}`);
  }
}

const named = (r: OrderRule) => [...('everyWith' in r.first ? [] : r.first), ...r.then];

/** Where the capabilities with `part` stand, those the rule orders after them excepted. */
function withPart(list: readonly Placed[], part: Part, except: number[]): number[] {
  return list.flatMap((p, i) => (p.capability[part] !== undefined && !except.includes(i) ? [i] : []));
}
