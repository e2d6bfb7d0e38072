// A database of its own for each test file, on the PostgreSQL server of this
// machine (CI has one; DEVELOPERS.md), so runs never collide.

import { randomBytes } from 'node:crypto';

import pg from 'pg';

import type { Database } from '../database.js';
import { migrate } from '../migrate.js';
import { openPglite } from '../pglite.js';
import { openPostgres } from '../postgres.js';

/** Where to create test databases: a server and a database to connect to first. */
const ADMIN_URL = process.env['GPUX_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface FreshDatabase {
  readonly db: Database;
  readonly url: string;
  /** Close the pool and drop the database. */
  drop(): Promise<void>;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function freshPostgres(): Promise<FreshDatabase> {
  const name = `gpux_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString());
  return {
    db,
    url: url.toString(),
    async drop(): Promise<void> {
      await db.close();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** A database to test on, and how to get rid of it. */
export type OpenTestDatabase = () => Promise<{ db: Database; done: () => Promise<void> }>;

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

/** An in-memory PGlite with every migration applied: for tests that need a schema, not a server. */
export async function migratedPglite(): Promise<Database> {
  const db = await openPglite();
  await migrate(db);
  return db;
}
