-- Links to recordings and task artifacts are signed with keys derived from the secrets key
-- (SECRETS_KEY; secrets/seal.ts derive), no longer with keys kept in the database, where a
-- copy of it could sign links. Links signed before this version stop opening: they expire
-- within two hours anyway, and listing again gives fresh ones.
DROP TABLE IF EXISTS task_link_keys;
DROP TABLE IF EXISTS recording_link_keys;
