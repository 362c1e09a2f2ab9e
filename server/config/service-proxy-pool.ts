// The operator's pool of upstream proxies for sessions that ask for a service proxy: a JSON
// or YAML file named by SERVICE_PROXY_POOL, an array of {url, country_code, region?, city?}.
// It is read and checked once, at start, with the other configuration, so a bad entry
// stops the server with a message naming the entry and its problem instead of failing a
// session later. The URLs may hold credentials: no message here ever repeats a URL as
// written, only its scheme, host and port.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml, YAMLParseError } from 'yaml';

export interface ServiceProxyEntry {
  /**
   * Stable across restarts and reordering of the file: derived from the URL without its
   * password (scheme, user name, host, port), so a rotated password keeps the id (and a
   * profile's sticky proxy), while a provider's gateway that selects the exit by user name
   * gets one id per user name.
   */
  id: string;
  /** The proxy URL with its credentials, as written. Never log it. */
  url: string;
  /** scheme://host:port, without credentials: for log lines and messages. */
  label: string;
  /** Without brackets for IPv6. */
  host: string;
  port: number;
  /** Lower case, two letters. */
  country_code: string;
  region?: string;
  city?: string;
}

const SCHEMES = ['http:', 'https:', 'socks5:'];
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443', 'socks5:': '1080' };
const FIELDS = ['url', 'country_code', 'region', 'city'];
/** What a session may ask for (openapi.yaml, ProxyServiceOptions): a longer name could never match. */
const MAX_NAME_LENGTH = 100;

/** Reads and checks the pool file; answers its entries, or the problems that stop the start. */
export function readServiceProxyPool(path: string): { entries: ServiceProxyEntry[]; problems: string[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { entries: [], problems: [`the file cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`] };
  }
  let doc: unknown;
  try {
    // JSON is YAML too: one parser reads both. Without pretty errors, a message carries no
    // excerpt of the file (which would show credentials).
    doc = parseYaml(text, { prettyErrors: false });
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const line = text.slice(0, err.pos[0]).split('\n').length;
      return { entries: [], problems: [`the file is not valid JSON or YAML: ${err.message} (line ${line})`] };
    }
    throw err;
  }
  return parseServiceProxyPool(doc);
}

/** Checks a parsed pool document: every problem, each naming its entry (1-based). */
export function parseServiceProxyPool(doc: unknown): { entries: ServiceProxyEntry[]; problems: string[] } {
  if (!Array.isArray(doc)) return { entries: [], problems: ['the file must hold an array of {url, country_code, region?, city?}'] };
  if (doc.length === 0) return { entries: [], problems: ['the pool is empty; unset SERVICE_PROXY_POOL to run without service proxies'] };
  const entries: ServiceProxyEntry[] = [];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  doc.forEach((item: unknown, i) => {
    const n = i + 1;
    const result = parseEntry(item);
    if ('problem' in result) {
      problems.push(`entry ${n}${result.label ? ` (${result.label})` : ''}: ${result.problem}`);
      return;
    }
    const first = seen.get(result.id);
    if (first !== undefined) {
      problems.push(`entry ${n} (${result.label}): the same proxy as entry ${first} (the same URL but for the password)`);
      return;
    }
    seen.set(result.id, n);
    entries.push(result);
  });
  return { entries, problems };
}

function parseEntry(item: unknown): ServiceProxyEntry | { problem: string; label?: string } {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return { problem: 'must be an object {url, country_code, region?, city?}' };
  const o = item as Record<string, unknown>;
  const url = parseProxyUrl(o.url);
  if ('problem' in url) return url;
  const { label } = url;
  const unknown = Object.keys(o).find((k) => !FIELDS.includes(k));
  if (unknown !== undefined) return { label, problem: `unknown field ${JSON.stringify(unknown)}; the fields are ${FIELDS.join(', ')}` };
  if (typeof o.country_code !== 'string' || !/^[A-Za-z]{2}$/.test(o.country_code)) {
    return {
      label,
      problem: `country_code ${o.country_code === undefined ? 'is missing' : `${JSON.stringify(o.country_code)} is not two letters`} (ISO 3166-1 alpha-2, such as us)`,
    };
  }
  for (const field of ['region', 'city'] as const) {
    const v = o[field];
    if (v !== undefined && (typeof v !== 'string' || v.trim() === '' || v.length > MAX_NAME_LENGTH)) {
      return { label, problem: `${field} must be a name of 1 to ${MAX_NAME_LENGTH} characters` };
    }
  }
  // As in a session's request: a city is only asked for with its region.
  if (o.city !== undefined && o.region === undefined) return { label, problem: 'a city needs its region' };
  return {
    ...url,
    country_code: o.country_code.toLowerCase(),
    ...(o.region !== undefined ? { region: (o.region as string).trim() } : {}),
    ...(o.city !== undefined ? { city: (o.city as string).trim() } : {}),
  };
}

function parseProxyUrl(value: unknown): Pick<ServiceProxyEntry, 'id' | 'url' | 'label' | 'host' | 'port'> | { problem: string; label?: string } {
  if (value === undefined) return { problem: 'url is missing' };
  if (typeof value !== 'string') return { problem: 'url must be a string' };
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    // Not repeated: it may hold a password.
    return { problem: 'url is not a valid URL (such as http://user:pass@host:3128 or socks5://host:1080)' };
  }
  if (!SCHEMES.includes(u.protocol)) {
    return { problem: `url scheme ${JSON.stringify(u.protocol.replace(/:$/, ''))} is not supported (http, https or socks5)` };
  }
  const host = u.hostname.toLowerCase();
  if (host === '') return { problem: 'url has no host' };
  const port = u.port || DEFAULT_PORTS[u.protocol];
  const label = `${u.protocol}//${host}:${port}`;
  if ((u.pathname !== '' && u.pathname !== '/') || u.search || u.hash) {
    return { label, problem: 'url must be a proxy address only (scheme://user:pass@host:port), without a path, query or fragment' };
  }
  let username: string;
  try {
    username = decodeURIComponent(u.username);
    decodeURIComponent(u.password);
  } catch {
    return { label, problem: 'url credentials are not valid percent-encoding' };
  }
  if (username.includes(':')) return { label, problem: 'url user name must not contain ":" (Basic authentication)' };
  const id = createHash('sha256').update(`${u.protocol}//${username}@${host}:${port}`).digest('hex').slice(0, 16);
  return { id: `sp_${id}`, url: value, label, host: host.replace(/^\[(.*)\]$/, '$1'), port: Number(port) };
}
