// Batch rows (batches, batch_items; migration 006). Every read names the project. Every
// move of an item to a terminal state updates the batch's counters in the same
// transaction, and the transaction that makes the last item terminal moves the batch to
// completed or failed and writes its event (the outbox), so the state and the event commit
// together, once.
//
// An item gets its row when it is first claimed; until then it is one of the batch's
// unclaimed items (next_index .. total_requests - 1), waiting, or failed or cancelled all
// together (unclaimed_outcome). Accepting a batch of 5,000 writes one row.
//
// Locks: a transaction that counts items locks the batch row first, then item rows. The
// claim never waits for a lock (SKIP LOCKED on items and batches), so nothing deadlocks
// with it on PostgreSQL.
import type { Db } from '../store/db.js';
import { emitEvent, type EmitSignals } from '../outbox/emit.js';
import type { components } from '../../generated/types.js';

export type BatchStatus = components['schemas']['BatchStatus'];
export type SessionCreateBody = components['schemas']['SessionCreateRequest'];
export type ItemStatus = 'pending' | 'provisioning' | 'completed' | 'failed' | 'cancelled';

export interface BatchRow {
  id: string;
  project_id: string;
  api_key_id: string;
  status: BatchStatus;
  total_requests: number;
  completed_requests: number;
  failed_requests: number;
  cancelled_requests: number;
  next_index: number;
  unclaimed_outcome: 'failed' | 'cancelled' | null;
  unclaimed_error: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  queue_deadline: Date;
  completed_at: Date | null;
}

/** Every column but the configuration, which only the worker reads. */
const BATCH_COLUMNS = `id, project_id, api_key_id, status, total_requests, completed_requests, failed_requests,
  cancelled_requests, next_index, unclaimed_outcome, unclaimed_error, metadata, created_at, queue_deadline, completed_at`;

export interface ItemRow {
  item_index: number;
  status: ItemStatus;
  session_id: string | null;
  error: string | null;
  /** The session's tokens, when the item has a session. */
  cdp_token: string | null;
  live_view_token: string | null;
  /** Attempts made for it by retries. */
  retry_count: number;
}

export interface NewBatch {
  id: string;
  projectId: string;
  apiKeyId: string;
  count: number;
  configuration: SessionCreateBody;
  metadata: Record<string, unknown>;
  queueTimeoutSeconds: number;
}

/** Stores a batch; its items wait, unclaimed. */
export async function createBatch(db: Db, b: NewBatch): Promise<BatchRow> {
  const [row] = await db.query<BatchRow>(
    `INSERT INTO batches (id, project_id, api_key_id, total_requests, configuration, metadata, queue_deadline)
     VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7::int)) RETURNING ${BATCH_COLUMNS}`,
    [b.id, b.projectId, b.apiKeyId, b.count, JSON.stringify(b.configuration), JSON.stringify(b.metadata), b.queueTimeoutSeconds],
  );
  return row;
}

export async function getBatch(db: Db, projectId: string, id: string): Promise<BatchRow | undefined> {
  const rows = await db.query<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM batches WHERE project_id = $1 AND id = $2`, [projectId, id]);
  return rows[0];
}

/** Every item of the batch by index: the claimed ones' rows, then the unclaimed ones. */
export async function listItems(db: Db, projectId: string, batch: BatchRow): Promise<ItemRow[]> {
  const rows = await db.query<ItemRow>(
    `SELECT i.item_index, i.status, i.session_id, i.error, s.cdp_token, s.live_view_token, i.retry_count
       FROM batch_items i
       LEFT JOIN sessions s ON s.id = i.session_id AND s.project_id = $1
      WHERE i.batch_id = $2
      ORDER BY i.item_index`,
    [projectId, batch.id],
  );
  const status: ItemStatus = batch.unclaimed_outcome ?? 'pending';
  const error = batch.unclaimed_outcome === 'failed' ? batch.unclaimed_error : null;
  // `batch` was read by an earlier statement: items claimed since then already have rows.
  const claimed = new Set(rows.map((r) => r.item_index));
  for (let i = batch.next_index; i < batch.total_requests; i++) {
    if (!claimed.has(i)) rows.push({ item_index: i, status, session_id: null, error, cdp_token: null, live_view_token: null, retry_count: 0 });
  }
  return rows;
}

export async function listBatches(
  db: Db,
  projectId: string,
  f: { page: number; limit: number; status?: BatchStatus },
): Promise<{ rows: BatchRow[]; total: number }> {
  const params: unknown[] = [projectId];
  let where = 'project_id = $1';
  if (f.status) {
    params.push(f.status);
    where += ` AND status = $${params.length}`;
  }
  const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM batches WHERE ${where}`, params);
  const rows = await db.query<BatchRow>(
    `SELECT ${BATCH_COLUMNS} FROM batches WHERE ${where} ORDER BY created_at DESC, id LIMIT ${f.limit} OFFSET ${(f.page - 1) * f.limit}`,
    params,
  );
  return { rows, total: n };
}

/** Cancels a pending batch: its waiting items are cancelled; items being provisioned finish. */
export async function cancelBatch(db: Db, projectId: string, id: string): Promise<BatchRow | 'not_found' | 'not_pending'> {
  return db.transaction(async (tx) => {
    const [batch] = await tx.query<{ status: BatchStatus }>('SELECT status FROM batches WHERE project_id = $1 AND id = $2 FOR UPDATE', [projectId, id]);
    if (!batch) return 'not_found';
    if (batch.status !== 'pending') return 'not_pending';
    const requeued = await tx.query(
      `UPDATE batch_items SET status = 'cancelled', finished_at = now() WHERE batch_id = $1 AND status = 'pending' RETURNING item_index`,
      [id],
    );
    const [row] = await tx.query<BatchRow>(
      `UPDATE batches SET status = 'cancelled', completed_at = now(),
              cancelled_requests = cancelled_requests + $2 + CASE WHEN unclaimed_outcome IS NULL THEN total_requests - next_index ELSE 0 END,
              unclaimed_outcome = COALESCE(unclaimed_outcome, 'cancelled')
        WHERE id = $1 RETURNING ${BATCH_COLUMNS}`,
      [id, requeued.length],
    );
    return row;
  });
}

export type RetryResult = { batch: BatchRow; retried: number } | 'not_found' | 'cancelled' | 'nothing_failed';

/**
 * Puts the batch's failed items back in the queue, each with `attempts` attempts (the first
 * under way at its next claim), and the batch back to pending with a new queue deadline.
 * Items that failed unclaimed (a queue timeout) get their rows now, so that each carries its
 * own attempts. Items being provisioned are not touched: their outcome counts as it comes.
 */
export async function retryBatch(db: Db, projectId: string, id: string, o: { attempts: number; queueTimeoutSeconds: number }): Promise<RetryResult> {
  return db.transaction(async (tx) => {
    // The batch row first, as every transaction that counts its items.
    const [b] = await tx.query<Pick<BatchRow, 'status' | 'next_index' | 'total_requests' | 'unclaimed_outcome'>>(
      'SELECT status, next_index, total_requests, unclaimed_outcome FROM batches WHERE project_id = $1 AND id = $2 FOR UPDATE',
      [projectId, id],
    );
    if (!b) return 'not_found';
    if (b.status === 'cancelled') return 'cancelled';
    let retried = 0;
    if (b.unclaimed_outcome === 'failed' && b.next_index < b.total_requests) {
      const rows = await tx.query(
        `INSERT INTO batch_items (batch_id, item_index, status, retries_left, retry_count)
         SELECT $1, i, 'pending', $2, 1 FROM generate_series($3::int, $4::int) AS i RETURNING item_index`,
        [id, o.attempts - 1, b.next_index, b.total_requests - 1],
      );
      retried += rows.length;
    }
    const failed = await tx.query(
      `UPDATE batch_items SET status = 'pending', session_id = NULL, error = NULL, claimed_by = NULL, claimed_at = NULL,
              finished_at = NULL, retries_left = $2, retry_count = retry_count + 1
        WHERE batch_id = $1 AND status = 'failed' RETURNING item_index`,
      [id, o.attempts - 1],
    );
    retried += failed.length;
    if (retried === 0) return 'nothing_failed';
    const [batch] = await tx.query<BatchRow>(
      `UPDATE batches SET status = 'pending', completed_at = NULL, failed_requests = failed_requests - $2,
              next_index = CASE WHEN unclaimed_outcome = 'failed' THEN total_requests ELSE next_index END,
              unclaimed_error = CASE WHEN unclaimed_outcome = 'failed' THEN NULL ELSE unclaimed_error END,
              unclaimed_outcome = CASE WHEN unclaimed_outcome = 'failed' THEN NULL ELSE unclaimed_outcome END,
              queue_deadline = now() + make_interval(secs => $3::int)
        WHERE id = $1 RETURNING ${BATCH_COLUMNS}`,
      [id, retried, o.queueTimeoutSeconds],
    );
    return { batch, retried };
  });
}

// ---------------------------------------------------------------------------------------
// The worker's side

export interface ClaimedItem {
  batchId: string;
  itemIndex: number;
  /** Chosen at the claim; the session is created with this id. */
  sessionId: string;
  projectId: string;
  apiKeyId: string;
  configuration: SessionCreateBody;
}

/**
 * Claims up to `n` waiting items of pending batches whose queue deadline has not passed,
 * for this node: items put back in the queue first, then unclaimed ones, oldest batch
 * first, in item order. Each gets the id its session will have. Several nodes on one
 * PostgreSQL claim different items (SKIP LOCKED).
 */
export async function claimItems(db: Db, nodeId: string, n: number): Promise<ClaimedItem[]> {
  if (n <= 0) return [];
  return db.transaction(async (tx) => {
    const out: ClaimedItem[] = [];
    const again = await tx.query<ClaimRow>(
      `WITH picked AS (
         SELECT i.batch_id, i.item_index, b.created_at
           FROM batch_items i JOIN batches b ON b.id = i.batch_id
          WHERE i.status = 'pending' AND b.status = 'pending' AND b.queue_deadline > now()
          ORDER BY b.created_at, i.batch_id, i.item_index
          LIMIT $2
          FOR UPDATE OF i SKIP LOCKED
       )
       UPDATE batch_items i SET status = 'provisioning', session_id = gen_random_uuid()::text, claimed_by = $1, claimed_at = now()
         FROM picked p, batches b
        WHERE i.batch_id = p.batch_id AND i.item_index = p.item_index AND b.id = i.batch_id
       RETURNING i.batch_id, i.item_index, i.session_id, b.project_id, b.api_key_id, b.configuration`,
      [nodeId, n],
    );
    out.push(...again.map(claimed));
    while (out.length < n) {
      const [b] = await tx.query<{ id: string; first: number; k: number; project_id: string; api_key_id: string; configuration: SessionCreateBody }>(
        `WITH b AS (
           SELECT id, next_index AS first, LEAST($1::int, total_requests - next_index) AS k
             FROM batches
            WHERE status = 'pending' AND unclaimed_outcome IS NULL AND next_index < total_requests AND queue_deadline > now()
            ORDER BY created_at, id
            LIMIT 1
            FOR UPDATE SKIP LOCKED
         )
         UPDATE batches SET next_index = b.first + b.k FROM b WHERE batches.id = b.id
         RETURNING batches.id, b.first, b.k, batches.project_id, batches.api_key_id, batches.configuration`,
        [n - out.length],
      );
      if (!b) break;
      const rows = await tx.query<{ item_index: number; session_id: string }>(
        `INSERT INTO batch_items (batch_id, item_index, status, session_id, claimed_by, claimed_at)
         SELECT $1, i, 'provisioning', gen_random_uuid()::text, $2, now() FROM generate_series($3::int, $4::int) AS i
         RETURNING item_index, session_id`,
        [b.id, nodeId, b.first, b.first + b.k - 1],
      );
      rows.sort((x, y) => x.item_index - y.item_index);
      out.push(...rows.map((r) => claimed({ ...b, batch_id: b.id, item_index: r.item_index, session_id: r.session_id })));
    }
    return out;
  });
}

interface ClaimRow {
  batch_id: string;
  item_index: number;
  session_id: string;
  project_id: string;
  api_key_id: string;
  configuration: SessionCreateBody | string;
}

function claimed(r: ClaimRow): ClaimedItem {
  return {
    batchId: r.batch_id,
    itemIndex: r.item_index,
    sessionId: r.session_id,
    projectId: r.project_id,
    apiKeyId: r.api_key_id,
    configuration: typeof r.configuration === 'string' ? JSON.parse(r.configuration) : r.configuration,
  };
}

/** Puts a claimed item back in the queue (no capacity after all); its session was never made. */
export async function releaseItem(db: Db, item: Pick<ClaimedItem, 'batchId' | 'itemIndex' | 'sessionId'>): Promise<void> {
  await db.query(
    `UPDATE batch_items SET status = 'pending', session_id = NULL, claimed_by = NULL, claimed_at = NULL
      WHERE batch_id = $1 AND item_index = $2 AND status = 'provisioning' AND session_id = $3`,
    [item.batchId, item.itemIndex, item.sessionId],
  );
}

export type Outcome = { status: 'completed' } | { status: 'failed'; error: string };

/** A claimed item's outcome, with the batch's counters and, when it was the last, its end. */
export async function finishItem(
  db: Db,
  signals: EmitSignals,
  item: Pick<ClaimedItem, 'batchId' | 'itemIndex' | 'sessionId'>,
  outcome: Outcome,
): Promise<void> {
  await db.transaction(async (tx) => {
    // The batch row first: every transaction that counts items of a batch locks it in the
    // same order, so counting and finishing serialize per batch.
    await tx.query('SELECT 1 FROM batches WHERE id = $1 FOR UPDATE', [item.batchId]);
    if (outcome.status === 'failed') {
      // A retried item with attempts left waits for its next one; it is not a failure yet.
      const again = await tx.query(
        `UPDATE batch_items SET status = 'pending', session_id = NULL, error = $4, claimed_by = NULL, claimed_at = NULL,
                retries_left = retries_left - 1, retry_count = retry_count + 1
          WHERE batch_id = $1 AND item_index = $2 AND status = 'provisioning' AND session_id = $3 AND retries_left > 0
          RETURNING item_index`,
        [item.batchId, item.itemIndex, item.sessionId, outcome.error],
      );
      if (again.length > 0) return;
    }
    const done = await tx.query(
      `UPDATE batch_items SET status = $4, error = $5, finished_at = now()
        WHERE batch_id = $1 AND item_index = $2 AND status = 'provisioning' AND session_id = $3 RETURNING item_index`,
      [item.batchId, item.itemIndex, item.sessionId, outcome.status, outcome.status === 'failed' ? outcome.error : null],
    );
    if (done.length === 0) return;
    await count(tx, item.batchId, outcome.status, 1);
    await finalize(tx, signals, item.batchId);
  });
}

/** Fails the waiting items of every batch whose queue deadline has passed. Answers how many. */
export async function expireDue(db: Db, signals: EmitSignals, error: (batch: { queue_deadline: Date; created_at: Date }) => string): Promise<number> {
  const due = await db.query<{ id: string; queue_deadline: Date; created_at: Date }>(
    `SELECT b.id, b.queue_deadline, b.created_at FROM batches b
      WHERE b.status = 'pending' AND b.queue_deadline <= now()
        AND ((b.unclaimed_outcome IS NULL AND b.next_index < b.total_requests)
             OR EXISTS (SELECT 1 FROM batch_items i WHERE i.batch_id = b.id AND i.status = 'pending'))`,
  );
  let expired = 0;
  for (const b of due) {
    expired += await db.transaction(async (tx) => {
      const [locked] = await tx.query<{ waiting: number }>(
        `SELECT CASE WHEN unclaimed_outcome IS NULL THEN total_requests - next_index ELSE 0 END AS waiting
           FROM batches WHERE id = $1 AND status = 'pending' FOR UPDATE`,
        [b.id],
      );
      if (!locked) return 0;
      const message = error(b);
      const requeued = await tx.query(
        `UPDATE batch_items SET status = 'failed', error = $2, finished_at = now() WHERE batch_id = $1 AND status = 'pending' RETURNING item_index`,
        [b.id, message],
      );
      const n = requeued.length + locked.waiting;
      if (n === 0) return 0;
      await tx.query(
        `UPDATE batches SET failed_requests = failed_requests + $2,
                unclaimed_outcome = CASE WHEN $3::int > 0 THEN 'failed' ELSE unclaimed_outcome END,
                unclaimed_error = CASE WHEN $3::int > 0 THEN $4 ELSE unclaimed_error END
          WHERE id = $1`,
        [b.id, n, locked.waiting, message],
      );
      await finalize(tx, signals, b.id);
      return n;
    });
  }
  return expired;
}

/** Whether any item of a pending batch waits. */
export async function anyWaiting(db: Db): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM batches b WHERE b.status = 'pending'
        AND ((b.unclaimed_outcome IS NULL AND b.next_index < b.total_requests)
             OR EXISTS (SELECT 1 FROM batch_items i WHERE i.batch_id = b.id AND i.status = 'pending'))
      LIMIT 1`,
  );
  return rows.length > 0;
}

export interface Recovered {
  completed: number;
  failed: number;
  requeued: number;
}

/**
 * After a restart of this node: the items it was provisioning when it stopped. The session
 * id was chosen at the claim, so the sessions table tells what happened: no session row →
 * the session was never made, the item waits again; a session that reached running → the
 * item completed (the restart ended that session, as it ends every session of the node);
 * a session that never ran → the item failed. An item is never provisioned twice.
 */
export async function recoverNode(db: Db, signals: EmitSignals, nodeId: string, restartError: string, before?: Date): Promise<Recovered> {
  // `before`: a node claimed dead by another; only its claims made before (see LeftNode).
  const items = await db.query<{ batch_id: string; item_index: number; session_id: string; started_at: Date | null; has_session: boolean }>(
    `SELECT i.batch_id, i.item_index, i.session_id, s.started_at, s.id IS NOT NULL AS has_session
       FROM batch_items i LEFT JOIN sessions s ON s.id = i.session_id
      WHERE i.status = 'provisioning' AND i.claimed_by = $1 AND ($2::timestamptz IS NULL OR i.claimed_at < $2)`,
    [nodeId, before ?? null],
  );
  const out: Recovered = { completed: 0, failed: 0, requeued: 0 };
  for (const i of items) {
    const item = { batchId: i.batch_id, itemIndex: i.item_index, sessionId: i.session_id };
    if (!i.has_session) {
      await releaseItem(db, item);
      out.requeued++;
    } else if (i.started_at) {
      await finishItem(db, signals, item, { status: 'completed' });
      out.completed++;
    } else {
      await finishItem(db, signals, item, { status: 'failed', error: restartError });
      out.failed++;
    }
  }
  return out;
}

async function count(tx: Db, batchId: string, status: 'completed' | 'failed', n: number): Promise<void> {
  const column = status === 'completed' ? 'completed_requests' : 'failed_requests';
  await tx.query(`UPDATE batches SET ${column} = ${column} + $2 WHERE id = $1`, [batchId, n]);
}

/** Ends a pending batch whose items are all terminal, with its event, inside `tx`. */
async function finalize(tx: Db, signals: EmitSignals, batchId: string): Promise<void> {
  const [b] = await tx.query<BatchRow>(
    `UPDATE batches SET status = CASE WHEN completed_requests > 0 THEN 'completed' ELSE 'failed' END, completed_at = now()
      WHERE id = $1 AND status = 'pending' AND completed_requests + failed_requests + cancelled_requests >= total_requests
      RETURNING ${BATCH_COLUMNS}`,
    [batchId],
  );
  if (!b) return;
  const data = {
    batch_id: b.id,
    total_requests: b.total_requests,
    completed_requests: b.completed_requests,
    failed_requests: b.failed_requests,
  };
  if (b.status === 'completed') await emitEvent(tx, signals, b.project_id, 'batch.completed', { ...data, status: 'completed' });
  else await emitEvent(tx, signals, b.project_id, 'batch.failed', { ...data, status: 'failed' });
}
