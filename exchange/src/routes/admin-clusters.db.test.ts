// POST /v1/admin/clusters/{id}/cordon and /uncordon (issue 21,
// docs/api/admin.md): a cordon withdraws the cluster's open sells and the
// resales of leases on it (cancel_reason cluster_cordoned) and refuses new
// ones, keeps the live leases, and is one write batch of the cluster's book
// with its audit row; it lives in PostgreSQL (clusters.cordoned_at) and holds
// across a takeover.

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

const admin = (method: string, url: string, body?: unknown) =>
  ex.call(method, url, ADMIN_TOKEN, body);

/** A sell of 8 GPUs for 24 h at $2 (or `o`'s), on `o.on` (default: ex). */
const sell = (
  p: Party,
  book: Book,
  o: { price?: number; gpus?: number; clusterId?: string; on?: TestExchange } = {},
) =>
  (o.on ?? ex).call('POST', '/v1/orders', p.token, {
    side: 'sell',
    ...book,
    gpu_count: o.gpus ?? 8,
    duration_hours: 24,
    limit_price: o.price ?? 2,
    ...(o.clusterId === undefined ? {} : { cluster_id: o.clusterId }),
  });

const buy = (p: Party, book: Book) =>
  ex.call('POST', '/v1/orders', p.token, { side: 'buy', ...book, gpu_count: 8, duration_hours: 4 });

async function orderOf(p: Party, id: string): Promise<Record<string, unknown>> {
  const r = await ex.call('GET', `/v1/orders/${id}`, p.token);
  expect(r.status).toBe(200);
  return r.json;
}

async function clusterOf(id: string): Promise<Record<string, unknown> | undefined> {
  const r = await admin('GET', '/v1/admin/clusters');
  expect(r.status).toBe(200);
  return (r.json['clusters'] as Record<string, unknown>[]).find((c) => c['cluster_id'] === id);
}

/** A cluster of its own provider in a fresh book, cordoned now. */
async function cordoned(tag: string, nodes = 1) {
  const book = ex.book();
  const provider = await ex.party(tag);
  const clusterId = await ex.cluster(provider, nodes, book.gpu_type, book.zone);
  const r = await admin('POST', `/v1/admin/clusters/${clusterId}/cordon`, { reason: tag });
  expect(r.status).toBe(200);
  return { book, provider, clusterId, cordonedAt: ex.clock.now() };
}

async function auditOf(clusterId: string, action: string): Promise<Record<string, unknown>[]> {
  const r = await admin(
    'GET',
    `/v1/admin/audit?target_type=cluster&target_id=${clusterId}&action=${action}`,
  );
  expect(r.status).toBe(200);
  return r.json['entries'] as Record<string, unknown>[];
}

describe('an operator cordons a cluster', () => {
  it('withdraws its sells and the resales of its leases, refuses new ones, keeps the lease, audit-logs it', async () => {
    const { book, provider, buyer, clusterId, leaseId } = await ex.marketLease('cordon');
    // The lease's cluster has one node, leased. Two more clusters of the
    // provider's in the same book: one to cordon with a sell open, one that
    // keeps its sell (a cordon is the named cluster's only).
    const other = await ex.cluster(provider, 1, book.gpu_type, book.zone);
    const cordonedSells = await ex.cluster(provider, 2, book.gpu_type, book.zone);
    const open = await sell(provider, book, { gpus: 16, price: 2.5, clusterId: cordonedSells });
    expect(open.status).toBe(200);
    const elsewhere = await sell(provider, book, { price: 2.5, clusterId: other });
    expect(elsewhere.status).toBe(200);
    expect((await clusterOf(clusterId))?.['cordoned_at']).toBeNull();
    // The buyer's lease is active and offered for resale: an open sell on the cluster.
    await ex.leaseReady(leaseId, book);
    const resale = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 3,
    });
    expect(resale.status).toBe(200);
    const resaleId = resale.json['order_id'] as string;
    ex.clock.advance(HOUR_MS);

    // The first cluster (the lease's) is cordoned: the resale goes.
    const r = await admin('POST', `/v1/admin/clusters/${clusterId}/cordon`, {
      reason: '  provider reports failing power  ',
    });
    expect(r.status).toBe(200);
    const cordonedAt = new Date(ex.clock.now()).toISOString();
    expect(r.json['cluster']).toMatchObject({ cluster_id: clusterId, cordoned_at: cordonedAt });
    expect(r.json['cancelled_order_ids']).toEqual([resaleId]);
    expect(await orderOf(buyer, resaleId)).toMatchObject({
      status: 'cancelled',
      cancel_reason: 'cluster_cordoned',
    });
    // The live lease is kept.
    const lease = await ex.call('GET', `/v1/leases/${leaseId}`, buyer.token);
    expect(lease.json['status']).toBe('active');
    // No resale of a lease on it, whoever holds the lease.
    const again = await ex.call('POST', `/v1/leases/${leaseId}/resell`, buyer.token, {
      limit_price: 3,
    });
    expect(again.status).toBe(409);
    expect(again.json['error']).toMatchObject({ code: 'cluster_cordoned' });
    expect((await clusterOf(clusterId))?.['cordoned_at']).toBe(cordonedAt);

    const [entry, ...more] = await auditOf(clusterId, 'cluster.cordon');
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      actor: 'admin_token',
      action: 'cluster.cordon',
      target_type: 'cluster',
      target_id: clusterId,
      reason: 'provider reports failing power',
      before: { cordoned_at: null },
      after: { cordoned_at: cordonedAt },
    });

    // The cluster with open sells: they go, the provider's other cluster keeps its sell.
    const openId = open.json['order_id'] as string;
    const second = await admin('POST', `/v1/admin/clusters/${cordonedSells}/cordon`, {
      reason: 'maintenance',
    });
    expect(second.json['cancelled_order_ids']).toEqual([openId]);
    expect(await orderOf(provider, openId)).toMatchObject({
      status: 'cancelled',
      cancel_reason: 'cluster_cordoned',
      cancelled_gpus: 16,
    });
    const view = ex.market.writer(book.gpu_type, book.zone).view;
    expect(view.orders.has(openId)).toBe(false);
    expect(view.orders.has(elsewhere.json['order_id'] as string)).toBe(true);
    expect(view.clusters.get(cordonedSells)?.openSellNodes).toBe(0);

    // A new sell of it is refused; a buy fills from the other cluster only.
    const refused = await sell(provider, book, { clusterId: cordonedSells });
    expect(refused.status).toBe(409);
    expect(refused.json['error']).toMatchObject({ code: 'cluster_cordoned' });
    const buyer2 = await ex.party('cordon-buyer2');
    const filled = await buy(buyer2, book);
    expect(filled.json['status']).toBe('filled');
    const [newLease] = await ex.db.query<{ cluster_id: string }>(
      'SELECT cluster_id FROM leases WHERE id = $1',
      [filled.json['lease_id']],
    );
    expect(newLease?.cluster_id).toBe(other);
    // Nothing left to buy: the cordoned cluster's free nodes are not offered.
    const none = await buy(buyer2, book);
    expect(none.status).toBe(409);
    expect(none.json['error']).toMatchObject({ code: 'insufficient_liquidity' });
  });

  it('cordoning a cordoned cluster changes nothing and records nothing', async () => {
    const { book, provider, clusterId, cordonedAt } = await cordoned('cordon-twice', 2);
    ex.clock.advance(HOUR_MS);
    const second = await admin('POST', `/v1/admin/clusters/${clusterId}/cordon`, {
      reason: 'second',
    });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({
      cluster: { cluster_id: clusterId, cordoned_at: new Date(cordonedAt).toISOString() },
      cancelled_order_ids: [],
    });
    expect(await auditOf(clusterId, 'cluster.cordon')).toHaveLength(1);
    // Uncordoning one that is not cordoned records nothing either.
    const other = await ex.cluster(provider, 1, book.gpu_type, book.zone);
    const lifted = await admin('POST', `/v1/admin/clusters/${other}/uncordon`, { reason: 'no-op' });
    expect(lifted.status).toBe(200);
    expect(lifted.json).toMatchObject({ cluster_id: other, cordoned_at: null });
    expect(await auditOf(other, 'cluster.uncordon')).toEqual([]);
  });

  it('uncordon takes sells again, audit-logged', async () => {
    const { book, provider, clusterId, cordonedAt } = await cordoned('uncordon');
    expect((await sell(provider, book)).json['error']).toMatchObject({
      code: 'cluster_cordoned',
    });

    const op = await ex.party('uncordon-operator', { scopes: ['admin'] });
    const r = await ex.call('POST', `/v1/admin/clusters/${clusterId}/uncordon`, op.token, {
      reason: 'power restored',
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ cluster_id: clusterId, cordoned_at: null });
    expect((await clusterOf(clusterId))?.['cordoned_at']).toBeNull();
    const [entry] = await auditOf(clusterId, 'cluster.uncordon');
    expect(entry).toMatchObject({
      actor: op.accountId,
      reason: 'power restored',
      before: { cordoned_at: new Date(cordonedAt).toISOString() },
      after: { cordoned_at: null },
    });
    const listed = await sell(provider, book);
    expect(listed.status).toBe(200);
    const buyer = await ex.party('uncordon-buyer');
    expect((await buy(buyer, book)).json['status']).toBe('filled');
  });

  it('needs a reason, an existing cluster and the admin API', async () => {
    const book = ex.book();
    const provider = await ex.party('cordon-input');
    const clusterId = await ex.cluster(provider, 1, book.gpu_type, book.zone);
    for (const action of ['cordon', 'uncordon']) {
      for (const body of [{}, { reason: '   ' }, { reason: 'x'.repeat(1001) }]) {
        const r = await admin('POST', `/v1/admin/clusters/${clusterId}/${action}`, body);
        expect(r.status).toBe(400);
        expect(r.json['error']).toMatchObject({ code: 'invalid_request', field: 'reason' });
      }
      const missing = await admin('POST', `/v1/admin/clusters/cls_none/${action}`, {
        reason: 'why',
      });
      expect(missing.status).toBe(404);
      expect(missing.json['error']).toMatchObject({ code: 'not_found' });
      const customer = await ex.call(
        'POST',
        `/v1/admin/clusters/${clusterId}/${action}`,
        provider.token,
        { reason: 'mine' },
      );
      expect(customer.status).toBe(403);
    }
    expect((await clusterOf(clusterId))?.['cordoned_at']).toBeNull();
    expect(await auditOf(clusterId, 'cluster.cordon')).toEqual([]);
    expect((await sell(provider, book)).status).toBe(200);
  });
});

// Last: the exchange started here takes the market over from `ex`.
describe('a cordon lives in PostgreSQL', () => {
  it('holds when another exchange loads the books (a restart, a takeover)', async () => {
    const { book, provider, clusterId, cordonedAt } = await cordoned('cordon-restart');

    const restarted = await testExchange({ db: ex.db });
    try {
      const cluster = restarted.market
        .writer(book.gpu_type, book.zone)
        .view.clusters.get(clusterId);
      expect(cluster?.cordonedMs).toBe(cordonedAt);
      const refused = await sell(provider, book, { on: restarted });
      expect(refused.status).toBe(409);
      expect(refused.json['error']).toMatchObject({ code: 'cluster_cordoned' });
      const lifted = await restarted.call(
        'POST',
        `/v1/admin/clusters/${clusterId}/uncordon`,
        ADMIN_TOKEN,
        { reason: 'back' },
      );
      expect(lifted.json).toMatchObject({ cordoned_at: null });
      expect((await sell(provider, book, { on: restarted })).status).toBe(200);
    } finally {
      await restarted.stop();
    }
  });
});
