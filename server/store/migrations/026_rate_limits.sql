-- Rate limits shared by the nodes of one PostgreSQL (issue 23): one row per (limit, key)
-- holding the times, in milliseconds of the database's clock, of the hits inside the last
-- window (at most the limit's count of them), so the sliding one-minute window of the
-- in-memory limiter holds across nodes. One INSERT ... ON CONFLICT DO UPDATE per hit
-- (server/http/rate-limit/postgres.ts): the row lock orders concurrent hits of one key.
-- expires_at is when the newest hit leaves the window: rows past it are deleted in passing.
CREATE TABLE rate_limits (
  name text NOT NULL,
  key text NOT NULL,
  hits bigint[] NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (name, key)
);
CREATE INDEX rate_limits_expires_at ON rate_limits (expires_at);
