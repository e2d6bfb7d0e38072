import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { PGlite, types } from '@electric-sql/pglite';

import type { Database, Queryable } from './database.js';
import { parseInt8 } from './database.js';
import { lockDataDir } from './data-dir-lock.js';

/**
 * PGlite: PostgreSQL compiled to WebAssembly, in this process. `dataDir`
 * keeps the data on disk; without it the database lives in memory.
 */
export async function openPglite(dataDir?: string): Promise<Database> {
  const db = await PGlite.create(dataDir, { parsers: { [types.INT8]: parseInt8 } });

  const on = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]> {
      const result = await q.query<Row>(sql, params as unknown[] | undefined);
      return result.rows;
    },
    async exec(sql: string): Promise<void> {
      await q.exec(sql);
    },
  });

  return {
    kind: 'pglite',
    ...on(db),
    transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return db.transaction((tx) => fn(on(tx)));
    },
    async close(): Promise<void> {
      await db.close();
    },
  };
}

/**
 * The embedded database of the exchange (D34): PGlite in `<dataDir>/pgdata`,
 * `dataDir` locked first for this process alone (data-dir-lock.ts; a
 * second process gets DataDirInUse) and released when it closes.
 */
export async function openEmbedded(dataDir: string): Promise<Database> {
  const dir = join(dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  const release = lockDataDir(dataDir);
  try {
    const db = await openPglite(dir);
    return {
      ...db,
      async close(): Promise<void> {
        try {
          await db.close();
        } finally {
          release();
        }
      },
    };
  } catch (err) {
    release();
    throw err;
  }
}
