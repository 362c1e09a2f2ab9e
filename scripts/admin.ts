// `pnpm admin ...`: the operator's command line over the admin API (/admin/v1). It only
// calls that API, so it manages any server it can reach, local or not.
//
//   pnpm admin projects list
//   pnpm admin projects create --name team-b [--tier self-hosted] [--included-credits 500] [--cost-limit 400] [--max-browsers 5]
//                              [--memory-mb 1024] [--cpus 0.5]
//   pnpm admin projects get ID
//   pnpm admin projects update ID [--name N] [--tier T] [--included-credits N|default] [--cost-limit N|default] [--max-browsers N|default]
//                              [--memory-mb N|default] [--cpus N|default]
//   pnpm admin projects delete ID
//   pnpm admin keys list PROJECT_ID
//   pnpm admin keys create PROJECT_ID [--name N]
//   pnpm admin keys revoke KEY_ID
//
// The server's address: --url, else ADMIN_URL, else http://localhost:$PORT (8080). The token:
// --token, else ADMIN_TOKEN. --json prints the API's answer as it is.
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

export const usage = `Usage: pnpm admin [--url URL] [--token TOKEN] [--json] COMMAND

  projects list
  projects create --name NAME [--tier self-hosted|agent-access] [--included-credits N]
                  [--cost-limit N] [--max-browsers N] [--memory-mb N] [--cpus N]
  projects get PROJECT_ID
  projects update PROJECT_ID [--name NAME] [--tier TIER] [--included-credits N|default]
                  [--cost-limit N|default] [--max-browsers N|default]
                  [--memory-mb N|default] [--cpus N|default]
  projects delete PROJECT_ID      (refused while its sessions run)
  keys list PROJECT_ID
  keys create PROJECT_ID [--name NAME]   (the key is printed once)
  keys revoke KEY_ID

  --url URL      the server (env ADMIN_URL; default http://localhost:$PORT, PORT 8080)
  --token TOKEN  the server's ADMIN_TOKEN (env ADMIN_TOKEN)
  --json         print the API's JSON answer
`;

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

class UsageError extends Error {}

/** A number, or null for "default" (the server's configuration). */
function limit(name: string, raw: string | undefined, integer: boolean): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'default' || raw === 'null') return null;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)))
    throw new UsageError(`--${name} must be ${integer ? 'a whole number' : 'a number'} or "default", not ${JSON.stringify(raw)}`);
  return n;
}

function table(rows: Record<string, unknown>[], columns: string[]): string[] {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))];
}

const PROJECT_COLUMNS = [
  'id',
  'name',
  'tier',
  'included_credits',
  'cost_limit',
  'max_concurrent_browsers',
  'browser_memory_limit_mb',
  'browser_cpu_limit',
  'created_at',
];
const KEY_COLUMNS = ['id', 'name', 'prefix', 'source', 'created_at', 'last_used_at', 'revoked_at'];

/** Runs one command; answers the exit code (0 done, 1 the server refused, 2 a usage error). */
export async function main(argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        json: { type: 'boolean', default: false },
        name: { type: 'string' },
        tier: { type: 'string' },
        'included-credits': { type: 'string' },
        'cost-limit': { type: 'string' },
        'max-browsers': { type: 'string' },
        'memory-mb': { type: 'string' },
        cpus: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${usage}`);
    return 2;
  }
  const { values: v, positionals } = parsed;
  if (v.help || positionals.length === 0) {
    (v.help ? io.out : io.err)(usage);
    return v.help ? 0 : 2;
  }
  const base = (v.url ?? env.ADMIN_URL ?? `http://localhost:${env.PORT || 8080}`).replace(/\/+$/, '');
  const token = v.token ?? env.ADMIN_TOKEN;

  try {
    if (!/^https?:\/\/[^/]+/.test(base)) throw new UsageError(`--url must be an http(s) URL, not ${base}`);
    if (!token) throw new UsageError("no admin token: pass --token or set ADMIN_TOKEN (the server's ADMIN_TOKEN)");
    const [family, action, id, ...extra] = positionals;
    if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
    const needId = (what: string) => {
      if (!id) throw new UsageError(`${family} ${action} needs a ${what}`);
      return encodeURIComponent(id);
    };
    const limits = () => ({
      ...(v.name !== undefined ? { name: v.name } : {}),
      ...(v.tier !== undefined ? { tier: v.tier } : {}),
      ...(v['included-credits'] !== undefined ? { included_credits: limit('included-credits', v['included-credits'], false) } : {}),
      ...(v['cost-limit'] !== undefined ? { cost_limit: limit('cost-limit', v['cost-limit'], false) } : {}),
      ...(v['max-browsers'] !== undefined ? { max_concurrent_browsers: limit('max-browsers', v['max-browsers'], true) } : {}),
      ...(v['memory-mb'] !== undefined ? { browser_memory_limit_mb: limit('memory-mb', v['memory-mb'], true) } : {}),
      ...(v.cpus !== undefined ? { browser_cpu_limit: limit('cpus', v.cpus, false) } : {}),
    });

    let request: { method: string; path: string; body?: unknown; columns?: string[] };
    switch (`${family} ${action}`) {
      case 'projects list':
        request = { method: 'GET', path: '/admin/v1/projects', columns: PROJECT_COLUMNS };
        break;
      case 'projects create':
        if (v.name === undefined) throw new UsageError('projects create needs --name');
        request = { method: 'POST', path: '/admin/v1/projects', body: limits() };
        break;
      case 'projects get':
        request = { method: 'GET', path: `/admin/v1/projects/${needId('project id')}` };
        break;
      case 'projects update': {
        const path = `/admin/v1/projects/${needId('project id')}`;
        const body = limits();
        if (Object.keys(body).length === 0)
          throw new UsageError('projects update needs at least one of --name, --tier, --included-credits, --cost-limit, --max-browsers');
        request = { method: 'PATCH', path, body };
        break;
      }
      case 'projects delete':
        request = { method: 'DELETE', path: `/admin/v1/projects/${needId('project id')}` };
        break;
      case 'keys list':
        request = { method: 'GET', path: `/admin/v1/projects/${needId('project id')}/keys`, columns: KEY_COLUMNS };
        break;
      case 'keys create':
        request = { method: 'POST', path: `/admin/v1/projects/${needId('project id')}/keys`, body: v.name !== undefined ? { name: v.name } : {} };
        break;
      case 'keys revoke':
        request = { method: 'DELETE', path: `/admin/v1/keys/${needId('key id')}` };
        break;
      default:
        throw new UsageError(`unknown command: ${positionals.join(' ')}`);
    }

    let res: Response;
    try {
      res = await fetch(base + request.path, {
        method: request.method,
        headers: { authorization: `Bearer ${token}`, ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
      });
    } catch (err) {
      io.err(`cannot reach ${base}: ${(err as Error).cause ?? (err as Error).message}`);
      return 1;
    }
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const why = body?.error?.message ?? text;
      // The admin API answers every path 404 when the server has no ADMIN_TOKEN.
      const hint = res.status === 404 && /^No route/.test(why) ? ' (is ADMIN_TOKEN set on the server? Without it the admin API answers 404)' : '';
      io.err(`${request.method} ${request.path}: ${res.status} ${why}${hint}`);
      return 1;
    }
    if (v.json) io.out(JSON.stringify(body, null, 2));
    else if (request.columns) table(body.data, request.columns).forEach((l) => io.out(l));
    else if (family === 'keys' && action === 'create') {
      io.out(`key id: ${body.data.id}`);
      io.out(`key:    ${body.data.key}`);
      io.out('The key is shown this once: keep it now.');
    } else io.out(JSON.stringify(body.data, null, 2));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n\n${usage}`);
      return 2;
    }
    throw err;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const code = await main(process.argv.slice(2), process.env, { out: (l) => console.log(l), err: (l) => console.error(l) });
  process.exit(code);
}
