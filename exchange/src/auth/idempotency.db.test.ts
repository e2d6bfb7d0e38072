import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
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

/** Keys and orders are per account: each test's buyer is its own. */
const newBuyer = (): Promise<Party> => ex.party('buyer');

async function orderCount(p: Party): Promise<number> {
  return (await ex.call('GET', '/v1/orders', p.token)).json['total'] as number;
}

describe('D23: Idempotency-Key', () => {
  it('replays the first answer for the same key and body, and places one order', async () => {
    const buyer = await newBuyer();
    const headers = { 'idempotency-key': 'k-1' };
    const first = await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers);
    expect(first.status).toBe(200);
    const again = await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers);
    expect(again.status).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await orderCount(buyer)).toBe(1);
  });

  it('the same body with its keys in another order is the same request', async () => {
    const buyer = await newBuyer();
    const headers = { 'idempotency-key': 'k-order' };
    const body = order(1.4);
    const first = await ex.call('POST', '/v1/orders', buyer.token, body, headers);
    const reversed = Object.fromEntries(Object.entries(body).reverse());
    const again = await ex.call('POST', '/v1/orders', buyer.token, reversed, headers);
    expect(again.body).toBe(first.body);
  });

  it('the same key with another body is idempotency_key_reused (422)', async () => {
    const buyer = await newBuyer();
    const headers = { 'idempotency-key': 'k-2' };
    await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers);
    const r = await ex.call('POST', '/v1/orders', buyer.token, order(1.6), headers);
    expect(r.status).toBe(422);
    expect(r.json).toMatchObject({ data: null, error: { code: 'idempotency_key_reused' } });
  });

  it('while the first request runs, the key is idempotency_key_in_progress (409)', async () => {
    const buyer = await newBuyer();
    // A claim whose answer is not recorded yet.
    const headers = { 'idempotency-key': 'k-running' };
    expect((await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers)).status).toBe(
      200,
    );
    await ex.db.query(
      'UPDATE idempotency_keys SET status_code = NULL, response_body = NULL WHERE account_id = $1 AND key = $2',
      [buyer.accountId, 'k-running'],
    );
    const r = await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers);
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ error: { code: 'idempotency_key_in_progress' } });
  });

  it('keys belong to one account: another account may use the same key', async () => {
    const buyer = await newBuyer();
    const headers = { 'idempotency-key': 'shared-key' };
    const a = await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers);
    const other = await ex.party('other');
    const b = await ex.call('POST', '/v1/orders', other.token, order(1.5), headers);
    expect(b.status).toBe(200);
    expect(b.json['order_id']).not.toBe(a.json['order_id']);
  });

  it('an error answer is replayed too (the request is not run again)', async () => {
    const buyer = await newBuyer();
    const headers = { 'idempotency-key': 'k-bad' };
    const first = await ex.call(
      'POST',
      '/v1/orders',
      buyer.token,
      { ...order(1.5), gpu_count: 8, duration_hours: 1, limit_price: 0.1 },
      headers,
    );
    expect(first.status).toBe(400);
    const again = await ex.call(
      'POST',
      '/v1/orders',
      buyer.token,
      { ...order(1.5), gpu_count: 8, duration_hours: 1, limit_price: 0.1 },
      headers,
    );
    expect(again.status).toBe(400);
    expect(again.body).toBe(first.body);
  });

  it('DELETE with a key replays the cancellation', async () => {
    const buyer = await newBuyer();
    const o = await ex.call('POST', '/v1/orders', buyer.token, order(1.3));
    const url = `/v1/orders/${o.json['order_id'] as string}`;
    const headers = { 'idempotency-key': 'k-del' };
    const first = await ex.call('DELETE', url, buyer.token, undefined, headers);
    const again = await ex.call('DELETE', url, buyer.token, undefined, headers);
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('a key is kept 24 h; after that it may be used for a new request', async () => {
    const buyer = await newBuyer();
    const headers = { 'idempotency-key': 'k-old' };
    await ex.call('POST', '/v1/orders', buyer.token, order(1.5), headers);
    ex.clock.advance(24 * HOUR_MS);
    const r = await ex.call('POST', '/v1/orders', buyer.token, order(1.6), headers);
    expect(r.status).toBe(200);
    expect(r.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a malformed key is invalid_request', async () => {
    const buyer = await newBuyer();
    const r = await ex.call('POST', '/v1/orders', buyer.token, order(1.5), {
      'idempotency-key': 'x'.repeat(256),
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { code: 'invalid_request' } });
  });
});
