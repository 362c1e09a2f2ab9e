// Configuration comes from environment variables only, checked once at start so a bad
// value stops the server with a message naming the variable, instead of failing later.
import { resolve } from 'node:path';
import { readServiceProxyPool, type ServiceProxyEntry } from './service-proxy-pool.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Configuration once the server knows its own address (PUBLIC_URL resolved). */
export type ServiceConfig = Config & { publicUrl: string };

export interface Config {
  port: number;
  host: string;
  /** Unset means http://localhost:<the port actually bound>, known once listening. */
  publicUrl: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  bootstrapApiKey: string | undefined;
  chromiumPath: string;
  allowPrivateNetworks: boolean;
  logLevel: LogLevel;
  maxConcurrentBrowsers: number;
  browserPoolSize: number;
  sessionCreateRatePerMinute: number;
  fetchRatePerMinute: number;
  /** Browsers shared by the web fetch, screenshot and page PDF tools (not session browsers). */
  fetchBrowsers: number;
  /** Tool requests rendered at once across the fetch browsers; more wait in a queue. */
  fetchMaxConcurrency: number;
  /** Tool requests allowed to wait for a free slot; past that, 429. */
  fetchMaxQueue: number;
  fetchTimeoutSeconds: number;
  /** The operator's upstream proxy for tool requests (may hold credentials: never log it). */
  fetchProxyUrl: string | undefined;
  /** A createTask/getTaskResult captcha-solving service. */
  captchaServiceUrl: string | undefined;
  /** Its client key (never logged). */
  captchaServiceKey: string | undefined;
  maxBodyBytes: number;
  maxUploadBytes: number;
  /** Most bytes of downloads one session keeps. */
  sessionDownloadsMaxBytes: number;
  /** Most bytes of uploaded files one session's browser holds at once. */
  sessionUploadsMaxBytes: number;
  includedCredits: number;
  shutdownGraceSeconds: number;
  webhookMaxPerProject: number;
  webhookDeliveryConcurrency: number;
  agentAccessAnonymousCredits: number;
  agentAccessIdentityCredits: number;
  agentAccessChallengeTtlSeconds: number;
  agentAccessSessionMaxMinutes: number;
  agentAccessRatePerMinute: number;
  batchQueueTimeoutSeconds: number;
  batchConcurrency: number;
  taskConcurrency: number;
  /** Sandboxed code runners started ahead of runs (Playwright loaded), per runner; 0 starts each run cold. */
  sandboxWarm: number;
  pricePerBrowserMinute: number;
  pricePerProxyGb: number;
  pricePerScreenshot: number;
  /** Credits per billing period after which session creation is refused; null for none. */
  costLimit: number | null;
  /** ffmpeg executable that encodes recordings. */
  ffmpegPath: string;
  /** Most frames per second a recording keeps. */
  recordingFps: number;
  /** JPEG quality (1-100) of screencast frames, for the live view and recordings. */
  screencastQuality: number;
  /** Live-view viewers one session may have at once. */
  liveViewMaxViewers: number;
  /** An MCP session with no request for this long is closed, and the browser sessions it started end with it. */
  mcpIdleTimeoutSeconds: number;
  /** The operator's upstream proxies for service_proxy sessions (URLs may hold credentials: never log them); undefined when none is configured. */
  serviceProxyPool: ServiceProxyEntry[] | undefined;
  /** SECRETS_KEY decoded (never log it); undefined means the key file in DATA_DIR. */
  secretsKey: Buffer | undefined;
  /** The admin API's bearer token (never log it); undefined turns the admin API off. */
  adminToken: string | undefined;
  /** The bearer token GET /metrics asks for (never log it); undefined: /metrics is open. */
  metricsToken: string | undefined;
  /** OTLP/HTTP base URL traces are sent to; undefined: no traces. */
  otelEndpoint: string | undefined;
  /** The language model of the agent tools; undefined when none is configured (they answer 503). */
  llm: LlmConfig | undefined;
  /** Longest wait for one answer of the model. */
  llmTimeoutSeconds: number;
  /** Longest a perform-web-task may run, all steps together. */
  webTaskTimeoutSeconds: number;
  /** Credits per step (model turn) of a perform-web-task, on top of its session's. */
  pricePerAgentStep: number;
  /** This node's name in the cluster; undefined: host name and installation id (DATA_DIR). */
  nodeId: string | undefined;
  /** The address other nodes reach this one at; undefined: this node runs alone. */
  nodeInternalUrl: string | undefined;
  /** Shared by the nodes of one cluster, authenticates their requests to each other (never log it). */
  clusterSecret: string | undefined;
  /** A node that has not heartbeated for this long is dead: survivors fail its sessions. */
  nodeDeadAfterSeconds: number;
  /** Where finished files live (STORAGE_URL and the S3_ variables). */
  storage: StorageConfig;
  /** Redis that counts rate limits for every node using it (may hold a password: never log it); undefined: PostgreSQL or memory. */
  redisUrl: string | undefined;
  /** Prepended to every Redis key this server writes. */
  redisKeyPrefix: string;
  /** Where rate limits are counted; memory only where this node runs alone. */
  rateLimitStore: RateLimitStore;
}

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

/** One entry per variable: the table of docs/configuration.md mirrors this list. */
export const variables = {
  PORT: 'TCP port to listen on (default 8080).',
  HOST: 'Interface to bind (default 127.0.0.1; 0.0.0.0 to serve other machines).',
  PUBLIC_URL: 'Address clients reach this server at; used in cdp_url and live_view_url (default http://localhost:PORT).',
  DATA_DIR: 'Directory for the embedded database, browser roots and recordings (default ./data).',
  DATABASE_URL: 'postgres:// URL of a PostgreSQL server; the embedded PGlite database in DATA_DIR when unset.',
  BOOTSTRAP_API_KEY: 'An API key to create (once) at start; when unset, the first start creates one and prints it once.',
  CHROMIUM_PATH: 'Chromium or Chrome executable (default /usr/bin/chromium).',
  ALLOW_PRIVATE_NETWORKS: 'true lets requests made for users reach private, loopback and link-local addresses (default false).',
  LOG_LEVEL: 'fatal, error, warn, info, debug, trace or silent (default info).',
  MAX_CONCURRENT_BROWSERS: 'Most session browsers running at once per server (default 10).',
  BROWSER_POOL_SIZE: 'Pre-launched default browsers kept warm; 0 turns the pool off (default 1).',
  SESSION_CREATE_RATE_PER_MINUTE: 'Session creations allowed per API key per minute (default 60).',
  FETCH_RATE_PER_MINUTE: 'Web fetch requests allowed per API key per minute (default 2000).',
  FETCH_BROWSERS: 'Browsers kept for the web fetch, screenshot and page PDF tools, apart from session browsers (default 2).',
  FETCH_MAX_CONCURRENCY: 'Tool requests (fetch, screenshot, page PDF) rendered at once across those browsers; more wait their turn (default 8).',
  FETCH_MAX_QUEUE: 'Tool requests that may wait for a free slot; past that they answer 429 (default 200).',
  FETCH_TIMEOUT_SECONDS: 'Longest a web fetch, screenshot or page PDF may take, bot-detection challenges included, before it answers 504 (default 120).',
  FETCH_PROXY_URL: 'http:// or https:// URL of the upstream proxy tool requests go through, credentials allowed in it (default none: direct).',
  CAPTCHA_SERVICE_URL: 'Base URL of a captcha-solving service speaking the createTask/getTaskResult protocol; unset: only proof-of-work captchas are solved.',
  CAPTCHA_SERVICE_KEY: 'The clientKey for CAPTCHA_SERVICE_URL (never logged).',
  MAX_BODY_BYTES: 'Largest JSON request body (default 1048576).',
  MAX_UPLOAD_BYTES: 'Largest multipart upload, such as an extension ZIP or a file uploaded into a session (default 52428800).',
  SESSION_DOWNLOADS_MAX_BYTES: "Most bytes of downloads one session keeps; a download that would pass it is cancelled and not kept (default 1073741824).",
  SESSION_UPLOADS_MAX_BYTES: "Most bytes of files uploaded into one session's browser at once; past it an upload answers 413 (default 524288000).",
  INCLUDED_CREDITS: 'Credits each project gets per billing period (default 1000).',
  SHUTDOWN_GRACE_SECONDS: 'How long a graceful shutdown waits for requests and browsers (default 10).',
  WEBHOOK_MAX_PER_PROJECT: 'Most webhooks one project may register (default 20).',
  WEBHOOK_DELIVERY_CONCURRENCY: 'Webhook deliveries in flight at once per server (default 64).',
  AGENT_ACCESS_ANONYMOUS_CREDITS: 'Credits a project created through agent access receives (default 5).',
  AGENT_ACCESS_IDENTITY_CREDITS: 'Extra credits for a verified identity_token in agent access (default 20; no OIDC issuer is configurable yet).',
  AGENT_ACCESS_CHALLENGE_TTL_SECONDS: 'Lifetime of an agent-access challenge token, in seconds (default 300).',
  AGENT_ACCESS_SESSION_MAX_MINUTES: 'Longest session a key obtained through agent access may run, in minutes (default 15).',
  AGENT_ACCESS_RATE_PER_MINUTE: 'Agent-access requests allowed per client address per minute, all three operations together (default 60).',
  BATCH_QUEUE_TIMEOUT_SECONDS: 'How long a batch item waits for browser capacity before it fails, in seconds from the batch\'s creation (default 300).',
  BATCH_CONCURRENCY: 'Batch items this server provisions at the same time, within MAX_CONCURRENT_BROWSERS (default 4).',
  TASK_CONCURRENCY: 'Task runs this server executes at the same time; more wait in the queue (default 2).',
  SANDBOX_WARM: 'Sandboxed runners for user code (tasks, execute-code) kept started ahead of runs, which saves each run the loading of Playwright (default 1; 0 starts every run cold). An idle one ends after two minutes.',
  PRICE_PER_BROWSER_MINUTE: 'Credits per minute of a session, from creation to end (default 0.01).',
  PRICE_PER_PROXY_GB: 'Credits per gigabyte (10^9 bytes) through a session\'s proxy (default 4).',
  PRICE_PER_SCREENSHOT: 'Credits per screenshot a session takes over CDP (default 0.001).',
  COST_LIMIT: 'Credits a project may use per billing period before session creation answers 402; unset for no limit.',
  FFMPEG_PATH: 'ffmpeg executable that encodes session recordings to MP4 (default ffmpeg, from PATH).',
  RECORDING_FPS: 'Most frames per second a session recording keeps, 1 to 60 (default 10).',
  SCREENCAST_QUALITY: 'JPEG quality of the screen frames the live view shows and recordings are made of, 1 to 100 (default 70).',
  LIVE_VIEW_MAX_VIEWERS: 'Live-view viewers one session may have at once (default 10).',
  SECRETS_KEY: 'The 32-byte key (64 hex digits or base64) that seals stored secrets: identity credentials, client certificate keys. Unset: a key file made once in DATA_DIR (secrets.key). Every node of one database must share it; never lose it.',
  MCP_IDLE_TIMEOUT_SECONDS: 'An MCP session (at /mcp) with no request for this many seconds is closed and the browser sessions it started end, 1 to 86400 (default 600).',
  LLM_PROVIDER: 'The protocol of the language model the agent tools (perform-web-task) use: openai (Chat Completions: OpenAI, vLLM, Ollama, LM Studio...) or anthropic (Messages); unset: those tools answer 503.',
  LLM_BASE_URL: 'Base URL of the model\'s API (default https://api.openai.com/v1 for openai, https://api.anthropic.com for anthropic).',
  LLM_API_KEY: 'The API key of LLM_BASE_URL (never logged); unset for servers that take none.',
  LLM_MODEL: 'The model name, required with LLM_PROVIDER (e.g. gpt-4o, claude-sonnet-4-5).',
  LLM_IMAGES: 'true when the model takes images, so the agent sends it a screenshot with each observation; false for text-only models (default true).',
  LLM_TIMEOUT_SECONDS: 'Longest wait for one answer of the model, 1 to 600 (default 120).',
  WEB_TASK_TIMEOUT_SECONDS: 'Longest a perform-web-task may run, all its steps together, 1 to 3600 (default 600).',
  PRICE_PER_AGENT_STEP: 'Credits per step (one browser action) of a perform-web-task, on top of its session\'s (default 0.01).',
  SERVICE_PROXY_POOL: 'Path of a JSON or YAML file listing the upstream proxies service_proxy sessions go through ({url, country_code, region?, city?} each; see Service proxies); unset: service proxies answer 400.',
  ADMIN_TOKEN: 'Bearer token of the admin API under /admin/v1 (projects, limits, API keys; see Projects and API keys), at least 32 characters; unset: that API is off and answers 404.',
  METRICS_TOKEN: 'Bearer token GET /metrics asks for, at least 16 characters; unset: /metrics answers anyone who reaches the server.',
  NODE_ID: 'This node\'s name among the nodes of one database, up to 100 letters, digits, dots, dashes, underscores and colons (default: host name and an id kept in DATA_DIR). A node started again with the same id sweeps what it left.',
  NODE_INTERNAL_URL: 'http:// or https:// address the other nodes reach this node at, for forwarded CDP, live-view and session requests; set on every node of a cluster (unset: the node runs alone).',
  CLUSTER_SECRET: 'Shared by every node of a cluster, at least 32 characters: node-to-node requests carry a proof made with it (an HMAC; the secret itself never travels and is never logged). Required with NODE_INTERNAL_URL.',
  NODE_DEAD_AFTER_SECONDS: 'A node whose heartbeat is this many seconds old is dead: the others fail its sessions and take over its queued work, 3 to 3600 (default 15).',
  STORAGE_URL: 'Where finished files (recordings, downloads, profiles, extensions, task artifacts) are kept: unset or file: for folders of DATA_DIR (one node), s3://BUCKET/optional/prefix for an S3-compatible bucket every node shares (see Storage).',
  S3_ENDPOINT: 'http:// or https:// address of an S3-compatible server (MinIO, Ceph, R2...) for STORAGE_URL=s3://...; unset: AWS S3.',
  S3_REGION: 'Region of the STORAGE_URL bucket (default us-east-1).',
  S3_FORCE_PATH_STYLE: 'true addresses the bucket in the path (http://endpoint/bucket/key) rather than in the host name (default true when S3_ENDPOINT is set, else false).',
  AWS_ACCESS_KEY_ID: 'Access key of the STORAGE_URL bucket, with AWS_SECRET_ACCESS_KEY; unset: the AWS SDK\'s default chain (shared config files, instance or container roles).',
  AWS_SECRET_ACCESS_KEY: 'Secret key paired with AWS_ACCESS_KEY_ID (never logged).',
  REDIS_URL: 'redis:// or rediss:// URL of a Redis that counts the rate limits (session creation, web fetch, agent access) for every node using it; the start fails if it does not answer. Unset: PostgreSQL counts them with DATABASE_URL, this process with PGlite.',
  RATE_LIMIT_STORE: 'Where the rate limits are counted: redis (needs REDIS_URL), postgres (needs DATABASE_URL) or memory (this node only; refused with NODE_INTERNAL_URL). Default: redis with REDIS_URL, else postgres with DATABASE_URL, else memory.',
  REDIS_KEY_PREFIX: 'Prepended to the Redis keys of REDIS_URL, so several services can share one Redis (default cloud-browser:).',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http(s):// base URL of an OpenTelemetry collector: traces of HTTP requests, database queries, session creation and browser launches go to its /v1/traces over OTLP/HTTP (JSON); unset: no traces.',
} as const;

export type VariableName = keyof typeof variables;
type Env = Partial<Record<string, string | undefined>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: VariableName, fallback: string) => {
    const v = env[name];
    return v === undefined || v === '' ? fallback : v;
  };
  const int = (name: VariableName, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || n < min || n > max) {
      problems.push(`${name}=${JSON.stringify(raw)} must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return n;
  };
  const num = (name: VariableName, fallback: number, min: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) {
      problems.push(`${name}=${JSON.stringify(raw)} must be a number of at least ${min}`);
      return fallback;
    }
    return n;
  };
  const bool = (name: VariableName, fallback: boolean) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name}=${JSON.stringify(raw)} must be true or false`);
    return fallback;
  };

  const port = int('PORT', 8080, 0, 65535);
  const publicUrl = env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : undefined;
  if (publicUrl !== undefined && !/^https?:\/\/[^/]+(\/.*)?$/.test(publicUrl)) {
    problems.push(`PUBLIC_URL=${JSON.stringify(publicUrl)} must be an http:// or https:// URL`);
  }
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    // Never echo the URL: it may hold a password.
    problems.push('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const bootstrapApiKey = env.BOOTSTRAP_API_KEY || undefined;
  if (bootstrapApiKey !== undefined && bootstrapApiKey.length < 16) {
    problems.push('BOOTSTRAP_API_KEY must be at least 16 characters');
  }
  const fetchProxyUrl = env.FETCH_PROXY_URL || undefined;
  if (fetchProxyUrl !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(fetchProxyUrl)) {
    // Never echo the URL: it may hold a password.
    problems.push('FETCH_PROXY_URL must be an http:// or https:// proxy URL such as http://user:pass@host:port');
  }
  const captchaServiceUrl = env.CAPTCHA_SERVICE_URL ? env.CAPTCHA_SERVICE_URL.replace(/\/+$/, '') : undefined;
  if (captchaServiceUrl !== undefined && !/^https?:\/\/[^/\s]+(\/.*)?$/.test(captchaServiceUrl)) {
    problems.push(`CAPTCHA_SERVICE_URL=${JSON.stringify(captchaServiceUrl)} must be an http:// or https:// URL`);
  }
  let serviceProxyPool: ServiceProxyEntry[] | undefined;
  if (env.SERVICE_PROXY_POOL) {
    const path = resolve(env.SERVICE_PROXY_POOL);
    const pool = readServiceProxyPool(path);
    problems.push(...pool.problems.map((p) => `SERVICE_PROXY_POOL=${JSON.stringify(path)}: ${p}`));
    serviceProxyPool = pool.entries;
  }
  const secretsKey = env.SECRETS_KEY ? decodeKey(env.SECRETS_KEY.trim()) : undefined;
  // Never echo the value: it is the key.
  if (env.SECRETS_KEY && !secretsKey) problems.push('SECRETS_KEY must be 32 bytes written as 64 hex digits or as base64 (openssl rand -base64 32)');
  // Never echo the tokens' values.
  const adminToken = env.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && (adminToken.length < 32 || /\s/.test(adminToken))) {
    problems.push('ADMIN_TOKEN must be at least 32 characters without spaces (openssl rand -hex 32)');
  }
  const metricsToken = env.METRICS_TOKEN || undefined;
  if (metricsToken !== undefined && (metricsToken.length < 16 || /\s/.test(metricsToken))) {
    problems.push('METRICS_TOKEN must be at least 16 characters without spaces');
  }
  const otelEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT ? env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '') : undefined;
  if (otelEndpoint !== undefined && !/^https?:\/\/[^/\s]+(\/\S*)?$/.test(otelEndpoint)) {
    problems.push('OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, such as http://localhost:4318');
  }
  const llm = readLlm(env, problems, bool('LLM_IMAGES', true));
  const nodeId = env.NODE_ID || undefined;
  if (nodeId !== undefined && !/^[A-Za-z0-9._:-]{1,100}$/.test(nodeId)) {
    problems.push(`NODE_ID=${JSON.stringify(nodeId)} must be 1 to 100 letters, digits, dots, dashes, underscores or colons`);
  }
  const nodeInternalUrl = env.NODE_INTERNAL_URL ? env.NODE_INTERNAL_URL.replace(/\/+$/, '') : undefined;
  if (nodeInternalUrl !== undefined && !/^https?:\/\/[^/\s]+$/.test(nodeInternalUrl)) {
    problems.push(`NODE_INTERNAL_URL=${JSON.stringify(nodeInternalUrl)} must be an http:// or https:// origin, such as http://10.0.0.5:8080`);
  }
  // Never echo the secret.
  const clusterSecret = env.CLUSTER_SECRET || undefined;
  if (clusterSecret !== undefined && (clusterSecret.length < 32 || /\s/.test(clusterSecret))) {
    problems.push('CLUSTER_SECRET must be at least 32 characters without spaces (openssl rand -hex 32)');
  }
  if (nodeInternalUrl !== undefined && clusterSecret === undefined) problems.push('NODE_INTERNAL_URL needs CLUSTER_SECRET, shared by every node');
  if (nodeInternalUrl !== undefined && databaseUrl === undefined) {
    problems.push('NODE_INTERNAL_URL (several nodes) needs DATABASE_URL: the embedded PGlite database serves one node only');
  }
  const storage = readStorage(env, problems, env.S3_FORCE_PATH_STYLE ? bool('S3_FORCE_PATH_STYLE', true) : undefined);
  const redisUrl = env.REDIS_URL || undefined;
  // Never echo the URL: it may hold a password.
  if (redisUrl !== undefined && !/^rediss?:\/\/[^/\s]*/.test(redisUrl)) problems.push('REDIS_URL must start with redis:// or rediss://');
  const redisKeyPrefix = str('REDIS_KEY_PREFIX', 'cloud-browser:');
  if (!/^[A-Za-z0-9._:{}-]{1,100}$/.test(redisKeyPrefix)) {
    problems.push(`REDIS_KEY_PREFIX=${JSON.stringify(redisKeyPrefix)} must be 1 to 100 letters, digits, dots, dashes, underscores, colons or braces`);
  }
  const rateLimitStore = str('RATE_LIMIT_STORE', redisUrl ? 'redis' : databaseUrl ? 'postgres' : 'memory') as RateLimitStore;
  if (rateLimitStore === 'redis' && !redisUrl) problems.push('RATE_LIMIT_STORE=redis needs REDIS_URL');
  else if (rateLimitStore === 'postgres' && !databaseUrl) problems.push('RATE_LIMIT_STORE=postgres needs DATABASE_URL');
  else if (rateLimitStore === 'memory' && nodeInternalUrl !== undefined) {
    problems.push('RATE_LIMIT_STORE=memory counts on each node apart: a cluster (NODE_INTERNAL_URL) needs postgres or redis');
  } else if (!['memory', 'postgres', 'redis'].includes(rateLimitStore)) {
    problems.push(`RATE_LIMIT_STORE=${JSON.stringify(rateLimitStore)} must be memory, postgres or redis`);
  }
  const logLevel = str('LOG_LEVEL', 'info') as LogLevel;
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    problems.push(`LOG_LEVEL=${JSON.stringify(logLevel)} must be one of fatal, error, warn, info, debug, trace, silent`);
  }

  const config: Config = {
    port,
    host: str('HOST', '127.0.0.1'),
    publicUrl,
    dataDir: resolve(str('DATA_DIR', './data')),
    databaseUrl,
    bootstrapApiKey,
    chromiumPath: str('CHROMIUM_PATH', '/usr/bin/chromium'),
    allowPrivateNetworks: bool('ALLOW_PRIVATE_NETWORKS', false),
    logLevel,
    maxConcurrentBrowsers: int('MAX_CONCURRENT_BROWSERS', 10, 1, 10_000),
    browserPoolSize: int('BROWSER_POOL_SIZE', 1, 0, 100),
    sessionCreateRatePerMinute: int('SESSION_CREATE_RATE_PER_MINUTE', 60, 1),
    fetchRatePerMinute: int('FETCH_RATE_PER_MINUTE', 2000, 1),
    fetchBrowsers: int('FETCH_BROWSERS', 2, 1, 64),
    fetchMaxConcurrency: int('FETCH_MAX_CONCURRENCY', 8, 1, 1000),
    fetchMaxQueue: int('FETCH_MAX_QUEUE', 200, 0, 100_000),
    fetchTimeoutSeconds: int('FETCH_TIMEOUT_SECONDS', 120, 1, 3600),
    fetchProxyUrl,
    captchaServiceUrl,
    captchaServiceKey: env.CAPTCHA_SERVICE_KEY || undefined,
    maxBodyBytes: int('MAX_BODY_BYTES', 1024 * 1024, 1024),
    maxUploadBytes: int('MAX_UPLOAD_BYTES', 50 * 1024 * 1024, 1024),
    sessionDownloadsMaxBytes: int('SESSION_DOWNLOADS_MAX_BYTES', 1024 * 1024 * 1024, 0),
    sessionUploadsMaxBytes: int('SESSION_UPLOADS_MAX_BYTES', 500 * 1024 * 1024, 0),
    includedCredits: num('INCLUDED_CREDITS', 1000, 0),
    shutdownGraceSeconds: int('SHUTDOWN_GRACE_SECONDS', 10, 0, 3600),
    webhookMaxPerProject: int('WEBHOOK_MAX_PER_PROJECT', 20, 1, 10_000),
    webhookDeliveryConcurrency: int('WEBHOOK_DELIVERY_CONCURRENCY', 64, 1, 10_000),
    agentAccessAnonymousCredits: int('AGENT_ACCESS_ANONYMOUS_CREDITS', 5, 0, 1_000_000),
    agentAccessIdentityCredits: int('AGENT_ACCESS_IDENTITY_CREDITS', 20, 0, 1_000_000),
    agentAccessChallengeTtlSeconds: int('AGENT_ACCESS_CHALLENGE_TTL_SECONDS', 300, 1, 86_400),
    agentAccessSessionMaxMinutes: int('AGENT_ACCESS_SESSION_MAX_MINUTES', 15, 1, 10_080),
    agentAccessRatePerMinute: int('AGENT_ACCESS_RATE_PER_MINUTE', 60, 1),
    batchQueueTimeoutSeconds: int('BATCH_QUEUE_TIMEOUT_SECONDS', 300, 1, 7 * 86_400),
    batchConcurrency: int('BATCH_CONCURRENCY', 4, 1, 1000),
    taskConcurrency: int('TASK_CONCURRENCY', 2, 1, 1000),
    sandboxWarm: int('SANDBOX_WARM', 1, 0, 16),
    pricePerBrowserMinute: num('PRICE_PER_BROWSER_MINUTE', 0.01, 0),
    pricePerProxyGb: num('PRICE_PER_PROXY_GB', 4, 0),
    pricePerScreenshot: num('PRICE_PER_SCREENSHOT', 0.001, 0),
    costLimit: env.COST_LIMIT === undefined || env.COST_LIMIT === '' ? null : num('COST_LIMIT', 0, 0),
    ffmpegPath: str('FFMPEG_PATH', 'ffmpeg'),
    recordingFps: int('RECORDING_FPS', 10, 1, 60),
    screencastQuality: int('SCREENCAST_QUALITY', 70, 1, 100),
    liveViewMaxViewers: int('LIVE_VIEW_MAX_VIEWERS', 10, 1, 1000),
    mcpIdleTimeoutSeconds: int('MCP_IDLE_TIMEOUT_SECONDS', 600, 1, 86_400),
    serviceProxyPool,
    secretsKey,
    adminToken,
    metricsToken,
    otelEndpoint,
    llm,
    llmTimeoutSeconds: int('LLM_TIMEOUT_SECONDS', 120, 1, 600),
    webTaskTimeoutSeconds: int('WEB_TASK_TIMEOUT_SECONDS', 600, 1, 3600),
    pricePerAgentStep: num('PRICE_PER_AGENT_STEP', 0.01, 0),
    nodeId,
    nodeInternalUrl,
    clusterSecret,
    nodeDeadAfterSeconds: int('NODE_DEAD_AFTER_SECONDS', 15, 3, 3600),
    storage,
    redisUrl,
    redisKeyPrefix,
    rateLimitStore,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
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
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) problems.push('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: set both, or neither for the AWS default chain');
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
