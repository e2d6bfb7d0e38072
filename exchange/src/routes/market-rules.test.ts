// The D rules as a customer sees them through the API (the matching engine's
// own tests cover each rule in depth; these check the API wiring of each).

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { T0, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let provider: Party;
let buyer: Party;
let reader: Party;

beforeAll(async () => {
  ex = await testExchange();
  provider = await ex.account('provider');
  buyer = await ex.account('buyer');
  reader = await ex.account('reader', { scopes: ['read'] });
  for (const zone of ['us-west-1', 'us-east-1', 'eu-west-1'])
    await ex.cluster(provider, 8, 'b200', zone);
});

afterAll(async () => {
  await ex?.close();
});

const post = (who: Party, body: Record<string, unknown>) =>
  ex.call('POST', '/v1/orders', who.token, body);
const sell = (zone: string, price: number, gpus = 8, extra = {}) =>
  post(provider, {
    side: 'sell',
    gpu_type: 'b200',
    zone,
    gpu_count: gpus,
    duration_hours: 48,
    limit_price: price,
    ...extra,
  });
const buy = (zone: string, extra: Record<string, unknown> = {}) =>
  post(buyer, { side: 'buy', gpu_type: 'b200', zone, gpu_count: 8, duration_hours: 4, ...extra });

describe('order book, estimate and trades', () => {
  it('shows levels, spread and mid; D22 accepts instance_type and echoes it', async () => {
    await sell('us-west-1', 3, 16);
    await sell('us-west-1', 3);
    await sell('us-west-1', 3.5);
    await buy('us-west-1', { limit_price: 2.5 });
    const r = await ex.call(
      'GET',
      '/v1/orderbook?instance_type=8xb200&zone=us-west-1&depth=1',
      reader.token,
    );
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      gpu_type: 'b200',
      instance_type: '8xb200',
      zone: 'us-west-1',
      timestamp: new Date(T0).toISOString(),
      market_depth: { best_bid: 2.5, best_ask: 3, spread: 0.5, mid_price: 2.75 },
      bids: [{ price: 2.5, gpus: 8, orders: 1 }],
      asks: [{ price: 3, gpus: 24, orders: 2 }],
      last_trade: null,
      volume_24h: 0,
    });
    const bad = await ex.call(
      'GET',
      '/v1/orderbook?instance_type=8xa100&zone=us-west-1',
      reader.token,
    );
    expect(bad.status).toBe(400);
    const both = await ex.call(
      'GET',
      '/v1/orderbook?gpu_type=h100&instance_type=8xb200&zone=us-west-1',
      reader.token,
    );
    expect(both.status).toBe(400);
    // Whole nodes only (D5).
    const odd = await ex.call(
      'GET',
      '/v1/orderbook?instance_type=12xb200&zone=us-west-1',
      reader.token,
    );
    expect(odd.status).toBe(400);
  });

  it('D24: the Bearer scheme name is case-insensitive (RFC 9110)', async () => {
    const r = await ex.app.inject({
      method: 'GET',
      url: '/v1/account',
      headers: { authorization: `bearer ${reader.token}` },
    });
    expect(r.statusCode).toBe(200);
  });

  it('estimates a market buy with cost_breakdown and D22 top-level total_cost; missing_gpus when short', async () => {
    const r = await ex.call(
      'GET',
      '/v1/prices/estimate?gpu_type=b200&zone=us-west-1&gpu_count=32&duration_hours=2',
      buyer.token,
    );
    expect(r.json).toMatchObject({
      gpu_type: 'b200',
      gpu_count: 32,
      zone: 'us-west-1',
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
    const short = await ex.call(
      'GET',
      '/v1/prices/estimate?gpu_type=b200&zone=us-west-1&gpu_count=48',
      buyer.token,
    );
    expect(short.json).toMatchObject({
      sufficient_liquidity: false,
      missing_gpus: 16,
      duration_hours: 24,
    });
    // D17: the provider's own asks are not liquidity for it.
    const own = await ex.call(
      'GET',
      '/v1/prices/estimate?gpu_type=b200&zone=us-west-1&gpu_count=8',
      provider.token,
    );
    expect(own.json).toMatchObject({
      total_available: 0,
      sufficient_liquidity: false,
      missing_gpus: 8,
    });
  });

  it('D33: trades are anonymous fills, newest first, paged', async () => {
    await buy('us-west-1');
    ex.clock.advance(1000);
    await buy('us-west-1', { gpu_count: 16 });
    const r = await ex.call('GET', '/v1/trades?gpu_type=b200&zone=us-west-1&limit=2', reader.token);
    expect(r.json).toMatchObject({ total: 3, limit: 2, offset: 0 });
    const trades = r.json['trades'] as Record<string, unknown>[];
    expect(trades).toHaveLength(2);
    expect(trades[0]).toEqual({ price: 3, gpus: 8, timestamp: new Date(T0 + 1000).toISOString() });
    expect(Object.keys(trades[0]!).sort()).toEqual(['gpus', 'price', 'timestamp']);
    const book = await ex.call('GET', '/v1/orderbook?gpu_type=b200&zone=us-west-1', reader.token);
    expect(book.json).toMatchObject({ volume_24h: 24, last_trade: { price: 3, gpus: 8 } });
  });
});

describe('D rules through POST /v1/orders', () => {
  it('D15: a limit price beyond ±50 % of the last trade is price_out_of_collar', async () => {
    const r = await buy('us-west-1', { limit_price: 1.49 });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { code: 'price_out_of_collar' } });
    expect((await buy('us-west-1', { limit_price: 1.5 })).status).toBe(200);
  });

  it('D16: an order worth less than $10 is order_value_too_low', async () => {
    const r = await post(buyer, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'us-east-1',
      gpu_count: 8,
      duration_hours: 1,
      limit_price: 1.24,
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { code: 'order_value_too_low' } });
  });

  it('D9: allow_partial lets a buy fill in part and show status partial', async () => {
    await sell('us-east-1', 2);
    const r = await buy('us-east-1', { gpu_count: 24, limit_price: 2, allow_partial: true });
    expect(r.json).toMatchObject({ status: 'partial', filled_gpus: 8 });
    // Without it the buy is all-or-nothing and rests whole.
    await sell('us-east-1', 2);
    const aon = await buy('us-east-1', { gpu_count: 24, limit_price: 2 });
    expect(aon.json).toMatchObject({ status: 'pending', filled_gpus: 0 });
  });

  it('D12: a limit buy left in the book expires after 24 h with cancel_reason expired', async () => {
    const r = await buy('eu-west-1', { limit_price: 1 });
    await ex.tick(24 * HOUR_MS);
    const g = await ex.call('GET', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(g.json).toMatchObject({
      status: 'cancelled',
      cancel_reason: 'expired',
      cancelled_gpus: 8,
    });
  });

  it('D13: an order with a future start_time waits and enters the book then', async () => {
    const start = ex.clock.now() + 2 * HOUR_MS;
    const r = await sell('eu-west-1', 4, 8, { start_time: new Date(start).toISOString() });
    expect(r.json).toMatchObject({ status: 'pending', start_time: new Date(start).toISOString() });
    const before = await ex.call('GET', '/v1/orderbook?gpu_type=b200&zone=eu-west-1', reader.token);
    expect(before.json['asks']).toEqual([]);
    await ex.tick(2 * HOUR_MS);
    const after = await ex.call('GET', '/v1/orderbook?gpu_type=b200&zone=eu-west-1', reader.token);
    expect(after.json['asks']).toEqual([{ price: 4, gpus: 8, orders: 1 }]);
  });

  it('D14: a flexible buy without a limit price takes asks at or below its reference price at once', async () => {
    const r = await buy('eu-west-1', { flexible_window_hours: 6, duration_hours: 4 });
    expect(r.json).toMatchObject({ status: 'filled', reference_price: 4, avg_price: 4 });
  });

  it('D14: with no reference price it waits, then buys at market at the end of its window', async () => {
    const r = await buy('eu-west-1', { flexible_window_hours: 6, duration_hours: 4 });
    expect(r.json).toMatchObject({ status: 'pending', flexible_window_hours: 6 });
    expect(r.json).not.toHaveProperty('reference_price');
    await sell('eu-west-1', 3.9);
    await ex.tick(6 * HOUR_MS);
    const g = await ex.call('GET', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(g.json).toMatchObject({ status: 'filled', avg_price: 3.9 });
  });

  it('D6: a sell needs a limit price and cannot be a market order', async () => {
    const r = await post(provider, {
      side: 'sell',
      gpu_type: 'b200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 4,
    });
    expect(r.status).toBe(400);
    const m = await post(provider, {
      side: 'sell',
      gpu_type: 'b200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 4,
      order_type: 'market',
      limit_price: 3,
    });
    expect(m.status).toBe(400);
  });

  it('D24: a token without the trade scope may read but not place orders (403)', async () => {
    const r = await post(reader, {
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
    const capped = await ex.account('capped', { creditLimit: 100 });
    // 8 GPUs × 4 h × $3 = 96, + 10 % fee = 105.6 > 100.
    const r = await post(capped, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 4,
      limit_price: 3,
    });
    expect(r.status).toBe(402);
    expect(r.json).toMatchObject({ error: { code: 'insufficient_funds' } });
    const ok = await post(capped, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 3,
      limit_price: 3,
    });
    expect(ok.status).toBe(200);
    // The open buy counts against the limit too.
    const second = await post(capped, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 1,
      limit_price: 3,
    });
    expect(second.status).toBe(402);
  });

  it('D21: lists filter by status and side, newest first; limit over 100 is invalid_request', async () => {
    const r = await ex.call('GET', '/v1/orders?status=cancelled&side=buy', buyer.token);
    expect(r.status).toBe(200);
    for (const o of r.json['orders'] as Record<string, unknown>[]) {
      expect(o).toMatchObject({ status: 'cancelled', side: 'buy' });
    }
    const all = await ex.call('GET', '/v1/orders?limit=100', buyer.token);
    const created = (all.json['orders'] as { created_at: string }[]).map((o) => o.created_at);
    expect([...created].sort().reverse()).toEqual(created);
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
