// GET /v1/clusters, GET /v1/clusters/{id} (issue 23): a provider reads its own
// fleet with its own token: its clusters and nodes, the leases sold on them
// without their buyers, its earnings and the payouts operators recorded.
// Another provider's cluster is 404; a token without `provider` is 403.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 5 * 60_000 });
});

afterAll(async () => {
  await ex?.close();
});

describe('a provider’s own fleet (issue 23)', () => {
  it('lists its clusters with nodes, open sells, sold leases without buyers, earnings and payouts', async () => {
    const book = ex.book();
    const provider = await ex.party('own-provider');
    const clusterId = await ex.cluster(provider, 2, book.gpu_type, book.zone);
    const stranger = await ex.party('stranger');
    const strangerCluster = await ex.cluster(stranger, 1, book.gpu_type, book.zone);
    const buyer = await ex.party('own-buyer');
    const sell = await ex.call('POST', '/v1/orders', provider.token, {
      side: 'sell',
      ...book,
      gpu_count: 16,
      duration_hours: 48,
      limit_price: 2,
    });
    expect(sell.status).toBe(200);
    const b = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 10,
    });
    const leaseId = b.json['lease_id'] as string;
    await ex.leaseReady(leaseId, book);
    // 8 GPUs × 10 h × $2 = $160, the provider's 90 %: $144.
    const payout = await ex.call(
      'POST',
      `/v1/admin/accounts/${provider.accountId}/payouts`,
      ADMIN_TOKEN,
      {
        amount: 100,
        reason: 'monthly payout',
      },
    );
    expect(payout.status).toBe(201);

    const r = await ex.call('GET', '/v1/clusters', provider.token);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      account_id: provider.accountId,
      earnings: { all: 144 },
      payouts: { total: 100, count: 1 },
      balance: 44,
    });
    const clusters = r.json['clusters'] as Record<string, unknown>[];
    expect(clusters.map((c) => c['cluster_id'])).toEqual([clusterId]);
    expect(clusters[0]).toMatchObject({
      gpu_type: book.gpu_type,
      zone: book.zone,
      open_sells: 1,
      open_sell_gpus: 8,
      leases_active: 1,
      earnings: { all: 144 },
    });
    expect(clusters[0]?.['nodes']).toHaveLength(2);

    const one = await ex.call('GET', `/v1/clusters/${clusterId}`, provider.token);
    expect(one.status).toBe(200);
    const leases = one.json['leases'] as Record<string, unknown>[];
    expect(leases).toMatchObject([
      {
        lease_id: leaseId,
        gpu_count: 8,
        status: 'active',
        state: 'active',
        rate: 2,
        hourly_cost: 16,
      },
    ]);
    expect(leases[0]?.['nodes']).toHaveLength(1);
    // The buyer is not shown anywhere in the answer.
    expect(one.body).not.toContain(buyer.accountId);
    expect(JSON.stringify(r.json)).not.toContain(buyer.accountId);

    // Another provider's cluster: 404, as if it did not exist (D24).
    const theirs = await ex.call('GET', `/v1/clusters/${strangerCluster}`, provider.token);
    expect(theirs.status).toBe(404);
    expect(theirs.json).toMatchObject({ error: { code: 'not_found' } });
    // A token without the provider scope: 403.
    const reader = await ex.party('reader', { scopes: ['read'] });
    expect((await ex.call('GET', '/v1/clusters', reader.token)).status).toBe(403);
  });
});
