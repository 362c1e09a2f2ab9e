-- The nodes of one database (issue 23): each registers itself at start and heartbeats; a
-- node whose heartbeat is older than NODE_DEAD_AFTER_SECONDS is dead, and the survivor that
-- sets dead_at (once: UPDATE ... WHERE dead_at IS NULL) fails its sessions and releases its
-- claims. A node that starts again with the same id clears dead_at.
CREATE TABLE nodes (
  id text PRIMARY KEY,
  -- Where the other nodes reach it (NODE_INTERNAL_URL); null for a node that runs alone.
  internal_url text,
  version text NOT NULL,
  -- MAX_CONCURRENT_BROWSERS, and the browsers running or starting at the last heartbeat.
  capacity integer NOT NULL,
  running integer NOT NULL DEFAULT 0,
  -- SIGTERM received: it takes no new sessions while its running ones finish.
  draining boolean NOT NULL DEFAULT false,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  dead_at timestamptz,
  -- Set once the survivor that claimed it dead has failed its sessions and released its
  -- claims. A claim whose sweep never finished (that survivor died too) is taken again.
  swept_at timestamptz
);
