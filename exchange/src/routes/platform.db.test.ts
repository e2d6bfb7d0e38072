import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { guardSerialization } from '../http/testing/serialization-guard.js';
import type { SerializationGuard } from '../http/testing/serialization-guard.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let guard: SerializationGuard;
let provider: Party;
let buyer: Party;

beforeAll(async () => {
  ex = await testExchange();
  guard = guardSerialization(ex.app);
  provider = await ex.account('provider');
  buyer = await ex.account('buyer');
  await ex.cluster(provider, 1);
});

afterAll(async () => {
  expect(guard.mismatches).toEqual([]);
  await ex?.close();
});

describe('the platform account for operators (D2, D3)', () => {
  it('starts at zero', async () => {
    const r = await ex.call('GET', '/v1/admin/platform', ADMIN_TOKEN);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      account_id: 'acc_platform',
      balance: 0,
      fees_earned: 0,
      fees_refunded: 0,
    });
  });

  it('D2: earns the 10 % fee from buyer and seller; D26: gives back the fee on refunded time', async () => {
    const market = { gpu_type: 'h100', zone: 'us-west-1', gpu_count: 8 };
    const sell = { ...market, side: 'sell', duration_hours: 48, limit_price: 2 };
    expect((await ex.call('POST', '/v1/orders', provider.token, sell)).status).toBe(200);
    const buy = await ex.call('POST', '/v1/orders', buyer.token, {
      ...market,
      side: 'buy',
      duration_hours: 10,
    });
    expect(buy.json['status']).toBe('filled');
    // 10 h × $2 × 8 GPUs = $160 of compute: $16 from each side.
    expect((await ex.call('GET', '/v1/admin/platform', ADMIN_TOKEN)).json).toMatchObject({
      balance: 32,
      fees_earned: 32,
      fees_refunded: 0,
    });
    const leaseId = buy.json['lease_id'] as string;
    // The provider's agent reports the lease provisioned (D25), then 4 h pass.
    await ex.market
      .writer('h100', 'us-west-1')
      .submit((state, changes) => state.leaseReady(leaseId, ex.clock.now(), changes));
    await ex.tick(4 * HOUR_MS);
    const t = await ex.call('DELETE', `/v1/leases/${leaseId}`, buyer.token);
    // 6 h × $2 × 8 = $96 refunded; the platform gives back its 10 % of it.
    expect(t.json['refund_amount']).toBe(96);
    const p = await ex.call('GET', '/v1/admin/platform', ADMIN_TOKEN);
    expect(p.json).toEqual({
      account_id: 'acc_platform',
      balance: 22.4,
      fees_earned: 32,
      fees_refunded: 9.6,
    });
    // D3: the platform holds what every other account together is owed or owes.
    const others = await ex.db.query<{ total: number }>(
      "SELECT COALESCE(SUM(amount_cents), 0)::bigint AS total FROM ledger_entries WHERE account_id <> 'acc_platform'",
    );
    expect(-(others[0]?.total ?? 0) / 100).toBe(22.4);
  });

  it('D33 / D21: pages its ledger rows newest first, like /v1/account/transactions', async () => {
    const all = await ex.call('GET', '/v1/admin/platform/transactions', ADMIN_TOKEN);
    expect(all.status).toBe(200);
    expect(all.json).toMatchObject({ total: 2, limit: 20, offset: 0 });
    expect(all.json['transactions']).toEqual([
      expect.objectContaining({ kind: 'fee_refund', amount: -9.6 }),
      expect.objectContaining({ kind: 'platform_fee', amount: 32 }),
    ]);
    const second = await ex.call(
      'GET',
      '/v1/admin/platform/transactions?limit=1&offset=1',
      ADMIN_TOKEN,
    );
    expect(second.json).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(second.json['transactions']).toEqual([
      expect.objectContaining({ kind: 'platform_fee', amount: 32 }),
    ]);
    const bad = await ex.call('GET', '/v1/admin/platform/transactions?limit=101', ADMIN_TOKEN);
    expect(bad.status).toBe(400);
  });

  it('D31 / D24: operators only: a customer token is 403, none is 401', async () => {
    for (const url of ['/v1/admin/platform', '/v1/admin/platform/transactions']) {
      expect((await ex.call('GET', url, buyer.token)).status).toBe(403);
      const anonymous = await ex.app.inject({ method: 'GET', url });
      expect(anonymous.statusCode).toBe(401);
    }
  });
});
