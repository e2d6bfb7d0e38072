import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from './database.js';
import { parseInt8 } from './database.js';
import { migrate, readMigrations } from './migrate.js';
import { openPostgres } from './postgres.js';
import { TEST_ENGINES, freshPostgres } from './testing/fresh-database.js';
import type { FreshDatabase } from './testing/fresh-database.js';

describe('parseInt8 (D1: money read back as exact integers)', () => {
  it('reads safe integers and refuses anything past 2^53', () => {
    expect(parseInt8('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseInt8('-42')).toBe(-42);
    expect(() => parseInt8('9007199254740993')).toThrow(RangeError);
  });
});

describe('readMigrations', () => {
  it('refuses a file not named NNNN_name.sql, and two files of one number', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-mig-'));
    writeFileSync(join(dir, '0001_first.sql'), 'SELECT 1;');
    writeFileSync(join(dir, 'second.sql'), 'SELECT 1;');
    expect(() => readMigrations(dir)).toThrow(/NNNN_name/);
    const dup = mkdtempSync(join(tmpdir(), 'gpux-mig-'));
    writeFileSync(join(dup, '0001_a.sql'), 'SELECT 1;');
    writeFileSync(join(dup, '0001_b.sql'), 'SELECT 1;');
    expect(() => readMigrations(dup)).toThrow(/two migrations/);
  });

  it('finds the project migrations in order', () => {
    const versions = readMigrations().map((m) => m.version);
    expect(versions.length).toBeGreaterThan(0);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
  });
});

describe.each(TEST_ENGINES)('database on %s', (_name, open) => {
  let db: Database;
  let done: () => Promise<void>;
  beforeAll(async () => {
    ({ db, done } = await open());
  });
  afterAll(async () => {
    await done();
  });

  it('applies every migration once; a second start applies none', async () => {
    const all = readMigrations().map((m) => m.version);
    expect(await migrate(db)).toEqual(all);
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
      expect([...a, ...b].sort()).toEqual(readMigrations().map((m) => m.version));
    } finally {
      await other.close();
    }
  });
});
