// Tests and CI runs on PostgreSQL each get a schema of their own, so runs never see each
// other's rows and a rerun starts clean. The search_path travels in the URL's options.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function urlWithSchema(databaseUrl: string, schema: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

export async function withPostgresSchema<T>(databaseUrl: string, prefix: string, fn: (url: string) => Promise<T>): Promise<T> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    return await fn(urlWithSchema(databaseUrl, schema));
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}
