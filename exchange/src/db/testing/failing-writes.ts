// A database whose write batches (market/change-set.ts) fail at commit time
// when a test says so: the statement runs, inside a transaction that is then
// rolled back, so the database holds none of it and the caller gets an
// error, as when a commit fails for real.

import { WRITE_BATCH_MARK } from '../../market/change-set.js';
import type { Database } from '../database.js';

/** `db`, with each write batch failing while `fail()` answers true (asked once per batch). */
export function failingWrites(db: Database, fail: () => boolean): Database {
  return {
    kind: db.kind,
    query: async (sql, params, options) => {
      if (!sql.startsWith(WRITE_BATCH_MARK) || !fail()) return db.query(sql, params, options);
      return db.transaction(async (tx) => {
        await tx.query(sql, params);
        throw new Error('simulated commit failure');
      });
    },
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    transaction: (fn) => db.transaction(fn),
  };
}
