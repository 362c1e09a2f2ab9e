-- A browser session. The browser itself lives in memory on the node that launched it;
-- this row is its record and survives it.
CREATE TABLE sessions (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  status text NOT NULL CHECK (status IN ('starting', 'running', 'completed', 'failed')),
  node_id text NOT NULL,
  configuration jsonb NOT NULL,
  tags jsonb NOT NULL DEFAULT '[]',
  cdp_token text NOT NULL,
  live_view_token text NOT NULL,
  batch_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  ended_at timestamptz,
  end_reason text,
  credits_used double precision NOT NULL DEFAULT 0,
  proxy_bytes bigint NOT NULL DEFAULT 0,
  network_bytes_total bigint NOT NULL DEFAULT 0,
  steps integer NOT NULL DEFAULT 0,
  screenshots integer NOT NULL DEFAULT 0,
  domains jsonb NOT NULL DEFAULT '[]',
  -- Set when the session was ended through DELETE: it is gone from the API, not from history.
  deleted_at timestamptz
);
CREATE INDEX sessions_project_created ON sessions (project_id, created_at DESC);
CREATE INDEX sessions_node_status ON sessions (node_id, status);
CREATE INDEX sessions_batch ON sessions (batch_id) WHERE batch_id IS NOT NULL;
