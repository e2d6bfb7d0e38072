// A book's feed sequence number as committed (migration 0019): where the
// feed goes on from when the book is loaded, at start, at a takeover and
// after a rebuild (feed/book-feed.ts).

import type { GpuType, Zone } from '@gpux/shared';

import type { Queryable } from '../db/database.js';

export async function loadSequence(db: Queryable, gpuType: GpuType, zone: Zone): Promise<number> {
  const [row] = await db.query<{ sequence: string | number }>(
    'SELECT sequence FROM book_sequences WHERE gpu_type = $1 AND zone = $2',
    [gpuType, zone],
  );
  return row === undefined ? 0 : Number(row.sequence);
}
