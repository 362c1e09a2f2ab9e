-- Webhooks and their deliveries. Written by server/events/ only.

-- A test event (POST /v1/webhooks/{id}/test) is stored like any other so that its delivery
-- is durable and retried, but is marked so listings of real events can leave it out.
ALTER TABLE events ADD COLUMN test boolean NOT NULL DEFAULT false;

-- subscribed_events holds event type names; the signing secret is `whsec_<base64>` as the
-- Standard Webhooks libraries expect. After a rotation the previous secret still signs
-- (beside the new one) until previous_secret_expires_at.
CREATE TABLE webhooks (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  url text NOT NULL,
  description text NOT NULL DEFAULT '',
  subscribed_events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_project ON webhooks (project_id, created_at);

-- One row per attempt of sending one event to one webhook. The fan-out writes attempt 1
-- (status pending) in the same statement that writes the event; a failed attempt writes
-- the next one (pending, scheduled later) in the statement that records the failure, so
-- the chain survives a kill -9 at any point. A worker leases a pending row (locked_by,
-- locked_until) claimed with FOR UPDATE SKIP LOCKED; an expired lease is claimed again.
-- status: pending (not yet done), succeeded, failed (another attempt is scheduled),
-- dead (failed, and it was the last attempt).
-- Few indexes and room on each page (fillfactor) keep the lease update a HOT update, so a
-- busy queue does not bloat its indexes; UNIQUE (event_id, ...) also serves deletes of
-- events cascading here.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  seq bigserial,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  webhook_id text NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  event_id text NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  event_type text NOT NULL,
  attempt integer NOT NULL DEFAULT 1,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'dead')),
  scheduled_at timestamptz NOT NULL DEFAULT now(),
  locked_by text,
  locked_until timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  response_status integer,
  response_body text,
  error_message text,
  duration_ms integer,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (event_id, webhook_id, attempt)
) WITH (fillfactor = 70);
-- The worker's claim: due pending rows in schedule order.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (scheduled_at) WHERE status = 'pending';
-- The deliveries listing of one webhook, newest first.
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
