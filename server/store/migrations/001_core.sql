-- Projects own everything; every other table carries project_id and every query filters on it.
CREATE TABLE projects (
  id text PRIMARY KEY,
  name text NOT NULL,
  tier text NOT NULL DEFAULT 'self-hosted',
  gift_credits double precision NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Keys are stored as SHA-256 hashes; the key itself is shown once, when it is made.
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key_hash text NOT NULL UNIQUE,
  prefix text NOT NULL,
  source text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

-- The outbox: an event is written in the same transaction as the state change behind it.
CREATE TABLE events (
  id text PRIMARY KEY,
  seq bigserial UNIQUE,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  type text NOT NULL,
  created timestamptz NOT NULL DEFAULT now(),
  text text NOT NULL,
  data jsonb NOT NULL
);
CREATE INDEX events_project_created ON events (project_id, created);
