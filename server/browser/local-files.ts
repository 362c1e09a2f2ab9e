// What a CDP client may not reach through the browser: the files of the machine it runs on.
// The browser runs as the server's user, so a page at file:// (or its view-source:) would
// read the server's data (every project's profiles, recordings, the embedded database), and
// a file input given any path would hand that file to a page, which can send it anywhere.
// The traffic proxy never sees either: file:// does not go through the network stack. So the
// CDP proxy refuses, before the browser sees them, the commands that open a local file
// (Page.navigate and Target.createTarget to a file: URL) and file inputs given paths outside
// the session's uploads folder (POST /v1/sessions/{id}/uploads puts files there). A page's
// own script cannot navigate to file: (Chromium refuses renderer-initiated navigations to
// local files from web pages), so these commands are the ways in.
import { resolve, sep } from 'node:path';

/** A command refused: the error answered to the client, with the command's id. */
export interface Refusal {
  id: unknown;
  sessionId?: unknown;
  message: string;
}

const OPENERS = new Set(['Page.navigate', 'Target.createTarget']);
const TRIGGER = /file:|setFileInputFiles|\\[utnr]/i;

/**
 * The refusal of a client's message, or undefined to let it through. Only messages that
 * could open a local file are parsed: those naming a file: URL or the file-input command (in
 * any case), and those with a `\u` escape, which could spell either, or a tab or newline
 * escape, which a URL parser drops wherever it stands (`fi\tle:` is file:).
 */
export function refuseLocalFiles(data: Buffer, uploadsDir: string): Refusal | undefined {
  if (!TRIGGER.test(data.toString('latin1'))) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined; // the browser refuses it as well
  }
  if (!isObject(message)) return undefined;
  const why = check(message, uploadsDir);
  return why ? { id: message.id, ...('sessionId' in message ? { sessionId: message.sessionId } : {}), message: why } : undefined;
}

function check(message: Record<string, unknown>, uploadsDir: string): string | undefined {
  const params = message.params;
  if (!isObject(params)) return undefined;
  if (typeof message.method === 'string' && OPENERS.has(message.method) && typeof params.url === 'string' && isLocalFile(params.url)) {
    return `${message.method}: local files (file: URLs) are not available in this browser`;
  }
  if (message.method === 'DOM.setFileInputFiles' && Array.isArray(params.files)) {
    const root = resolve(uploadsDir) + sep;
    const outside = params.files.find((f) => typeof f !== 'string' || !resolve(f).startsWith(root));
    if (outside !== undefined) {
      return `DOM.setFileInputFiles: ${JSON.stringify(outside)} is not a file of this session: upload it first (POST /v1/sessions/{session_id}/uploads answers its path)`;
    }
  }
  if (message.method === 'Target.sendMessageToTarget' && typeof params.message === 'string') {
    try {
      const inner: unknown = JSON.parse(params.message);
      if (isObject(inner)) return check(inner, uploadsDir);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** A file: URL, also behind view-source:, as Chromium's URL parser reads it (case, spaces, tabs). */
function isLocalFile(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol === 'file:') return true;
  return parsed.protocol === 'view-source:' && isLocalFile(url.slice(url.toLowerCase().indexOf('view-source:') + 'view-source:'.length));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
