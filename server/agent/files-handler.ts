// POST /v1/sessions/{sessionId}/agent/files: files for the agent of a running session
// (files.ts keeps them).
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { SessionLookup } from '../sessions/index.js';
import type { AgentFiles } from './files.js';

export function agentFileHandlers(d: { sessions: SessionLookup; files: AgentFiles }): Pick<AppHandlers, 'uploadAgentFiles'> {
  return {
    async uploadAgentFiles(req, ctx) {
      const found = await d.sessions.lookup(ctx.projectId, req.params.sessionId);
      if ('status' in found) return fail(found.status, found.message);
      let result;
      try {
        result = await d.files.put(found, req.body.file);
      } catch (err) {
        // The session ended while the files were written: its root is gone.
        if (!d.sessions.get(found.id)) return fail(409, 'Session is not running');
        throw err;
      }
      if (!result.ok) return fail(result.status, result.message);
      return { status: 200 as const, body: { data: { status: 'uploaded' as const, message: result.message, files: result.files } } };
    },
  };
}
