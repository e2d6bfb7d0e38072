import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ledgerTotal } from '../ledger/ledger.js';
import { T0, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let provider: Party;
let buyer: Party;
let other: Party;
let clusterId: string;

beforeAll(async () => {
  ex = await testExchange();
  provider = await ex.account('provider');
  buyer = await ex.account('buyer');
  other = await ex.account('other');
  clusterId = await ex.cluster(provider, 4);
});

afterAll(async () => {
  await ex?.close();
});

const sell = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  side: 'sell',
  gpu_type: 'h100',
  zone: 'us-west-1',
  gpu_count: 16,
  duration_hours: 48,
  limit_price: 2,
  ...over,
});

const buy = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  side: 'buy',
  gpu_type: 'h100',
  zone: 'us-west-1',
  gpu_count: 8,
  duration_hours: 10,
  ...over,
});

async function balance(p: Party): Promise<number> {
  return (await ex.call('GET', '/v1/account', p.token)).json['balance'] as number;
}

describe('POST /v1/orders', () => {
  it('rests a sell on the provider cluster (D6, D31) and fills a market buy at the ask (rule 1, D7)', async () => {
    const s = await ex.call('POST', '/v1/orders', provider.token, sell());
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

    const b = await ex.call('POST', '/v1/orders', buyer.token, buy());
    expect(b.status).toBe(200);
    expect(b.json).toMatchObject({
      status: 'filled',
      order_type: 'market',
      filled_gpus: 8,
      matched_price: 2,
      avg_price: 2,
      // spec: total_cost = gpu_count × duration_hours × price, no fee (D2).
      total_cost: 160,
      filled_at: new Date(T0).toISOString(),
    });
    expect(b.json['lease_id']).toMatch(/^lse_/);
    expect(b.json['matches']).toEqual([
      { matched_at: new Date(T0).toISOString(), gpus: 8, price: 2, lease_id: b.json['lease_id'] },
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
    const r = await ex.call('POST', '/v1/orders', buyer.token, buy({ limit_price: 1.5 }));
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'pending', order_type: 'limit', limit_price: 1.5 });
    expect(r.json['expires_at']).toBe(new Date(T0 + 24 * HOUR_MS).toISOString());
  });

  it('D5: a gpu_count that is not a whole number of nodes is invalid_request, not rounded', async () => {
    for (const gpu_count of [12, 4, 0, -8, 8.5]) {
      const r = await ex.call('POST', '/v1/orders', buyer.token, buy({ gpu_count }));
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ data: null, error: { code: 'invalid_request' } });
    }
  });

  it('D10: a market buy that cannot fill is insufficient_liquidity with missing_gpus; nothing happens', async () => {
    const before = await ex.call('GET', '/v1/orders?limit=100', buyer.token);
    const r = await ex.call('POST', '/v1/orders', buyer.token, buy({ gpu_count: 32 }));
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({
      data: null,
      error: { code: 'insufficient_liquidity', missing_gpus: 24 },
    });
    const after = await ex.call('GET', '/v1/orders?limit=100', buyer.token);
    expect(after.json['total']).toBe(before.json['total']);
  });

  it('D17: a buy that would trade with its own organization is self_trade_prevented', async () => {
    const sibling = await ex.account('provider-ops', { organization: 'provider' });
    const r = await ex.call('POST', '/v1/orders', sibling.token, buy());
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ error: { code: 'self_trade_prevented' } });
  });

  it('D31: a sell may not offer more nodes than the cluster has free', async () => {
    // 4 nodes: 1 leased, 1 still offered by the partial sell; 2 free.
    const r = await ex.call('POST', '/v1/orders', provider.token, sell({ gpu_count: 24 }));
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ error: { code: 'insufficient_capacity' } });
    const ok = await ex.call(
      'POST',
      '/v1/orders',
      provider.token,
      sell({ gpu_count: 16, limit_price: 2.5 }),
    );
    expect(ok.status).toBe(200);
  });

  it('D6, D31: an account without a cluster in that book cannot sell', async () => {
    const r = await ex.call('POST', '/v1/orders', buyer.token, sell());
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { code: 'invalid_request' } });
  });
});

describe('DELETE /v1/orders/{id}', () => {
  it('cancels a pending order with cancel_reason user (D12); again is the same answer', async () => {
    const o = await ex.call('POST', '/v1/orders', buyer.token, buy({ limit_price: 1.2 }));
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
    const b = await ex.call('POST', '/v1/orders', buyer.token, buy());
    expect(b.json['status']).toBe('filled');
    const c = await ex.call('DELETE', `/v1/orders/${b.json['order_id'] as string}`, buyer.token);
    expect(c.status).toBe(409);
    expect(c.json).toMatchObject({ error: { code: 'order_already_filled' } });
  });

  it("D24: another account's order is 404, never 403", async () => {
    const o = await ex.call('POST', '/v1/orders', buyer.token, buy({ limit_price: 1.2 }));
    const id = o.json['order_id'] as string;
    expect((await ex.call('GET', `/v1/orders/${id}`, other.token)).status).toBe(404);
    expect((await ex.call('DELETE', `/v1/orders/${id}`, other.token)).status).toBe(404);
  });
});
