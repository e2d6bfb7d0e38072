import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { balanceOf, ledgerTotal, PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let provider: Party;
let buyer: Party;
let other: Party;

// Each test trades in a zone of its own, so books do not meet.
const ZONE = { expiry: 'us-east-1', terminate: 'us-west-1', resale: 'eu-west-1' } as const;

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 5 * 60_000 });
  provider = await ex.account('provider');
  buyer = await ex.account('buyer');
  other = await ex.account('other');
  for (const zone of Object.values(ZONE)) await ex.cluster(provider, 2, 'h100', zone);
  await ex.cluster(provider, 2, 'h200', 'us-west-1');
  await ex.cluster(provider, 1, 'b200', 'us-west-1');
});

afterAll(async () => {
  await ex?.close();
});

async function cents(p: Party | string): Promise<number> {
  return balanceOf(ex.db, typeof p === 'string' ? p : p.accountId);
}

/** A 10 h lease of 8 GPUs at $2 in `zone`, bought now by `who`. */
async function lease(zone: string, who: Party = buyer, gpuType = 'h100'): Promise<string> {
  const s = await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    gpu_type: gpuType,
    zone,
    gpu_count: 8,
    duration_hours: 48,
    limit_price: 2,
  });
  expect(s.status).toBe(200);
  const b = await ex.call('POST', '/v1/orders', who.token, {
    side: 'buy',
    gpu_type: gpuType,
    zone,
    gpu_count: 8,
    duration_hours: 10,
  });
  expect(b.json['status']).toBe('filled');
  return b.json['lease_id'] as string;
}

/** What the provider's agent reports once it has provisioned the lease (D25). */
async function ready(leaseId: string, zone: string, gpuType = 'h100'): Promise<void> {
  const ok = await ex.market
    .writer(gpuType as 'h100', zone as 'us-west-1')
    .submit((state, changes) => state.leaseReady(leaseId, ex.clock.now(), changes));
  expect(ok).toBe(true);
}

describe('leases (D25-D28)', () => {
  it('a fill creates a provisioning lease; lists and reads show it, the read with nodes and namespace', async () => {
    const id = await lease(ZONE.terminate);
    const list = await ex.call('GET', '/v1/leases', buyer.token);
    expect(list.status).toBe(200);
    expect(list.json['total']).toBe(1);
    const [first] = list.json['leases'] as Record<string, unknown>[];
    expect(first).toMatchObject({
      lease_id: id,
      customer_id: buyer.accountId,
      gpu_type: 'h100',
      gpu_count: 8,
      instance_type: '8xh100',
      zone: ZONE.terminate,
      status: 'provisioning',
      rate: 2,
      start_time: new Date(ex.clock.now()).toISOString(),
      end_time: new Date(ex.clock.now() + 10 * HOUR_MS).toISOString(),
    });
    expect(first).not.toHaveProperty('nodes');
    const one = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(one.json).toMatchObject({ lease_id: id, ssh_endpoints: [] });
    expect(one.json['namespace']).toMatch(/^gpux-lse-/);
    expect(one.json['nodes']).toHaveLength(1);
    expect((await ex.call('GET', `/v1/leases/${id}`, other.token)).status).toBe(404);
    // D28: no kubeconfig before the agent reports one.
    const kc = await ex.call('GET', `/v1/leases/${id}/kubeconfig`, buyer.token);
    expect(kc.status).toBe(409);
    expect(kc.json).toMatchObject({ error: { code: 'lease_not_ready' } });
  });

  it('D26: termination refunds hours_remaining × rate × gpu_count at once; a second DELETE is lease_not_active', async () => {
    const leases = await ex.call('GET', '/v1/leases?status=provisioning', buyer.token);
    const id = (leases.json['leases'] as { lease_id: string }[])[0]!.lease_id;
    await ready(id, ZONE.terminate);
    const buyerBefore = await cents(buyer);
    const providerBefore = await cents(provider);
    const platformBefore = await cents(PLATFORM_ACCOUNT_ID);
    await ex.tick(4 * HOUR_MS);
    const t = await ex.call('DELETE', `/v1/leases/${id}`, buyer.token);
    expect(t.status).toBe(200);
    expect(t.json).toMatchObject({
      lease_id: id,
      status: 'terminated',
      hours_used: 4,
      hours_remaining: 6,
      rate: 2,
      refund_amount: 96,
      terminated_at: new Date(ex.clock.now()).toISOString(),
      refunded_at: new Date(ex.clock.now()).toISOString(),
    });
    // The refund comes back from the provider's 90 % and the platform's fee on it.
    expect((await cents(buyer)) - buyerBefore).toBe(9600);
    expect((await cents(provider)) - providerBefore).toBe(-8640);
    expect((await cents(PLATFORM_ACCOUNT_ID)) - platformBefore).toBe(-960);
    expect(await ledgerTotal(ex.db)).toBe(0);

    const again = await ex.call('DELETE', `/v1/leases/${id}`, buyer.token);
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ error: { code: 'lease_not_active' } });
    const read = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(read.json).toMatchObject({ status: 'terminated', refund_amount: 96 });
    // D28: after termination the kubeconfig endpoint is 404.
    expect((await ex.call('GET', `/v1/leases/${id}/kubeconfig`, buyer.token)).status).toBe(404);
  });

  it('D25: a lease expires at its end_time and its node can be sold again', async () => {
    const id = await lease(ZONE.expiry);
    await ready(id, ZONE.expiry);
    await ex.tick(10 * HOUR_MS);
    const read = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(read.json).toMatchObject({ status: 'expired', end_reason: 'expired' });
    expect((await ex.call('GET', '/v1/leases?status=expired', buyer.token)).json['total']).toBe(1);
    // Both nodes of the cluster are free again: one was leased, one still offered.
    const s = await ex.call('POST', '/v1/orders', provider.token, {
      side: 'sell',
      gpu_type: 'h100',
      zone: ZONE.expiry,
      gpu_count: 8,
      duration_hours: 24,
      limit_price: 2,
    });
    expect(s.status).toBe(200);
  });

  it('D25: a lease still provisioning after the timeout fails, and the buyer gets everything back', async () => {
    const buyerBefore = await cents(buyer);
    const providerBefore = await cents(provider);
    const id = await lease('us-west-1', buyer, 'h200');
    expect((await cents(buyer)) - buyerBefore).toBe(-17600);
    await ex.tick(5 * 60_000);
    const read = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(read.json).toMatchObject({ status: 'failed', refund_amount: 176 });
    expect(await cents(buyer)).toBe(buyerBefore);
    expect(await cents(provider)).toBe(providerBefore);
    expect(await ledgerTotal(ex.db)).toBe(0);
  });

  it('D27: a resold lease moves to the buyer; the reseller gets 90 % of the sale plus the original rate for the unused hours', async () => {
    const id = await lease(ZONE.resale);
    await ready(id, ZONE.resale);
    await ex.tick(2 * HOUR_MS);
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, { limit_price: 3 });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      lease_id: id,
      status: 'pending',
      limit_price: 3,
      remaining_hours: 8,
      // 8 h × $3 × 8 GPUs, fee 10 %.
      potential_recovery: 192,
      platform_fee: 19.2,
      net_recovery: 172.8,
    });
    const resaleId = r.json['order_id'] as string;
    const resellerBefore = await cents(buyer);
    const providerBefore = await cents(provider);

    const b = await ex.call('POST', '/v1/orders', other.token, {
      side: 'buy',
      gpu_type: 'h100',
      zone: ZONE.resale,
      gpu_count: 8,
      duration_hours: 5,
      limit_price: 3,
    });
    expect(b.json).toMatchObject({ status: 'filled', avg_price: 3, total_cost: 120 });
    const newLease = await ex.call(
      'GET',
      `/v1/leases/${b.json['lease_id'] as string}`,
      other.token,
    );
    const oldLease = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(newLease.json['nodes']).toEqual(oldLease.json['nodes']);
    expect(oldLease.json).toMatchObject({
      status: 'terminated',
      end_reason: 'resold',
      refund_amount: 48,
    });
    // Sale 120: the reseller nets 108; the 3 unused hours at the original $2 × 8 = 48 come back.
    expect((await cents(buyer)) - resellerBefore).toBe(10800 + 4800);
    expect((await cents(provider)) - providerBefore).toBe(-4320);
    expect(await ledgerTotal(ex.db)).toBe(0);
    const o = await ex.call('GET', `/v1/orders/${resaleId}`, buyer.token);
    expect(o.json).toMatchObject({ status: 'filled', resale_lease_id: id });
  });

  it('D26: terminating a lease cancels its pending resale with cancel_reason lease_terminated', async () => {
    const id = await lease(ZONE.terminate);
    await ready(id, ZONE.terminate);
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, { limit_price: 2.5 });
    expect(r.json['status']).toBe('pending');
    const t = await ex.call('DELETE', `/v1/leases/${id}`, buyer.token);
    expect(t.status).toBe(200);
    const o = await ex.call('GET', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(o.json).toMatchObject({ status: 'cancelled', cancel_reason: 'lease_terminated' });
  });

  it('D27: a pending resale is cancelled with DELETE /v1/orders/{id}', async () => {
    const id = await lease(ZONE.terminate);
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, { limit_price: 2.5 });
    const c = await ex.call('DELETE', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(c.json).toMatchObject({ status: 'cancelled', cancelled_gpus: 8 });
    // The lease can be offered again.
    const again = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, {
      limit_price: 2.5,
    });
    expect(again.json['status']).toBe('pending');
  });

  it('D27: a resale sells the whole lease: a smaller bid, even with allow_partial, does not take part of it', async () => {
    const book = { gpu_type: 'h200', zone: 'us-west-1' };
    const s = await ex.call('POST', '/v1/orders', provider.token, {
      ...book,
      side: 'sell',
      gpu_count: 16,
      duration_hours: 48,
      limit_price: 2,
    });
    expect(s.status).toBe(200);
    const b = await ex.call('POST', '/v1/orders', buyer.token, {
      ...book,
      side: 'buy',
      gpu_count: 16,
      duration_hours: 10,
    });
    const id = b.json['lease_id'] as string;
    await ready(id, book.zone, book.gpu_type);
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, { limit_price: 2.5 });
    expect(r.json['status']).toBe('pending');
    const resaleId = r.json['order_id'] as string;

    const small = await ex.call('POST', '/v1/orders', other.token, {
      ...book,
      side: 'buy',
      gpu_count: 8,
      duration_hours: 4,
      limit_price: 3,
      allow_partial: true,
    });
    expect(small.json['status']).toBe('pending');
    expect((await ex.call('GET', `/v1/orders/${resaleId}`, buyer.token)).json).toMatchObject({
      status: 'pending',
      filled_gpus: 0,
    });
    // A market buy of 8 finds nothing: the only ask is 16 GPUs, whole (D10).
    const market = await ex.call('POST', '/v1/orders', other.token, {
      ...book,
      side: 'buy',
      gpu_count: 8,
      duration_hours: 4,
      order_type: 'market',
    });
    expect(market.status).toBe(409);
    expect(market.json['error']).toMatchObject({ code: 'insufficient_liquidity' });

    const whole = await ex.call('POST', '/v1/orders', other.token, {
      ...book,
      side: 'buy',
      gpu_count: 16,
      duration_hours: 4,
      limit_price: 2.5,
    });
    expect(whole.json).toMatchObject({ status: 'filled', filled_gpus: 16 });
    const newLease = await ex.call(
      'GET',
      `/v1/leases/${whole.json['lease_id'] as string}`,
      other.token,
    );
    expect(newLease.json['nodes']).toEqual(
      (await ex.call('GET', `/v1/leases/${id}`, buyer.token)).json['nodes'],
    );
    expect(await ledgerTotal(ex.db)).toBe(0);
  });

  it('a fill writes, with the lease, one outbox event for the provider cluster naming the buyer, the nodes and the window', async () => {
    // Last in this file and bought by `other`: the lease is never made ready, and
    // its failure must not show in the other tests' balances or lists.
    const id = await lease('us-west-1', other, 'b200');
    const one = await ex.call('GET', `/v1/leases/${id}`, other.token);
    const events = await ex.db.query<{ subject: string; payload: Record<string, unknown> }>(
      "SELECT subject, payload FROM outbox WHERE payload->>'lease_id' = $1",
      [id],
    );
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event?.subject).toMatch(/^gpux\.lease\.provision\.cls_/);
    // The payload is read back exactly as the exchange wrote it (json, migration 0007).
    expect(event?.payload).toEqual({
      lease_id: id,
      cluster_id: event?.subject.slice('gpux.lease.provision.'.length),
      account_id: other.accountId,
      namespace: one.json['namespace'],
      nodes: one.json['nodes'],
      gpu_count: 8,
      start_ms: ex.clock.now(),
      end_ms: ex.clock.now() + 10 * HOUR_MS,
      source_lease_id: null,
    });
  });
});
