-- A project's own caps on each of its session browsers (the admin API's
-- browser_memory_limit_mb and browser_cpu_limit): null for the server's BROWSER_MEMORY_LIMIT_MB
-- and BROWSER_CPU_LIMIT, 0 for none.
ALTER TABLE projects ADD COLUMN browser_memory_limit_mb integer CHECK (browser_memory_limit_mb >= 0);
ALTER TABLE projects ADD COLUMN browser_cpu_limit double precision CHECK (browser_cpu_limit >= 0);
