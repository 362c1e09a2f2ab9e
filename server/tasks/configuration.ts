// A task version's code and browserConfiguration: the checks the contract's schema cannot
// make (the code decodes to UTF-8 TypeScript that parses; options this server cannot honour
// are refused), and the session creation body a run's session gets from the configuration.
import type { SessionCreateBody } from '../sessions/index.js';
import { checkTypeScript } from '../sandbox/index.js';
import type { BrowserConfiguration } from './store.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The task code from its base64, or why it is refused (the 400's message). */
export function decodeCode(base64: string): { ok: true; source: string } | { ok: false; message: string } {
  // The schema checked the alphabet; a length that is not a whole number of base64 groups
  // would decode to a silently truncated text.
  const unpadded = base64.replace(/=+$/, '');
  if (unpadded.length % 4 === 1) return { ok: false, message: 'code is not valid base64: its length is not a whole number of bytes' };
  let source: string;
  try {
    source = utf8.decode(Buffer.from(base64, 'base64'));
  } catch {
    return { ok: false, message: 'code must decode to UTF-8 text' };
  }
  if (source.trim() === '') return { ok: false, message: 'code decodes to an empty text' };
  const checked = checkTypeScript(source, 'task');
  if (!checked.ok) return { ok: false, message: `code does not parse as TypeScript: line ${checked.line}: ${checked.message}` };
  return { ok: true, source };
}

/** Why this server cannot run sessions with the configuration, or undefined. */
export function refuseConfiguration(c: BrowserConfiguration): string | undefined {
  // Paying HTTP 402 requests needs a wallet this server does not have: refused, not ignored.
  if (c.x402) return 'browserConfiguration.x402 is not supported by this server';
  if (c.proxy?.city !== undefined && c.proxy.region === undefined) return 'browserConfiguration.proxy.city needs proxy.region';
  return undefined;
}

/** Why a run's session could not have the configuration (this server's refusals, then the
 *  checks a session creation makes), or undefined. */
export async function checkConfiguration(
  sessions: { validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> },
  projectId: string,
  configuration: BrowserConfiguration,
): Promise<string | undefined> {
  const own = refuseConfiguration(configuration);
  if (own) return own;
  const refused = await sessions.validate(projectId, sessionBody(configuration));
  return refused ? `browserConfiguration: ${refused}` : undefined;
}

/** The session creation body of a run's session. */
export function sessionBody(c: BrowserConfiguration, identity?: { id: string; skipValidation: boolean }): SessionCreateBody {
  const proxy = c.proxy?.active
    ? {
        active: true as const,
        type: 'service_proxy' as const,
        ...(c.proxy.country_code !== undefined ? { country_code: c.proxy.country_code } : {}),
        ...(c.proxy.region !== undefined ? { region: c.proxy.region } : {}),
        ...(c.proxy.city !== undefined ? { city: c.proxy.city } : {}),
      }
    : undefined;
  return {
    session: {
      ...(c.initial_url !== undefined ? { initial_url: c.initial_url } : {}),
      ...(c.tags !== undefined ? { tags: c.tags } : {}),
      ...(c.recording !== undefined ? { recording: c.recording } : {}),
      ...(proxy ? { proxy } : {}),
      ...(c.timeout !== undefined ? { timeout: c.timeout } : {}),
      ...(c.live_view !== undefined ? { live_view: c.live_view } : {}),
    },
    ...(identity ? { identities: [{ id: identity.id }], identity_skip_validation: identity.skipValidation } : {}),
  };
}

/** The run's time limit: the configuration's max_duration (minutes, default 20; -1: the server's ceiling). */
export function runTimeoutMs(c: BrowserConfiguration, ceilingMs: number): number {
  const minutes = c.timeout?.max_duration ?? 20;
  return minutes === -1 ? ceilingMs : Math.min(minutes * 60_000, ceilingMs);
}

/** The draft as its endpoints show it: live_view with read_only only, no x402. */
export function draftView(c: BrowserConfiguration): Omit<BrowserConfiguration, 'x402' | 'live_view'> & { live_view?: { read_only?: boolean } } {
  const { x402: _x402, live_view, ...rest } = c;
  return { ...rest, ...(live_view ? { live_view: live_view.read_only !== undefined ? { read_only: live_view.read_only } : {} } : {}) };
}
