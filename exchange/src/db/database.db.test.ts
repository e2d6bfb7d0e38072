import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { Database } from './database.js';
import {
  MigrationError,
  checkMigrations,
  migrate,
  migrationChecksum,
  readMigrations,
} from './migrate.js';
import { openPostgres } from './postgres.js';
import { OPEN_TIMEOUT_MS, TEST_ENGINES, freshPostgres } from './testing/fresh-database.js';
import type { FreshDatabase } from './testing/fresh-database.js';

describe.each(TEST_ENGINES)('database on %s', (_name, open) => {
  let db: Database;
  let done: () => Promise<void>;
  let firstStart: number[];
  beforeAll(async () => {
    ({ db, done } = await open());
    firstStart = await migrate(db);
  }, OPEN_TIMEOUT_MS);
  afterAll(async () => {
    await done();
  });

  it('applies every migration once; a second start applies none', async () => {
    const all = readMigrations().map((m) => m.version);
    expect(firstStart).toEqual(all);
    expect(await migrate(db)).toEqual([]);
    const rows = await db.query<{ version: number }>(
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    expect(rows.map((r) => r.version)).toEqual(all);
  });

  it('reads bigint columns as numbers, and refuses one past 2^53', async () => {
    const [ok] = await db.query<{ v: number }>('SELECT 9007199254740991::bigint AS v');
    expect(ok?.v).toBe(Number.MAX_SAFE_INTEGER);
    await expect(db.query('SELECT 9007199254740993::bigint AS v')).rejects.toThrow(RangeError);
  });

  it('rolls a transaction back when its function throws', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO organizations (id, name) VALUES ('org_rollback', 'x')");
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const rows = await db.query("SELECT 1 FROM organizations WHERE id = 'org_rollback'");
    expect(rows).toEqual([]);
  });
});

describe('migrations on PostgreSQL, two exchanges starting at once', () => {
  let fresh: FreshDatabase;
  beforeAll(async () => {
    fresh = await freshPostgres();
  });
  afterAll(async () => {
    await fresh.drop();
  });

  it('apply each migration exactly once (advisory lock)', async () => {
    const other = openPostgres(fresh.url);
    try {
      const [a, b] = await Promise.all([migrate(fresh.db), migrate(other)]);
      expect([...a, ...b].sort((x, y) => x - y)).toEqual(readMigrations().map((m) => m.version));
    } finally {
      await other.close();
    }
  });
});

describe.each(TEST_ENGINES)('migration checksums on %s', (_name, open) => {
  // A database and a migrations directory of its own for each test.
  let db: Database;
  let done: () => Promise<void>;
  let dir: string;
  beforeEach(async () => {
    ({ db, done } = await open());
    dir = mkdtempSync(join(tmpdir(), 'gpux-mig-'));
  }, OPEN_TIMEOUT_MS);
  afterEach(async () => {
    await done();
  });

  const write = (file: string, sql: string): void => writeFileSync(join(dir, file), sql);
  const A = 'CREATE TABLE a (x integer);\n';
  const B = 'CREATE TABLE b (x integer);\n';
  const C = 'CREATE TABLE c (x integer);\n';

  it('records the sha256 of each file it applies', async () => {
    write('0001_a.sql', A);
    write('0002_b.sql', B);
    expect(await migrate(db, readMigrations(dir))).toEqual([1, 2]);
    const rows = await db.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations ORDER BY version',
    );
    expect(rows).toEqual([
      { version: 1, checksum: migrationChecksum(A) },
      { version: 2, checksum: migrationChecksum(B) },
    ]);
  });

  it('refuses to start when applied files were edited, naming each, and applies nothing', async () => {
    write('0001_a.sql', A);
    write('0002_b.sql', B);
    write('0003_c.sql', C);
    await migrate(db, readMigrations(dir));
    write('0001_a.sql', A.replace('integer', 'bigint'));
    write('0003_c.sql', `${C}-- a comment is an edit too\n`);
    write('0004_d.sql', 'CREATE TABLE d (x integer);\n');
    const refused = migrate(db, readMigrations(dir));
    await expect(refused).rejects.toThrow(MigrationError);
    const message = await refused.catch((err: Error) => err.message);
    expect(message).toMatch(/0001_a\.sql/);
    expect(message).toMatch(/0003_c\.sql/);
    expect(message).not.toMatch(/0002_b\.sql/);
    expect(await db.query("SELECT 1 FROM pg_tables WHERE tablename = 'd'")).toEqual([]);

    // The files as they were: the database is accepted and 0004 applied.
    write('0001_a.sql', A);
    write('0003_c.sql', C);
    expect(await migrate(db, readMigrations(dir))).toEqual([4]);
  });

  it('refuses a schema newer than the build, naming the versions, and applies nothing', async () => {
    write('0001_a.sql', A);
    write('0002_b.sql', B);
    await migrate(db, readMigrations(dir));
    // An older build: it knows 0001 only, and comes with a file of its own.
    rmSync(join(dir, '0002_b.sql'));
    const refused = migrate(db, readMigrations(dir));
    await expect(refused).rejects.toThrow(MigrationError);
    const message = await refused.catch((err: Error) => err.message);
    expect(message).toMatch(/newer than this build: it has 0002_b applied/);
    expect(message).toMatch(/newest migration is 0001_a\.sql/);
    await expect(checkMigrations(db, readMigrations(dir))).rejects.toThrow(MigrationError);
  });

  it('fills the checksum of rows applied before it was recorded from the file, once', async () => {
    // schema_migrations as exchanges before checksums made it, with 0001 applied.
    await db.exec(`CREATE TABLE schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE a (x integer);
    INSERT INTO schema_migrations (version, name) VALUES (1, 'a');`);
    write('0001_a.sql', A);
    write('0002_b.sql', B);
    expect(await migrate(db, readMigrations(dir))).toEqual([2]);
    const [row] = await db.query<{ checksum: string }>(
      'SELECT checksum FROM schema_migrations WHERE version = 1',
    );
    expect(row?.checksum).toBe(migrationChecksum(A));
    // From then on an edit of 0001 is caught like any other.
    write('0001_a.sql', A.replace('integer', 'bigint'));
    await expect(migrate(db, readMigrations(dir))).rejects.toThrow(/0001_a\.sql/);
  });
});
