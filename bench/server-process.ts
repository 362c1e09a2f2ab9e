// The server as a deployment runs it: its own process (`server/main.ts`), so that its
// event loop is not the benchmark client's. Benchmarks that time the service end to end
// start it with this.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browsersDirFor } from '../server/browser/index.js';
import { postgresSchema } from '../server/store/pg-schema.js';
import { freePort } from '../server/testing/free-port.js';

export interface ServerProcess {
  base: string;
  apiKey: string;
  /** Its DATA_DIR (removed by stop()). */
  dataDir: string;
  /** Where this server keeps its browser roots (os.tmpdir()/cb-<hash of DATA_DIR>). */
  browsersDir: string;
  /** Resident memory of the process that listens, in bytes. */
  rss(): number;
  /** CPU time (user + system) the process that listens has used, in ms. */
  cpuMs(): number;
  /** fetch() against the server with the API key. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** Graceful stop (SIGTERM), then the data directory is removed. */
  stop(): Promise<void>;
}

const root = new URL('..', import.meta.url).pathname;

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-bench-'));
  const browsersDir = browsersDirFor(dataDir);
  const apiKey = `sk_bench_${randomBytes(12).toString('hex')}`;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // On PostgreSQL a schema of its own, dropped at stop(): a rerun starts clean, and no run
  // leaves rows in the database's public schema (secrets sealed with its own key made the
  // next run's server refuse to start). A URL that names a search_path already is the caller's.
  const databaseUrl = env.DATABASE_URL ?? process.env.DATABASE_URL;
  const schema = databaseUrl && !new URL(databaseUrl).searchParams.has('options') ? await postgresSchema(databaseUrl, 'bench') : undefined;
  const child = spawn(join(root, 'node_modules/.bin/tsx'), ['server/main.ts'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: apiKey,
      LOG_LEVEL: 'error',
      ALLOW_PRIVATE_NETWORKS: 'true',
      ...env,
      ...(schema ? { DATABASE_URL: schema.url } : {}),
    },
  });
  // The server is ours to stop whatever happens to the benchmark.
  const kill = () => child.kill('SIGKILL');
  process.on('exit', kill);
  for (
    let i = 0;
    !(await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 1200 || child.exitCode !== null) {
      kill();
      process.off('exit', kill);
      rmSync(dataDir, { recursive: true, force: true });
      await schema?.drop();
      throw new Error('server did not start');
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  // tsx runs the server in a child of its own: measure the process that listens.
  const pid = Number(
    execFileSync('sh', ['-c', `ss -ltnpH 'sport = :${port}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2`])
      .toString()
      .trim(),
  );
  return {
    base,
    apiKey,
    dataDir,
    browsersDir,
    rss: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024,
    cpuMs: () => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) * 10; // USER_HZ is 100 on Linux
    },
    request: (path, init = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { 'service-api-key': apiKey, 'content-type': 'application/json', ...init.headers } }),
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      process.off('exit', kill);
      rmSync(dataDir, { recursive: true, force: true });
      await schema?.drop();
    },
  };
}
