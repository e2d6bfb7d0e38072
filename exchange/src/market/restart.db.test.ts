// Issue 3: "a restart loses nothing acknowledged and changes no priority".
// Orders of every kind are placed, the exchange stops, a new one starts on
// the same PostgreSQL database and must hold the very same books; matching
// then goes on by the priority the orders had before.

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { ledgerTotal } from '../ledger/ledger.js';
import { testExchange } from './testing/test-exchange.js';
import type { Party, TestExchange } from './testing/test-exchange.js';

let fresh: FreshDatabase;
let ex: TestExchange;
let p1: Party;
let p2: Party;
let buyer: Party;

beforeAll(async () => {
  fresh = await freshPostgres();
  ex = await testExchange({ db: fresh.db });
  p1 = await ex.account('p1');
  p2 = await ex.account('p2');
  buyer = await ex.account('buyer');
  await ex.cluster(p1, 20);
  await ex.cluster(p2, 20);
});

afterAll(async () => {
  await ex?.stop();
  await fresh?.drop();
});

function sell(
  price: number,
  gpus: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    side: 'sell',
    gpu_type: 'h100',
    zone: 'us-west-1',
    gpu_count: gpus,
    duration_hours: 48,
    limit_price: price,
    ...extra,
  };
}

function buy(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    side: 'buy',
    gpu_type: 'h100',
    zone: 'us-west-1',
    gpu_count: 8,
    duration_hours: 4,
    ...extra,
  };
}

async function place(who: Party, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await ex.call('POST', '/v1/orders', who.token, body);
  expect(r.status, r.body).toBe(200);
  return r.json;
}

describe('restart on the same database', () => {
  it('rebuilds identical books, and matching goes on in the same priority', async () => {
    // Equal prices from two providers: time priority decides (rule 2).
    const a = await place(p1, sell(2, 16));
    const b = await place(p2, sell(2, 16));
    await place(p1, sell(2.2, 24));
    await place(buyer, buy({ limit_price: 1.5, gpu_count: 16 }));
    await place(buyer, buy({ limit_price: 1.6, allow_partial: true }));
    // Scheduled (D13) and flexible (D14) orders.
    const start = new Date(ex.clock.now() + 3 * HOUR_MS).toISOString();
    await place(buyer, buy({ limit_price: 1.7, start_time: start }));
    await place(buyer, buy({ flexible_window_hours: 6, start_time: start }));
    // A trade, so the book has a last trade and a partly filled sell.
    const m = await place(buyer, buy({}));
    expect(m['status']).toBe('filled');
    ex.clock.advance(60_000);

    const before = ex.market.writer('h100', 'us-west-1').view;
    const openBefore = before.book.openOrders();
    const snapBefore = before.book.snapshot(50);
    const listBefore = (await ex.call('GET', '/v1/orders?limit=100', buyer.token)).json;
    expect(openBefore.length).toBeGreaterThan(5);

    await ex.stop();
    const clock = ex.clock.now();
    ex = await testExchange({ db: fresh.db });
    ex.clock.t = clock;

    const after = ex.market.writer('h100', 'us-west-1').view;
    expect(after.book.openOrders()).toEqual(openBefore);
    expect(after.book.snapshot(50)).toEqual(snapBefore);
    expect((await ex.call('GET', '/v1/orders?limit=100', buyer.token)).json).toEqual(listBefore);

    // The next market buy takes what is left of the earliest $2 sell (a), then b.
    const next = await place(buyer, buy({ gpu_count: 16 }));
    const sells = await ex.db.query<{ sell_order_id: string; gpus: number }>(
      'SELECT sell_order_id, gpus FROM fills WHERE buy_order_id = $1 ORDER BY book_seq',
      [next['order_id']],
    );
    expect(sells).toEqual([
      { sell_order_id: a['order_id'], gpus: 8 },
      { sell_order_id: b['order_id'], gpus: 8 },
    ]);
    // Time passes after the restart: the scheduled orders arrive at their start (D13).
    const scheduled = (): number =>
      ex.market
        .writer('h100', 'us-west-1')
        .view.book.openOrders()
        .filter((o) => o.state !== 'resting').length;
    expect(scheduled()).toBe(2);
    await ex.tick(3 * HOUR_MS);
    expect(scheduled()).toBe(0);
    expect(await ledgerTotal(ex.db)).toBe(0);
  });
});
