// A batch whose commit fails was never acknowledged: its callers get the
// error, and the writer rebuilds the book from PostgreSQL, so the orders of
// that batch are in neither the database nor the book.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database, Queryable } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { Market } from './market.js';
import { testExchange } from './testing/test-exchange.js';
import type { TestExchange } from './testing/test-exchange.js';

let fresh: FreshDatabase;
let failNext = false;
let ex: TestExchange;

/** The test database, whose next transaction fails at commit time when asked. */
function flaky(db: Database): Database {
  return {
    kind: db.kind,
    query: (sql, params) => db.query(sql, params),
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
      db.transaction(async (tx) => {
        const out = await fn(tx);
        if (failNext) {
          failNext = false;
          throw new Error('simulated commit failure');
        }
        return out;
      }),
  };
}

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
  ex = await testExchange({ db: flaky(fresh.db) });
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

  it('a book rebuilt by a second exchange equals the live one', async () => {
    const again = await Market.open(fresh.db, { tickIntervalMs: 0 });
    try {
      expect(again.writer('h100', 'us-west-1').view.book.openOrders()).toEqual(
        ex.market.writer('h100', 'us-west-1').view.book.openOrders(),
      );
    } finally {
      await again.close();
    }
  });
});
