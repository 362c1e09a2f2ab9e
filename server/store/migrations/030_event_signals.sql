-- Named values one process posts (POST /v1/events/{name}) and another waits for (POST
-- .../wait), per project. Rows, not memory: the wait may run on another node than the post.
-- A value posted while no one waits is kept (consumed_at NULL) until a wait takes it or
-- expires_at passes; a consumed row stays a short while so that every wait that was under
-- way when it was posted still sees it. `data` is sealed (it may be a one-time code).
CREATE TABLE event_signals (
  id bigserial PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  data text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz
);
CREATE INDEX event_signals_name ON event_signals (project_id, name, id);
CREATE INDEX event_signals_expiry ON event_signals (expires_at);
