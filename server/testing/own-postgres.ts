// A PostgreSQL server of the test's own, for tests that stop and start it (a database
// outage): never the machine's shared one, which others use. Debian's binaries
// (/usr/lib/postgresql/N/bin), a data directory in a temporary directory, trust auth, an
// ephemeral port on 127.0.0.1 and its socket in the data directory. PostgreSQL refuses to
// run as root: as root, it runs as the `postgres` user (runuser).
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

export interface OwnPostgres {
  url: string;
  /** Its data directory (postmaster.pid names the server's process). */
  dataDir: string;
  /** `pg_ctl stop -m immediate`: every backend is killed, as in a crash. */
  crash(): Promise<void>;
  /** Starts it again (crash recovery), answering once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  remove(): Promise<void>;
}

/** Where Debian's PostgreSQL binaries are, newest version first; undefined when absent. */
export function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')) && existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] && join(root, versions[0], 'bin');
}

/** Why an own PostgreSQL cannot run here, or undefined when it can. */
export function ownPostgresUnavailable(): string | undefined {
  if (!postgresBinaries()) return 'no PostgreSQL binaries in /usr/lib/postgresql/*/bin';
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      return 'running as root, and there is no postgres user to run PostgreSQL as';
    }
  }
  return undefined;
}

/** `settings`: more of PostgreSQL's settings (`-c name=value`), e.g. max_connections. */
export async function startOwnPostgres(settings: Record<string, string> = {}): Promise<OwnPostgres> {
  const bin = postgresBinaries();
  if (!bin) throw new Error('no PostgreSQL binaries');
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'cb-own-pg-'));
  const data = join(dir, 'data');
  // As root: everything below dir belongs to postgres, which runs the server.
  const as = (cmd: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', cmd, ...args]) : run(cmd, args));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const port = await freePort();
  const pgCtl = join(bin, 'pg_ctl');
  const all = { listen_addresses: '127.0.0.1', fsync: 'off', full_page_writes: 'off', max_connections: '40', ...settings };
  const options = `-p ${port} -k ${dir} ${Object.entries(all)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ')}`;
  const start = async () => {
    await as(pgCtl, ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start']);
  };
  await as(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  await start();
  let removed = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dataDir: data,
    crash: async () => {
      await as(pgCtl, ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    start,
    remove: async () => {
      if (removed) return;
      removed = true;
      await as(pgCtl, ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
