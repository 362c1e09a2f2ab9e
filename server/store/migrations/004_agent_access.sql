-- Agent access: the challenges handed to agents that have no key yet, and the session cap
-- of the projects the flow creates. Written by server/agent-access/ only.

-- A project created through agent access runs sessions of at most this many minutes; NULL
-- (every other project) means no such cap. The sessions capability reads it.
ALTER TABLE projects ADD COLUMN max_session_minutes integer CHECK (max_session_minutes > 0);

-- One row per challenge issued. Challenges come before any project exists, so unlike every
-- other table this one has no project_id. Neither the token nor the answer is stored: the
-- token as its SHA-256, the expected answer as an HMAC keyed by the token, so the table
-- alone cannot answer a challenge. used_at makes a token single use (right or wrong). Rows
-- are swept a day after they expire; until then a late answer is told it expired.
CREATE TABLE agent_access_challenges (
  token_hash text PRIMARY KEY,
  id text NOT NULL UNIQUE,
  type text NOT NULL,
  answer_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX agent_access_challenges_expires ON agent_access_challenges (expires_at);
