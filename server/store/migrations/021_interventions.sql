-- A person's help asked for by code working in a session (an agent, a task run, an identity
-- login): pending until answered (resolved), its time-out passed (expired) or the asker gave
-- up or the session ended (cancelled). The answer is sealed (it may be a one-time code) and
-- read only by the waiting code. Rows, not memory: the answer may reach any node.
CREATE TABLE interventions (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  session_id text NOT NULL,
  message text NOT NULL,
  input_type text NOT NULL CHECK (input_type IN ('confirm', 'text', 'otp', 'takeover')),
  live_view_url text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'resolved', 'expired', 'cancelled')),
  answer text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  resolved_at timestamptz
);
CREATE INDEX interventions_session ON interventions (session_id, status);

-- Sessions whose agent a person paused (POST .../agent/pause): the agent waits before its
-- next action until the row is gone (POST .../agent/resume, or the session's end).
CREATE TABLE agent_pauses (
  session_id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  paused_at timestamptz NOT NULL DEFAULT now()
);
