// Versioned migrations: numbered SQL files in exchange/migrations/
// (`0001_name.sql`), applied in order at start, each in its own transaction,
// recorded in schema_migrations. A file once applied is never edited: a change
// is a new file. Concurrent starts on one server queue on an advisory lock.

import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import type { Database } from './database.js';

/** exchange/migrations, from src/db or dist/db alike. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
/** Any constant will do; it only has to be the same for every exchange. */
const LOCK_KEY = 4_711_2026;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = FILE.exec(file);
    if (m === null) throw new Error(`migration file ${file} is not named NNNN_name.sql`);
    const version = Number(m[1]);
    const previous = migrations[migrations.length - 1];
    if (previous !== undefined && previous.version === version) {
      throw new Error(`two migrations numbered ${m[1]}`);
    }
    migrations.push({ version, name: m[2] ?? '', sql: readFileSync(`${dir}/${file}`, 'utf8') });
  }
  return migrations;
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
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        m.version,
        m.name,
      ]);
      return true;
    });
    if (done) applied.push(m.version);
  }
  return applied;
}
