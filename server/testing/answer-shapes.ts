// Compares a real answer with the fields the vendor's SDK declares for it (sdk-shapes.ts):
// a declared field the answer lacks is a field the SDK's user reads as empty. An optional
// field may be absent from one answer only when our contract has it at the same place (an
// `ended_at` of a running session); a field the contract has elsewhere, or not at all, is a
// difference, and names where the answer has a field of that name instead.
import { deref, type JsonObject } from '../http/spec.js';
import type { DeclaredField, JsonKind } from './sdk-shapes.js';

interface Segment {
  name: string;
  array: boolean;
  /** Only the array's elements whose `type` is this. */
  tag?: string;
}

function segments(path: string): Segment[] {
  return path.split('.').map((s) => {
    const m = /^([^[{]*)(\[\])?(?:\{type=([^}]+)\})?$/.exec(s)!;
    return { name: m[1]!, array: m[2] !== undefined, tag: m[3] };
  });
}

/** How many of the answer's nodes at the parent of a path there are, which lack the last segment, and the values of those that have it. */
function present(answer: unknown, path: Segment[]): { checked: number; missing: number; values: unknown[] } {
  let nodes: unknown[] = [answer];
  for (const [i, seg] of path.entries()) {
    const last = i === path.length - 1;
    const objects = nodes.filter((n): n is Record<string, unknown> => typeof n === 'object' && n !== null && !Array.isArray(n));
    if (last) {
      const having = objects.filter((o) => seg.name in o);
      return { checked: objects.length, missing: objects.length - having.length, values: having.map((o) => o[seg.name]) };
    }
    // A missing parent is the parent's own difference.
    nodes = objects
      .filter((o) => seg.name in o)
      .flatMap((o) => {
        const v = o[seg.name];
        if (!seg.array) return [v];
        const items = Array.isArray(v) ? v : [];
        return seg.tag === undefined ? items : items.filter((e) => (e as { type?: unknown })?.type === seg.tag);
      });
  }
  return { checked: 0, missing: 0, values: [] };
}

function kindOfValue(value: unknown): JsonKind | 'null' {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value as JsonKind;
}

/** Whether a response schema of the contract has a field at this path. */
export function contractHas(spec: JsonObject, schema: JsonObject | undefined, path: string): boolean {
  let nodes: JsonObject[] = schema ? [schema] : [];
  for (const seg of segments(path)) {
    nodes = nodes
      .flatMap((n) => alternatives(spec, n))
      .flatMap((n) => {
        const prop = n.properties?.[seg.name];
        return prop ? [deref(spec, prop)] : [];
      });
    if (seg.array) nodes = nodes.flatMap((n) => alternatives(spec, n)).flatMap((n) => (n.items ? [deref(spec, n.items)] : []));
    if (nodes.length === 0) return false;
  }
  return true;
}

/** A schema and the members of its allOf, oneOf and anyOf, $refs followed. */
function alternatives(spec: JsonObject, schema: JsonObject): JsonObject[] {
  const s = deref(spec, schema);
  const members = [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])] as JsonObject[];
  return [s, ...members.flatMap((m) => alternatives(spec, m))];
}

/** Every key path of a JSON value, arrays as `[]`. */
function keyPaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return [...new Set(value.flatMap((v) => keyPaths(v, `${prefix}[]`)))];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const p = prefix ? `${prefix}.${k}` : k;
    return [p, ...keyPaths(v, p)];
  });
}

export interface ShapeReport {
  /** Declared fields the answer lacks, each with where a field of its name is instead, if anywhere. */
  differences: string[];
  /** Declared fields no answer could show: inside an empty array, or under an absent optional parent. */
  unchecked: string[];
}

export function compareAnswer(spec: JsonObject, schema: JsonObject | undefined, declared: DeclaredField[], answer: unknown): ShapeReport {
  const differences: string[] = [];
  const unchecked: string[] = [];
  const paths = keyPaths(answer);
  for (const field of declared) {
    const { checked, missing, values } = present(answer, segments(field.path));
    if (checked === 0) {
      unchecked.push(field.path);
      continue;
    }
    // null reads as empty, as an absent field does; a value of another kind breaks the reader.
    const kinds = new Set(values.map(kindOfValue).filter((k) => k !== 'null'));
    if (field.kind && field.kind !== 'any' && [...kinds].some((k) => k !== field.kind)) {
      differences.push(`${field.path} is ${[...kinds].join(' or ')}, declared ${field.kind}`);
    }
    if (missing === 0) continue;
    if (field.optional && contractHas(spec, schema, field.path)) continue;
    const leaf = segments(field.path).at(-1)!.name;
    const elsewhere = paths.filter((p) => p === leaf || p.endsWith(`.${leaf}`));
    differences.push(`${field.path}${field.optional ? '?' : ''} missing${elsewhere.length ? ` (answered at ${elsewhere.join(', ')})` : ''}`);
  }
  return { differences, unchecked };
}
