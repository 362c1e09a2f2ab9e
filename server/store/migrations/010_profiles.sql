-- Saved browser state: a session's user-data directory, compressed into blob storage (files
-- under DATA_DIR/profiles by default) at storage_key. A profile is pending until the session
-- it is made from ends, then ready (or failed, with the reason). Each save writes a new
-- object and switches storage_key in one update, so a profile is never half written and the
-- later of two saves wins.
CREATE TABLE profiles (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  status text NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
  failure_reason text,
  -- The session the profile was made from (its state is saved when it ends).
  session_id text,
  dedicated_sticky_ip boolean NOT NULL DEFAULT false,
  -- With dedicated_sticky_ip: the service proxy pool entry its sessions keep while it is
  -- healthy (the source session's, else the first one a session with the profile gets).
  sticky_proxy_id text,
  storage_key text,
  size_bytes bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);
CREATE INDEX profiles_project_created ON profiles (project_id, created_at DESC);
CREATE INDEX profiles_pending_session ON profiles (session_id) WHERE status = 'pending';
