// Where a request carries its API key: `service-api-key`, the header this interface names,
// or `anchor-api-key`, the one the hosted vendor's SDK, CLI and examples send, so that their
// code works unchanged. `service-api-key` is the primary: a request that carries both is
// read from it alone (the contract says so), as every request that worked before the alias
// still does: the README once told the vendor SDK's users to add it beside the SDK's own.

/** The headers a key is read from, in the order they are looked at. */
export const API_KEY_HEADERS = ['service-api-key', 'anchor-api-key'] as const;

export type ApiKeyHeader = (typeof API_KEY_HEADERS)[number];

/** The key a request carries and the header it came from; undefined when none is given (empty counts as none). */
export function apiKeyOf(header: (name: string) => string | null | undefined): { key: string; header: ApiKeyHeader } | undefined {
  for (const name of API_KEY_HEADERS) {
    const key = header(name);
    if (key) return { key, header: name };
  }
  return undefined;
}

/** The 401 message for a request without a usable key: which header was read, or where to send one. */
export function apiKeyRefusal(given: { header: ApiKeyHeader } | undefined, orElse = ''): string {
  return given
    ? `Invalid API key (read from the ${given.header} header)`
    : `Missing API key: send it in the service-api-key header (anchor-api-key is read too)${orElse}`;
}
