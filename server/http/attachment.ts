// The Content-Disposition of a file a client downloads from the API (a fetched page's file,
// a session's download), so that every such answer names its file the same way.

/** `attachment; filename="…"`, with an RFC 5987 form for names outside ASCII. */
export function attachmentHeader(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const header = `attachment; filename="${ascii}"`;
  return ascii === name ? header : `${header}; filename*=UTF-8''${encodeURIComponent(name)}`;
}
