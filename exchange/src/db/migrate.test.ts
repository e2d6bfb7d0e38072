import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { MIGRATIONS_DIR, MigrationError, migrationChecksum, readMigrations } from './migrate.js';

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-mig-'));
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

describe('readMigrations', () => {
  it('refuses a file not named NNNN_name.sql, and two files of one number', () => {
    const badName = dirWith({ '0001_first.sql': 'SELECT 1;', 'second.sql': 'SELECT 1;' });
    expect(() => readMigrations(badName)).toThrow(MigrationError);
    expect(() => readMigrations(badName)).toThrow(/NNNN_name/);
    const dup = dirWith({ '0001_a.sql': 'SELECT 1;', '0001_b.sql': 'SELECT 1;' });
    expect(() => readMigrations(dup)).toThrow(/two migrations/);
  });

  it('finds the project migrations in order, each with the sha256 of its file', () => {
    const migrations = readMigrations();
    const versions = migrations.map((m) => m.version);
    expect(versions.length).toBeGreaterThan(0);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    for (const m of migrations) {
      const bytes = readFileSync(join(MIGRATIONS_DIR, m.file));
      expect(m.file).toBe(`${String(m.version).padStart(4, '0')}_${m.name}.sql`);
      expect(m.checksum).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
  });
});

describe('migrationChecksum', () => {
  it('changes with any edit, whitespace included', () => {
    const sql = 'CREATE TABLE a (x integer);\n';
    expect(migrationChecksum(sql)).toMatch(/^[0-9a-f]{64}$/);
    expect(migrationChecksum(`${sql} `)).not.toBe(migrationChecksum(sql));
    expect(migrationChecksum(sql.replace('integer', 'bigint'))).not.toBe(migrationChecksum(sql));
  });

  it('reads CRLF line endings as LF, so a checkout that converts them is not an edit', () => {
    const lf = 'CREATE TABLE a (\n  x integer\n);\n';
    expect(migrationChecksum(lf.replace(/\n/g, '\r\n'))).toBe(migrationChecksum(lf));
  });
});
