// D18 with D23 (issue 24): an idempotent replay is not an order creation.
// Within the budget it gives its slot back; past the budget it still gets
// its replay, not a 429, so a client retrying after a timeout learns what
// happened. A new request past the budget is refused and claims nothing.
// A request refused for validation still counts (D18: "valid or not").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange({ rateLimits: { query: 1_000, create: 2, cancel: 1_000 } });
});

afterAll(async () => {
  await ex?.close();
});

const order = (price: number): Record<string, unknown> => ({
  side: 'buy',
  gpu_type: 'h100',
  zone: 'us-west-1',
  gpu_count: 8,
  duration_hours: 10,
  limit_price: price,
});

const post = (p: Party, body: Record<string, unknown>, key?: string) =>
  ex.call('POST', '/v1/orders', p.token, body, key === undefined ? {} : { 'idempotency-key': key });

describe('D18 and D23: replays do not use up the order budget', () => {
  it('a replay within the budget gives its slot back', async () => {
    const buyer = await ex.party('buyer');
    const first = await post(buyer, order(1.1), 'a');
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    for (let i = 0; i < 3; i++) {
      const again = await post(buyer, order(1.1), 'a');
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
    }
    // The budget of two still has its second slot.
    expect((await post(buyer, order(1.2), 'b')).status).toBe(200);
    expect((await post(buyer, order(1.3), 'c')).status).toBe(429);
  });

  it('past the budget a retry still gets its replay; a new key is 429 and claims nothing', async () => {
    const buyer = await ex.party('buyer');
    const first = await post(buyer, order(1.1), 'x');
    expect((await post(buyer, order(1.2))).status).toBe(200);
    const retry = await post(buyer, order(1.1), 'x');
    expect(retry.status).toBe(200);
    expect(retry.body).toBe(first.body);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    // Another body under the replayed key is not a replay: refused like any new request.
    expect((await post(buyer, order(9), 'x')).status).toBe(429);
    const refused = await post(buyer, order(1.4), 'y');
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ error: { code: 'rate_limited' } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const [claim] = await ex.db.query(
      'SELECT 1 FROM idempotency_keys WHERE account_id = $1 AND key = $2',
      [buyer.accountId, 'y'],
    );
    expect(claim).toBeUndefined();
    expect((await ex.call('GET', '/v1/orders', buyer.token)).json['total']).toBe(2);
  });

  it('a request refused for validation counts (valid or not)', async () => {
    const buyer = await ex.party('buyer');
    const bad = await post(buyer, { ...order(1), gpu_count: 3 }, 'bad');
    expect(bad.status).toBe(400);
    expect(bad.headers['x-ratelimit-remaining']).toBe('1');
    expect((await post(buyer, order(1))).status).toBe(200);
    expect((await post(buyer, order(1))).status).toBe(429);
  });
});
