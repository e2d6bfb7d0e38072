import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { balanceOf, ledgerTotal, PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';
import { leaseSetting } from '../market/testing/lease-setting.js';
import type { LeaseSetting } from '../market/testing/lease-setting.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 5 * 60_000 });
});

afterAll(async () => {
  await ex?.close();
});

type Setting = LeaseSetting;
const setting = (nodes = 2): Promise<Setting> => leaseSetting(ex, nodes);

async function cents(p: Party | string): Promise<number> {
  return balanceOf(ex.db, typeof p === 'string' ? p : p.accountId);
}

/** A 10 h lease of 8 GPUs at $2 in the setting's book, bought now by `who` (its buyer). */
async function lease(s: Setting, who: Party = s.buyer): Promise<string> {
  const sell = await ex.call('POST', '/v1/orders', s.provider.token, {
    side: 'sell',
    ...s.book,
    gpu_count: 8,
    duration_hours: 48,
    limit_price: 2,
  });
  expect(sell.status).toBe(200);
  const b = await ex.call('POST', '/v1/orders', who.token, {
    side: 'buy',
    ...s.book,
    gpu_count: 8,
    duration_hours: 10,
  });
  expect(b.json['status']).toBe('filled');
  return b.json['lease_id'] as string;
}

/** What the provider's agent reports once it has provisioned the lease (D25). */
const ready = (leaseId: string, book: Book): Promise<void> => ex.leaseReady(leaseId, book);

describe('leases (D25-D28)', () => {
  it('a fill creates a provisioning lease; lists and reads show it, the read with nodes and namespace', async () => {
    const s = await setting();
    const { buyer, other } = s;
    const id = await lease(s);
    const list = await ex.call('GET', '/v1/leases', buyer.token);
    expect(list.status).toBe(200);
    expect(list.json['total']).toBe(1);
    const [first] = list.json['leases'] as Record<string, unknown>[];
    expect(first).toMatchObject({
      lease_id: id,
      customer_id: buyer.accountId,
      gpu_type: s.book.gpu_type,
      gpu_count: 8,
      instance_type: `8x${s.book.gpu_type}`,
      zone: s.book.zone,
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
    const s = await setting();
    const { buyer, provider } = s;
    const id = await lease(s);
    await ready(id, s.book);
    await ex.tick(4 * HOUR_MS);
    // After the tick: time passing may settle other tests' leases with the platform.
    const buyerBefore = await cents(buyer);
    const providerBefore = await cents(provider);
    const platformBefore = await cents(PLATFORM_ACCOUNT_ID);
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
    const s = await setting();
    const { buyer, provider } = s;
    const id = await lease(s);
    await ready(id, s.book);
    await ex.tick(10 * HOUR_MS);
    const read = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(read.json).toMatchObject({ status: 'expired', end_reason: 'expired' });
    expect((await ex.call('GET', '/v1/leases?status=expired', buyer.token)).json['total']).toBe(1);
    // Both nodes of the cluster are free again: the one leased and the one never offered.
    const again = await ex.call('POST', '/v1/orders', provider.token, {
      side: 'sell',
      ...s.book,
      gpu_count: 16,
      duration_hours: 24,
      limit_price: 2,
    });
    expect(again.status).toBe(200);
  });

  it('D25: a lease still provisioning after the timeout fails, and the buyer gets everything back', async () => {
    const s = await setting();
    const { buyer, provider } = s;
    const buyerBefore = await cents(buyer);
    const providerBefore = await cents(provider);
    const id = await lease(s);
    // 8 GPUs × 10 h × $2 = $160, and the 10 % fee (D2).
    expect((await cents(buyer)) - buyerBefore).toBe(-17600);
    await ex.tick(5 * 60_000);
    const read = await ex.call('GET', `/v1/leases/${id}`, buyer.token);
    expect(read.json).toMatchObject({ status: 'failed', refund_amount: 176 });
    expect(await cents(buyer)).toBe(buyerBefore);
    expect(await cents(provider)).toBe(providerBefore);
    expect(await ledgerTotal(ex.db)).toBe(0);
  });

  it('D27: a resold lease moves to the buyer; the reseller gets 90 % of the sale plus the original rate for the unused hours', async () => {
    const s = await setting();
    const { buyer, provider, other } = s;
    const id = await lease(s);
    await ready(id, s.book);
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
      ...s.book,
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
    const s = await setting();
    const { buyer } = s;
    const id = await lease(s);
    await ready(id, s.book);
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, { limit_price: 2.5 });
    expect(r.json['status']).toBe('pending');
    const t = await ex.call('DELETE', `/v1/leases/${id}`, buyer.token);
    expect(t.status).toBe(200);
    const o = await ex.call('GET', `/v1/orders/${r.json['order_id'] as string}`, buyer.token);
    expect(o.json).toMatchObject({ status: 'cancelled', cancel_reason: 'lease_terminated' });
  });

  it('D27: a pending resale is cancelled with DELETE /v1/orders/{id}', async () => {
    const s = await setting();
    const { buyer } = s;
    const id = await lease(s);
    // D25: a lease still provisioning is not resold yet.
    const early = await ex.call('POST', `/v1/leases/${id}/resell`, buyer.token, {
      limit_price: 2.5,
    });
    expect(early).toMatchObject({ status: 409, json: { error: { code: 'lease_not_ready' } } });
    await ready(id, s.book);
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
    const { book, provider, buyer, other } = await setting();
    const sold = await ex.call('POST', '/v1/orders', provider.token, {
      ...book,
      side: 'sell',
      gpu_count: 16,
      duration_hours: 48,
      limit_price: 2,
    });
    expect(sold.status).toBe(200);
    const b = await ex.call('POST', '/v1/orders', buyer.token, {
      ...book,
      side: 'buy',
      gpu_count: 16,
      duration_hours: 10,
    });
    const id = b.json['lease_id'] as string;
    await ready(id, book);
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

  it("a fill writes, with the lease, one provision event for its cluster carrying what the agent needs, and a snapshot of the buyer's SSH keys (D29, D32)", async () => {
    const s = await setting();
    const keyholder = s.other;
    const key =
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlIMmyFnHK4frjyOGUIT3IthFXFGYi7+K7mXLlcCaXt fixture';
    const added = await ex.call('POST', '/v1/ssh_keys', keyholder.token, {
      name: 'laptop',
      public_key: key,
    });
    expect(added.status).toBe(201);
    const id = await lease(s, keyholder);
    const one = await ex.call('GET', `/v1/leases/${id}`, keyholder.token);
    const events = await ex.db.query<{
      event_id: string;
      subject: string;
      payload: Record<string, unknown>;
    }>("SELECT event_id, subject, payload FROM outbox WHERE payload->>'lease_id' = $1", [id]);
    expect(events).toHaveLength(1);
    const [event] = events;
    const subject = /^gpux\.cluster\.(cls_[0-9a-z]+)\.lease\.provision$/.exec(event?.subject ?? '');
    expect(subject).not.toBeNull();
    const user = id.replace('_', '-');
    // The payload is read back exactly as the exchange wrote it (json, migration 0007).
    expect(event?.payload).toEqual({
      kind: 'lease.provision',
      // The typed event carries its own id, the JetStream message id (D29).
      event_id: event?.event_id,
      lease_id: id,
      cluster_id: subject?.[1],
      account_id: keyholder.accountId,
      namespace: one.json['namespace'],
      lease_user: user,
      nodes: (one.json['nodes'] as string[]).map((hostname, i) => ({
        hostname,
        ssh_user: `${user}-${i + 1}`,
      })),
      gpu_count: 8,
      start_ms: ex.clock.now(),
      end_ms: ex.clock.now() + 10 * HOUR_MS,
      source_lease_id: null,
    });
    // D32: the keys of the moment of the fill, kept whatever the account does later.
    await ex.call('DELETE', `/v1/ssh_keys/${String(added.json['ssh_key_id'])}`, keyholder.token);
    const snapshot = await ex.db.query(
      'SELECT position, public_key FROM lease_keys WHERE lease_id = $1',
      [id],
    );
    expect(snapshot).toEqual([{ position: 1, public_key: key.split(' ').slice(0, 2).join(' ') }]);
  });
});
