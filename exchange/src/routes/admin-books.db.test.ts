// GET /v1/admin/books, POST /v1/admin/books/{gpu_type}/{zone}/halt and
// /resume (issue 21, docs/api/admin.md "Books"): a halted book refuses new
// orders with 409 market_halted (customers', resales and agents' sells
// alike), matches nothing and its timers wait; cancels still work; the halt
// is audit-logged and outlives a restart; on resumption what fell due
// happens at once.

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { ledgerTotal } from '../ledger/ledger.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';

let fresh: FreshDatabase;
let ex: TestExchange;

beforeAll(async () => {
  fresh = await freshPostgres();
  ex = await testExchange({ db: fresh.db });
});

afterAll(async () => {
  await ex?.stop();
  await fresh?.drop();
});

const admin = (method: string, url: string, body?: unknown) =>
  ex.call(method, url, ADMIN_TOKEN, body);

const halt = (b: Book, reason = 'suspected price manipulation') =>
  admin('POST', `/v1/admin/books/${b.gpu_type}/${b.zone}/halt`, { reason });
const resume = (b: Book, reason = 'investigation closed') =>
  admin('POST', `/v1/admin/books/${b.gpu_type}/${b.zone}/resume`, { reason });

function order(b: Book, side: 'buy' | 'sell', extra: Record<string, unknown> = {}) {
  return {
    side,
    ...b,
    gpu_count: 8,
    duration_hours: side === 'sell' ? 24 : 4,
    ...(side === 'sell' ? { limit_price: 2 } : {}),
    ...extra,
  };
}

async function place(p: Party, body: Record<string, unknown>) {
  return ex.call('POST', '/v1/orders', p.token, body);
}

async function orderbook(b: Book): Promise<Record<string, unknown>> {
  const reader = await ex.party('reader');
  const r = await ex.call(
    'GET',
    `/v1/orderbook?gpu_type=${b.gpu_type}&zone=${b.zone}`,
    reader.token,
  );
  expect(r.status).toBe(200);
  return r.json;
}

/** A provider with a 2-node cluster in a fresh book, and a buyer. */
async function market(tag: string) {
  const b = ex.book();
  const provider = await ex.party(`provider-${tag}`, { scopes: ['trade', 'read', 'provider'] });
  const buyer = await ex.party(`buyer-${tag}`);
  const clusterId = await ex.cluster(provider, 2, b.gpu_type, b.zone);
  return { b, provider, buyer, clusterId };
}

describe('an operator halts a book', () => {
  it('refuses new orders with 409 market_halted, keeps cancels working, and audit-logs it', async () => {
    const { b, provider, buyer, clusterId } = await market('halt');
    const sell = await place(provider, order(b, 'sell', { cluster_id: clusterId }));
    expect(sell.status).toBe(200);
    const resting = await place(buyer, order(b, 'buy', { limit_price: 1.5 }));
    expect(resting.status).toBe(200);

    const r = await halt(b);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      ...b,
      status: 'halted',
      halted_at: new Date(ex.clock.now()).toISOString(),
      open_orders: 2,
    });
    expect(await orderbook(b)).toMatchObject({ status: 'halted' });

    // A market buy that would fill, a limit buy, a sell: all refused.
    for (const body of [
      order(b, 'buy'),
      order(b, 'buy', { limit_price: 2 }),
      order(b, 'sell', { cluster_id: clusterId, limit_price: 2.1 }),
    ]) {
      const refused = await place(body.side === 'sell' ? provider : buyer, body);
      expect(refused.status).toBe(409);
      expect(refused.json['error']).toMatchObject({ code: 'market_halted' });
    }
    // Nothing traded, nothing was charged.
    const [fills] = await ex.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM fills WHERE gpu_type = $1 AND zone = $2',
      [b.gpu_type, b.zone],
    );
    expect(fills?.n).toBe(0);
    // A cancel still works.
    const id = resting.json['order_id'] as string;
    const cancelled = await ex.call('DELETE', `/v1/orders/${id}`, buyer.token);
    expect(cancelled.status).toBe(200);

    const audit = await admin(
      'GET',
      `/v1/admin/audit?target_type=book&target_id=${b.gpu_type}/${b.zone}`,
    );
    expect(audit.json['entries']).toEqual([
      expect.objectContaining({
        actor: 'admin_token',
        action: 'book.halt',
        reason: 'suspected price manipulation',
        before: { status: 'open', halted_at: null },
        after: { status: 'halted', halted_at: new Date(ex.clock.now()).toISOString() },
      }),
    ]);

    // Halting it again changes and records nothing.
    const again = await halt(b, 'again');
    expect(again.status).toBe(200);
    expect(again.json['status']).toBe('halted');
    const audit2 = await admin(
      'GET',
      `/v1/admin/audit?target_type=book&target_id=${b.gpu_type}/${b.zone}`,
    );
    expect(audit2.json['entries']).toHaveLength(1);

    // Resumed: the book trades again, and the resumption is logged too.
    const resumed = await resume(b);
    expect(resumed.json).toMatchObject({ status: 'open', halted_at: null });
    const bought = await place(buyer, order(b, 'buy'));
    expect(bought.status).toBe(200);
    expect(bought.json['status']).toBe('filled');
    const audit3 = await admin(
      'GET',
      `/v1/admin/audit?action=book.resume&target_type=book&target_id=${b.gpu_type}/${b.zone}`,
    );
    const [resumedEntry, ...others] = audit3.json['entries'] as Record<string, unknown>[];
    expect(others).toEqual([]);
    expect(resumedEntry?.['before']).toMatchObject({ status: 'halted' });
    expect(resumedEntry?.['after']).toEqual({ status: 'open', halted_at: null });
    expect(await ledgerTotal(ex.db)).toBe(0);
  });

  it('refuses a resale of a lease in a halted book', async () => {
    const { book: b, buyer, leaseId } = await ex.marketLease('halt-resale');
    await ex.leaseReady(leaseId, b);
    expect((await halt(b)).status).toBe(200);
    const r = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 2,
    });
    expect(r.status).toBe(409);
    expect(r.json['error']).toMatchObject({ code: 'market_halted' });
    expect((await resume(b)).status).toBe(200);
  });

  it('lists every book with its status', async () => {
    const r = await admin('GET', '/v1/admin/books');
    expect(r.status).toBe(200);
    const books = r.json['books'] as { status: string }[];
    expect(books).toHaveLength(12);
    expect(books.every((x) => x.status === 'open' || x.status === 'halted')).toBe(true);
  });

  it('refuses a blank reason, an unknown book, and a customer token', async () => {
    const b = ex.book();
    const blank = await halt(b, '   ');
    expect(blank.status).toBe(400);
    expect(blank.json['error']).toMatchObject({ code: 'invalid_request', field: 'reason' });
    const unknown = await admin('POST', '/v1/admin/books/h999/us-west-1/halt', { reason: 'x' });
    expect(unknown.status).toBe(400);
    expect(unknown.json['error']).toMatchObject({ code: 'invalid_request' });
    const customer = await ex.party('not-an-operator');
    const forbidden = await ex.call(
      'POST',
      `/v1/admin/books/${b.gpu_type}/${b.zone}/halt`,
      customer.token,
      { reason: 'x' },
    );
    expect(forbidden.status).toBe(403);
    expect(ex.market.writer(b.gpu_type, b.zone).view.haltedAt).toBeNull();
  });
});

describe('a halted book’s timers wait', () => {
  it('a scheduled sell does not arrive in a halt; it arrives and trades at the resumption', async () => {
    const { b, provider, buyer, clusterId } = await market('timers');
    // A resting limit buy at $2, and a sell at $2 scheduled for 1 h from now.
    const bid = await place(buyer, order(b, 'buy', { limit_price: 2 }));
    expect(bid.status).toBe(200);
    const start = new Date(ex.clock.now() + HOUR_MS).toISOString();
    const sell = await place(
      provider,
      order(b, 'sell', { cluster_id: clusterId, start_time: start }),
    );
    expect(sell.json['status']).toBe('pending');
    expect((await halt(b)).status).toBe(200);

    await ex.tick(2 * HOUR_MS);
    const during = await ex.call(
      'GET',
      `/v1/orders/${sell.json['order_id'] as string}`,
      provider.token,
    );
    expect(during.json['status']).toBe('pending');

    const resumedAt = ex.clock.now();
    expect((await resume(b)).status).toBe(200);
    const filled = await ex.call(
      'GET',
      `/v1/orders/${bid.json['order_id'] as string}`,
      buyer.token,
    );
    expect(filled.json['status']).toBe('filled');
    // The trade happened at the resumption, not in the halt.
    const [fill] = await ex.db.query<{ at_ms: number }>(
      'SELECT at_ms FROM fills WHERE buy_order_id = $1',
      [bid.json['order_id']],
    );
    expect(Number(fill?.at_ms)).toBe(resumedAt);
  });
});

describe('a halt outlives a restart', () => {
  it('the book is loaded halted and still refuses orders; resumed, it trades', async () => {
    const { b, provider, buyer, clusterId } = await market('restart');
    expect((await place(provider, order(b, 'sell', { cluster_id: clusterId }))).status).toBe(200);
    expect((await halt(b)).status).toBe(200);

    await ex.stop();
    const clock = ex.clock.now();
    ex = await testExchange({ db: fresh.db });
    ex.clock.t = clock;

    expect(ex.market.writer(b.gpu_type, b.zone).view.haltedAt).toBe(clock);
    expect(await orderbook(b)).toMatchObject({ status: 'halted' });
    const refused = await place(buyer, order(b, 'buy'));
    expect(refused.status).toBe(409);
    expect(refused.json['error']).toMatchObject({ code: 'market_halted' });

    expect((await resume(b)).status).toBe(200);
    const bought = await place(buyer, order(b, 'buy'));
    expect(bought.json['status']).toBe('filled');
  });
});
