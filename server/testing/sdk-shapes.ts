// What the vendor's TypeScript SDK (npm anchorbrowser) declares each of its methods
// answers, read from its .d.ts files with the TypeScript compiler: the SDK is generated
// from the vendor's OpenAPI, so its response interfaces are the shapes its users read. Every
// method of every resource is listed, so a test over them misses none when the SDK grows.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/**
 * A field the SDK declares, by its path in the answer: `data.items[].id`; a field of one
 * member of a union told apart by its `type` names that member: `credentials[]{type=custom}.fields`.
 */
export interface DeclaredField {
  path: string;
  optional: boolean;
  /** The JSON kind of its value; `any` for unknown, a union of kinds, or a literal union. */
  kind?: JsonKind;
}

export type JsonKind = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'any';

/** What a method answers: JSON with these fields, a bare string, or a binary Response. */
export type DeclaredAnswer = { kind: 'json'; fields: DeclaredField[] } | { kind: 'text' } | { kind: 'binary' };

/** Every SDK method that calls the API (`sessions.mouse.click`), with what it declares it answers. */
export function sdkMethods(): Map<string, DeclaredAnswer> {
  const require = createRequire(import.meta.url);
  const root = join(dirname(require.resolve('anchorbrowser')), 'index.d.ts');
  const program = ts.createProgram([root], { strict: true, noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(root)!;
  const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
  const client = exported.find((s) => s.name === 'default') ?? exported.find((s) => s.name === 'Anchorbrowser')!;
  const clientType = checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(client));

  const methods = new Map<string, DeclaredAnswer>();
  const walkResource = (type: ts.Type, prefix: string) => {
    for (const prop of checker.getPropertiesOfType(type)) {
      if (prop.name.startsWith('_')) continue;
      const decl = prop.valueDeclaration ?? prop.declarations?.[0];
      if (!decl) continue;
      const propType = checker.getTypeOfSymbolAtLocation(prop, decl);
      const name = prefix ? `${prefix}.${prop.name}` : prop.name;
      if (isResource(checker, propType)) {
        walkResource(propType, name);
        continue;
      }
      const signature = propType.getCallSignatures()[0];
      if (!signature || !prefix) continue;
      const returned = checker.getReturnTypeOfSignature(signature);
      // Only the methods that answer an API call (APIPromise<T>); the helpers (browser.connect,
      // agent.task) compose those and answer other things.
      if (returned.getSymbol()?.name !== 'APIPromise') continue;
      const answer = checker.getTypeArguments(returned as ts.TypeReference)[0]!;
      methods.set(name, describe(checker, answer));
    }
  };
  walkResource(clientType, '');
  return methods;
}

function isResource(checker: ts.TypeChecker, type: ts.Type): boolean {
  const base = type.getSymbol()?.valueDeclaration;
  if (!base || !ts.isClassDeclaration(base)) return false;
  return (checker.getBaseTypes(type as ts.InterfaceType) ?? []).some((b) => b.getSymbol()?.name === 'APIResource');
}

function describe(checker: ts.TypeChecker, type: ts.Type): DeclaredAnswer {
  if (type.flags & ts.TypeFlags.String) return { kind: 'text' };
  if (type.getSymbol()?.name === 'Response') return { kind: 'binary' };
  const fields: DeclaredField[] = [];
  collect(checker, type, '', fields, new Set());
  return { kind: 'json', fields };
}

function collect(checker: ts.TypeChecker, type: ts.Type, prefix: string, out: DeclaredField[], seen: Set<ts.Type>): void {
  for (const [tag, member] of taggedMembers(checker, type)) collect(checker, member, `${prefix}{type=${tag}}`, out, seen);
  const object = objectPart(checker, type);
  if (!object || seen.has(object)) return;
  if (checker.isArrayType(object)) {
    collect(checker, checker.getTypeArguments(object as ts.TypeReference)[0]!, `${prefix}[]`, out, seen);
    return;
  }
  // A map ({[key: string]: unknown}) names no field.
  seen.add(object);
  for (const prop of checker.getPropertiesOfType(object)) {
    const decl = prop.valueDeclaration ?? prop.declarations?.[0];
    if (!decl) continue;
    const path = prefix ? `${prefix}.${prop.name}` : prop.name;
    const propType = checker.getTypeOfSymbolAtLocation(prop, decl);
    out.push({ path, optional: (prop.flags & ts.SymbolFlags.Optional) !== 0, kind: kindOf(checker, propType) });
    collect(checker, propType, path, out, seen);
  }
  seen.delete(object);
}

function kindOf(checker: ts.TypeChecker, type: ts.Type): JsonKind {
  const parts = type.isUnion() ? type.types.filter((t) => !(t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined))) : [type];
  const kinds = new Set(
    parts.map((t): JsonKind => {
      if (t.flags & ts.TypeFlags.StringLike) return 'string';
      if (t.flags & ts.TypeFlags.NumberLike) return 'number';
      if (t.flags & ts.TypeFlags.BooleanLike) return 'boolean';
      if (checker.isArrayType(t)) return 'array';
      if (t.flags & ts.TypeFlags.Object) return 'object';
      return 'any';
    }),
  );
  return kinds.size === 1 ? [...kinds][0]! : 'any';
}

/** The members of a union of objects each with a literal `type` (the SDK's credential kinds), by that type. */
function taggedMembers(checker: ts.TypeChecker, type: ts.Type): [string, ts.Type][] {
  if (!type.isUnion()) return [];
  const members = type.types.filter((t) => !(t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined)));
  const tagged = members.map((m): [string, ts.Type] | undefined => {
    const tag = m.getProperty('type');
    const tagType = tag && checker.getTypeOfSymbolAtLocation(tag, tag.valueDeclaration ?? tag.declarations![0]!);
    return tagType?.isStringLiteral() ? [tagType.value, m] : undefined;
  });
  return members.length > 1 && tagged.every((t) => t !== undefined) ? (tagged as [string, ts.Type][]) : [];
}

/** The object (or array) a declared type stands for, without null and undefined; none for a scalar or unknown. */
function objectPart(checker: ts.TypeChecker, type: ts.Type): ts.Type | undefined {
  const parts = type.isUnion() ? type.types.filter((t) => !(t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined))) : [type];
  const objects = parts.filter((t) => t.flags & ts.TypeFlags.Object);
  // A union of several object shapes declares fields that only some answers carry; none of the
  // SDK's response types has one today.
  if (objects.length !== 1 || parts.length !== 1) return undefined;
  return objects[0];
}
