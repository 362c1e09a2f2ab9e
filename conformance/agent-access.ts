// A key for a new project through the unauthenticated agent-access flow, when the server
// implements it: GET /v1/agent-access/challenge → solve → POST /v1/agent-access.
import type { Contract } from './contract.js';
import { describe, send, HttpError } from './http.js';
import { solveArithmetic } from './arithmetic.js';

/** A key, or the reason there is none. */
export interface KeyResult {
  key?: string;
  projectId?: string;
  reason?: string;
}

export async function keyFromAgentAccess(contract: Contract, baseUrl: string, timeoutMs: number): Promise<KeyResult> {
  const challengeOp = contract.find('GET', '/v1/agent-access/challenge');
  const submitOp = contract.find('POST', '/v1/agent-access');
  if (!challengeOp || !submitOp) return { reason: 'the contract has no agent-access flow' };
  const base = baseUrl.replace(/\/+$/, '');
  try {
    const getReq = { method: 'GET', url: `${base}/v1/agent-access/challenge`, headers: { accept: 'application/json' }, timeoutMs };
    const got = await send(getReq);
    const c = got.json as { challenge?: { type?: string; prompt?: string }; token?: string } | undefined;
    if (got.status !== 200 || !c?.challenge || typeof c.token !== 'string') {
      return { reason: `agent access is not available: ${describe(getReq, got, 160)}` };
    }
    if (c.challenge.type !== 'arithmetic' || typeof c.challenge.prompt !== 'string') {
      return { reason: `agent access offers a challenge of type ${JSON.stringify(c.challenge.type)}, which the suite cannot solve` };
    }
    const answer = solveArithmetic(c.challenge.prompt);
    const postReq = {
      method: 'POST',
      url: `${base}/v1/agent-access`,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token: c.token, answer }),
      timeoutMs,
    };
    const posted = await send(postReq);
    const k = posted.json as { api_key?: string; project_id?: string } | undefined;
    if (posted.status >= 300 || typeof k?.api_key !== 'string') {
      return { reason: `agent access refused the answer ${answer}: ${describe(postReq, posted, 160)}` };
    }
    return { key: k.api_key, projectId: k.project_id };
  } catch (err) {
    if (err instanceof HttpError) return { reason: `agent access failed: ${err.message}` };
    return { reason: `agent access failed: ${(err as Error).message}` };
  }
}
