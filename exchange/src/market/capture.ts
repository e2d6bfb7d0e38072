// A diagnostic: every write batch (change-set.ts) that commits is also
// appended to a file, one JSON line each, so `npm run bench -- pg-replay`
// can replay exactly that work on a fresh database and measure what
// PostgreSQL spends on it, without the noise of HTTP and of the machine's
// other processes (docs/benchmarks.md). Off unless GPUX_CAPTURE_WRITES names
// a file; never for production traffic (the file holds every order).

import { createWriteStream } from 'node:fs';

import type { Database } from '../db/database.js';
import { WRITE_BATCH_MARK } from './change-set.js';

/** One captured batch: the statement's prepared name, its text and its parameters. */
export interface CapturedBatch {
  readonly name: string;
  readonly sql: string;
  readonly params: readonly string[];
}

/** `db`, whose committed write batches are also appended to `file`. */
export function captureWrites(db: Database, file: string): Database {
  const out = createWriteStream(file, { flags: 'a' });
  // A file that cannot be written ends the capture, not the exchange.
  let capturing = true;
  out.on('error', (err) => {
    if (capturing) console.error(`GPUX_CAPTURE_WRITES: capture stopped: ${err.message}`);
    capturing = false;
  });
  return {
    kind: db.kind,
    async query(sql, params, options) {
      const rows = await db.query(sql, params, options);
      if (capturing && sql.startsWith(WRITE_BATCH_MARK)) {
        const line: CapturedBatch = {
          name: options?.name ?? '',
          sql,
          params: (params ?? []) as string[],
        };
        out.write(`${JSON.stringify(line)}\n`);
      }
      return rows as never;
    },
    exec: (sql) => db.exec(sql),
    transaction: (fn) => db.transaction(fn),
    async close() {
      try {
        await db.close();
      } finally {
        await new Promise<void>((resolve) => out.end(resolve));
      }
    },
  };
}
