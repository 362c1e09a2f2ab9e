// Which requests need the node that owns a browser, and why: the one table of the routing.
// Everything not listed here is answered from the database by whichever node gets it.
// A request names its session in the path (session sub-resources, CDP, live view), in the
// query (execute-code and perform-web-task in a running session, the vendor SDK's CDP address,
// the stream of its agent's steps at /ws, which only the node running that agent has), in the JSON body (a
// profile taken from a running session), by a task run being cancelled, by a recording's signed
// link, or by the MCP session it belongs to.

export type Needs =
  /** The node that owns this session's browser (its in-memory state). */
  | { kind: 'session'; id: string }
  /** The node that recorded this recording (its file is in that node's DATA_DIR unless STORAGE_URL is shared). */
  | { kind: 'recording'; id: string }
  /** The node whose memory holds this MCP session. */
  | { kind: 'mcp'; id: string }
  /** The node that owns the session a JSON body names in `field` (the body must be read to know). */
  | { kind: 'session-in-body'; field: string }
  /** The node whose worker runs this task run (its cancel stops it there at once). */
  | { kind: 'task-run'; id: string }
  /** A new session: this node if it has room, else another one with room. */
  | { kind: 'placement' }
  /** The browser tools (fetch, screenshot, page PDF) on browsers of their own: this node if it
   *  runs browsers, else a node with room (a node without browsers launches none). */
  | { kind: 'browsers' }
  /** Every running session of the caller's project, wherever it runs (DELETE /v1/sessions/all). */
  | { kind: 'end-all' };

const SESSION_PATH = /^\/v1\/sessions\/([^/]+)(\/.*)?$/;
/** Answered from the database alone: the record, its tags, the (database) lists beside it. */
const SESSION_DB_ONLY = new Set(['GET ', 'PUT /tags']);
/** Literal paths under /v1/sessions/ that are not a session id. */
const NOT_A_SESSION = new Set(['all', 'history', 'async']);
const CDP_PATH = /^\/v1\/cdp\/([^/]+)(?:\/.*)?$/;
/**
 * The vendor SDK's CDP address, `?apiKey=K&sessionId=S` on the API's root: its WebSocket (`/`)
 * and the discovery document Playwright reads first (`/json/version`, with or without the slash).
 */
const VENDOR_CDP_PATHS = new Set(['/', '/json/version', '/json/version/']);
const LIVE_PATH = /^\/live\/([^/]+)(?:\/.*)?$/;
const RECORDING_LINK = /^\/files\/recordings\/([^/]+?)(?:\.mp4)?$/;
/** Operations that act in a running session named by a query parameter. */
const SESSION_IN_QUERY = new Set(['/v1/tools/execute-code', '/v1/tools/perform-web-task', '/ws']);

/** The tools that render a URL on browsers of their own, not a session's. */
const BROWSER_TOOLS = new Set(['/v1/tools/fetch/webpage', '/v1/tools/fetch-webpage', '/v1/tools/screenshot', '/v1/tools/page-pdf']);

const TASK_RUN_CANCEL = /^\/v2\/tasks\/runs\/([^/]+)\/cancel$/;
/** An id worth looking up: anything else (control characters, megabytes) is answered where it lands, by validation. */
const PLAUSIBLE_ID = /^[\w.:@-]{1,200}$/;

export function needsOf(method: string, url: URL, header: (name: string) => string | undefined): Needs | undefined {
  const needs = tableOf(method, url, header);
  return needs && 'id' in needs && !PLAUSIBLE_ID.test(needs.id) ? undefined : needs;
}

function tableOf(method: string, url: URL, header: (name: string) => string | undefined): Needs | undefined {
  const path = url.pathname;
  const m = SESSION_PATH.exec(path);
  if (m) {
    const id = decodeURIComponent(m[1]);
    if (NOT_A_SESSION.has(id)) return method === 'DELETE' && id === 'all' && m[2] === undefined ? { kind: 'end-all' } : undefined;
    if (SESSION_DB_ONLY.has(`${method} ${m[2] ?? ''}`)) return undefined;
    return { kind: 'session', id };
  }
  if (method === 'POST' && path === '/v1/sessions') return { kind: 'placement' };
  // A profile is taken from a running session's browser (its user-data directory).
  if (method === 'POST' && path === '/v1/profiles') return { kind: 'session-in-body', field: 'session_id' };
  if (VENDOR_CDP_PATHS.has(path) && url.searchParams.has('apiKey')) {
    const id = url.searchParams.get('sessionId');
    if (id) return { kind: 'session', id };
  }
  const cdp = CDP_PATH.exec(path) ?? LIVE_PATH.exec(path);
  if (cdp) return { kind: 'session', id: decodeURIComponent(cdp[1]) };
  if (SESSION_IN_QUERY.has(path)) {
    const id = url.searchParams.get('sessionId');
    if (id) return { kind: 'session', id };
    // Without a session, a web task starts a temporary one: placed like any other.
    return method === 'POST' && path === '/v1/tools/perform-web-task' ? { kind: 'placement' } : undefined;
  }
  if (method === 'POST' && BROWSER_TOOLS.has(path))
    return url.searchParams.get('sessionId') ? { kind: 'session', id: url.searchParams.get('sessionId')! } : { kind: 'browsers' };
  const run = method === 'POST' ? TASK_RUN_CANCEL.exec(path) : null;
  if (run) return { kind: 'task-run', id: decodeURIComponent(run[1]) };
  const rec = RECORDING_LINK.exec(path);
  if (rec) return { kind: 'recording', id: decodeURIComponent(rec[1]) };
  if (path === '/mcp') {
    const id = header('mcp-session-id');
    return id ? { kind: 'mcp', id } : undefined;
  }
  return undefined;
}
