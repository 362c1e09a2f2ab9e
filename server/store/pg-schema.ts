// Tests and CI runs on PostgreSQL each get a schema of their own, so runs never see each
// other's rows and a rerun starts clean. The search_path travels in the URL's options.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function urlWithSchema(databaseUrl: string, schema: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** A schema of its own, made now; drop() removes it with everything in it. */
export async function postgresSchema(databaseUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  // Held for the schema's life: a connection lost meanwhile only makes drop() fail (quietly),
  // not the process (an 'error' event nobody listens to throws).
  admin.on('error', () => {});
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } catch (err) {
    await admin.end();
    throw err;
  }
  return {
    url: urlWithSchema(databaseUrl, schema),
    async drop() {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await admin.end().catch(() => {});
    },
  };
}

export async function withPostgresSchema<T>(databaseUrl: string, prefix: string, fn: (url: string) => Promise<T>): Promise<T> {
  const schema = await postgresSchema(databaseUrl, prefix);
  try {
    return await fn(schema.url);
  } finally {
    await schema.drop();
  }
}
