// DELETE /v1/orders/{id} with a `provider` token (issue 23): a provider
// withdraws its own sells with the scopes the README gives it (`provider` +
// `read`), without `trade`. Such a token cancels only the sells of the
// account's clusters: its buys and resales are 403 forbidden and stay open;
// another account's order is 404 (D24); a `trade` token cancels anything of
// its own, as before; a token with neither scope is 403.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

/** Another token of `p`'s account, with these scopes (issued by an operator). */
async function tokenOf(p: Party, scopes: string[]): Promise<string> {
  const r = await ex.call('POST', `/v1/admin/accounts/${p.accountId}/tokens`, ADMIN_TOKEN, {
    scopes,
    reason: 'a token of its own',
  });
  expect(r.status, r.body).toBe(201);
  return r.json['token'] as string;
}

describe('cancelling with a provider token', () => {
  it('cancels the account’s sells, not its buys; not another account’s orders', async () => {
    const book = ex.book();
    // One account that trades and provides, with a provider-only token besides.
    const full = await ex.party('both');
    const clusterId = await ex.cluster(full, 1, book.gpu_type, book.zone);
    const sell = await ex.call('POST', '/v1/orders', full.token, {
      side: 'sell',
      ...book,
      gpu_count: 8,
      duration_hours: 24,
      limit_price: 5,
      cluster_id: clusterId,
    });
    expect(sell.status, sell.body).toBe(200);
    const buy = await ex.call('POST', '/v1/orders', full.token, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 24,
      limit_price: 1,
    });
    expect(buy.status, buy.body).toBe(200);
    const provider = await tokenOf(full, ['provider', 'read']);

    const buyId = buy.json['order_id'] as string;
    const refused = await ex.call('DELETE', `/v1/orders/${buyId}`, provider);
    expect(refused.status).toBe(403);
    expect(refused.json['error']).toMatchObject({ code: 'forbidden' });
    expect((await ex.call('GET', `/v1/orders/${buyId}`, provider)).json['status']).toBe('pending');

    const sellId = sell.json['order_id'] as string;
    const cancelled = await ex.call('DELETE', `/v1/orders/${sellId}`, provider);
    expect(cancelled.status, cancelled.body).toBe(200);
    expect(cancelled.json).toMatchObject({ order_id: sellId, status: 'cancelled' });

    // Another account's sell: 404, as if it did not exist.
    const other = await ex.party('other');
    const otherCluster = await ex.cluster(other, 1, book.gpu_type, book.zone);
    const theirs = await ex.call('POST', '/v1/orders', other.token, {
      side: 'sell',
      ...book,
      gpu_count: 8,
      duration_hours: 24,
      limit_price: 6,
      cluster_id: otherCluster,
    });
    const stranger = await ex.call(
      'DELETE',
      `/v1/orders/${theirs.json['order_id'] as string}`,
      provider,
    );
    expect(stranger.status).toBe(404);
    // A token with neither trade nor provider: 403.
    const reader = await tokenOf(full, ['read']);
    expect((await ex.call('DELETE', `/v1/orders/${buyId}`, reader)).status).toBe(403);
    // The trade token cancels the buy, as ever.
    expect((await ex.call('DELETE', `/v1/orders/${buyId}`, full.token)).status).toBe(200);
  });

  it('does not cancel a resale of a lease: that is the lease holder’s trade', async () => {
    const { book, buyer, leaseId } = await ex.marketLease('resale-cancel');
    await ex.leaseReady(leaseId, book);
    const resale = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 3,
    });
    expect(resale.status, resale.body).toBe(200);
    const id = resale.json['order_id'] as string;
    const provider = await tokenOf(buyer, ['provider']);
    const r = await ex.call('DELETE', `/v1/orders/${id}`, provider);
    expect(r.status).toBe(403);
    expect((await ex.call('DELETE', `/v1/orders/${id}`, buyer.token)).status).toBe(200);
  });
});
