// An order racing a suspension (issue 21, docs/api/admin.md "suspend"): a
// request authenticated just before an operator suspended its account must
// not leave an order in a book the suspension's sweep has already passed.
// The book's writer itself refuses it (Market.isSuspended), with
// 403 account_suspended, and the credit it held goes; the market knows the
// suspended accounts from PostgreSQL when it opens.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { principalOf } from '../accounts/accounts.js';
import type { Principal } from '../accounts/accounts.js';
import { resellLease } from '../leases/lease-commands.js';
import { Market } from '../market/market.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';
import { placeOrder } from './order-commands.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

const noClusters = { clustersOf: () => Promise.resolve([]) };

/** The principal as a request authenticated before the suspension holds it. */
async function authenticated(p: Party): Promise<Principal> {
  const principal = await principalOf(ex.db, p.token);
  if (principal === undefined) throw new Error('no principal');
  return principal;
}

const suspend = (p: Party) =>
  ex.call('POST', `/v1/admin/accounts/${p.accountId}/suspend`, ADMIN_TOKEN, {
    reason: 'fraud review',
  });

describe('an order racing a suspension', () => {
  it('is refused by the book’s writer, holds no credit, and leaves no open order', async () => {
    const b = ex.book();
    const buyer = await ex.party('racing-buyer', { creditLimit: 1000 });
    const stale = await authenticated(buyer);
    expect((await suspend(buyer)).status).toBe(200);

    const outcome = await placeOrder(
      { db: ex.db, market: ex.market, directory: noClusters },
      stale,
      {
        side: 'buy',
        ...b,
        gpu_count: 8,
        duration_hours: 4,
        limit_price: 2,
      },
    );
    expect(outcome).toMatchObject({ ok: false, code: 'account_suspended' });
    const open = await ex.db.query(
      'SELECT id FROM orders WHERE account_id = $1 AND book_state IS NOT NULL',
      [buyer.accountId],
    );
    expect(open).toEqual([]);
    const [held] = await ex.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM credit_holds WHERE account_id = $1',
      [buyer.accountId],
    );
    expect(held?.n).toBe(0);

    // Reinstated: the same request goes through.
    const back = await ex.call(
      'POST',
      `/v1/admin/accounts/${buyer.accountId}/reinstate`,
      ADMIN_TOKEN,
      { reason: 'cleared' },
    );
    expect(back.status).toBe(200);
    const again = await placeOrder(
      { db: ex.db, market: ex.market, directory: noClusters },
      await authenticated(buyer),
      { side: 'buy', ...b, gpu_count: 8, duration_hours: 4, limit_price: 2 },
    );
    expect(again.ok).toBe(true);
  });

  it('a resale racing a suspension is refused the same way', async () => {
    const { buyer, leaseId, book } = await ex.marketLease('racing-resale');
    await ex.leaseReady(leaseId, book);
    const stale = await authenticated(buyer);
    expect((await suspend(buyer)).status).toBe(200);
    const outcome = await resellLease({ db: ex.db, market: ex.market }, stale, leaseId, {
      priceCents: 200,
      transferImmediately: false,
    });
    expect(outcome).toMatchObject({ ok: false, code: 'account_suspended' });
    const [lease] = await ex.db.query<{ status: string }>(
      'SELECT status FROM leases WHERE id = $1',
      [leaseId],
    );
    expect(lease?.status).toBe('active');
  });

  it('a market opened on the database knows the suspended accounts', async () => {
    const p = await ex.party('racing-reopen');
    expect((await suspend(p)).status).toBe(200);
    const other = await Market.open(ex.db, { tickIntervalMs: 0 });
    try {
      expect(other.isSuspended(p.accountId)).toBe(true);
      expect(other.isSuspended('acc_never_suspended')).toBe(false);
    } finally {
      await other.close();
    }
  });
});
