// Node-to-node authentication. A request one node forwards to another carries two headers:
// the hop marker (the forwarding node's id), which tells the receiver never to forward it
// again, and a proof: an HMAC-SHA256 under CLUSTER_SECRET over the method, the path with its
// query, a timestamp and the forwarding node's id. The secret itself never travels, and a
// captured proof is good for one method and path within a short window only.
import { createHmac } from 'node:crypto';
import { sameToken } from '../auth/tokens.js';

/** The hop marker: the id of the node that forwarded the request. */
export const HOP_HEADER = 'x-cluster-forwarded-by';
/** The id of the node the forwarder meant: one that is not that node answers 421 (a remembered
 *  owner's address now answered by another node). Unsigned: it can only make a node refuse. */
export const TARGET_HEADER = 'x-cluster-target';
/** `t=<unix seconds>,sig=<hex HMAC>`. */
export const PROOF_HEADER = 'x-cluster-proof';

/** How far a proof's timestamp may be from the receiver's clock (clock skew and transit). */
const WINDOW_SECONDS = 30;

function signature(secret: string, method: string, path: string, at: number, nodeId: string): string {
  return createHmac('sha256', secret).update(`${method.toUpperCase()}\n${path}\n${at}\n${nodeId}`).digest('hex');
}

/** The two headers a forwarded request carries. `path` is the request target: path and query. */
export function proofHeaders(secret: string, nodeId: string, method: string, path: string, now = Date.now()): Record<string, string> {
  const at = Math.floor(now / 1000);
  return { [HOP_HEADER]: nodeId, [PROOF_HEADER]: `t=${at},sig=${signature(secret, method, path, at, nodeId)}` };
}

export type ProofCheck = { forwarded: false } | { forwarded: true; ok: true; from: string } | { forwarded: true; ok: false; why: string };

/**
 * Whether a request claims to be forwarded (either header present) and, if so, whether its
 * proof holds. A node without CLUSTER_SECRET refuses every such claim.
 */
export function checkProof(
  secret: string | undefined,
  req: { method: string; path: string; header(name: string): string | undefined },
  now = Date.now(),
): ProofCheck {
  const from = req.header(HOP_HEADER);
  const proof = req.header(PROOF_HEADER);
  if (from === undefined && proof === undefined) return { forwarded: false };
  if (!secret) return { forwarded: true, ok: false, why: 'this node is not part of a cluster' };
  if (!from || !proof) return { forwarded: true, ok: false, why: 'missing cluster proof' };
  const m = /^t=(\d{1,12}),sig=([0-9a-f]{64})$/.exec(proof);
  if (!m) return { forwarded: true, ok: false, why: 'malformed cluster proof' };
  const at = Number(m[1]);
  if (Math.abs(now / 1000 - at) > WINDOW_SECONDS) return { forwarded: true, ok: false, why: 'cluster proof outside its time window' };
  if (!sameToken(m[2], signature(secret, req.method, req.path, at, from))) return { forwarded: true, ok: false, why: 'invalid cluster proof' };
  return { forwarded: true, ok: true, from };
}
