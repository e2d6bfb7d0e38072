// Versioned migrations: numbered SQL files in exchange/migrations/
// (`0001_name.sql`), applied in order at start, each in its own transaction,
// recorded in schema_migrations. A file once applied is never edited: a change
// is a new file. Concurrent starts on one server queue on an advisory lock.
//
// Each applied file's sha256 is kept with it, and a start refuses a database
// whose applied files were edited since: the schema it has is not the one the
// files describe, and a fresh database would get a different one.

import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import type { Database, Queryable } from './database.js';

/** exchange/migrations, from src/db or dist/db alike. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
/** Any constant will do; it only has to be the same for every exchange. */
const LOCK_KEY = 4_711_2026;

export interface Migration {
  readonly version: number;
  readonly name: string;
  /** The file name, for messages. */
  readonly file: string;
  readonly sql: string;
  /** sha256 (hex) of the file's text, line endings as LF. */
  readonly checksum: string;
}

/** A start that must not go on: bad migration files, or a database they no longer describe. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * The checksum of a migration's text. CRLF counts as LF, so a checkout that
 * converts line endings (git's autocrlf) is not taken for an edit.
 */
export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql.replace(/\r\n/g, '\n'), 'utf8').digest('hex');
}

export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = FILE.exec(file);
    if (m === null) throw new MigrationError(`migration file ${file} is not named NNNN_name.sql`);
    const version = Number(m[1]);
    const previous = migrations[migrations.length - 1];
    if (previous !== undefined && previous.version === version) {
      throw new MigrationError(`two migrations numbered ${m[1]}`);
    }
    const sql = readFileSync(`${dir}/${file}`, 'utf8');
    migrations.push({ version, name: m[2] ?? '', file, sql, checksum: migrationChecksum(sql) });
  }
  return migrations;
}

/**
 * Read-only: refuse a database whose applied files were edited since (a
 * standby checks this at start, before it may apply anything). A database
 * with no migrations yet passes.
 */
export async function checkMigrations(db: Queryable, migrations = readMigrations()): Promise<void> {
  const [table] = await db.query<{ exists: boolean }>(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS exists",
  );
  if (table?.exists !== true) return;
  const [column] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.columns
      WHERE table_name = 'schema_migrations' AND column_name = 'checksum'`,
  );
  if (column?.n === 0) return;
  await refuseChangedFiles(db, migrations);
}

/** Has migration `version` been applied (read-only)? */
export async function isApplied(db: Queryable, version: number): Promise<boolean> {
  const [table] = await db.query<{ exists: boolean }>(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS exists",
  );
  if (table?.exists !== true) return false;
  const rows = await db.query('SELECT 1 FROM schema_migrations WHERE version = $1', [version]);
  return rows.length > 0;
}

/** Apply what is missing; returns the versions applied now. */
export async function migrate(db: Database, migrations = readMigrations()): Promise<number[]> {
  await db.transaction(async (tx) => {
    // IF NOT EXISTS alone races between two starts: take the lock first.
    if (db.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    // Added by the runner itself, not by a migration, so that databases made
    // before it get the column on their next start, before anything is checked.
    await tx.exec('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text');
    await fillMissingChecksums(tx, migrations);
    await refuseChangedFiles(tx, migrations);
  });
  const applied: number[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (tx) => {
      if (db.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
      const rows = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [
        m.version,
      ]);
      if (rows.length > 0) return false;
      await tx.exec(m.sql);
      await tx.query(
        'INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)',
        [m.version, m.name, m.checksum],
      );
      return true;
    });
    if (done) applied.push(m.version);
  }
  return applied;
}

/**
 * Rows applied before checksums were recorded have none. They are trusted
 * once: filled from the file as it is at this start, so only an edit made
 * from now on is caught. (Nothing recorded what those files were when they
 * ran.)
 */
async function fillMissingChecksums(
  tx: Queryable,
  migrations: readonly Migration[],
): Promise<void> {
  const missing = await tx.query<{ version: number }>(
    'SELECT version FROM schema_migrations WHERE checksum IS NULL',
  );
  const byVersion = new Map(migrations.map((m) => [m.version, m]));
  for (const { version } of missing) {
    const m = byVersion.get(version);
    if (m === undefined) continue;
    await tx.query('UPDATE schema_migrations SET checksum = $2 WHERE version = $1', [
      version,
      m.checksum,
    ]);
  }
}

/**
 * Throws a MigrationError naming every applied file whose text changed since
 * it ran, or the migrations applied that this build does not have (a newer
 * build ran on this database: an older one would write a schema it does not
 * know; docs/releases.md).
 */
async function refuseChangedFiles(tx: Queryable, migrations: readonly Migration[]): Promise<void> {
  const applied = await tx.query<{ version: number; name: string; checksum: string | null }>(
    'SELECT version, name, checksum FROM schema_migrations ORDER BY version',
  );
  const byVersion = new Map(migrations.map((m) => [m.version, m]));
  const unknown = applied.filter((row) => !byVersion.has(row.version));
  if (unknown.length > 0) {
    const newest = migrations[migrations.length - 1];
    const names = unknown.map((r) => `${String(r.version).padStart(4, '0')}_${r.name}`);
    throw new MigrationError(
      `refusing to start: this database's schema is newer than this build: it has ${names.join(', ')} applied, ` +
        `and this build's newest migration is ${newest?.file ?? 'none'}. ` +
        'Run the build that applied them (or a newer one), or restore a backup taken before them.',
    );
  }
  const changed: string[] = [];
  for (const row of applied) {
    const m = byVersion.get(row.version);
    if (m === undefined || row.checksum === null || row.checksum === m.checksum) continue;
    changed.push(
      `  ${m.file}: applied with sha256 ${row.checksum.slice(0, 12)}…, the file is now ${m.checksum.slice(0, 12)}…`,
    );
  }
  if (changed.length > 0) {
    throw new MigrationError(
      `refusing to start: ${changed.length === 1 ? 'a migration was' : `${changed.length} migrations were`} edited after this database applied ${changed.length === 1 ? 'it' : 'them'}:\n` +
        `${changed.join('\n')}\n` +
        'An applied migration is never edited: restore the file(s) as they were and put the change in a new migration.',
    );
  }
}
