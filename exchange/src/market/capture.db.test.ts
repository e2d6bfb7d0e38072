// GPUX_CAPTURE_WRITES (market/capture.ts): each committed write batch is
// appended as it was sent, and replays to the same rows (bench pg-replay).

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { migrate } from '../db/migrate.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { captureWrites } from './capture.js';
import type { CapturedBatch } from './capture.js';
import { testOutboxRow } from './testing/outbox-row.js';
import { ChangeSet } from './change-set.js';

let fresh: FreshDatabase;

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
});

afterAll(async () => {
  await fresh?.drop();
});

const event = (id: string): ChangeSet => {
  const cs = new ChangeSet();
  cs.outbox.push(testOutboxRow(id, 1));
  return cs;
};

describe('captureWrites', () => {
  it('appends each committed batch, and only batches, in the order they committed', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gpux-capture-')), 'writes.jsonl');
    // Closing the wrapper would close the shared database: end the file by hand.
    const db = captureWrites({ ...fresh.db, close: () => Promise.resolve() }, file);
    await event('evt_cap_1').write(db);
    await db.query('SELECT 1');
    // A duplicate event id fails the statement: nothing is appended for it.
    await expect(event('evt_cap_1').write(db)).rejects.toThrow();
    await event('evt_cap_2').write(db);
    await db.close();

    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const batches = lines.map((l) => JSON.parse(l) as CapturedBatch);
    expect(batches.map((b) => b.name)).toEqual(['gpux_write_batch_64', 'gpux_write_batch_64']);
    expect(batches.map((b) => JSON.parse(b.params[0] ?? '[]') as unknown)).toEqual([
      [testOutboxRow('evt_cap_1', 1)],
      [testOutboxRow('evt_cap_2', 1)],
    ]);

    // Replayed on an empty outbox, the captured statements write the same rows.
    await fresh.db.exec('DELETE FROM outbox');
    for (const b of batches) await fresh.db.query(b.sql, b.params);
    expect(await fresh.db.query('SELECT event_id, payload FROM outbox ORDER BY seq')).toEqual([
      { event_id: 'evt_cap_1', payload: testOutboxRow('evt_cap_1', 1).payload },
      { event_id: 'evt_cap_2', payload: testOutboxRow('evt_cap_2', 1).payload },
    ]);
  });
});
