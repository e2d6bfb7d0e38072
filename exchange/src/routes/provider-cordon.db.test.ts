// POST /v1/clusters/{id}/cordon and /uncordon (issue 23): a provider takes
// its own cluster off the market with its own token (scope `provider`):
// the operators' cordon (market/cordon.ts) held as the provider's. Its open
// sells and the resales of leases on it are withdrawn (cancel_reason
// cluster_cordoned), no new sell is taken, live leases run out; its uncordon
// lifts only its own cordon, never an operator's (409 cluster_cordoned); an
// operator's cordon takes a provider's over. Another account's cluster is
// 404 (D24). Each change is in the audit log with the provider as actor.

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 1000 * HOUR_MS });
});

afterAll(async () => {
  await ex?.close();
});

const sell = (p: Party, book: Book, clusterId: string, price = 2) =>
  ex.call('POST', '/v1/orders', p.token, {
    side: 'sell',
    ...book,
    gpu_count: 8,
    duration_hours: 24,
    limit_price: price,
    cluster_id: clusterId,
  });

async function auditOf(clusterId: string): Promise<Record<string, unknown>[]> {
  const r = await ex.call(
    'GET',
    `/v1/admin/audit?target_type=cluster&target_id=${clusterId}`,
    ADMIN_TOKEN,
  );
  expect(r.status).toBe(200);
  // The cordons only (ex.cluster's creation is in the log too).
  return (r.json['entries'] as Record<string, unknown>[]).filter(
    (e) => e['action'] !== 'cluster.create',
  );
}

describe('a provider cordons its own cluster (issue 23)', () => {
  it('withdraws its sells, refuses new ones, keeps the lease, shows the cordon, audit-logs the provider', async () => {
    const { book, provider, buyer, clusterId, leaseId } = await ex.marketLease('own-cordon');
    const spare = await ex.cluster(provider, 1, book.gpu_type, book.zone);
    // A second node on the lease's cluster would be simpler, but marketLease
    // makes one node: the spare cluster's sell shows a cordon is per cluster.
    const kept = await sell(provider, book, spare, 2.5);
    expect(kept.status).toBe(200);
    await ex.leaseReady(leaseId, book);
    const resale = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 3,
    });
    expect(resale.status).toBe(200);
    ex.clock.advance(HOUR_MS);

    // A provider-scope token (with read), as the README gives a provider.
    const r = await ex.call('POST', `/v1/clusters/${clusterId}/cordon`, provider.token, {
      reason: 'disk replacement',
    });
    expect(r.status, r.body).toBe(200);
    const at = new Date(ex.clock.now()).toISOString();
    expect(r.json).toMatchObject({
      changed: true,
      cancelled_order_ids: [resale.json['order_id']],
      cluster: { cluster_id: clusterId, cordoned_at: at, cordoned_by: 'provider' },
    });
    const order = await ex.call(
      'GET',
      `/v1/orders/${resale.json['order_id'] as string}`,
      buyer.token,
    );
    expect(order.json).toMatchObject({ status: 'cancelled', cancel_reason: 'cluster_cordoned' });
    // The lease runs on; the other cluster's sell stays.
    expect((await ex.call('GET', `/v1/leases/${leaseId}`, buyer.token)).json['status']).toBe(
      'active',
    );
    const spareSell = await ex.call(
      'GET',
      `/v1/orders/${kept.json['order_id'] as string}`,
      provider.token,
    );
    expect(spareSell.json['status']).toBe('pending');
    // GET /v1/clusters/{id} shows it cordoned, by the provider.
    const own = await ex.call('GET', `/v1/clusters/${clusterId}`, provider.token);
    expect(own.json['cluster']).toMatchObject({ cordoned_at: at, cordoned_by: 'provider' });
    // No new resale (nor sell) on it.
    const again = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 3,
    });
    expect(again.status).toBe(409);
    expect(again.json['error']).toMatchObject({ code: 'cluster_cordoned' });
    expect(String((again.json['error'] as Record<string, unknown>)['message'])).toContain(
      'by its provider',
    );
    // Cordoning again changes nothing and records nothing.
    const twice = await ex.call('POST', `/v1/clusters/${clusterId}/cordon`, provider.token);
    expect(twice.json).toMatchObject({ changed: false, cancelled_order_ids: [] });

    // Uncordoned by the provider, without a body: sells are taken again.
    const lifted = await ex.call('POST', `/v1/clusters/${clusterId}/uncordon`, provider.token);
    expect(lifted.status, lifted.body).toBe(200);
    expect(lifted.json).toMatchObject({
      changed: true,
      cluster: { cordoned_at: null, cordoned_by: null },
    });
    const back = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 3,
    });
    expect(back.status, back.body).toBe(200);

    const audit = await auditOf(clusterId);
    expect(audit).toMatchObject([
      {
        actor: provider.accountId,
        action: 'cluster.uncordon',
        reason: null,
        before: { cordoned_at: at, cordoned_by: 'provider' },
        after: { cordoned_at: null, cordoned_by: null },
      },
      {
        actor: provider.accountId,
        action: 'cluster.cordon',
        reason: 'disk replacement',
        before: { cordoned_at: null, cordoned_by: null },
        after: { cordoned_at: at, cordoned_by: 'provider' },
      },
    ]);
    expect(audit[0]?.['actor_token_id']).toEqual(expect.stringMatching(/^tok_/));
  });

  it('cannot lift an operator’s cordon; an operator’s cordon takes the provider’s over', async () => {
    const book = ex.book();
    const provider = await ex.party('held');
    const clusterId = await ex.cluster(provider, 1, book.gpu_type, book.zone);
    const admin = (verb: string) =>
      ex.call('POST', `/v1/admin/clusters/${clusterId}/${verb}`, ADMIN_TOKEN, { reason: 'review' });

    expect((await admin('cordon')).status).toBe(200);
    const refused = await ex.call('POST', `/v1/clusters/${clusterId}/uncordon`, provider.token);
    expect(refused.status).toBe(409);
    expect(refused.json['error']).toMatchObject({ code: 'cluster_cordoned' });
    // The provider's own cordon on top changes nothing: the operators hold it.
    const mine = await ex.call('POST', `/v1/clusters/${clusterId}/cordon`, provider.token);
    expect(mine.json).toMatchObject({ changed: false, cluster: { cordoned_by: 'operator' } });
    expect((await admin('uncordon')).status).toBe(200);

    // The provider cordons; an operator cordons on top and holds it from then on.
    const own = await ex.call('POST', `/v1/clusters/${clusterId}/cordon`, provider.token);
    const at = (own.json['cluster'] as Record<string, unknown>)['cordoned_at'];
    const taken = await admin('cordon');
    expect(taken.json).toMatchObject({
      cluster: { cordoned_at: at, cordoned_by: 'operator' },
      cancelled_order_ids: [],
    });
    expect(
      (await ex.call('POST', `/v1/clusters/${clusterId}/uncordon`, provider.token)).status,
    ).toBe(409);
    expect((await auditOf(clusterId))[0]).toMatchObject({
      actor: 'admin_token',
      action: 'cluster.cordon',
      before: { cordoned_by: 'provider' },
      after: { cordoned_by: 'operator' },
    });
    expect((await sell(provider, book, clusterId)).json['error']).toMatchObject({
      code: 'cluster_cordoned',
    });
    // The history names who held it.
    const history = await ex.call('GET', `/v1/admin/clusters/${clusterId}/history`, ADMIN_TOKEN);
    const cordons = (history.json['changes'] as Record<string, unknown>[])
      .filter((c) => c['field'] === 'cordon')
      .map((c) => [c['before'], c['after']]);
    expect(cordons).toEqual([
      ['cordoned_by_provider', 'cordoned'],
      ['uncordoned', 'cordoned_by_provider'],
      ['cordoned', 'uncordoned'],
      ['uncordoned', 'cordoned'],
    ]);
  });

  it('is 404 on another account’s cluster, 403 without the provider scope', async () => {
    const book = ex.book();
    const owner = await ex.party('owner');
    const clusterId = await ex.cluster(owner, 1, book.gpu_type, book.zone);
    const stranger = await ex.party('stranger');
    for (const verb of ['cordon', 'uncordon']) {
      const r = await ex.call('POST', `/v1/clusters/${clusterId}/${verb}`, stranger.token);
      expect(r.status).toBe(404);
      expect(r.json['error']).toMatchObject({ code: 'not_found' });
      const none = await ex.call('POST', `/v1/clusters/cls_none/${verb}`, stranger.token);
      expect(none.status).toBe(404);
    }
    const trader = await ex.party('trader', { scopes: ['trade', 'read'] });
    expect((await ex.call('POST', `/v1/clusters/${clusterId}/cordon`, trader.token)).status).toBe(
      403,
    );
    expect(await auditOf(clusterId)).toEqual([]);
  });
});
