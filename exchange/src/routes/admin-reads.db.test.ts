// GET /v1/admin/orders/{id} and GET /v1/admin/leases/{id} (issue 21,
// docs/api/admin.md): any account's order with its fills, any lease.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

describe('operators read any order and lease', () => {
  it('shows the order with its fills and the lease as their owner sees them', async () => {
    const { buyer, orderId, leaseId } = await ex.marketLease('read');

    const order = await ex.call('GET', `/v1/admin/orders/${orderId}`, ADMIN_TOKEN);
    expect(order.status).toBe(200);
    const own = await ex.call('GET', `/v1/orders/${orderId}`, buyer.token);
    expect(order.json).toEqual({
      account_id: buyer.accountId,
      organization_id: buyer.organizationId,
      order: own.json,
    });
    expect((order.json['order'] as { matches: unknown[] }).matches).toHaveLength(1);

    const lease = await ex.call('GET', `/v1/admin/leases/${leaseId}`, ADMIN_TOKEN);
    expect(lease.status).toBe(200);
    expect(lease.json).toEqual((await ex.call('GET', `/v1/leases/${leaseId}`, buyer.token)).json);
    expect(lease.json['customer_id']).toBe(buyer.accountId);
  });

  it('is 404 for what does not exist and 403 for a customer', async () => {
    for (const url of ['/v1/admin/orders/ord_none', '/v1/admin/leases/lse_none']) {
      const r = await ex.call('GET', url, ADMIN_TOKEN);
      expect(r.status).toBe(404);
      expect(r.json['error']).toMatchObject({ code: 'not_found' });
    }
    const p = await ex.party('read-nosy');
    expect((await ex.call('GET', '/v1/admin/orders/ord_none', p.token)).status).toBe(403);
  });
});
