// Assembles the service: configuration, database, the capabilities composed in one list,
// the HTTP app, and the node HTTP server with its WebSocket upgrades. `main.ts` runs it;
// tests start it in-process on an ephemeral port and talk to it over real HTTP.
//
// Adding a capability is one line in the list below: its place is after what it depends
// on, and its start, shutdown, session hooks, middleware and upgrade wrappers follow from
// that place (capability/). Where a place matters for another reason than a dependency,
// `order` below says so, and the composition refuses a list that breaks it.
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Logger } from 'pino';
import type { Config, ServiceConfig } from './config/config.js';
import { openDb, type Db } from './store/db.js';
import { migrate } from './store/migrate.js';
import { bootstrapKey, findKey } from './auth/api-keys.js';
import { openRateLimits } from './http/rate-limit/index.js';
import { createHttpApp, finishApp } from './http/app.js';
import { keepIdleConnections } from './http/keep-alive.js';
import { compose, createSignals, type OrderRule } from './capability/index.js';
import { openBlobAreas } from './storage/areas.js';
import { checkBrowserCaps, checkBrowserSandbox } from './browser/index.js';
import { openSecrets } from './secrets/index.js';
import { sessions } from './sessions/index.js';
import { extensions } from './extensions/index.js';
import { clientCertificates } from './client-certificates/index.js';
import { profiles } from './profiles/index.js';
import { identities } from './identities/index.js';
import { sessionCaptcha } from './session-captcha/index.js';
import { liveView } from './liveview/index.js';
import { interventions, type Interventions } from './interventions/index.js';
import { recordings } from './recording/index.js';
import { sessionFiles } from './session-files/index.js';
import { input } from './input/index.js';
import { tools } from './tools/index.js';
import { executeCode } from './execute-code/index.js';
import { mcp } from './mcp/index.js';
import { agent } from './agent/index.js';
import { batches } from './batches/index.js';
import { tasks } from './tasks/index.js';
import { webhooks } from './events/index.js';
import { signals } from './signals/index.js';
import { billing } from './billing/index.js';
import { agentAccess } from './agent-access/index.js';
import { health } from './health/index.js';
import { cluster as clusterNode, clusterRouting } from './cluster/index.js';
import { admin } from './admin/index.js';
import { Metrics, metricsEndpoint, startTracing } from './metrics/index.js';
import { installationId } from './browser/index.js';
import { hostname } from 'node:os';
import { webConsole } from './console/index.js';
import { docs } from './docs/index.js';

export interface RunningServer {
  /** The address the server listens on, e.g. http://127.0.0.1:41234. */
  url: string;
  /** The configuration in force, PUBLIC_URL resolved. */
  config: ServiceConfig;
  db: Db;
  /** Set when this start created the first API key (no BOOTSTRAP_API_KEY was given). */
  createdApiKey?: string;
  /** Services of the capabilities that code beside the HTTP API may use (tests, an embedding program). */
  services: { interventions: Interventions };
  /** SIGTERM's first phase: the node drains (new sessions answer 503, the cluster sees it
   *  draining) while its running sessions finish, up to SHUTDOWN_GRACE_SECONDS. */
  drain(): Promise<void>;
  /** Graceful: stops accepting, finishes requests, ends browsers, closes the database. */
  close(): Promise<void>;
}

/** Where the list's order matters beyond its types (compose checks it; capability/order.ts). */
const order: OrderRule[] = [
  {
    first: [profiles],
    then: [sessionCaptcha, liveView, recordings],
    why: "a session's ending hooks run in reverse: profiles' closes the browser gracefully to save a profile, after the captcha watch, the live view and the recording have stopped",
  },
  {
    first: [recordings],
    then: [identities],
    why: "a session's started hooks run in order: an identity's logins run once the recording has started, so that it shows them",
  },
  {
    first: { everyWith: 'recoverNode' },
    then: [clusterNode],
    why: "the cluster's reaper takes a dead node's work over through every capability's recoverNode, from the cluster's start to its close: they start before it and close after it",
  },
];

export async function startServer(initial: Config, log: Logger): Promise<RunningServer> {
  // Listen first, so an ephemeral port (PORT=0) is known before anything builds URLs.
  let listener: RequestListener = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createHttpServer((req, res) => listener(req, res));
  // Longer than a load balancer's usual 60 s idle time-out, so it closes first (docs/nodes.md).
  keepIdleConnections(server, 65);
  await listen(server, initial.port, initial.host);
  const { port } = server.address() as AddressInfo;
  const url = `http://${initial.host.includes(':') ? `[${initial.host}]` : initial.host}:${port}`;
  const config: ServiceConfig = { ...initial, publicUrl: initial.publicUrl ?? `http://localhost:${port}` };

  const cleanups: (() => Promise<void>)[] = [() => closeHttp(server, 0)];
  let db: Db;
  try {
    // First in, last out: spans of the shutdown's own queries still go out.
    const tracing = startTracing({ endpoint: config.otelEndpoint, node: `${hostname()}:${installationId(config.dataDir)}` });
    cleanups.push(() => tracing.close());
    // Before anything launches a browser: refused here when the sandbox cannot run (browser-user.ts).
    if (checkBrowserSandbox({ sandbox: config.browserSandbox === 'on', dataDir: config.dataDir }) === 'off')
      log.warn(
        'browser sandbox off (BROWSER_SANDBOX=off): browsers run as this server with --no-sandbox; a page that exploits the renderer runs as the server',
      );
    // Each browser in control groups of its own, capped (cgroup.ts): refused here when caps
    // the operator set cannot be enforced.
    const caps = checkBrowserCaps({ memoryMb: config.browserMemoryLimitMb, cpus: config.browserCpuLimit });
    if ('off' in caps) log.warn({ why: caps.off }, 'browsers run without memory and CPU caps');
    else config.browserCaps = caps;
    db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log });
    cleanups.push(() => db.close());
    const applied = await migrate(db);
    if (applied.length) log.info({ applied }, 'database migrated');
    // PGlite's WebAssembly memory grows while it builds a database and never shrinks: opened
    // again after migrating, a first start holds 494 MB where it held 910 MB (in the image).
    if (applied.length && db.kind === 'pglite') {
      await db.close();
      db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log });
    }
    const bootstrap = await bootstrapKey(db, config.bootstrapApiKey);
    const secrets = await openSecrets(db, config);
    // Counted where every node sees them (http/rate-limit/index.ts chooses).
    const rateLimits = await openRateLimits({ db, config, log });
    cleanups.push(() => rateLimits.close());

    const blobs = await openBlobAreas(config);
    cleanups.push(async () => blobs.close());
    log.info({ storage: blobs.describe }, 'blob storage');

    const metrics = new Metrics();
    // `signals`: the in-process word between capabilities, this server's own (not the
    // `signals` capability, which coordinates the API's events across nodes). A capability's
    // deps name the signals it gives or waits for: sessions tell an end recorded, which tasks
    // wait for; whoever writes an event (sessions, identities, interventions, recordings,
    // batches, tasks, webhooks, the console) tells deliveries written, which webhooks' worker
    // waits for; webhooks tell each delivery attempt's end, which tasks (composed before
    // them) wait for.
    const service = compose({ db, config, log, blobs: blobs.areas, secrets, metrics, rateLimits, signals: createSignals() }, order)
      .add(sessions)
      .add(extensions)
      .add(clientCertificates)
      .add(profiles)
      .add(sessionCaptcha)
      .add(liveView)
      .add(interventions)
      .add(recordings)
      .add(sessionFiles)
      .add(input)
      .add(tools)
      .add(executeCode)
      .add(mcp)
      // Before identities: a login hands the agent a page its rules do not understand.
      .add(agent)
      .add(identities)
      .add(batches)
      .add(tasks)
      .add(webhooks)
      .add(signals)
      .add(agentAccess)
      .add(clusterNode)
      // Sends a request or upgrade that another node must answer there (middleware, aroundUpgrade).
      .add(clusterRouting)
      // After the cluster: a project's browser limit is the cluster's.
      .add(billing)
      .add(health)
      .add(admin)
      .add(metricsEndpoint)
      // After everything it shows (it reads them through the API, in process).
      .add(webConsole)
      .add(docs)
      .build();
    await service.start();
    cleanups.push(() => service.stop());
    server.on('upgrade', (req, socket, head) => service.upgrade(req, socket, head) || socket.destroy());

    const api = createHttpApp({
      handlers: service.handlers,
      log,
      authenticate: (key) => findKey(db, key),
      maxBodyBytes: config.maxBodyBytes,
      maxUploadBytes: config.maxUploadBytes,
      publicUrl: config.publicUrl,
      adminToken: config.adminToken,
      observe: metrics.observeRequest,
      middleware: service.middleware,
    });
    service.routes(api);
    finishApp(api);
    listener = getRequestListener(api.fetch);
    log.info({ url, publicUrl: config.publicUrl, database: db.kind }, 'listening');

    let closing: Promise<void> | undefined;
    return {
      url,
      config,
      db,
      createdApiKey: bootstrap.key,
      services: { interventions: service.provided.interventions },
      drain: () => service.provided.cluster.drain(),
      close: () =>
        (closing ??= (async () => {
          // Stop taking requests while sessions end: their CDP sockets are upgraded
          // connections, which the HTTP server would otherwise wait for.
          const http = closeHttp(server, config.shutdownGraceSeconds * 1000);
          for (const cleanup of cleanups.slice(1).reverse()) await cleanup();
          await http;
        })()),
    };
  } catch (err) {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    throw err;
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Stops accepting, lets requests finish for up to graceMs, then drops what is left. */
function closeHttp(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
