-- The entry of the service proxy pool a session's traffic went through (its stable id, from
-- the proxy's URL without the password); null without a service proxy. A profile made from
-- the session keeps it as its sticky proxy.
ALTER TABLE sessions ADD COLUMN service_proxy_id text;
