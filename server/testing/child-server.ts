// The real server as a child process, for tests about what survives the server: a SIGKILL,
// a graceful stop (SIGTERM), a restart on the same DATA_DIR. One node process (the run's
// JavaScript or `--import tsx`: server-build.ts; the tsx CLI runs the server in a child of
// its own that a SIGKILL would miss).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';
import { seedPglite } from './pglite-template.js';
import { serverCommand } from './server-build.js';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface ChildServer {
  child: ChildProcess;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The end of its stderr. */
  stderr: () => string;
  /** The end of its log (stdout, at the LOG_LEVEL it was given). */
  log: () => string;
  /** fetch against the server with the API key. */
  request(path: string, init?: RequestInit): Promise<Response>;
}

/** Starts the server and waits for /healthz; databaseUrl undefined: PGlite in dataDir. */
export async function startChildServer(o: {
  dataDir: string;
  apiKey: string;
  databaseUrl?: string;
  env?: Record<string, string>;
  port?: number;
  /** As the README starts it (`pnpm start`), in a process group of its own whose id is the
   *  child's pid: pnpm, a shell and the server, each its own process. */
  pnpmStart?: boolean;
}): Promise<ChildServer> {
  // A port chosen by the caller: a cluster's node is told its own address (NODE_INTERNAL_URL).
  const port = o.port ?? (await freePort());
  if (!o.databaseUrl && !o.env?.DATABASE_URL) seedPglite(o.dataDir);
  const url = `http://127.0.0.1:${port}`;
  const [command, args] = o.pnpmStart ? ['pnpm', ['start']] : serverCommand();
  const child = spawn(command, args, {
    cwd: projectRoot,
    detached: o.pnpmStart === true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      // Where the test looks for the server's browser roots (os.tmpdir(); pnpm test may set it).
      ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
      PORT: String(port),
      PUBLIC_URL: url,
      DATA_DIR: o.dataDir,
      DATABASE_URL: o.databaseUrl ?? '',
      BOOTSTRAP_API_KEY: o.apiKey,
      ALLOW_PRIVATE_NETWORKS: 'true',
      BROWSER_POOL_SIZE: '0',
      LOG_LEVEL: 'warn',
      ...o.env,
    },
  });
  // Its log (stdout) and its last words (stderr), the end of each: what a test shows when the server does not do what it should.
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8_000)));
  child.stdout!.on('data', (d: Buffer) => (stdout = (stdout + d.toString()).slice(-16_000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  // Generous: three nodes starting side by side with another test file's browsers on 2 cores took over 60 s.
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited during start: ${stderr}`);
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not answer /healthz within 120 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    child,
    url,
    exited,
    stderr: () => stderr,
    log: () => stdout,
    request: (path, init = {}) => fetch(url + path, { ...init, headers: { 'service-api-key': o.apiKey, ...(init.headers as Record<string, string>) } }),
  };
}
