// Configuration comes from environment variables only, checked once at start so a bad
// value stops the server with a message naming the variable, instead of failing later.
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { readServiceProxyPool, type ServiceProxyEntry } from './service-proxy-pool.js';
import { camel, DIRECT, readSettings, type DirectConfig } from './settings.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Configuration once the server knows its own address (PUBLIC_URL resolved) and whether it can cap its browsers. */
export type ServiceConfig = Config & { publicUrl: string; browserCaps?: BrowserCaps };

/** Where each browser's control groups are made, and the caps of a project without its own (browser/cgroup.ts); absent: browsers run uncapped. */
export interface BrowserCaps {
  place: { memory: string; cpu: string };
  limits: { memoryMb: number; cpus: number };
}

/**
 * The configuration: a field for every variable of settings.ts that stands alone, under its
 * camel-case name (MAX_CONCURRENT_BROWSERS is maxConcurrentBrowsers), and those read from
 * several variables together.
 */
export type Config = DirectConfig & {
  /** RATE_LIMIT_STORE, or what REDIS_URL and DATABASE_URL imply; memory only where this node runs alone. */
  rateLimitStore: RateLimitStore;
  /** The operator's upstream proxies for service_proxy sessions (URLs may hold credentials: never log them); undefined when none is configured. */
  serviceProxyPool: ServiceProxyEntry[] | undefined;
  /** SECRETS_KEY decoded (never log it); undefined means the key file in DATA_DIR. */
  secretsKey: Buffer | undefined;
  /** OTLP/HTTP base URL traces are sent to; undefined: no traces. */
  otelEndpoint: string | undefined;
  /** The language model of the agent tools; undefined when none is configured (they answer 503). */
  llm: LlmConfig | undefined;
  /** Where finished files live (STORAGE_URL and the S3_ variables). */
  storage: StorageConfig;
};

/** DATA_DIR's folders (one node), or one S3-compatible bucket that every node shares. */
export type StorageConfig =
  | { kind: 'fs' }
  | {
      kind: 's3';
      bucket: string;
      /** Key prefix without slashes at either end; '' for the bucket's root. */
      prefix: string;
      /** MinIO, Ceph, R2, a local server; undefined: AWS itself. */
      endpoint: string | undefined;
      region: string;
      forcePathStyle: boolean;
      /** AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (never logged); undefined: the SDK's default chain. */
      credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
    };

export type RateLimitStore = 'memory' | 'postgres' | 'redis';

export type LlmProvider = 'openai' | 'anthropic';

export interface LlmConfig {
  /** The protocol: OpenAI Chat Completions (and compatible servers) or Anthropic Messages. */
  provider: LlmProvider;
  /** Without a trailing slash, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  /** Never logged; undefined for servers that take none (a local Ollama). */
  apiKey: string | undefined;
  model: string;
  /** Whether the model takes images: observations then carry a screenshot. */
  images: boolean;
}

export { SETTINGS, type VariableName } from './settings.js';
type Env = Partial<Record<string, string | undefined>>;

/** 107 bytes of a socket path, less cb-<12>/ (17), a root (23) and what Chromium puts below it (50). */
const MAX_TMPDIR_LENGTH = 17;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const s = readSettings(env, problems);
  const direct = Object.fromEntries(DIRECT.map((name) => [camel(name), s[name]])) as DirectConfig;
  direct.dataDir = resolve(s.DATA_DIR);

  let serviceProxyPool: ServiceProxyEntry[] | undefined;
  if (s.SERVICE_PROXY_POOL) {
    const path = resolve(s.SERVICE_PROXY_POOL);
    const pool = readServiceProxyPool(path);
    problems.push(...pool.problems.map((p) => `SERVICE_PROXY_POOL=${JSON.stringify(path)}: ${p}`));
    serviceProxyPool = pool.entries;
  }
  const secretsKey = s.SECRETS_KEY ? decodeKey(s.SECRETS_KEY.trim()) : undefined;
  // Never echo the value: it is the key.
  if (s.SECRETS_KEY && !secretsKey) problems.push('SECRETS_KEY must be 32 bytes written as 64 hex digits or as base64 (openssl rand -base64 32)');
  const llm = readLlm(env, problems, s.LLM_IMAGES);
  if (s.NODE_INTERNAL_URL !== undefined && s.CLUSTER_SECRET === undefined) problems.push('NODE_INTERNAL_URL needs CLUSTER_SECRET, shared by every node');
  if (s.NODE_INTERNAL_URL !== undefined && s.DATABASE_URL === undefined) {
    problems.push('NODE_INTERNAL_URL (several nodes) needs DATABASE_URL: the embedded PGlite database serves one node only');
  }
  // A node without browsers routes for the others (docs/operations/scaling.md): alone it
  // would have nothing to serve a session on. It keeps no warm browser.
  if (s.MAX_CONCURRENT_BROWSERS === 0) {
    if (s.NODE_INTERNAL_URL === undefined) problems.push('MAX_CONCURRENT_BROWSERS=0 (a node without browsers, routing for the others) needs NODE_INTERNAL_URL');
    direct.browserPoolSize = 0;
  }
  // Browsers keep their roots in TMPDIR/cb-<12 hex digits>/<root of at most 23>, and Chromium
  // its SingletonSocket 50 bytes below a root: a Unix socket's path has 107 bytes, and past
  // them Chromium dies at start ("Socket path too long"), every session with it.
  const tmp = resolve(env.TMPDIR || tmpdir());
  if (s.MAX_CONCURRENT_BROWSERS !== 0 && tmp.length > MAX_TMPDIR_LENGTH) {
    problems.push(
      `TMPDIR=${JSON.stringify(tmp)} is ${tmp.length} characters: browsers need one of at most ${MAX_TMPDIR_LENGTH} (Chromium's socket paths), such as /tmp`,
    );
  }
  const storage = readStorage(env, problems, s.S3_FORCE_PATH_STYLE);
  const rateLimitStore = s.RATE_LIMIT_STORE ?? (s.REDIS_URL ? 'redis' : s.DATABASE_URL ? 'postgres' : 'memory');
  if (rateLimitStore === 'redis' && !s.REDIS_URL) problems.push('RATE_LIMIT_STORE=redis needs REDIS_URL');
  else if (rateLimitStore === 'postgres' && !s.DATABASE_URL) problems.push('RATE_LIMIT_STORE=postgres needs DATABASE_URL');
  else if (rateLimitStore === 'memory' && s.NODE_INTERNAL_URL !== undefined) {
    problems.push('RATE_LIMIT_STORE=memory counts on each node apart: a cluster (NODE_INTERNAL_URL) needs postgres or redis');
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return { ...direct, rateLimitStore, serviceProxyPool, secretsKey, otelEndpoint: s.OTEL_EXPORTER_OTLP_ENDPOINT, llm, storage };
}

const DEFAULT_LLM_BASE_URL: Record<LlmProvider, string> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

/** LLM_PROVIDER and its companions; undefined when no model is configured. */
function readLlm(env: Env, problems: string[], images: boolean): LlmConfig | undefined {
  const provider = env.LLM_PROVIDER || undefined;
  if (provider === undefined) {
    if (env.LLM_MODEL || env.LLM_BASE_URL) problems.push('LLM_MODEL and LLM_BASE_URL need LLM_PROVIDER (openai or anthropic)');
    return undefined;
  }
  if (provider !== 'openai' && provider !== 'anthropic') {
    problems.push(`LLM_PROVIDER=${JSON.stringify(provider)} must be openai or anthropic`);
    return undefined;
  }
  const model = env.LLM_MODEL?.trim();
  if (!model) problems.push('LLM_MODEL is required with LLM_PROVIDER');
  const baseUrl = (env.LLM_BASE_URL || DEFAULT_LLM_BASE_URL[provider]).replace(/\/+$/, '');
  // Never echo the URL: it may hold credentials.
  if (!/^https?:\/\/[^/\s]+(\/\S*)?$/.test(baseUrl)) problems.push('LLM_BASE_URL must be an http:// or https:// URL');
  return { provider, baseUrl, apiKey: env.LLM_API_KEY || undefined, model: model ?? '', images };
}

/** STORAGE_URL and its S3_ companions; forcePathStyle is S3_FORCE_PATH_STYLE read, undefined when unset. */
function readStorage(env: Env, problems: string[], forcePathStyle: boolean | undefined): StorageConfig {
  const url = env.STORAGE_URL?.trim() || 'file:';
  const endpoint = env.S3_ENDPOINT ? env.S3_ENDPOINT.replace(/\/+$/, '') : undefined;
  const accessKeyId = env.AWS_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY || undefined;
  if (url === 'file:' || url === 'file://') {
    const strays = (['S3_ENDPOINT', 'S3_REGION', 'S3_FORCE_PATH_STYLE'] as const).filter((name) => env[name]);
    if (strays.length > 0) problems.push(`${strays.join(', ')} need STORAGE_URL=s3://BUCKET (files are kept in DATA_DIR)`);
    return { kind: 'fs' };
  }
  // s3://BUCKET/optional/prefix; bucket names as S3 allows them (3-63 of a-z 0-9 . -).
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(\/[A-Za-z0-9!_.*'()\/-]*)?$/.exec(url);
  const prefix = m?.[2]?.replace(/^\/+|\/+$/g, '') ?? '';
  const badSegment = prefix !== '' && prefix.split('/').some((segment) => segment === '' || segment === '.' || segment === '..');
  if (!m || badSegment) {
    // Never echo the value: someone may have put credentials in it.
    problems.push('STORAGE_URL must be file: or s3://BUCKET with an optional /prefix (bucket: 3 to 63 of a-z, 0-9, dots and dashes)');
    return { kind: 'fs' };
  }
  if (endpoint !== undefined && endpoint.includes('@')) {
    // Never echo it: it holds credentials, which the server would otherwise log.
    problems.push('S3_ENDPOINT must not hold credentials: give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  } else if (endpoint !== undefined && !/^https?:\/\/[^/\s]+(\/\S*)?$/.test(endpoint)) {
    problems.push(`S3_ENDPOINT=${JSON.stringify(endpoint)} must be an http:// or https:// URL, such as http://127.0.0.1:9000`);
  }
  const region = env.S3_REGION?.trim() || 'us-east-1';
  if (!/^[a-z0-9-]{1,50}$/.test(region)) problems.push(`S3_REGION=${JSON.stringify(region)} must be a region name such as us-east-1 or auto`);
  // Never echo the keys.
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined))
    problems.push('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: set both, or neither for the AWS default chain');
  return {
    kind: 's3',
    bucket: m[1],
    prefix,
    endpoint,
    region,
    forcePathStyle: forcePathStyle ?? endpoint !== undefined,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
  };
}

/** 32 bytes written as 64 hex digits or as base64 (or base64url); undefined when it is neither. */
export function decodeKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text, /[-_]/.test(text) ? 'base64url' : 'base64');
    if (key.length === 32) return key;
  }
  return undefined;
}
