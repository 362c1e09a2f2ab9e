// Every environment variable the server reads, one entry each: its section, type, default,
// limits, whether it is a secret, and what it does. The Config type, the reading of the
// environment (config.ts) and docs/configuration.md (`pnpm generate`) all derive from this
// table, so adding a variable is adding an entry. Descriptions are Markdown: they are the
// documentation. One thing, though past 450 lines: a table read whole, whose split by section
// would only add the index that joins it again.

/** A check of a value beyond its type; the problem reads `NAME=value says` (`NAME says` for a secret). */
interface Rule {
  test: RegExp;
  says: string;
}

interface Common {
  section: Section;
  description: string;
  /** Never echoed in a problem, never logged. */
  secret?: true;
  /** Read into a Config field of several variables (config.ts), not a field of its own. */
  into?: 'llm' | 'storage' | 'serviceProxyPool' | 'secretsKey' | 'otelEndpoint' | 'rateLimitStore';
  /** The default in words, where it is not a plain value. */
  defaultText?: string;
}

export type Setting = Common &
  (
    | { type: 'int'; default: number; min: number; max?: number }
    | { type: 'number'; default: number; min: number }
    /** Unset: null. */
    | { type: 'number?'; min: number }
    /** Without a default: undefined when unset. */
    | { type: 'bool'; default?: boolean }
    | { type: 'string'; default: string; rule?: Rule }
    /** A path, resolved against the working directory. */
    | { type: 'path'; default: string }
    /** Without a default: undefined when unset. */
    | { type: 'enum'; values: readonly string[]; default?: string }
    /** Free text; undefined when unset or empty. */
    | { type: 'text'; rule?: Rule; trimSlash?: true }
  );

export const SECTIONS = [
  'Server',
  'Database',
  'Browsers and sessions',
  'Recording and live view',
  'Web fetch tools',
  'Billing',
  'Webhooks',
  'Event coordination',
  'Agent access',
  'Batches, tasks and user code',
  'Agent tools and MCP',
  'Secrets and tokens',
  'Several nodes',
  'Storage',
  'Observability',
] as const;
export type Section = (typeof SECTIONS)[number];

export const SETTINGS = {
  // Server
  PORT: { section: 'Server', type: 'int', default: 8080, min: 0, max: 65535, description: 'TCP port to listen on.' },
  HOST: { section: 'Server', type: 'string', default: '127.0.0.1', description: 'Interface to bind; 0.0.0.0 to serve other machines.' },
  PUBLIC_URL: {
    section: 'Server',
    type: 'text',
    trimSlash: true,
    defaultText: '`http://localhost:PORT`',
    rule: { test: /^https?:\/\/[^/]+(\/.*)?$/, says: 'must be an http:// or https:// URL' },
    description: 'Address clients reach this server at; used in cdp_url and live_view_url.',
  },
  DATA_DIR: { section: 'Server', type: 'path', default: './data', description: 'Directory for the embedded database, browser roots and recordings.' },
  BOOTSTRAP_API_KEY: {
    section: 'Server',
    type: 'text',
    secret: true,
    rule: { test: /^[\s\S]{16,}$/, says: 'must be at least 16 characters' },
    description: 'An API key to create (once) at start; when unset, the first start creates one and prints it once.',
  },
  LOG_LEVEL: {
    section: 'Server',
    type: 'enum',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    description: 'How much the server logs (structured JSON on stdout).',
  },
  SHUTDOWN_GRACE_SECONDS: {
    section: 'Server',
    type: 'int',
    default: 10,
    min: 0,
    max: 3600,
    description: 'How long a graceful shutdown waits for requests and browsers.',
  },
  MAX_BODY_BYTES: { section: 'Server', type: 'int', default: 1024 * 1024, min: 1024, description: 'Largest JSON request body.' },
  MAX_UPLOAD_BYTES: {
    section: 'Server',
    type: 'int',
    default: 50 * 1024 * 1024,
    min: 1024,
    description: 'Largest multipart upload, such as an extension ZIP or a file uploaded into a session.',
  },
  // Database
  DATABASE_URL: {
    section: 'Database',
    type: 'text',
    secret: true,
    defaultText: 'PGlite in `DATA_DIR`',
    rule: { test: /^postgres(ql)?:\/\//, says: 'must start with postgres:// or postgresql://' },
    description:
      'postgres:// URL of a PostgreSQL server; the embedded PGlite database in DATA_DIR when unset. Through PgBouncer, use session pooling, not transaction pooling (see [Nodes: failure and drain](nodes.md#failure-and-drain)).',
  },
  // Browsers and sessions
  CHROMIUM_PATH: { section: 'Browsers and sessions', type: 'string', default: '/usr/bin/chromium', description: 'Chromium or Chrome executable.' },
  MAX_CONCURRENT_BROWSERS: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 10,
    min: 0,
    max: 10_000,
    description:
      'Most session browsers running at once per server. `0` makes a node without browsers in a cluster (`NODE_INTERNAL_URL`): it answers the API, routes CDP and live view, and sends new sessions and the browser tools to nodes with room ([Scaling](operations/scaling.md)).',
  },
  BROWSER_SANDBOX: {
    section: 'Browsers and sessions',
    type: 'enum',
    values: ['on', 'off'],
    default: 'on',
    description:
      "Chromium's own sandbox. `on`: a server running as root runs each browser and its Xvfb under a uid of its own (none of an account's), owning its root's folders only; the start fails where the sandbox cannot run (no user namespaces for an unprivileged user), saying why. `off`: browsers run as the server with `--no-sandbox`, which the start log and `/healthz` (`sandbox`) then say; never for untrusted pages ([Security](security.md)).",
  },
  BROWSER_MEMORY_LIMIT_MB: {
    section: 'Browsers and sessions',
    type: 'number?',
    min: 0,
    defaultText: '2048 where control groups can be made, none elsewhere',
    description:
      "Memory each session's browser may hold (every process of it, its Xvfb too), in MiB, enforced by a control group of its own (cgroup v1 under a root server): a session over it has its largest process killed by the kernel and ends with `end_reason` `memory_limit`. `0`: no cap. Unset: 2048 where the server can make control groups, and no cap elsewhere, which the start log and `/healthz` (`limits`) say; set, the start fails where it cannot be enforced. A project may have its own (admin API, `browser_memory_limit_mb`) ([Security](security.md)).",
  },
  BROWSER_CPU_LIMIT: {
    section: 'Browsers and sessions',
    type: 'number?',
    min: 0,
    defaultText: '1 where control groups can be made, none elsewhere',
    description:
      "CPU each session's browser may use, in cores (`1.5`: one and a half cores' time), enforced like BROWSER_MEMORY_LIMIT_MB, so one page that spins cannot take the others' CPU. `0`: no cap. Unset: 1 where the server can make control groups, none elsewhere; set, the start fails where it cannot be enforced. A project may have its own (admin API, `browser_cpu_limit`).",
  },
  BROWSER_POOL_SIZE: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 1,
    min: 0,
    max: 100,
    description: 'Pre-launched default browsers kept warm; 0 turns the pool off.',
  },
  SESSION_CREATE_RATE_PER_MINUTE: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 60,
    min: 1,
    description: 'Session creations allowed per API key per minute.',
  },
  SESSION_DOWNLOADS_MAX_BYTES: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 1024 * 1024 * 1024,
    min: 0,
    description: 'Most bytes of downloads one session keeps; a download that would pass it is cancelled and not kept.',
  },
  SESSION_UPLOADS_MAX_BYTES: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 500 * 1024 * 1024,
    min: 0,
    description: "Most bytes of files uploaded into one session's browser at once; past it an upload answers 413.",
  },
  ALLOW_PRIVATE_NETWORKS: {
    section: 'Browsers and sessions',
    type: 'bool',
    default: false,
    description: 'true lets requests made for users reach private, loopback and link-local addresses.',
  },
  SERVICE_PROXY_POOL: {
    section: 'Browsers and sessions',
    type: 'text',
    into: 'serviceProxyPool',
    description:
      'Path of a JSON or YAML file listing the upstream proxies `service_proxy` sessions go through (see [Service proxies](proxies.md)); unset: service proxies answer 400.',
  },
  CAPTCHA_SERVICE_URL: {
    section: 'Browsers and sessions',
    type: 'text',
    trimSlash: true,
    rule: { test: /^https?:\/\/[^/\s]+(\/.*)?$/, says: 'must be an http:// or https:// URL' },
    description: 'Base URL of a captcha-solving service speaking the createTask/getTaskResult protocol; unset: only proof-of-work captchas are solved.',
  },
  CAPTCHA_SERVICE_KEY: { section: 'Browsers and sessions', type: 'text', secret: true, description: 'The clientKey for CAPTCHA_SERVICE_URL (never logged).' },
  BROWSER_POOL_MEMORY_MB: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 0,
    min: 0,
    description:
      "Memory the warm pool may hold, in MiB (its browsers' proportional set size, measured): while sessions are created faster than a launch takes, the pool grows past BROWSER_POOL_SIZE within it (and within MAX_CONCURRENT_BROWSERS); 0 (the default, until its benchmark is run) keeps the pool at BROWSER_POOL_SIZE.",
  },
  BROWSER_POOL_IDLE_SECONDS: {
    section: 'Browsers and sessions',
    type: 'int',
    default: 60,
    min: 1,
    description: 'A pool grown by demand shrinks back to BROWSER_POOL_SIZE once no session has asked for a warm browser for this long.',
  },
  // Recording and live view
  FFMPEG_PATH: {
    section: 'Recording and live view',
    type: 'string',
    default: 'ffmpeg',
    description: 'ffmpeg executable that encodes session recordings to MP4.',
  },
  RECORDING_FPS: {
    section: 'Recording and live view',
    type: 'int',
    default: 10,
    min: 1,
    max: 60,
    description: 'Most frames per second a session recording keeps.',
  },
  SCREENCAST_QUALITY: {
    section: 'Recording and live view',
    type: 'int',
    default: 70,
    min: 1,
    max: 100,
    description: 'JPEG quality of the screen frames the live view shows and recordings are made of.',
  },
  LIVE_VIEW_MAX_VIEWERS: {
    section: 'Recording and live view',
    type: 'int',
    default: 10,
    min: 1,
    max: 1000,
    description: 'Live-view viewers one session may have at once.',
  },
  // Web fetch tools
  FETCH_RATE_PER_MINUTE: { section: 'Web fetch tools', type: 'int', default: 2000, min: 1, description: 'Web fetch requests allowed per API key per minute.' },
  FETCH_BROWSERS: {
    section: 'Web fetch tools',
    type: 'int',
    default: 2,
    min: 1,
    max: 64,
    description: 'Browsers kept for the web fetch, screenshot and page PDF tools, apart from session browsers.',
  },
  FETCH_MAX_CONCURRENCY: {
    section: 'Web fetch tools',
    type: 'int',
    default: 8,
    min: 1,
    max: 1000,
    description: 'Tool requests (fetch, screenshot, page PDF) rendered at once across those browsers; more wait their turn.',
  },
  FETCH_MAX_QUEUE: {
    section: 'Web fetch tools',
    type: 'int',
    default: 200,
    min: 0,
    max: 100_000,
    description: 'Tool requests that may wait for a free slot; past that they answer 429.',
  },
  FETCH_TIMEOUT_SECONDS: {
    section: 'Web fetch tools',
    type: 'int',
    default: 120,
    min: 1,
    max: 3600,
    description: 'Longest a web fetch, screenshot or page PDF may take, bot-detection challenges included, before it answers 504.',
  },
  FETCH_PROXY_URL: {
    section: 'Web fetch tools',
    type: 'text',
    secret: true,
    defaultText: 'none: direct',
    rule: { test: /^https?:\/\/[^/\s]+\/?$/, says: 'must be an http:// or https:// proxy URL such as http://user:pass@host:port' },
    description: 'http:// or https:// URL of the upstream proxy tool requests go through, credentials allowed in it.',
  },
  // Billing
  INCLUDED_CREDITS: { section: 'Billing', type: 'number', default: 1000, min: 0, description: 'Credits each project gets per billing period.' },
  PRICE_PER_BROWSER_MINUTE: {
    section: 'Billing',
    type: 'number',
    default: 0.01,
    min: 0,
    description: 'Credits per minute of a session, from creation to end.',
  },
  PRICE_PER_PROXY_GB: { section: 'Billing', type: 'number', default: 4, min: 0, description: "Credits per gigabyte (10^9 bytes) through a session's proxy." },
  PRICE_PER_SCREENSHOT: { section: 'Billing', type: 'number', default: 0.001, min: 0, description: 'Credits per screenshot a session takes over CDP.' },
  COST_LIMIT: {
    section: 'Billing',
    type: 'number?',
    min: 0,
    defaultText: 'none',
    description: 'Credits a project may use per billing period before session creation answers 402; unset for no limit.',
  },
  // Webhooks
  WEBHOOK_MAX_PER_PROJECT: { section: 'Webhooks', type: 'int', default: 20, min: 1, max: 10_000, description: 'Most webhooks one project may register.' },
  WEBHOOK_DELIVERY_CONCURRENCY: {
    section: 'Webhooks',
    type: 'int',
    default: 64,
    min: 1,
    max: 10_000,
    description: 'Webhook deliveries in flight at once per server.',
  },
  // Event coordination
  EVENT_RETENTION_SECONDS: {
    section: 'Event coordination',
    type: 'int',
    default: 600,
    min: 1,
    max: 86_400,
    description:
      'How long a value posted with `POST /v1/events/{event_name}` that no wait has taken is kept for the next wait, in seconds; then it is dropped.',
  },
  EVENT_MAX_PENDING_PER_PROJECT: {
    section: 'Event coordination',
    type: 'int',
    default: 1000,
    min: 1,
    max: 1_000_000,
    description: 'Most values one project may have posted and not yet taken by a wait; a post beyond it answers 429.',
  },
  // Agent access
  AGENT_ACCESS_ANONYMOUS_CREDITS: {
    section: 'Agent access',
    type: 'int',
    default: 5,
    min: 0,
    max: 1_000_000,
    description: 'Credits a project created through agent access receives.',
  },
  AGENT_ACCESS_IDENTITY_CREDITS: {
    section: 'Agent access',
    type: 'int',
    default: 20,
    min: 0,
    max: 1_000_000,
    description: 'Extra credits for a verified identity_token in agent access (no OIDC issuer is configurable yet).',
  },
  AGENT_ACCESS_CHALLENGE_TTL_SECONDS: {
    section: 'Agent access',
    type: 'int',
    default: 300,
    min: 1,
    max: 86_400,
    description: 'Lifetime of an agent-access challenge token, in seconds.',
  },
  AGENT_ACCESS_SESSION_MAX_MINUTES: {
    section: 'Agent access',
    type: 'int',
    default: 15,
    min: 1,
    max: 10_080,
    description: 'Longest session a key obtained through agent access may run, in minutes.',
  },
  AGENT_ACCESS_RATE_PER_MINUTE: {
    section: 'Agent access',
    type: 'int',
    default: 60,
    min: 1,
    description: 'Agent-access requests allowed per client address per minute, all three operations together.',
  },
  // Batches, tasks and user code
  BATCH_QUEUE_TIMEOUT_SECONDS: {
    section: 'Batches, tasks and user code',
    type: 'int',
    default: 300,
    min: 1,
    max: 7 * 86_400,
    description: "How long a batch item waits for browser capacity before it fails, in seconds from the batch's creation.",
  },
  BATCH_CONCURRENCY: {
    section: 'Batches, tasks and user code',
    type: 'int',
    default: 4,
    min: 1,
    max: 1000,
    description: 'Batch items this server provisions at the same time, within MAX_CONCURRENT_BROWSERS.',
  },
  TASK_CONCURRENCY: {
    section: 'Batches, tasks and user code',
    type: 'int',
    default: 2,
    min: 1,
    max: 1000,
    description: 'Task runs this server executes at the same time; more wait in the queue.',
  },
  SANDBOX_WARM: {
    section: 'Batches, tasks and user code',
    type: 'int',
    default: 1,
    min: 0,
    max: 16,
    description:
      'Sandboxed runners for user code (tasks, execute-code) kept started ahead of runs, which saves each run the loading of Playwright (0 starts every run cold). An idle one ends after two minutes.',
  },
  // Agent tools and MCP
  LLM_PROVIDER: {
    section: 'Agent tools and MCP',
    type: 'text',
    into: 'llm',
    description:
      'The protocol of the language model the agent tools (`perform-web-task`) use: `openai` (Chat Completions: OpenAI, vLLM, Ollama, LM Studio...) or `anthropic` (Messages); unset: those tools answer 503 (see [Agent tools](agent-tools.md)).',
  },
  LLM_BASE_URL: {
    section: 'Agent tools and MCP',
    type: 'text',
    into: 'llm',
    defaultText: '`https://api.openai.com/v1` for openai, `https://api.anthropic.com` for anthropic',
    description: "Base URL of the model's API.",
  },
  LLM_API_KEY: {
    section: 'Agent tools and MCP',
    type: 'text',
    secret: true,
    into: 'llm',
    description: 'The API key of `LLM_BASE_URL` (never logged); unset for servers that take none.',
  },
  LLM_MODEL: {
    section: 'Agent tools and MCP',
    type: 'text',
    into: 'llm',
    description: 'The model name, required with `LLM_PROVIDER` (e.g. `gpt-4o`, `claude-sonnet-4-5`).',
  },
  LLM_IMAGES: {
    section: 'Agent tools and MCP',
    type: 'bool',
    default: true,
    into: 'llm',
    description: '`true` when the model takes images, so the agent sends it a screenshot with each observation; `false` for text-only models.',
  },
  LLM_CONTEXT_TOKENS: {
    section: 'Agent tools and MCP',
    type: 'int',
    default: 0,
    min: 0,
    max: 10_000_000,
    description:
      "The model's context window in tokens, for small local models (e.g. `4096` or `8192`): the agent then shows the page trimmed to what is in view (its interactive elements and text, without wrappers), cut to fit with the conversation so far, and drops its oldest turns when they fill half the context. `0`: no limit, the full snapshot (up to 40,000 characters).",
  },
  AGENT_STEPS_REQUIRE_KEY: {
    section: 'Agent tools and MCP',
    type: 'bool',
    default: false,
    description:
      "`true` refuses a connection to the agent-step stream (`/ws?sessionId=`) that carries no API key (401). The hosted vendor's SDK sends none there, so by default the session id opens it; a key that is sent is always checked.",
  },
  LLM_TIMEOUT_SECONDS: {
    section: 'Agent tools and MCP',
    type: 'int',
    default: 120,
    min: 1,
    max: 600,
    description: 'Longest wait for one answer of the model.',
  },
  WEB_TASK_TIMEOUT_SECONDS: {
    section: 'Agent tools and MCP',
    type: 'int',
    default: 600,
    min: 1,
    max: 3600,
    description: 'Longest a perform-web-task may run, all its steps together.',
  },
  PRICE_PER_AGENT_STEP: {
    section: 'Agent tools and MCP',
    type: 'number',
    default: 0.01,
    min: 0,
    description: "Credits per step (one browser action) of a perform-web-task, on top of its session's.",
  },
  MCP_IDLE_TIMEOUT_SECONDS: {
    section: 'Agent tools and MCP',
    type: 'int',
    default: 600,
    min: 1,
    max: 86_400,
    description: 'An MCP session (at `/mcp`) with no request for this many seconds is closed and the browser sessions it started end.',
  },
  // Secrets and tokens
  SECRETS_KEY: {
    section: 'Secrets and tokens',
    type: 'text',
    secret: true,
    into: 'secretsKey',
    defaultText: '`DATA_DIR/secrets.key`',
    description:
      "The 32-byte key (64 hex digits or base64) that seals stored secrets: identity credentials, client certificate keys, webhook signing secrets (sealed at the first start after an upgrade if they were stored plain); the keys that sign recordings' and task artifacts' links are derived from it (links signed before that upgrade stop opening; listing again gives fresh ones). Unset: a key file made once in DATA_DIR (`secrets.key`). Every node of one database must share it; never lose it.",
  },
  ADMIN_TOKEN: {
    section: 'Secrets and tokens',
    type: 'text',
    secret: true,
    rule: { test: /^\S{32,}$/, says: 'must be at least 32 characters without spaces (openssl rand -hex 32)' },
    description:
      'Bearer token of the admin API under `/admin/v1` (projects, limits, API keys; see [Projects and API keys](projects-and-keys.md)), at least 32 characters; unset: that API is off and answers 404.',
  },
  METRICS_TOKEN: {
    section: 'Secrets and tokens',
    type: 'text',
    secret: true,
    rule: { test: /^\S{16,}$/, says: 'must be at least 16 characters without spaces' },
    description: 'Bearer token `GET /metrics` asks for, at least 16 characters; unset: `/metrics` answers anyone who reaches the server.',
  },
  // Several nodes
  NODE_ID: {
    section: 'Several nodes',
    type: 'text',
    defaultText: 'host name and an id kept in `DATA_DIR`',
    rule: { test: /^[A-Za-z0-9._:-]{1,100}$/, says: 'must be 1 to 100 letters, digits, dots, dashes, underscores or colons' },
    description:
      "This node's name among the nodes of one database, up to 100 letters, digits, dots, dashes, underscores and colons. A node started again with the same id sweeps what it left.",
  },
  NODE_INTERNAL_URL: {
    section: 'Several nodes',
    type: 'text',
    trimSlash: true,
    defaultText: 'none: the node runs alone',
    rule: { test: /^https?:\/\/[^/\s]+$/, says: 'must be an http:// or https:// origin, such as http://10.0.0.5:8080' },
    description:
      '`http://` or `https://` address the other nodes reach this node at, for forwarded CDP, live-view and session requests; set on every node of a cluster (unset: the node runs alone).',
  },
  CLUSTER_SECRET: {
    section: 'Several nodes',
    type: 'text',
    secret: true,
    rule: { test: /^\S{32,}$/, says: 'must be at least 32 characters without spaces (openssl rand -hex 32)' },
    description:
      'Shared by every node of a cluster, at least 32 characters: node-to-node requests carry a proof made with it (an HMAC; the secret itself never travels and is never logged). Required with `NODE_INTERNAL_URL`.',
  },
  NODE_DEAD_AFTER_SECONDS: {
    section: 'Several nodes',
    type: 'int',
    default: 15,
    min: 3,
    max: 3600,
    description: 'A node whose heartbeat is this many seconds old is dead: the others fail its sessions and take over its queued work.',
  },
  REDIS_URL: {
    section: 'Several nodes',
    type: 'text',
    secret: true,
    rule: { test: /^rediss?:\/\/[^/\s]*/, says: 'must start with redis:// or rediss://' },
    description:
      '`redis://` or `rediss://` URL of a Redis that counts the rate limits (session creation, web fetch, agent access) for every node using it; the start fails if it does not answer. Unset: PostgreSQL counts them with `DATABASE_URL`, this process with PGlite.',
  },
  RATE_LIMIT_STORE: {
    section: 'Several nodes',
    type: 'enum',
    values: ['memory', 'postgres', 'redis'],
    defaultText: 'see the description',
    into: 'rateLimitStore',
    description:
      'Where the rate limits are counted: `redis` (needs `REDIS_URL`), `postgres` (needs `DATABASE_URL`) or `memory` (this node only; refused with `NODE_INTERNAL_URL`). Default: `redis` with `REDIS_URL`, else `postgres` with `DATABASE_URL`, else `memory`.',
  },
  REDIS_KEY_PREFIX: {
    section: 'Several nodes',
    type: 'string',
    default: 'cloud-browser:',
    rule: { test: /^[A-Za-z0-9._:{}-]{1,100}$/, says: 'must be 1 to 100 letters, digits, dots, dashes, underscores, colons or braces' },
    description: 'Prepended to the Redis keys of `REDIS_URL`, so several services can share one Redis.',
  },
  // Storage
  STORAGE_URL: {
    section: 'Storage',
    type: 'text',
    into: 'storage',
    defaultText: '`file:`',
    description:
      'Where finished files (recordings, downloads, profiles, extensions, task artifacts) are kept: unset or `file:` for folders of `DATA_DIR` (one node), `s3://BUCKET/optional/prefix` for an S3-compatible bucket every node shares (see [Storage](storage.md)).',
  },
  S3_ENDPOINT: {
    section: 'Storage',
    type: 'text',
    into: 'storage',
    description: '`http://` or `https://` address of an S3-compatible server (MinIO, Ceph, R2...) for `STORAGE_URL=s3://...`; unset: AWS S3.',
  },
  S3_REGION: { section: 'Storage', type: 'text', into: 'storage', defaultText: '`us-east-1`', description: 'Region of the `STORAGE_URL` bucket.' },
  S3_FORCE_PATH_STYLE: {
    section: 'Storage',
    type: 'bool',
    defaultText: '`true` when `S3_ENDPOINT` is set, else `false`',
    into: 'storage',
    description: '`true` addresses the bucket in the path (`http://endpoint/bucket/key`) rather than in the host name.',
  },
  AWS_ACCESS_KEY_ID: {
    section: 'Storage',
    type: 'text',
    into: 'storage',
    description:
      "Access key of the `STORAGE_URL` bucket, with `AWS_SECRET_ACCESS_KEY`; unset: the AWS SDK's default chain (shared config files, instance or container roles).",
  },
  AWS_SECRET_ACCESS_KEY: {
    section: 'Storage',
    type: 'text',
    secret: true,
    into: 'storage',
    description: 'Secret key paired with `AWS_ACCESS_KEY_ID` (never logged).',
  },
  // Observability
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    section: 'Observability',
    type: 'text',
    trimSlash: true,
    into: 'otelEndpoint',
    rule: { test: /^https?:\/\/[^/\s]+(\/\S*)?$/, says: 'must be an http:// or https:// URL, such as http://localhost:4318' },
    description:
      '`http(s)://` base URL of an OpenTelemetry collector: traces of HTTP requests, database queries, session creation and browser launches go to its `/v1/traces` over OTLP/HTTP (JSON); unset: no traces.',
  },
} as const satisfies Record<string, Setting>;

export type VariableName = keyof typeof SETTINGS;

type ValueOf<S> = S extends { type: 'int' | 'number' }
  ? number
  : S extends { type: 'number?' }
    ? number | null
    : S extends { type: 'bool'; default: boolean }
      ? boolean
      : S extends { type: 'bool' }
        ? boolean | undefined
        : S extends { type: 'string' | 'path' }
          ? string
          : S extends { type: 'enum'; values: readonly (infer V)[]; default: string }
            ? V
            : S extends { type: 'enum'; values: readonly (infer V)[] }
              ? V | undefined
              : S extends { type: 'text' }
                ? string | undefined
                : never;

/** Every variable's value, read and checked: by variable name. */
export type Settings = { -readonly [K in VariableName]: ValueOf<(typeof SETTINGS)[K]> };

/** PORT -> port, MAX_CONCURRENT_BROWSERS -> maxConcurrentBrowsers. */
export type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${Lowercase<H>}${Capitalize<Camel<T>>}` : Lowercase<S>;
export const camel = (name: string): string => name.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The variables that are a Config field of their own, under their camel-case name. */
type Direct = { [K in VariableName]: (typeof SETTINGS)[K] extends { into: string } ? never : K }[VariableName];
export type DirectConfig = { -readonly [K in Direct as Camel<K>]: Settings[K] };
export const DIRECT = (Object.keys(SETTINGS) as VariableName[]).filter((name) => !('into' in SETTINGS[name]));

const either = (values: readonly string[]) => (values.length === 1 ? values[0] : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`);

/** Reads every variable by its entry; a value that breaks its entry is a problem, and its default is used. */
export function readSettings(env: Partial<Record<string, string | undefined>>, problems: string[]): Settings {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(SETTINGS) as VariableName[]) {
    const s: Setting = SETTINGS[name];
    const raw = env[name];
    const unset = raw === undefined || raw === '';
    const refuse = (says: string, value = raw) => problems.push(`${name}${s.secret ? '' : `=${JSON.stringify(value)}`} ${says}`);
    switch (s.type) {
      case 'int': {
        const max = s.max ?? Number.MAX_SAFE_INTEGER;
        const n = Number(raw);
        if (unset) out[name] = s.default;
        else if (!/^-?\d+$/.test(raw.trim()) || n < s.min || n > max) {
          refuse(`must be a whole number from ${s.min} to ${max}`);
          out[name] = s.default;
        } else out[name] = n;
        break;
      }
      case 'number':
      case 'number?': {
        const fallback = s.type === 'number' ? s.default : null;
        const n = Number(raw);
        if (unset) out[name] = fallback;
        else if (!Number.isFinite(n) || n < s.min) {
          refuse(`must be a number of at least ${s.min}`);
          out[name] = fallback;
        } else out[name] = n;
        break;
      }
      case 'bool':
        if (unset) out[name] = s.default;
        else if (/^(true|1|yes)$/i.test(raw)) out[name] = true;
        else if (/^(false|0|no)$/i.test(raw)) out[name] = false;
        else {
          refuse('must be true or false');
          out[name] = s.default;
        }
        break;
      case 'string':
        out[name] = unset ? s.default : raw;
        if (s.rule && !s.rule.test.test(out[name] as string)) {
          refuse(s.rule.says, out[name] as string);
          out[name] = s.default;
        }
        break;
      case 'path':
        out[name] = unset ? s.default : raw;
        break;
      case 'enum':
        out[name] = unset ? s.default : raw;
        if (!unset && !s.values.includes(raw)) {
          refuse(`must be ${either(s.values)}`);
          out[name] = s.default;
        }
        break;
      case 'text': {
        const value = unset ? undefined : s.trimSlash ? raw.replace(/\/+$/, '') : raw;
        if (value !== undefined && s.rule && !s.rule.test.test(value)) refuse(s.rule.says, value);
        out[name] = value;
        break;
      }
    }
  }
  return out as Settings;
}
