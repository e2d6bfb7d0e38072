import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { TEST_ENGINES } from '../db/testing/fresh-database.js';
import {
  LedgerError,
  PLATFORM_ACCOUNT_ID,
  assertBalanced,
  balanceOf,
  fillPostings,
  ledgerTotal,
  post,
} from './ledger.js';

const cents = fc.integer({ min: 1, max: 50_000_000_000 });

describe('fillPostings (D2: the buyer pays compute + 10 %, the seller gets 90 %)', () => {
  it('balances, and splits the fee as D2 says', () => {
    fc.assert(
      fc.property(cents, (compute) => {
        const ps = fillPostings('buyer', 'seller', compute);
        assertBalanced(ps);
        const sumOf = (account: string): number =>
          ps.filter((p) => p.accountId === account).reduce((s, p) => s + p.amountCents, 0);
        // D1/D2: 10 % of the compute cost, rounded half-even to the cent.
        const q = Math.floor(compute / 10);
        const r = compute % 10;
        const fee = r > 5 || (r === 5 && q % 2 === 1) ? q + 1 : q;
        expect(sumOf('buyer')).toBe(-(compute + fee));
        expect(sumOf('seller')).toBe(compute - fee);
        expect(sumOf(PLATFORM_ACCOUNT_ID)).toBe(2 * fee);
      }),
      { seed: 7, numRuns: 500 },
    );
  });

  it('rounds the fee half-even to the cent (D1): 10 % of 125 c is 12 c, of 135 c is 14 c', () => {
    const fee = (c: number): number =>
      fillPostings('b', 's', c)
        .filter((p) => p.kind === 'buyer_fee')
        .reduce((s, p) => s - p.amountCents, 0);
    expect(fee(125)).toBe(12);
    expect(fee(135)).toBe(14);
    expect(fee(4)).toBe(0);
    expect(fillPostings('b', 's', 4).map((p) => p.kind)).toEqual([
      'buyer_charge',
      'seller_proceeds',
    ]);
  });

  it('refuses unbalanced, fractional or empty postings', () => {
    expect(() => assertBalanced([{ accountId: 'a', kind: 'refund', amountCents: 5 }])).toThrow(
      LedgerError,
    );
    expect(() =>
      assertBalanced([
        { accountId: 'a', kind: 'refund', amountCents: 5 },
        { accountId: 'b', kind: 'refund_reversal', amountCents: -4 },
      ]),
    ).toThrow(/sum/);
    expect(() =>
      assertBalanced([
        { accountId: 'a', kind: 'refund', amountCents: 0.5 },
        { accountId: 'b', kind: 'refund_reversal', amountCents: -0.5 },
      ]),
    ).toThrow(/integer/);
  });
});

const ACCOUNTS = ['acc_a', 'acc_b', 'acc_c', 'acc_d'];

describe.each(TEST_ENGINES)('the ledger on %s (D3)', (_name, open) => {
  let db: Database;
  let done: () => Promise<void>;
  let txn = 0;
  beforeAll(async () => {
    ({ db, done } = await open());
    await migrate(db);
    await db.exec(
      "INSERT INTO organizations (id, name) VALUES ('org_x', 'x'), ('org_y', 'y');" +
        "INSERT INTO accounts (id, organization_id, name) VALUES ('acc_a', 'org_x', 'a'), ('acc_b', 'org_x', 'b'), ('acc_c', 'org_y', 'c'), ('acc_d', 'org_y', 'd');",
    );
  });
  afterAll(async () => {
    await done();
  });

  it('after any sequence of fills, sums to zero and each balance is the sum of its rows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            buyer: fc.constantFrom(...ACCOUNTS),
            seller: fc.constantFrom(...ACCOUNTS),
            compute: fc.integer({ min: 1, max: 10_000_000 }),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        async (fills) => {
          const expected = new Map<string, number>();
          for (const f of fills) {
            const postings = fillPostings(f.buyer, f.seller, f.compute);
            await db.transaction((tx) => post(tx, { id: `txn_${++txn}`, kind: 'fill', postings }));
            for (const p of postings) {
              expected.set(p.accountId, (expected.get(p.accountId) ?? 0) + p.amountCents);
            }
          }
          expect(await ledgerTotal(db)).toBe(0);
          for (const account of [...ACCOUNTS, PLATFORM_ACCOUNT_ID]) {
            const rows = await db.query<{ amount_cents: number }>(
              'SELECT amount_cents FROM ledger_entries WHERE account_id = $1',
              [account],
            );
            expect(await balanceOf(db, account)).toBe(rows.reduce((s, r) => s + r.amount_cents, 0));
          }
          return expected.size > 0;
        },
      ),
      { seed: 11, numRuns: 15 },
    );
  });

  it('the database itself refuses a statement that leaves a transaction unbalanced (migration 0006)', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO ledger_transactions (id, kind) VALUES ('txn_bad', 'fill')");
        await tx.query(
          "INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents) VALUES ('txn_bad', 'acc_a', 'buyer_charge', -100)",
        );
      }),
    ).rejects.toThrow(/does not balance/);
    expect(await db.query("SELECT 1 FROM ledger_transactions WHERE id = 'txn_bad'")).toEqual([]);
    // Nor can a later statement unbalance a balanced transaction.
    await db.transaction((tx) =>
      post(tx, { id: 'txn_ok', kind: 'fill', postings: fillPostings('acc_a', 'acc_c', 1000) }),
    );
    await expect(
      db.query(
        "INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents) VALUES ('txn_ok', 'acc_a', 'buyer_charge', -1)",
      ),
    ).rejects.toThrow(/does not balance/);
    expect(await ledgerTotal(db)).toBe(0);
  });

  it('is append-only: no entry can be changed or deleted', async () => {
    await db.transaction((tx) =>
      post(tx, { id: 'txn_keep', kind: 'fill', postings: fillPostings('acc_a', 'acc_c', 1000) }),
    );
    await expect(db.query('UPDATE ledger_entries SET amount_cents = 1')).rejects.toThrow(
      /append-only/,
    );
    await expect(db.query('DELETE FROM ledger_entries')).rejects.toThrow(/append-only/);
    expect(await ledgerTotal(db)).toBe(0);
  });
});
