// Tests start the real server in-process on an ephemeral port, with its own DATA_DIR
// (PGlite) or its own PostgreSQL schema, and talk to it over real HTTP.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig, type VariableName } from '../config/config.js';
import { createLogger } from '../log.js';
import { startServer, type RunningServer } from '../server.js';
import { postgresSchema, withPostgresSchema } from '../store/pg-schema.js';
import { createApiClient } from '../../generated/client.js';
import { seedPglite } from './pglite-template.js';

export interface TestServer extends RunningServer {
  apiKey: string;
  /** A typed openapi-fetch client with the API key set. */
  api: ReturnType<typeof createApiClient>;
  /** fetch against the server, with the API key unless headers override it. */
  request(path: string, init?: RequestInit): Promise<Response>;
  dataDir: string;
}

export type Backend = 'pglite' | 'postgres';

/** The backends tests run on: PGlite always, PostgreSQL too when DATABASE_URL is set. */
export const backends: Backend[] = process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];

/**
 * The backends of a capability whose tests are about what its browsers do (a sign-in, an
 * extension, a captcha, an MCP tool, the console's pages), not about what the database
 * does: PGlite only. PGlite is PostgreSQL's own engine, behind the same Db interface (its
 * types made the same on both); the stores' own tests run on both backends, and the
 * conformance suite drives most of these capabilities on a PostgreSQL server. Run on both,
 * they doubled the browser work of CI (a quarter of the tests' time) for that.
 */
export const browserBackends: Backend[] = ['pglite'];

let pgCleanups: (() => Promise<void>)[] = [];

export async function startTestServer(
  options: {
    backend?: Backend;
    /** A schema several servers share (sharedPostgresSchema): nodes of one cluster. Implies PostgreSQL. */
    databaseUrl?: string;
    env?: Partial<Record<VariableName, string>>;
    logs?: string[];
  } = {},
): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-'));
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  let databaseUrl = options.databaseUrl;
  let releaseSchema: (() => void) | undefined;
  if (options.backend === 'postgres' && databaseUrl === undefined) {
    if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is not set');
    // Hold the schema open until the server closes.
    databaseUrl = await new Promise<string>((resolveUrl) => {
      const done = withPostgresSchema(process.env.DATABASE_URL!, 'test', (url) => {
        resolveUrl(url);
        return new Promise<void>((r) => (releaseSchema = r));
      });
      pgCleanups.push(() => done);
    });
  }
  if (!databaseUrl && !options.env?.DATABASE_URL) seedPglite(options.env?.DATA_DIR ?? dataDir);
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: dataDir,
    BOOTSTRAP_API_KEY: apiKey,
    ALLOW_PRIVATE_NETWORKS: 'true',
    BROWSER_POOL_SIZE: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...options.env,
  });
  // options.logs collects every log line, for tests about what logs say (and never say).
  const logs = options.logs;
  const destination = logs ? { write: (line: string) => void logs.push(line) } : undefined;
  const server = await startServer(config, createLogger(config.logLevel, destination)).catch(async (err) => {
    // A start that fails (a test about start errors) leaves nothing behind either.
    releaseSchema?.();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const publicUrl = server.url;
  return {
    ...server,
    apiKey,
    dataDir,
    api: createApiClient({ baseUrl: publicUrl, apiKey }),
    request: (path, init = {}) => fetch(publicUrl + path, { ...init, headers: { 'service-api-key': apiKey, ...(init.headers as Record<string, string>) } }),
    async close() {
      await server.close();
      releaseSchema?.();
      await Promise.all(pgCleanups);
      pgCleanups = [];
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A PostgreSQL schema of its own for several servers of one test (a cluster on one database);
 *  drop() removes it once they have closed. */
export async function sharedPostgresSchema(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is not set');
  return postgresSchema(process.env.DATABASE_URL, 'test');
}
