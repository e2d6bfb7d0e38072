// Issue 24, "What the API must tell a program": a lease's state, transfer
// time and hourly cost, the endpoints paired with their host keys and
// known_hosts lines, the leases of one order, and a termination whose refund
// a program can recompute from the answer's own fields.
import { HOUR_MS, mulDivHalfEven } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { leaseSetting } from '../market/testing/lease-setting.js';
import type { LeaseSetting } from '../market/testing/lease-setting.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 5 * 60_000 });
});

afterAll(async () => {
  await ex?.close();
});

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';

type Setting = LeaseSetting;
const setting = (nodes = 2): Promise<Setting> => leaseSetting(ex, nodes);

async function buy(s: Setting, who: Party, body: Record<string, unknown>) {
  const b = await ex.call('POST', '/v1/orders', who.token, { side: 'buy', ...s.book, ...body });
  expect(b.status).toBe(200);
  return b.json;
}

async function sell(s: Setting, gpus: number, price: number): Promise<void> {
  const r = await ex.call('POST', '/v1/orders', s.provider.token, {
    side: 'sell',
    ...s.book,
    gpu_count: gpus,
    duration_hours: 48,
    limit_price: price,
  });
  expect(r.status).toBe(200);
}

async function read(id: string, who: Party): Promise<Record<string, unknown>> {
  const r = await ex.call('GET', `/v1/leases/${id}`, who.token);
  expect(r.status).toBe(200);
  return r.json;
}

describe('lease fields for programs (issue 24)', () => {
  it('state, hourly_cost; ssh_access pairs each endpoint with the host keys and known_hosts lines', async () => {
    const s = await setting();
    await sell(s, 16, 2);
    const b = await buy(s, s.buyer, { gpu_count: 16, duration_hours: 10 });
    const id = b['lease_id'] as string;
    expect(await read(id, s.buyer)).toMatchObject({
      status: 'provisioning',
      state: 'provisioning',
      hourly_cost: 32,
      ssh_access: [],
    });
    const nodes = (await read(id, s.buyer))['nodes'] as string[];
    expect(nodes).toHaveLength(2);
    // What the provider's agent reports (D32), written as reportProvisioned does.
    await ex.db.query(
      `INSERT INTO lease_access (lease_id, ssh_endpoints, ssh_host_keys, reported_ms)
       VALUES ($1, $2, $3, $4)`,
      [
        id,
        JSON.stringify(
          nodes.map((h, i) => ({ hostname: h, endpoint: `u${i}@10.0.0.${i + 1}:2222` })),
        ),
        JSON.stringify([`${KEY} gpux-agent`]),
        ex.clock.now(),
      ],
    );
    await ex.leaseReady(id, s.book);
    const r = await read(id, s.buyer);
    expect(r).toMatchObject({ status: 'active', state: 'active' });
    expect(r['ssh_access']).toEqual(
      nodes.map((h, i) => ({
        hostname: h,
        endpoint: `u${i}@10.0.0.${i + 1}:2222`,
        user: `u${i}`,
        host: `10.0.0.${i + 1}`,
        port: 2222,
        host_keys: [KEY],
        known_hosts: [`[10.0.0.${i + 1}]:2222 ${KEY}`],
      })),
    );
    // The old fields stay (additive change).
    expect(r['ssh_endpoints']).toEqual(['u0@10.0.0.1:2222', 'u1@10.0.0.2:2222']);
    expect(r['ssh_host_keys']).toEqual([`${KEY} gpux-agent`]);
    // Ended, nothing is reachable any more.
    await ex.call('DELETE', `/v1/leases/${id}`, s.buyer.token);
    expect(await read(id, s.buyer)).toMatchObject({ state: 'terminated', ssh_access: [] });
  });

  it('GET /v1/leases?order_id= lists the leases of one buy only, the caller’s only', async () => {
    const s = await setting(3);
    await sell(s, 24, 2);
    const first = await buy(s, s.buyer, { gpu_count: 16, duration_hours: 2 });
    const second = await buy(s, s.buyer, { gpu_count: 8, duration_hours: 2 });
    const mine = await ex.call(
      'GET',
      `/v1/leases?order_id=${first['order_id'] as string}`,
      s.buyer.token,
    );
    expect(mine.json['total']).toBe(1);
    expect(mine.json['leases']).toMatchObject([{ lease_id: first['lease_id'], gpu_count: 16 }]);
    const other = await ex.call(
      'GET',
      `/v1/leases?order_id=${second['order_id'] as string}`,
      s.buyer.token,
    );
    expect(other.json['leases']).toMatchObject([{ lease_id: second['lease_id'] }]);
    const stranger = await ex.call(
      'GET',
      `/v1/leases?order_id=${first['order_id'] as string}`,
      s.other.token,
    );
    expect(stranger.json['total']).toBe(0);
  });

  it('a resale sold ahead: the reseller’s lease is sold with its transfer_time, the buyer’s is scheduled until then', async () => {
    const s = await setting();
    await sell(s, 8, 2);
    const first = await buy(s, s.buyer, { gpu_count: 8, duration_hours: 10 });
    const id = first['lease_id'] as string;
    await ex.leaseReady(id, s.book);
    const from = ex.clock.now() + 2 * HOUR_MS;
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, s.buyer.token, {
      limit_price: 3,
      available_from: new Date(from).toISOString(),
    });
    expect(r.json['status']).toBe('pending');
    const b = await buy(s, s.other, { gpu_count: 8, duration_hours: 4, limit_price: 3 });
    const transfer = new Date(from).toISOString();
    expect(await read(id, s.buyer)).toMatchObject({
      status: 'active',
      state: 'sold',
      transfer_time: transfer,
    });
    const theirs = b['lease_id'] as string;
    expect(await read(theirs, s.other)).toMatchObject({
      status: 'provisioning',
      state: 'scheduled',
      start_time: transfer,
    });
    await ex.tick(2 * HOUR_MS);
    expect(await read(id, s.buyer)).toMatchObject({
      end_reason: 'resold',
      state: 'sold',
      transfer_time: transfer,
    });
    expect(await read(theirs, s.other)).toMatchObject({ state: 'provisioning' });
  });

  it('every ledger row of a resale points at objects its account can read (reseller and provider)', async () => {
    const s = await setting();
    await sell(s, 8, 2);
    const first = await buy(s, s.buyer, { gpu_count: 8, duration_hours: 10 });
    const id = first['lease_id'] as string;
    await ex.leaseReady(id, s.book);
    await ex.tick(HOUR_MS);
    const r = await ex.call('POST', `/v1/leases/${id}/resell`, s.buyer.token, { limit_price: 3 });
    expect(r.json['status']).toBe('pending');
    await buy(s, s.other, { gpu_count: 8, duration_hours: 4, limit_price: 3 });
    for (const who of [s.buyer, s.provider]) {
      const t = await ex.call('GET', '/v1/account/transactions?limit=100', who.token);
      const rows = t.json['transactions'] as { order_id: string | null; lease_id: string | null }[];
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        if (row.order_id !== null) {
          const o = await ex.call('GET', `/v1/orders/${row.order_id}`, who.token);
          expect(o.status, `${row.order_id} for ${who.accountId}`).toBe(200);
        }
        if (row.lease_id !== null && who === s.buyer) {
          const l = await ex.call('GET', `/v1/leases/${row.lease_id}`, who.token);
          expect(l.status, `${row.lease_id} for the reseller`).toBe(200);
        }
      }
    }
    // The reseller's proceeds name its resale order and its own lease.
    const mine = await ex.call('GET', '/v1/account/transactions?limit=100', s.buyer.token);
    expect(mine.json['transactions']).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          transaction_kind: 'lease_charge',
          order_id: r.json['order_id'],
          lease_id: id,
        }),
      ]),
    );
  });

  it('a termination’s refund is milliseconds_remaining × hourly_cost / 3,600,000, rounded half-even once', async () => {
    const s = await setting(3);
    // One buy at two prices on one cluster: the rate shown is rounded, the hourly cost exact (D4).
    await sell(s, 8, 2.01);
    await sell(s, 16, 2.02);
    const b = await buy(s, s.buyer, { gpu_count: 24, duration_hours: 10 });
    const id = b['lease_id'] as string;
    await ex.leaseReady(id, s.book);
    await ex.tick(3 * HOUR_MS + 1_234_567);
    const t = await ex.call('DELETE', `/v1/leases/${id}`, s.buyer.token);
    expect(t.status).toBe(200);
    const j = t.json;
    expect(j['milliseconds_used']).toBe(3 * HOUR_MS + 1_234_567);
    expect(j['milliseconds_remaining']).toBe(7 * HOUR_MS - 1_234_567);
    expect(j['hourly_cost']).toBe(48.4);
    const hourlyCents = Math.round((j['hourly_cost'] as number) * 100);
    const refund = mulDivHalfEven([hourlyCents, j['milliseconds_remaining'] as number], HOUR_MS);
    expect(Math.round((j['refund_amount'] as number) * 100)).toBe(refund);
  });
});
