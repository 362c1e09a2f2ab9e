// Assembles the service from its configuration: database, capabilities, HTTP app, and the
// node HTTP server with its WebSocket upgrades. `main.ts` runs it; tests start it in-process
// on an ephemeral port and talk to it over real HTTP.
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import { openDb, type Db } from './store/db.js';
import { migrate } from './store/migrate.js';
import { bootstrapKey, findKey } from './auth/api-keys.js';
import { createHttpApp, finishApp, type AppHandlers } from './http/app.js';
import { notImplementedHandlers } from './http/not-implemented.js';
import { SessionManager } from './sessions/manager.js';
import { startEvents } from './events/handlers.js';
import { LiveView, Screencasts } from './liveview/index.js';
import { createRecordings } from './recording/index.js';
import { inputHandlers } from './input/handlers.js';
import { cdpDiscoveryUrl, sessionHandlers } from './sessions/handlers.js';
import { agentAccessHandlers } from './agent-access/handlers.js';
import { ToolService } from './tools/fetch.js';
import { toolHandlers } from './tools/handlers.js';
import { BatchWorker } from './batches/worker.js';
import { batchHandlers } from './batches/handlers.js';
import { billingHandlers } from './billing/handlers.js';

export interface RunningServer {
  /** The address the server listens on, e.g. http://127.0.0.1:41234. */
  url: string;
  /** The configuration in force, PUBLIC_URL resolved. */
  config: ServiceConfig;
  db: Db;
  /** Set when this start created the first API key (no BOOTSTRAP_API_KEY was given). */
  createdApiKey?: string;
  /** Graceful: stops accepting, finishes requests, ends browsers, closes the database. */
  close(): Promise<void>;
}

const openapiYaml = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
const redocBundle = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

const docsPage = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Cloud Browser Service API</title>
  <style>body { margin: 0; }</style>
</head>
<body>
  <redoc spec-url="/openapi.yaml"></redoc>
  <script src="/docs/redoc.standalone.js"></script>
</body>
</html>`;

/** Configuration once the server knows its own address. */
export type ServiceConfig = Config & { publicUrl: string };

export async function startServer(initial: Config, log: Logger): Promise<RunningServer> {
  // Listen first, so an ephemeral port (PORT=0) is known before anything builds URLs.
  let listener: RequestListener = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createHttpServer((req, res) => {
    if (req.url) req.url = cdpDiscoveryUrl(req.url);
    listener(req, res);
  });
  await listen(server, initial.port, initial.host);
  const { port } = server.address() as AddressInfo;
  const url = `http://${initial.host.includes(':') ? `[${initial.host}]` : initial.host}:${port}`;
  const config: ServiceConfig = { ...initial, publicUrl: initial.publicUrl ?? `http://localhost:${port}` };

  const cleanups: (() => Promise<void>)[] = [() => closeHttp(server, 0)];
  let db: Db;
  try {
    db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    cleanups.push(() => db.close());
    const applied = await migrate(db);
    if (applied.length) log.info({ applied }, 'database migrated');
    const bootstrap = await bootstrapKey(db, config.bootstrapApiKey);

    const sessions = new SessionManager({ db, config, log });
    // Live view and recordings share one screencast a session. Hooks run in this order: the
    // recording takes its last frame and the viewers are told before the screencast closes.
    const screencasts = new Screencasts({ quality: config.screencastQuality, log });
    const recordings = createRecordings({ db, config, log, sessions, screencasts });
    const liveView = new LiveView({ sessions, screencasts, log, maxViewers: config.liveViewMaxViewers });
    sessions.use(recordings.recorder);
    sessions.use(liveView);
    sessions.use(screencasts);
    cleanups.push(() => recordings.close()); // after the sessions' end (encodes finish first)
    await sessions.start();
    await recordings.start();
    cleanups.push(() => sessions.stop());
    // The web fetch, screenshot and page PDF tools' own browsers (not session browsers).
    const tools = new ToolService({ config, log });
    await tools.start();
    cleanups.push(() => tools.stop());
    // After the sessions: it provisions through them, and stops (finishing what is in flight) before them.
    const batches = new BatchWorker({ db, config, log, sessions });
    await batches.start();
    cleanups.push(() => batches.stop());
    server.on('upgrade', (req, socket, head) => {
      if (!sessions.cdpProxy.handleUpgrade(req, socket, head) && !liveView.handleUpgrade(req, socket, head)) socket.destroy();
    });

    const events = await startEvents({
      db,
      log,
      allowPrivate: config.allowPrivateNetworks,
      publicUrl: config.publicUrl,
      maxPerProject: config.webhookMaxPerProject,
      worker: { concurrency: config.webhookDeliveryConcurrency },
    });
    cleanups.push(() => events.stop(config.shutdownGraceSeconds * 1000));

    const handlers: AppHandlers = {
      ...notImplementedHandlers(),
      ...events.handlers,
      ...agentAccessHandlers({ db, config, log }),
      ...sessionHandlers({ db, sessions }),
      ...recordings.handlers,
      ...inputHandlers({ db, sessions, log, allowPrivateNetworks: config.allowPrivateNetworks }),
      ...toolHandlers({ db, config, log, tools }),
      ...batchHandlers({ db, config, log, sessions, worker: batches }),
      ...billingHandlers({ db, config }),
    };

    const api = createHttpApp({
      handlers,
      log,
      authenticate: (key) => findKey(db, key),
      maxBodyBytes: config.maxBodyBytes,
      maxUploadBytes: config.maxUploadBytes,
      publicUrl: config.publicUrl,
    });
    addServiceRoutes(api, db, sessions);
    liveView.routes(api);
    recordings.routes(api);
    finishApp(api);
    listener = getRequestListener(api.fetch);
    log.info({ url, publicUrl: config.publicUrl, database: db.kind }, 'listening');

    let closing: Promise<void> | undefined;
    return {
      url,
      config,
      db,
      createdApiKey: bootstrap.key,
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

function addServiceRoutes(app: Hono, db: Db, sessions: SessionManager) {
  app.get('/healthz', async (c) => {
    const browsers = { running: sessions.running, warm: sessions.warm };
    try {
      await db.query('SELECT 1');
      return c.json({ status: 'ok', database: db.kind, browsers });
    } catch {
      return c.json({ status: 'unavailable', database: db.kind, browsers }, 503);
    }
  });
  app.get('/openapi.yaml', (c) => c.body(readFileSync(openapiYaml, 'utf8'), 200, { 'content-type': 'application/yaml' }));
  app.get('/docs', (c) => c.html(docsPage));
  app.get('/docs/redoc.standalone.js', (c) =>
    c.body(readFileSync(redocBundle), 200, { 'content-type': 'text/javascript', 'cache-control': 'public, max-age=86400' }),
  );
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
