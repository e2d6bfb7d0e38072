import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { balanceOf, ledgerTotal } from '../ledger/ledger.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';
import { purgeStaleHolds } from './credit.js';

let ex: TestExchange;
beforeAll(async () => {
  ex = await testExchange();
});
afterAll(async () => {
  await ex.close();
});

/** A provider offering `nodes` nodes at `price` dollars per GPU-hour in a book. */
async function offer(
  nodes: number,
  price: number,
  zone = 'us-west-1',
  gpuType = 'h100',
): Promise<void> {
  const provider = await ex.account(`provider-${gpuType}-${zone}-${price}-${Math.random()}`);
  const cluster = await ex.cluster(provider, nodes, gpuType, zone);
  const r = await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    gpu_type: gpuType,
    zone,
    gpu_count: nodes * 8,
    duration_hours: 720,
    limit_price: price,
    cluster_id: cluster,
  });
  if (r.status !== 200) throw new Error(r.body);
}

const buy = (p: Party, body: Record<string, unknown>) =>
  ex.call('POST', '/v1/orders', p.token, {
    side: 'buy',
    gpu_type: 'h100',
    zone: 'us-west-1',
    gpu_count: 8,
    duration_hours: 1,
    ...body,
  });

const heldBy = async (accountId: string): Promise<number> => {
  const [r] = await ex.db.query<{ c: number }>(
    'SELECT COALESCE(SUM(cents), 0)::bigint AS c FROM credit_holds WHERE account_id = $1',
    [accountId],
  );
  return r?.c ?? 0;
};

describe('D3: the credit limit holds under concurrency, across books', () => {
  it.each([1, 2, 3])(
    '30 concurrent market buys of USD 88 against a USD 1,000 limit: exactly 11 go through (round %i)',
    async (round) => {
      await offer(15, 10, 'us-west-1');
      await offer(15, 10, 'us-east-1');
      const capped = await ex.account(`capped-concurrent-${round}`, { creditLimit: 1000 });
      // 8 GPUs × 1 h × $10 = $80 + $8 fee = $88, held at $88.01 (one cent per node
      // for the rounding of each lease's fee); eleven of them fit in $1,000.
      const replies = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          buy(capped, { zone: i % 2 === 0 ? 'us-west-1' : 'us-east-1' }),
        ),
      );
      const statuses = replies.map((r) => r.status);
      const odd = replies.filter((r) => r.status !== 200 && r.status !== 402).map((r) => r.body);
      expect(odd).toEqual([]);
      expect(statuses.filter((s) => s === 200)).toHaveLength(11);
      expect(statuses.filter((s) => s === 402)).toHaveLength(19);
      for (const r of replies.filter((x) => x.status === 402)) {
        expect(r.json).toMatchObject({ error: { code: 'insufficient_funds' } });
      }
      const balance = await balanceOf(ex.db, capped.accountId);
      expect(balance).toBe(-11 * 8800);
      expect(-balance).toBeLessThanOrEqual(100_000);
      // Every buy closed (filled or refused): nothing is held any more.
      expect(await heldBy(capped.accountId)).toBe(0);
      expect(await ledgerTotal(ex.db)).toBe(0);
    },
  );

  it('an open limit buy holds its worst cost until it closes; cancelling frees it', async () => {
    const capped = await ex.account('capped-limit', { creditLimit: 200 });
    // No asks at $1: the buy rests. 8 × 10 h × $2 = $160 + $16 fee + 1 c = $176.01 held.
    const first = await buy(capped, { gpu_type: 'b300', duration_hours: 10, limit_price: 2 });
    expect(first.status).toBe(200);
    expect(first.json['status']).toBe('pending');
    expect(await heldBy(capped.accountId)).toBe(17_601);
    const second = await buy(capped, { gpu_type: 'b300', duration_hours: 2, limit_price: 2 });
    expect(second.status).toBe(402);
    const cancel = await ex.call(
      'DELETE',
      `/v1/orders/${String(first.json['order_id'])}`,
      capped.token,
    );
    expect(cancel.status).toBe(200);
    expect(await heldBy(capped.accountId)).toBe(0);
    const third = await buy(capped, { gpu_type: 'b300', duration_hours: 2, limit_price: 2 });
    expect(third.status).toBe(200);
  });

  it('a partial fill lowers the hold to what the buy has left', async () => {
    const capped = await ex.account('capped-partial', { creditLimit: 1000 });
    // 2 nodes × 8 × 1 h × $5 = $80 + $8 + 2 c held; one node fills at $4.
    const b = await buy(capped, {
      gpu_type: 'b200',
      gpu_count: 16,
      duration_hours: 1,
      limit_price: 5,
      allow_partial: true,
    });
    expect(b.status).toBe(200);
    expect(await heldBy(capped.accountId)).toBe(8802);
    await offer(1, 4, 'us-west-1', 'b200');
    // The remaining node at $5: $40 + $4 fee + 1 c.
    expect(await heldBy(capped.accountId)).toBe(4401);
    expect(await balanceOf(ex.db, capped.accountId)).toBe(-(3200 + 320));
  });

  it('an order whose cost has no bound when placed is refused for an account with a limit', async () => {
    const capped = await ex.account('capped-unbounded', { creditLimit: 10_000 });
    const flexible = await buy(capped, { flexible_window_hours: 4 });
    expect(flexible.status).toBe(402);
    expect(flexible.json).toMatchObject({ error: { code: 'insufficient_funds' } });
    const later = await buy(capped, {
      start_time: new Date(ex.clock.now() + 3_600_000).toISOString(),
    });
    expect(later.status).toBe(402);
    // With a limit price both are bounded, so both are taken.
    const bounded = await buy(capped, { flexible_window_hours: 4, limit_price: 10 });
    expect(bounded.status).toBe(200);
  });

  it('holds survive a restart of the books, and a hold whose order never arrived is purged', async () => {
    const capped = await ex.account('capped-restart', { creditLimit: 1000 });
    const b = await buy(capped, {
      gpu_type: 'b300',
      zone: 'eu-west-1',
      duration_hours: 5,
      limit_price: 1,
    });
    expect(b.status).toBe(200);
    const held = await heldBy(capped.accountId);
    expect(held).toBe(4401);
    await ex.db.query(
      "INSERT INTO credit_holds (order_id, account_id, gpu_type, zone, cents, created_ms) VALUES ('ord_never_arrived', $1, 'b300', 'eu-west-1', 999, $2)",
      [capped.accountId, ex.clock.now() - 3_600_000],
    );
    expect(await purgeStaleHolds(ex.db, ex.clock.now())).toBe(1);
    expect(await heldBy(capped.accountId)).toBe(held);
    // The book rebuilt from the database still drops the hold when the buy closes.
    const restarted = await testExchange({ db: ex.db });
    const cancel = await restarted.call(
      'DELETE',
      `/v1/orders/${String(b.json['order_id'])}`,
      capped.token,
    );
    expect(cancel.status).toBe(200);
    expect(await heldBy(capped.accountId)).toBe(0);
    await restarted.stop();
  });
});
