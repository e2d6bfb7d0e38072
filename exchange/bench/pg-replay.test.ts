import { describe, expect, it } from 'vitest';

import { maskOf, mergeBatches, tableParams } from './pg-replay.js';

const rows = (...r: unknown[]): string => JSON.stringify(r);

describe('pg-replay', () => {
  it('reads the table mask from the prepared name', () => {
    expect(maskOf({ name: 'gpux_write_batch_65', sql: '', params: [] })).toBe(65);
    expect(maskOf({ name: 'gpux_write_batch_f65', sql: '', params: [] })).toBe(65);
    expect(() => maskOf({ name: 'other', sql: '', params: [] })).toThrow(/not a write batch/);
  });

  it("replays a fenced batch's tables without its fence (the last parameter)", () => {
    expect(tableParams({ name: 'gpux_write_batch_f65', sql: '', params: ['a', 'b', 'f'] })).toEqual(
      ['a', 'b'],
    );
    expect(tableParams({ name: 'gpux_write_batch_65', sql: '', params: ['a', 'b'] })).toEqual([
      'a',
      'b',
    ]);
  });

  it('merges k batches table by table; an order or lease written twice keeps its last state', () => {
    const merged = mergeBatches(
      [
        // orders (bit 0) and outbox (bit 6)
        { mask: 1 | 64, params: [rows({ id: 'o1', v: 1 }), rows({ event_id: 'e1' })] },
        // orders only: o1 again, and o2
        { mask: 1, params: [rows({ id: 'o1', v: 2 }, { id: 'o2', v: 1 })] },
        // fills (bit 3), in the next group
        { mask: 8, params: [rows({ id: 'f1' })] },
      ],
      2,
    );
    expect(merged).toEqual([
      {
        mask: 1 | 64,
        params: [rows({ id: 'o1', v: 2 }, { id: 'o2', v: 1 }), rows({ event_id: 'e1' })],
      },
      { mask: 8, params: [rows({ id: 'f1' })] },
    ]);
  });

  it('merges every table of the batch statement, holding once a row an upsert or update may touch once', () => {
    const SEQ = 1 << 15; // book_sequences (upsert)
    const EVENTS = 1 << 16; // the account events' one queued row (an array)
    const NODES = 1 << 10; // nodes' status (UPDATE … FROM)
    const merged = mergeBatches(
      [
        {
          mask: SEQ | EVENTS,
          params: [rows({ gpu_type: 'h100', zone: 'z', sequence: 1 }), rows({ event_id: 'a1' })],
        },
        {
          mask: NODES | SEQ | EVENTS,
          params: [
            rows({ id: 'n1', status: 'online' }, { id: 'n1', status: 'offline' }),
            rows(
              { gpu_type: 'h100', zone: 'z', sequence: 2 },
              { gpu_type: 'h200', zone: 'z', sequence: 7 },
            ),
            rows({ event_id: 'a2' }),
          ],
        },
      ],
      2,
    );
    expect(merged).toEqual([
      {
        mask: NODES | SEQ | EVENTS,
        params: [
          rows({ id: 'n1', status: 'offline' }),
          rows(
            { gpu_type: 'h100', zone: 'z', sequence: 2 },
            { gpu_type: 'h200', zone: 'z', sequence: 7 },
          ),
          rows({ event_id: 'a1' }, { event_id: 'a2' }),
        ],
      },
    ]);
  });

  it('refuses a batch whose parameters do not match its mask', () => {
    expect(() => mergeBatches([{ mask: 1 | 2, params: [rows({ id: 'o1' })] }], 1)).toThrow(
      /mask 3/,
    );
  });
});
