import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ledgerTotal } from '../ledger/ledger.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

/** A test's own book, with a provider (a cluster of 4 nodes there) and a buyer of its own. */
async function market(): Promise<{
  book: Book;
  provider: Party & { name: string };
  buyer: Party;
  clusterId: string;
}> {
  const book = ex.book();
  const provider = await ex.party('provider');
  const buyer = await ex.party('buyer');
  const clusterId = await ex.cluster(provider, 4, book.gpu_type, book.zone);
  return { book, provider, buyer, clusterId };
}

const sell = (book: Book, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  side: 'sell',
  ...book,
  gpu_count: 16,
  duration_hours: 48,
  limit_price: 2,
  ...over,
});

const buy = (book: Book, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  side: 'buy',
  ...book,
  gpu_count: 8,
  duration_hours: 10,
  ...over,
});

async function balance(p: Party): Promise<number> {
  return (await ex.call('GET', '/v1/account', p.token)).json['balance'] as number;
}

describe('POST /v1/orders', () => {
  it('rests a sell on the provider cluster (D6, D31) and fills a market buy at the ask (rule 1, D7)', async () => {
    const { book, provider, buyer, clusterId } = await market();
    const now = ex.clock.now();
    const s = await ex.call('POST', '/v1/orders', provider.token, sell(book));
    expect(s.status).toBe(200);
    expect(s.json).toMatchObject({
      side: 'sell',
      order_type: 'limit',
      status: 'pending',
      limit_price: 2,
      filled_gpus: 0,
      cluster_id: clusterId,
    });
    expect(s.json['order_id']).toMatch(/^ord_/);

    const b = await ex.call('POST', '/v1/orders', buyer.token, buy(book));
    expect(b.status).toBe(200);
    expect(b.json).toMatchObject({
      status: 'filled',
      order_type: 'market',
      filled_gpus: 8,
      matched_price: 2,
      avg_price: 2,
      // spec: total_cost = gpu_count × duration_hours × price, no fee (D2).
      total_cost: 160,
      filled_at: new Date(now).toISOString(),
    });
    expect(b.json['lease_id']).toMatch(/^lse_/);
    expect(b.json['matches']).toEqual([
      { matched_at: new Date(now).toISOString(), gpus: 8, price: 2, lease_id: b.json['lease_id'] },
    ]);

    // The sell is now partial: 8 of 16 GPUs taken.
    const after = await ex.call(
      'GET',
      `/v1/orders/${s.json['order_id'] as string}`,
      provider.token,
    );
    expect(after.json).toMatchObject({ status: 'partial', filled_gpus: 8 });

    // D2/D3: buyer pays 160 + 16 fee, provider gets 160 − 16, platform 32; the ledger sums to 0.
    expect(await balance(buyer)).toBe(-176);
    expect(await balance(provider)).toBe(144);
    expect(await ledgerTotal(ex.db)).toBe(0);
  });

  it('D12: a limit buy that does not fill rests with expires_at 24 h after creation', async () => {
    const { book, buyer } = await market();
    const now = ex.clock.now();
    const r = await ex.call('POST', '/v1/orders', buyer.token, buy(book, { limit_price: 1.5 }));
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'pending', order_type: 'limit', limit_price: 1.5 });
    expect(r.json['expires_at']).toBe(new Date(now + 24 * HOUR_MS).toISOString());
  });

  it('D5: a gpu_count that is not a whole number of nodes is invalid_request, not rounded', async () => {
    const { book, buyer } = await market();
    for (const gpu_count of [12, 4, 0, -8, 8.5]) {
      const r = await ex.call('POST', '/v1/orders', buyer.token, buy(book, { gpu_count }));
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ data: null, error: { code: 'invalid_request' } });
    }
  });

  it('D10: a market buy that cannot fill is insufficient_liquidity with missing_gpus; nothing happens', async () => {
    const { book, provider, buyer } = await market();
    expect(
      (await ex.call('POST', '/v1/orders', provider.token, sell(book, { gpu_count: 8 }))).status,
    ).toBe(200);
    const before = await ex.call('GET', '/v1/orders?limit=100', buyer.token);
    const r = await ex.call('POST', '/v1/orders', buyer.token, buy(book, { gpu_count: 32 }));
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({
      data: null,
      error: { code: 'insufficient_liquidity', missing_gpus: 24 },
    });
    const after = await ex.call('GET', '/v1/orders?limit=100', buyer.token);
    expect(after.json['total']).toBe(before.json['total']);
    expect(await balance(buyer)).toBe(0);
  });

  it('D17: a buy that would trade with its own organization is self_trade_prevented', async () => {
    const { book, provider } = await market();
    expect((await ex.call('POST', '/v1/orders', provider.token, sell(book))).status).toBe(200);
    const sibling = await ex.account(`${provider.name}-ops`, { organization: provider.name });
    const r = await ex.call('POST', '/v1/orders', sibling.token, buy(book));
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ error: { code: 'self_trade_prevented' } });
  });

  it('D31: a sell may not offer more nodes than the cluster has free', async () => {
    const { book, provider, buyer } = await market();
    expect((await ex.call('POST', '/v1/orders', provider.token, sell(book))).status).toBe(200);
    expect((await ex.call('POST', '/v1/orders', buyer.token, buy(book))).json['status']).toBe(
      'filled',
    );
    // 4 nodes: 1 leased, 1 still offered by the partial sell; 2 free.
    const r = await ex.call('POST', '/v1/orders', provider.token, sell(book, { gpu_count: 24 }));
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ error: { code: 'insufficient_capacity' } });
    const ok = await ex.call(
      'POST',
      '/v1/orders',
      provider.token,
      sell(book, { gpu_count: 16, limit_price: 2.5 }),
    );
    expect(ok.status).toBe(200);
  });

  it('D6, D31: an account without a cluster in that book cannot sell', async () => {
    const { book, buyer } = await market();
    const r = await ex.call('POST', '/v1/orders', buyer.token, sell(book));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { code: 'invalid_request' } });
  });
});

describe('DELETE /v1/orders/{id}', () => {
  it('cancels a pending order with cancel_reason user (D12); again is the same answer', async () => {
    const { book, buyer } = await market();
    const o = await ex.call('POST', '/v1/orders', buyer.token, buy(book, { limit_price: 1.2 }));
    const id = o.json['order_id'] as string;
    const c = await ex.call('DELETE', `/v1/orders/${id}`, buyer.token);
    expect(c.status).toBe(200);
    expect(c.json).toMatchObject({ order_id: id, status: 'cancelled', cancelled_gpus: 8 });
    const again = await ex.call('DELETE', `/v1/orders/${id}`, buyer.token);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ order_id: id, status: 'cancelled', cancelled_gpus: 8 });
    const g = await ex.call('GET', `/v1/orders/${id}`, buyer.token);
    expect(g.json).toMatchObject({ status: 'cancelled', cancel_reason: 'user' });
  });

  it('refuses a filled order with order_already_filled (409)', async () => {
    const { book, provider, buyer } = await market();
    expect((await ex.call('POST', '/v1/orders', provider.token, sell(book))).status).toBe(200);
    const b = await ex.call('POST', '/v1/orders', buyer.token, buy(book));
    expect(b.json['status']).toBe('filled');
    const c = await ex.call('DELETE', `/v1/orders/${b.json['order_id'] as string}`, buyer.token);
    expect(c.status).toBe(409);
    expect(c.json).toMatchObject({ error: { code: 'order_already_filled' } });
  });

  it("D24: another account's order is 404, never 403", async () => {
    const { book, buyer } = await market();
    const other = await ex.party('other');
    const o = await ex.call('POST', '/v1/orders', buyer.token, buy(book, { limit_price: 1.2 }));
    const id = o.json['order_id'] as string;
    expect((await ex.call('GET', `/v1/orders/${id}`, other.token)).status).toBe(404);
    expect((await ex.call('DELETE', `/v1/orders/${id}`, other.token)).status).toBe(404);
  });
});
