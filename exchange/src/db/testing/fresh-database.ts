// A database of its own for each test file, on the PostgreSQL server of this
// machine (admin-database.ts), so runs never collide.

import type { Database } from '../database.js';
import { migrate } from '../migrate.js';
import { openPglite } from '../pglite.js';
import { openPostgres } from '../postgres.js';
import { createDatabase } from './admin-database.js';

export interface FreshDatabase {
  readonly db: Database;
  readonly url: string;
  /** Close the pool and drop the database. */
  drop(): Promise<void>;
}

export async function freshPostgres(): Promise<FreshDatabase> {
  const scratch = await createDatabase();
  const db = openPostgres(scratch.url);
  return {
    db,
    url: scratch.url,
    async drop(): Promise<void> {
      await db.close();
      await scratch.drop();
    },
  };
}

/** A database to test on, and how to get rid of it. */
export type OpenTestDatabase = () => Promise<{ db: Database; done: () => Promise<void> }>;

/**
 * A timeout for the hook that opens a TEST_ENGINES database: PGlite compiles
 * its WebAssembly and runs initdb on each open, several seconds on a loaded
 * machine (vitest's default for hooks is 10 s).
 */
export const OPEN_TIMEOUT_MS = 60_000;

/** Both engines the exchange runs on (D34), for `describe.each`: same SQL, same tests. */
export const TEST_ENGINES: [string, OpenTestDatabase][] = [
  [
    'PostgreSQL',
    async () => {
      const fresh = await freshPostgres();
      return { db: fresh.db, done: () => fresh.drop() };
    },
  ],
  [
    'PGlite',
    async () => {
      const db = await openPglite();
      return { db, done: () => db.close() };
    },
  ],
];

/**
 * A fresh PostgreSQL database with every migration applied: the engine
 * production runs on. PGlite is for tests that compare the two engines
 * (TEST_ENGINES).
 */
export async function migratedPostgres(): Promise<FreshDatabase> {
  const fresh = await freshPostgres();
  await migrate(fresh.db);
  return fresh;
}
