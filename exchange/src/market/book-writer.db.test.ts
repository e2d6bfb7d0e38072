// A batch whose commit fails was never acknowledged: its callers get the
// error, and the writer rebuilds the book from PostgreSQL, so the orders of
// that batch are in neither the database nor the book.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { Command } from './book-writer.js';
import { testOutboxRow } from './testing/outbox-row.js';
import { ChangeSet, WRITE_BATCH_MARK } from './change-set.js';
import { migrate } from '../db/migrate.js';
import { failingWrites } from '../db/testing/failing-writes.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { Market } from './market.js';
import type { OrderRow } from './rows.js';
import { testExchange } from './testing/test-exchange.js';
import type { TestExchange } from './testing/test-exchange.js';

let fresh: FreshDatabase;
let failNext = false;
/** While above 0, each read of a book's open orders (a rebuild) fails, and counts down. */
let failLoads = 0;
/** What the market logged at error level. */
const errors: { obj: Record<string, unknown>; msg: string | undefined }[] = [];
const logger: Logger = {
  error: (obj: object | string, msg?: string) => {
    if (typeof obj === 'object') errors.push({ obj: obj as Record<string, unknown>, msg });
  },
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
};
let ex: TestExchange;
/** Batch statements written so far. */
let batchWrites = 0;
/** While set, batch statements wait for it before they run. */
let gate: Promise<void> | undefined;
/** Called when a batch statement starts waiting at the gate. */
let atGate: (() => void) | undefined;

/**
 * The test database, whose next batch write fails at commit time when asked:
 * the statement runs, inside a transaction that is then rolled back.
 */
function flaky(db: Database): Database {
  const failing = failingWrites(db, () => {
    const fail = failNext;
    failNext = false;
    return fail;
  });
  return {
    ...failing,
    query: async (sql, params, options) => {
      if (failLoads > 0 && sql.startsWith('SELECT * FROM orders WHERE gpu_type')) {
        failLoads--;
        throw new Error('simulated database outage');
      }
      if (!sql.startsWith(WRITE_BATCH_MARK)) return db.query(sql, params, options);
      batchWrites++;
      const held = gate;
      if (held !== undefined) {
        atGate?.();
        await held;
      }
      return failing.query(sql, params, options);
    },
  };
}

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
  ex = await testExchange({ db: flaky(fresh.db), logger });
});

afterAll(async () => {
  await ex?.stop();
  await fresh?.drop();
});

describe('BookWriter', () => {
  it('answers 500 for a batch that did not commit, and rebuilds the book without it', async () => {
    const who = await ex.account('buyer');
    const body = {
      side: 'buy',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 8,
      duration_hours: 10,
      limit_price: 2,
    };
    const kept = await ex.call('POST', '/v1/orders', who.token, body);
    expect(kept.status).toBe(200);

    failNext = true;
    const lost = await ex.call('POST', '/v1/orders', who.token, { ...body, limit_price: 2.1 });
    expect(lost.status).toBe(500);
    expect(lost.json).toEqual({
      data: null,
      error: { code: 'internal_error', message: 'internal server error' },
    });

    const book = ex.market.writer('h100', 'us-west-1').view.book;
    expect(book.snapshot(10).bids).toEqual([{ price: 200, gpus: 8, orders: 1 }]);
    const listed = await ex.call('GET', '/v1/orders', who.token);
    expect(listed.json['total']).toBe(1);

    // The writer goes on.
    const next = await ex.call('POST', '/v1/orders', who.token, { ...body, limit_price: 2.2 });
    expect(next.status).toBe(200);
    expect(ex.market.writer('h100', 'us-west-1').view.book.snapshot(10).bids).toHaveLength(2);
  });

  it('a rebuild that keeps failing is logged and counted, and tried again until it succeeds', async () => {
    const who = await ex.account('rebuild-watcher');
    const writer = ex.market.writer('h100', 'eu-west-1');
    const before = { ...writer.stats };
    errors.length = 0;
    failNext = true;
    failLoads = 2;
    const lost = await ex.call('POST', '/v1/orders', who.token, {
      side: 'buy',
      gpu_type: 'h100',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 10,
      limit_price: 2,
    });
    expect(lost.status).toBe(500);
    expect(writer.stats.rebuilds).toBe(before.rebuilds + 1);
    expect(writer.stats.rebuildFailures).toBe(before.rebuildFailures + 2);
    // The failed commit, then each failed attempt with its cause and its back-off.
    expect(errors.map((e) => e.msg)).toEqual([
      'write batch failed to commit; rebuilding the book from the database',
      'rebuilding the book failed; it takes no commands until it succeeds',
      'rebuilding the book failed; it takes no commands until it succeeds',
    ]);
    expect(errors[1]?.obj).toMatchObject({ book: 'h100/eu-west-1', attempt: 1, retryInMs: 50 });
    expect(errors[2]?.obj).toMatchObject({ attempt: 2, retryInMs: 100 });
    expect(String(errors[1]?.obj['err'])).toMatch(/simulated database outage/);
  });

  it('a book rebuilt by a second exchange equals the live one', async () => {
    const who = await ex.account('rebuilt');
    const placed = await ex.call('POST', '/v1/orders', who.token, {
      side: 'buy',
      gpu_type: 'b300',
      zone: 'us-east-1',
      gpu_count: 16,
      duration_hours: 10,
      limit_price: 3,
    });
    expect(placed.status).toBe(200);
    const again = await Market.open(fresh.db, { tickIntervalMs: 0 });
    try {
      const live = ex.market.writer('b300', 'us-east-1').view.book.openOrders();
      expect(live.map((o) => o.input.id)).toContain(placed.json['order_id']);
      expect(again.writer('b300', 'us-east-1').view.book.openOrders()).toEqual(live);
    } finally {
      await again.close();
    }
  });

  const buy = (zone: string, price: number): Record<string, unknown> => ({
    side: 'buy',
    gpu_type: 'h200',
    zone,
    gpu_count: 8,
    duration_hours: 10,
    limit_price: price,
  });

  /** A command that writes one outbox row (what it writes does not matter here). */
  const writes =
    (tag: string): Command<string> =>
    (_state, changes) => {
      changes.outbox.push(testOutboxRow(`evt_${tag}`));
      return tag;
    };
  const outboxHas = async (tag: string): Promise<boolean> =>
    (await ex.db.query('SELECT 1 FROM outbox WHERE event_id = $1', [`evt_${tag}`])).length === 1;

  it('books ready in the same turn share one commit', async () => {
    const before = batchWrites;
    const west = ex.market.writer('h200', 'us-west-1');
    const east = ex.market.writer('h200', 'us-east-1');
    expect(await Promise.all([west.submit(writes('g1')), east.submit(writes('g2'))])).toEqual([
      'g1',
      'g2',
    ]);
    expect(batchWrites - before).toBe(1);
    expect([await outboxHas('g1'), await outboxHas('g2')]).toEqual([true, true]);
  });

  it("a book does not wait for another book's commit", async () => {
    const who = await ex.account('unblocked');
    let open: () => void = () => undefined;
    gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const held = new Promise<void>((resolve) => (atGate = resolve));
    // West's commit is held at the database; east's order still completes.
    const west = ex.call('POST', '/v1/orders', who.token, buy('us-west-1', 2.01));
    await held;
    gate = undefined;
    atGate = undefined;
    const east = await ex.call('POST', '/v1/orders', who.token, buy('us-east-1', 2.01));
    expect(east.status).toBe(200);
    let westDone = false;
    void west.then(() => (westDone = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(westDone).toBe(false);
    open();
    expect((await west).status).toBe(200);
  });

  it('a shared commit that fails fails every book in it, and each rebuilds from the database', async () => {
    const west = ex.market.writer('h200', 'us-west-1');
    const east = ex.market.writer('h200', 'us-east-1');
    const [westState, eastState] = [west.view, east.view];
    failNext = true;
    const results = await Promise.allSettled([
      west.submit(writes('f1')),
      east.submit(writes('f2')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect([await outboxHas('f1'), await outboxHas('f2')]).toEqual([false, false]);
    // Rebuilt: each writer's state is a new one, loaded from PostgreSQL.
    expect(west.view).not.toBe(westState);
    expect(east.view).not.toBe(eastState);
  });

  it('a batch whose command throws (even null) is lost whole and rebuilt; the other books commit', async () => {
    const west = ex.market.writer('h200', 'us-west-1');
    const east = ex.market.writer('h200', 'us-east-1');
    const westState = west.view;
    const results = await Promise.allSettled([
      west.submit(writes('t1')),
      west.submit(() => {
        // Not a clean refusal: the state may be half-changed.
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw null;
      }),
      east.submit(writes('t2')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    expect([await outboxHas('t1'), await outboxHas('t2')]).toEqual([false, true]);
    expect(west.view).not.toBe(westState);
  });

  it("a book whose batch changed nothing is not failed by another book's commit", async () => {
    const west = ex.market.writer('h200', 'us-west-1');
    const east = ex.market.writer('h200', 'us-east-1');
    const eastState = east.view;
    failNext = true;
    const [failed, untouched] = await Promise.allSettled([
      west.submit(writes('b1')),
      east.submit(() => 'read only'),
    ]);
    expect(failed.status).toBe('rejected');
    expect(untouched).toEqual({ status: 'fulfilled', value: 'read only' });
    expect(east.view).toBe(eastState);
  });

  it('writes a batch as one statement: a row that fails its check leaves none of the batch behind', async () => {
    const who = await ex.account('atomic');
    const placed = await ex.call('POST', '/v1/orders', who.token, {
      side: 'buy',
      gpu_type: 'b300',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 10,
      limit_price: 2,
    });
    const [order] = await ex.db.query<OrderRow>('SELECT * FROM orders WHERE id = $1', [
      placed.json['order_id'],
    ]);
    if (order === undefined) throw new Error('the order placed is not in the database');
    const changes = new ChangeSet();
    changes.order({ ...order, id: 'ord_atomic_test', account_id: who.accountId });
    changes.outbox.push(testOutboxRow('evt_atomic_test'));
    // A ledger transaction that does not balance (ChangeSet.post would refuse
    // it, so it goes in behind its back): the database's check fails.
    changes.ledger.push({
      id: 'txn_atomic_test',
      kind: 'lease_charge',
      postings: [
        { accountId: who.accountId, kind: 'buyer_charge', amountCents: -100 },
        { accountId: who.accountId, kind: 'seller_proceeds', amountCents: 99 },
      ],
    });
    await expect(changes.write(fresh.db)).rejects.toThrow(/does not balance/);
    expect(await ex.db.query("SELECT id FROM orders WHERE id = 'ord_atomic_test'")).toEqual([]);
    expect(await ex.db.query("SELECT 1 FROM outbox WHERE event_id = 'evt_atomic_test'")).toEqual(
      [],
    );
    expect(
      await ex.db.query("SELECT 1 FROM ledger_transactions WHERE id = 'txn_atomic_test'"),
    ).toEqual([]);
  });
});
