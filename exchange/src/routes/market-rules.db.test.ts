// The D rules as a customer sees them through the API (the matching engine's
// own tests cover each rule in depth; these check the API wiring of each).
//
// Each test trades in a book of its own (ex.book()) with accounts of its own
// (ex.party()); a test exchange has twelve books, so each describe has an
// exchange of its own.

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

/** Gives the enclosing describe an exchange of its own, as `ex` while its tests run. */
function ownExchange(): void {
  let mine: TestExchange | undefined;
  beforeAll(async () => {
    mine = await testExchange();
    ex = mine;
  });
  afterAll(async () => {
    await mine?.close();
  });
}

interface Setting {
  readonly book: Book;
  readonly provider: Party;
  readonly buyer: Party;
  readonly reader: Party;
  readonly post: (who: Party, body: Record<string, unknown>) => ReturnType<TestExchange['call']>;
  readonly sell: (
    price: number,
    gpus?: number,
    extra?: Record<string, unknown>,
  ) => ReturnType<TestExchange['call']>;
  readonly buy: (extra?: Record<string, unknown>) => ReturnType<TestExchange['call']>;
}

/** A book of the test's own, where its provider has a cluster of 8 nodes; a buyer and a reader. */
async function setting(): Promise<Setting> {
  const book = ex.book();
  const provider = await ex.party('provider');
  const buyer = await ex.party('buyer');
  const reader = await ex.party('reader', { scopes: ['read'] });
  await ex.cluster(provider, 8, book.gpu_type, book.zone);
  const post = (who: Party, body: Record<string, unknown>): ReturnType<TestExchange['call']> =>
    ex.call('POST', '/v1/orders', who.token, body);
  return {
    book,
    provider,
    buyer,
    reader,
    post,
    sell: (price, gpus = 8, extra = {}) =>
      post(provider, {
        side: 'sell',
        ...book,
        gpu_count: gpus,
        duration_hours: 48,
        limit_price: price,
        ...extra,
      }),
    buy: (extra = {}) =>
      post(buyer, { side: 'buy', ...book, gpu_count: 8, duration_hours: 4, ...extra }),
  };
}

/** `gpu_type=…&zone=…` of a book. */
const q = (b: Book): string => `gpu_type=${b.gpu_type}&zone=${b.zone}`;

/** Asks at $3 (16 + 8 GPUs) and $3.5 (8): what the book, estimate and trades tests read. */
async function asks(s: Setting): Promise<void> {
  for (const [price, gpus] of [
    [3, 16],
    [3, 8],
    [3.5, 8],
  ] as const) {
    expect((await s.sell(price, gpus)).status).toBe(200);
  }
}

describe('order book, estimate and trades', () => {
  ownExchange();

  it('shows levels, spread and mid; D22 accepts instance_type and echoes it', async () => {
    const s = await setting();
    const { book, reader } = s;
    await asks(s);
    await s.buy({ limit_price: 2.5 });
    const r = await ex.call(
      'GET',
      `/v1/orderbook?instance_type=8x${book.gpu_type}&zone=${book.zone}&depth=1`,
      reader.token,
    );
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      gpu_type: book.gpu_type,
      instance_type: `8x${book.gpu_type}`,
      zone: book.zone,
      timestamp: new Date(ex.clock.now()).toISOString(),
      market_depth: { best_bid: 2.5, best_ask: 3, spread: 0.5, mid_price: 2.75 },
      bids: [{ price: 2.5, gpus: 8, orders: 1 }],
      asks: [{ price: 3, gpus: 24, orders: 2 }],
      last_trade: null,
      volume_24h: 0,
    });
    const bad = await ex.call(
      'GET',
      `/v1/orderbook?instance_type=8xa100&zone=${book.zone}`,
      reader.token,
    );
    expect(bad.status).toBe(400);
    const other = book.gpu_type === 'h100' ? 'b200' : 'h100';
    const both = await ex.call(
      'GET',
      `/v1/orderbook?gpu_type=${other}&instance_type=8x${book.gpu_type}&zone=${book.zone}`,
      reader.token,
    );
    expect(both.status).toBe(400);
    // Whole nodes only (D5).
    const odd = await ex.call(
      'GET',
      `/v1/orderbook?instance_type=12x${book.gpu_type}&zone=${book.zone}`,
      reader.token,
    );
    expect(odd.status).toBe(400);
  });

  it('D24: the Bearer scheme name is case-insensitive (RFC 9110)', async () => {
    const reader = await ex.party('reader', { scopes: ['read'] });
    const r = await ex.app.inject({
      method: 'GET',
      url: '/v1/account',
      headers: { authorization: `bearer ${reader.token}` },
    });
    expect(r.statusCode).toBe(200);
  });

  it('estimates a market buy with cost_breakdown and D22 top-level total_cost; missing_gpus when short', async () => {
    const s = await setting();
    const { book, buyer, provider } = s;
    await asks(s);
    const r = await ex.call(
      'GET',
      `/v1/prices/estimate?${q(book)}&gpu_count=32&duration_hours=2`,
      buyer.token,
    );
    expect(r.json).toMatchObject({
      gpu_type: book.gpu_type,
      gpu_count: 32,
      zone: book.zone,
      duration_hours: 2,
      // 24 GPUs at $3, 8 at $3.5: (72 + 28) / 32 = 3.125 → 3.12 half-even.
      estimated_price: 3.12,
      best_ask: 3,
      worst_fill_price: 3.5,
      total_available: 32,
      sufficient_liquidity: true,
      cost_breakdown: { compute_cost: 200, platform_fee: 20, total_cost: 220 },
      total_cost: 220,
      fills: [
        { price: 3, gpus: 24 },
        { price: 3.5, gpus: 8 },
      ],
    });
    expect(r.json).not.toHaveProperty('missing_gpus');
    const short = await ex.call('GET', `/v1/prices/estimate?${q(book)}&gpu_count=48`, buyer.token);
    expect(short.json).toMatchObject({
      sufficient_liquidity: false,
      missing_gpus: 16,
      duration_hours: 24,
    });
    // D17: the provider's own asks are not liquidity for it.
    const own = await ex.call('GET', `/v1/prices/estimate?${q(book)}&gpu_count=8`, provider.token);
    expect(own.json).toMatchObject({
      total_available: 0,
      sufficient_liquidity: false,
      missing_gpus: 8,
    });
  });

  it('D33: trades are anonymous fills, newest first, paged', async () => {
    const s = await setting();
    const { book, reader } = s;
    await asks(s);
    await s.buy();
    ex.clock.advance(1000);
    const second = ex.clock.now();
    // 16 GPUs from the two $3 asks: two fills, the second of the rest of the first ask.
    await s.buy({ gpu_count: 16 });
    const r = await ex.call('GET', `/v1/trades?${q(book)}&limit=2`, reader.token);
    expect(r.json).toMatchObject({ total: 3, limit: 2, offset: 0 });
    const trades = r.json['trades'] as Record<string, unknown>[];
    expect(trades).toHaveLength(2);
    expect(trades[0]).toEqual({ price: 3, gpus: 8, timestamp: new Date(second).toISOString() });
    expect(Object.keys(trades[0]!).sort()).toEqual(['gpus', 'price', 'timestamp']);
    const ob = await ex.call('GET', `/v1/orderbook?${q(book)}`, reader.token);
    expect(ob.json).toMatchObject({ volume_24h: 24, last_trade: { price: 3, gpus: 8 } });
  });
});

describe('D rules through POST /v1/orders', () => {
  ownExchange();

  it('D15: a limit price beyond ±50 % of the last trade is price_out_of_collar', async () => {
    const s = await setting();
    expect((await s.sell(3)).status).toBe(200);
    expect((await s.buy()).json['status']).toBe('filled');
    // The last trade, $3: limits from $1.50 to $4.50.
    const r = await s.buy({ limit_price: 1.49 });
    expect(r.status).toBe(400);
    // Issue 24: the answer says the reference and the band.
    expect(r.json).toMatchObject({
      error: {
        code: 'price_out_of_collar',
        message:
          'limit_price must lie between $1.50 and $4.50 per GPU-hour: within 50% of the reference price $3.00, the last trade',
        field: 'limit_price',
        reference_price: 3,
        reference: 'last_trade',
        min_price: 1.5,
        max_price: 4.5,
      },
    });
    expect((await s.buy({ limit_price: 1.5 })).status).toBe(200);
  });

  it('D16: an order worth less than $10 is order_value_too_low', async () => {
    const s = await setting();
    // 8 GPUs × 1 h × $1.24 = $9.92.
    const r = await s.buy({ duration_hours: 1, limit_price: 1.24 });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { code: 'order_value_too_low' } });
  });

  it('D9: allow_partial lets a buy fill in part and show status partial', async () => {
    const s = await setting();
    await s.sell(2);
    const r = await s.buy({ gpu_count: 24, limit_price: 2, allow_partial: true });
    expect(r.json).toMatchObject({ status: 'partial', filled_gpus: 8 });
    // Without it the buy is all-or-nothing and rests whole.
    await s.sell(2);
    const aon = await s.buy({ gpu_count: 24, limit_price: 2 });
    expect(aon.json).toMatchObject({ status: 'pending', filled_gpus: 0 });
  });

  it('D12: a limit buy left in the book expires after 24 h with cancel_reason expired', async () => {
    const s = await setting();
    const { buyer } = s;
    const r = await s.buy({ limit_price: 1 });
    await ex.tick(24 * HOUR_MS);
    const g = await ex.call('GET', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(g.json).toMatchObject({
      status: 'cancelled',
      cancel_reason: 'expired',
      cancelled_gpus: 8,
    });
  });

  it('D13: an order with a future start_time waits and enters the book then', async () => {
    const s = await setting();
    const { book, reader } = s;
    const start = ex.clock.now() + 2 * HOUR_MS;
    const r = await s.sell(4, 8, { start_time: new Date(start).toISOString() });
    expect(r.json).toMatchObject({ status: 'pending', start_time: new Date(start).toISOString() });
    const before = await ex.call('GET', `/v1/orderbook?${q(book)}`, reader.token);
    expect(before.json['asks']).toEqual([]);
    await ex.tick(2 * HOUR_MS);
    const after = await ex.call('GET', `/v1/orderbook?${q(book)}`, reader.token);
    expect(after.json['asks']).toEqual([{ price: 4, gpus: 8, orders: 1 }]);
  });

  it('D14: a flexible buy without a limit price takes asks at or below its reference price at once', async () => {
    const s = await setting();
    expect((await s.sell(4)).status).toBe(200);
    const r = await s.buy({ flexible_window_hours: 6, duration_hours: 4 });
    expect(r.json).toMatchObject({ status: 'filled', reference_price: 4, avg_price: 4 });
  });

  it('D14: with no reference price it waits, then buys at market at the end of its window', async () => {
    const s = await setting();
    const { buyer } = s;
    const r = await s.buy({ flexible_window_hours: 6, duration_hours: 4 });
    expect(r.json).toMatchObject({ status: 'pending', flexible_window_hours: 6 });
    expect(r.json).not.toHaveProperty('reference_price');
    await s.sell(3.9);
    await ex.tick(6 * HOUR_MS);
    const g = await ex.call('GET', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(g.json).toMatchObject({ status: 'filled', avg_price: 3.9 });
  });

  it('D6: a sell needs a limit price and cannot be a market order', async () => {
    const { book, provider, post } = await setting();
    const r = await post(provider, {
      side: 'sell',
      ...book,
      gpu_count: 8,
      duration_hours: 4,
    });
    expect(r.status).toBe(400);
    const m = await post(provider, {
      side: 'sell',
      ...book,
      gpu_count: 8,
      duration_hours: 4,
      order_type: 'market',
      limit_price: 3,
    });
    expect(m.status).toBe(400);
  });

  it('D24: a token without the trade scope may read but not place orders (403)', async () => {
    const reader = await ex.party('reader', { scopes: ['read'] });
    const r = await ex.call('POST', '/v1/orders', reader.token, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 4,
    });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: { code: 'forbidden' } });
  });

  it('D3: a buy that would pass the credit limit is insufficient_funds (402)', async () => {
    const { book, post } = await setting();
    const capped = await ex.party('capped', { creditLimit: 100 });
    // 8 GPUs × 4 h × $3 = 96, + 10 % fee = 105.6 > 100.
    const r = await post(capped, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 4,
      limit_price: 3,
    });
    expect(r.status).toBe(402);
    expect(r.json).toMatchObject({ error: { code: 'insufficient_funds' } });
    const ok = await post(capped, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 3,
      limit_price: 3,
    });
    expect(ok.status).toBe(200);
    // The open buy counts against the limit too.
    const second = await post(capped, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 1,
      limit_price: 3,
    });
    expect(second.status).toBe(402);
  });

  it('D21: lists filter by status and side, newest first; limit over 100 is invalid_request', async () => {
    const s = await setting();
    const { buyer } = s;
    const placed: string[] = [];
    for (const limit_price of [1.1, 1.2, 1.3]) {
      placed.push((await s.buy({ limit_price })).json['order_id'] as string);
      ex.clock.advance(1000);
    }
    const [, cancelled] = placed;
    expect((await ex.call('DELETE', `/v1/orders/${cancelled}`, buyer.token)).status).toBe(200);
    const r = await ex.call('GET', '/v1/orders?status=cancelled&side=buy', buyer.token);
    expect(r.status).toBe(200);
    expect(r.json['orders']).toEqual([
      expect.objectContaining({ order_id: cancelled, status: 'cancelled', side: 'buy' }),
    ]);
    expect((await ex.call('GET', '/v1/orders?side=sell', buyer.token)).json['total']).toBe(0);
    const all = await ex.call('GET', '/v1/orders?limit=100', buyer.token);
    expect((all.json['orders'] as { order_id: string }[]).map((o) => o.order_id)).toEqual(
      [...placed].reverse(),
    );
    expect((await ex.call('GET', '/v1/orders?limit=101', buyer.token)).status).toBe(400);
  });
});

describe('D18: order creations and cancellations have their own limits', () => {
  it('counts POST /v1/orders as creations and DELETE as cancellations', async () => {
    const limited = await testExchange({
      rateLimits: { query: 100, create: 2, cancel: 1 },
    });
    try {
      const who = await limited.account('rl');
      const body = {
        side: 'buy',
        gpu_type: 'h100',
        zone: 'us-west-1',
        gpu_count: 8,
        duration_hours: 10,
        limit_price: 2,
      };
      const a = await limited.call('POST', '/v1/orders', who.token, body);
      expect(a.headers['x-ratelimit-limit']).toBe('2');
      await limited.call('POST', '/v1/orders', who.token, body);
      const third = await limited.call('POST', '/v1/orders', who.token, body);
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toBeDefined();
      const id = a.json['order_id'] as string;
      expect((await limited.call('DELETE', `/v1/orders/${id}`, who.token)).status).toBe(200);
      expect((await limited.call('DELETE', `/v1/orders/${id}`, who.token)).status).toBe(429);
      // Queries are counted apart.
      expect((await limited.call('GET', '/v1/orders', who.token)).status).toBe(200);
    } finally {
      await limited.close();
    }
  }, 30_000);
});
