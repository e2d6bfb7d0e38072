// Throw-away databases on the PostgreSQL server of this machine
// (GPUX_TEST_PG_URL, README.md): created over a connection to an admin database, dropped the
// same way. The one place that does this for the db tests
// (fresh-database.ts), the end-to-end tests (test/) and the benches
// (exchange/bench/).
//
// It is under testing/, which the exchange's build leaves out of dist
// (exchange/tsconfig.json), and test/tsconfig.json lists this file by path so
// the end-to-end tests can import it: keep it a leaf (node and `pg` only), as
// anything it imported would have to be listed there too.

import { randomBytes } from 'node:crypto';

import pg from 'pg';

/** Where throw-away databases are made: a server, and a database to connect to first. */
export const ADMIN_URL =
  process.env['GPUX_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface ScratchDatabase {
  readonly name: string;
  /** ADMIN_URL pointed at this database. */
  readonly url: string;
  /** The server's version, for reports. */
  readonly serverVersion: string;
  /** Drops the database, ending connections still open on it. Safe to call twice. */
  drop(): Promise<void>;
}

/** Runs `fn` on a connection of its own to the admin database. */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * `<prefix>_<pid>_<random>`: unique across the processes of parallel test
 * runs, and recognisable when one was left behind by a killed run.
 */
export function uniqueDatabaseName(prefix: string): string {
  if (!/^[a-z][a-z0-9_]*$/.test(prefix)) throw new Error(`bad database name prefix ${prefix}`);
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** Creates an empty database (no schema: run migrate() on it if needed). */
export async function createDatabase(
  name: string = uniqueDatabaseName('gpux_test'),
): Promise<ScratchDatabase> {
  // The name goes into SQL as an identifier: only what uniqueDatabaseName() makes.
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  const serverVersion = await withAdmin(async (c) => {
    const r = await c.query<{ server_version: string }>('SHOW server_version');
    await c.query(`CREATE DATABASE ${name}`);
    return r.rows[0]?.server_version ?? '?';
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: url.toString(),
    serverVersion,
    drop(): Promise<void> {
      dropped ??= withAdmin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
      return dropped;
    },
  };
}
