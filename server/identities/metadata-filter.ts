// The `metadata` filter of the identity lists. It comes in two forms: `metadata[key]=value`
// pairs (the contract's deepObject style, which the generic query reader leaves as they
// came), and the JSON text of an object, `metadata={"key":"value"}`, which is how the
// vendor's SDKs send it (their type is a string).

/** A filter the query asked for, none, or why the query's metadata is refused. */
export type MetadataFilter = { ok: true; value: Record<string, unknown> | undefined } | { ok: false; message: string };

export function metadataFilter(query: Record<string, unknown>): MetadataFilter {
  if (typeof query.metadata === 'string') return fromJson(query.metadata);
  const pairs: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    const m = /^metadata\[(.+)\]$/.exec(name);
    if (m && typeof value === 'string') pairs[m[1]!] = value;
  }
  return { ok: true, value: Object.keys(pairs).length ? pairs : undefined };
}

function fromJson(text: string): MetadataFilter {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { ok: false, message: 'query/metadata must be an object: metadata[key]=value pairs, or the JSON text of an object' };
  }
  return { ok: true, value: Object.keys(parsed).length ? (parsed as Record<string, unknown>) : undefined };
}
