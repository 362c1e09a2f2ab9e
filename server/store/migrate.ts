// Versioned SQL migrations, applied in file-name order, each once, each in a transaction.
// The same files serve PGlite and PostgreSQL. On PostgreSQL an advisory lock keeps two
// nodes starting together from applying the same migration twice.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.js';

const dir = fileURLToPath(new URL('./migrations/', import.meta.url));
const LOCK_ID = 7_320_451;

export async function migrate(db: Db): Promise<string[]> {
  const files = readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = readFileSync(dir + file, 'utf8');
      // PGlite's query() takes one statement; exec-style multi-statement text goes through
      // a DO-free split on the statement terminator lines we write migrations with.
      for (const statement of splitStatements(sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
      applied.push(file);
    }
    return applied;
  });
}

/** Migrations end each statement with `;` at the end of a line; no semicolons inside bodies. */
export function splitStatements(sql: string): string[] {
  return sql
    .replace(/--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter(Boolean);
}
