import { describe, expect, it } from 'vitest';

import type { Database, Queryable } from '../db/database.js';
import type { Logger } from '../logger.js';
import { ChangeSet } from './change-set.js';
import { CommitGroup } from './commit-group.js';
import type { BatchSource, Failure } from './commit-group.js';
import { newOrderRow } from './rows.js';

/** A database that takes every statement, counting them. */
function fakeDatabase(fail = false): Database & { statements: number } {
  const db = {
    kind: 'postgres' as const,
    statements: 0,
    query<Row>(): Promise<Row[]> {
      db.statements++;
      return fail ? Promise.reject(new Error('connection lost')) : Promise.resolve([]);
    },
    exec: () => Promise.resolve(),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> => fn(db),
    close: () => Promise.resolve(),
  };
  return db;
}

/** A book whose next batch rests one order; resolves with how its commit went. */
function book(id: string): BatchSource & { settled: Promise<Failure | undefined> } {
  let done: (f: Failure | undefined) => void = () => undefined;
  const settled = new Promise<Failure | undefined>((r) => (done = r));
  return {
    settled,
    runBatch() {
      const changes = new ChangeSet();
      changes.order(
        newOrderRow({
          id,
          account_id: 'acc_b',
          organization_id: 'org_b',
          side: 'buy',
          order_type: 'market',
          gpu_type: 'h100',
          zone: 'us-west-1',
          gpu_count: 8,
          duration_hours: 1,
          limit_price_cents: null,
          allow_partial: false,
          start_ms: 0,
          flexible_window_hours: null,
          expires_input_ms: null,
          cluster_id: null,
          resale_lease_id: null,
          transfer_immediately: null,
          created_ms: 0,
        }),
      );
      return {
        book: 'h100/us-west-1',
        changes,
        settle: (f) => Promise.resolve(done(f)),
      };
    },
  };
}

function debugLines(): { logger: Logger; lines: { obj: object; msg?: string }[] } {
  const lines: { obj: object; msg?: string }[] = [];
  const nothing = (): void => undefined;
  const debug = (obj: object | string, msg?: string): void => {
    if (typeof obj === 'object') lines.push({ obj, ...(msg !== undefined ? { msg } : {}) });
  };
  return { logger: { error: nothing, warn: nothing, info: nothing, debug }, lines };
}

describe('CommitGroup (docs/persistence.md)', () => {
  it('books ready in the same turn share one statement, and the group says at debug level what its commit took', async () => {
    const db = fakeDatabase();
    const { logger, lines } = debugLines();
    const group = new CommitGroup(db, logger);
    const a = book('ord_a');
    const b = book('ord_b');
    group.wake(a);
    group.wake(b);
    expect(await Promise.all([a.settled, b.settled])).toEqual([undefined, undefined]);
    await new Promise((r) => setImmediate(r));
    expect(db.statements).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.msg).toBe('commit group');
    expect(lines[0]?.obj).toMatchObject({ books: 2, orders: 2, fills: 0, failed: false });
    for (const k of ['runMs', 'writeMs', 'settleMs'] as const) {
      expect((lines[0]?.obj as Record<string, number>)[k]).toBeGreaterThanOrEqual(0);
    }
  });

  it('a failed commit reaches every book of the group, and its line says so', async () => {
    const { logger, lines } = debugLines();
    const group = new CommitGroup(fakeDatabase(true), logger);
    const a = book('ord_c');
    group.wake(a);
    expect((await a.settled)?.error).toBeInstanceOf(Error);
    await new Promise((r) => setImmediate(r));
    expect(lines[0]?.obj).toMatchObject({ books: 1, failed: true });
  });
});
