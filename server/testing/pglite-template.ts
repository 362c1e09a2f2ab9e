// A new PGlite database runs initdb: about 2 s of CPU on these machines, against 0.1 s to
// copy a database that has already been made and migrated. The test run makes one such
// template (vitest's global setup, below) and every test server, child server or test
// database on PGlite starts from a copy of it: still a real PGlite, opened and migrated
// by the server as usual (the migrations find nothing to do, or only what is new).
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb, pgliteDir, type Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';

const VARIABLE = 'CB_TEST_PGLITE_TEMPLATE';

/** Gives dataDir the template's database, unless it has a database already or there is no
 *  template (a test file run outside vitest's global setup): then the server makes its own. */
export function seedPglite(dataDir: string): void {
  const template = process.env[VARIABLE];
  if (!template || existsSync(pgliteDir(dataDir))) return;
  cpSync(pgliteDir(template), pgliteDir(dataDir), { recursive: true });
}

/** A migrated PGlite database of a test's own, in a temporary DATA_DIR that close() removes. */
export async function openTestPglite(): Promise<Db> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-db-'));
  seedPglite(dataDir);
  const db = await openDb({ dataDir });
  await migrate(db);
  return {
    ...db,
    async close() {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** vitest's global setup: the template, made once for the run, removed after it. */
export default async function setup(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'cb-pglite-template-'));
  const db = await openDb({ dataDir: dir });
  await migrate(db);
  await db.close();
  process.env[VARIABLE] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
