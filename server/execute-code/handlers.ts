// executeCode: a syntax check first (400 naming the line, nothing started), then one
// sandboxed run of the snippet against the session's cdp_url. Statuses: 200 with the
// result and the console output; 400 for the code's own failures (thrown error with its
// line, a result that is not JSON, memory or output past the limits); 408 at the time
// limit; 409 when the session is not running or ends during the run; 429 past the runs
// this server takes at once; 500 when the sandbox fails.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import { checkTypeScript, type Sandbox } from '../sandbox/index.js';
import type { SessionLookup, SessionUrls } from '../sessions/index.js';

export type ExecuteCodeHandlers = Pick<AppHandlers, 'executeCode'>;

/** The vendor's limit, and the contract's. */
export const EXECUTE_CODE_TIMEOUT_MS = 60_000;
/** Sandboxed children at once for this operation: each is a node process of up to 512 MB. */
export const EXECUTE_CODE_CONCURRENCY = 4;

export function executeCodeHandlers(d: { sandbox: Sandbox; sessions: SessionLookup & SessionUrls; log: Logger }) {
  const running = new Map<string, { sessionId: string; abort: AbortController }>();
  const endedSessions = new Set<AbortController>();

  const handlers: ExecuteCodeHandlers = {
    async executeCode(req, ctx) {
      const code = req.body.code;
      const s = await d.sessions.lookup(ctx.projectId, req.query.sessionId);
      if ('status' in s) return fail(s.status, s.message);
      const syntax = checkTypeScript(code, 'snippet');
      if (!syntax.ok) return fail(400, `Syntax error at line ${syntax.line}: ${syntax.message}`);
      if (!d.sandbox.available) {
        ctx.log.error({ reason: d.sandbox.unavailableReason }, 'execute-code without a sandbox');
        return fail(500, 'Code execution is not available on this server');
      }
      if (running.size >= EXECUTE_CODE_CONCURRENCY)
        return { ...fail(429, 'Too many code runs at once on this server; retry shortly'), headers: { 'Retry-After': '1' } };
      const cdpUrl = d.sessions.cdpUrlOf(s.id);
      if (!cdpUrl) return fail(409, 'Session is not running');
      d.sessions.touch(s.id, 'input');

      const id = randomUUID();
      const abort = new AbortController();
      running.set(id, { sessionId: s.id, abort });
      let outcome;
      try {
        // `page` is the page on screen, as the contract says (the most recently focused).
        const onScreen = (await d.sessions.pages(s.id).catch(() => undefined))?.find((p) => p.active)?.targetId;
        outcome = await d.sandbox.run({
          kind: 'snippet',
          code,
          cdpUrl,
          timeoutMs: EXECUTE_CODE_TIMEOUT_MS,
          signal: abort.signal,
          ...(onScreen ? { pageTargetId: onScreen } : {}),
        });
      } finally {
        running.delete(id);
      }
      const log = ctx.log.child({ executionResultId: id, sessionId: s.id });
      log.info({ ok: outcome.ok, durationMs: outcome.durationMs, sandboxMs: outcome.sandboxMs }, 'code ran');
      if (outcome.ok) {
        return {
          status: 200,
          body: {
            success: true,
            message: 'Code ran to its end',
            output: outcome.value,
            error: null,
            executionResultId: id,
            logs: outcome.logs.map((l) => l.message),
          },
        };
      }
      const e = outcome.error;
      switch (e.type) {
        case 'automation_failure':
          return fail(
            400,
            e.line
              ? `${/^syntax error: /.test(e.message) ? 'Syntax error' : 'Error'} at line ${e.line}: ${e.message.replace(/^syntax error: /, '')}`
              : e.message,
          );
        case 'timeout':
          return fail(408, `Code execution exceeded ${EXECUTE_CODE_TIMEOUT_MS / 1000} seconds`);
        case 'cancelled':
          return fail(409, endedSessions.delete(abort) ? 'Session ended while the code ran' : 'The server is shutting down');
        case 'system_error':
          // The session may have gone under the run: that is the session's state, not a fault.
          if (!d.sessions.cdpUrlOf(s.id)) return fail(409, 'Session ended while the code ran');
          log.error({ error: e }, 'code run failed in the sandbox');
          return fail(500, 'The code could not be run: the sandbox failed');
      }
    },
  };

  return {
    handlers,
    sessionEnding(sessionId: string) {
      for (const run of running.values()) {
        if (run.sessionId !== sessionId) continue;
        endedSessions.add(run.abort);
        run.abort.abort();
      }
    },
    stopAll() {
      for (const run of running.values()) run.abort.abort();
    },
  };
}
