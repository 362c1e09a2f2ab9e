-- The operator's admin API (server/admin/): per-project limits, and keys it can name, list
-- and revoke.

-- NULL: the server's configuration applies (INCLUDED_CREDITS by tier, COST_LIMIT, no
-- per-project cap on concurrent browsers). server/credits/account.ts and the sessions'
-- creation read them.
ALTER TABLE projects ADD COLUMN included_credits double precision CHECK (included_credits >= 0);
ALTER TABLE projects ADD COLUMN cost_limit double precision CHECK (cost_limit >= 0);
ALTER TABLE projects ADD COLUMN max_concurrent_browsers integer CHECK (max_concurrent_browsers > 0);

-- A label for the operator, and the last use, kept to the minute (written at most once a
-- minute per key, so authentication stays a read).
ALTER TABLE api_keys ADD COLUMN name text;
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
CREATE INDEX api_keys_project ON api_keys (project_id, created_at);

-- The per-project cap counts a project's unfinished sessions.
CREATE INDEX sessions_project_unfinished ON sessions (project_id) WHERE status IN ('starting', 'running');
