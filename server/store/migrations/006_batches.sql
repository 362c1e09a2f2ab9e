-- Batches of sessions and their items. Written by server/batches/ only.
--
-- A batch is pending until every item is terminal, then completed (at least one session
-- was created) or failed (none was); cancelled after a cancel. The counters move in the
-- same transaction as the items they count, and the transaction that makes the last item
-- terminal also moves the batch and writes its event.
--
-- Items get a row when they are first claimed: items next_index .. total_requests - 1
-- have none yet and are waiting, or, once unclaimed_outcome is set (a queue timeout, a
-- cancel), have that outcome. Accepting 5,000 sessions is one row.
-- configuration is the session creation body every item is created with (proxy password
-- included: the worker needs it); it is never answered by the API.
CREATE TABLE batches (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  api_key_id text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'failed', 'cancelled')),
  total_requests integer NOT NULL CHECK (total_requests BETWEEN 1 AND 5000),
  completed_requests integer NOT NULL DEFAULT 0,
  failed_requests integer NOT NULL DEFAULT 0,
  cancelled_requests integer NOT NULL DEFAULT 0,
  next_index integer NOT NULL DEFAULT 0,
  unclaimed_outcome text CHECK (unclaimed_outcome IN ('failed', 'cancelled')),
  unclaimed_error text,
  configuration jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Items still waiting for capacity at this time fail (BATCH_QUEUE_TIMEOUT_SECONDS).
  queue_deadline timestamptz NOT NULL,
  completed_at timestamptz
);
CREATE INDEX batches_project_created ON batches (project_id, created_at DESC);
-- The worker's claim of new items: pending batches, oldest first.
CREATE INDEX batches_pending ON batches (created_at) WHERE status = 'pending';

-- One row per claimed item. status: provisioning (claimed by the node claimed_by;
-- session_id is chosen at the claim, before the session row exists, so a restarted node
-- can tell whether the session was made), pending (claimed, then put back: no browser was
-- free), completed (the session reached running), failed (it could not be created; error
-- says why), cancelled.
CREATE TABLE batch_items (
  batch_id text NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  item_index integer NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'provisioning', 'completed', 'failed', 'cancelled')),
  session_id text,
  error text,
  claimed_by text,
  claimed_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (batch_id, item_index)
);
-- Items put back in the queue, claimed again first.
CREATE INDEX batch_items_waiting ON batch_items (batch_id, item_index) WHERE status = 'pending';
-- Recovery after a restart: the items a node was provisioning.
CREATE INDEX batch_items_provisioning ON batch_items (claimed_by) WHERE status = 'provisioning';
