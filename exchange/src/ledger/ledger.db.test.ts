import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { OPEN_TIMEOUT_MS, TEST_ENGINES } from '../db/testing/fresh-database.js';
import { PAYOUTS_ACCOUNT_ID, PLATFORM_ACCOUNT_ID, balanceOf, ledgerTotal } from './ledger.js';
import type { Posting, TransactionKind } from './ledger.js';
import { adjustmentPostings, fillPostings, payoutPostings } from './postings.js';
import { postTransaction as post } from './testing/post-transaction.js';

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
  }, OPEN_TIMEOUT_MS);
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
            await db.transaction((tx) =>
              post(tx, { id: `txn_${++txn}`, kind: 'lease_charge', postings }),
            );
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

  it('after any mix of fills, adjustments and payouts, still sums to zero (issue 21)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant('lease_charge' as const),
              buyer: fc.constantFrom(...ACCOUNTS),
              seller: fc.constantFrom(...ACCOUNTS),
              cents: fc.integer({ min: 1, max: 10_000_000 }),
            }),
            fc.record({
              kind: fc.constant('adjustment' as const),
              buyer: fc.constantFrom(...ACCOUNTS),
              seller: fc.constant(''),
              cents: fc.integer({ min: -1_000_000, max: 1_000_000 }).filter((c) => c !== 0),
            }),
            fc.record({
              kind: fc.constant('payout' as const),
              buyer: fc.constant(''),
              seller: fc.constantFrom(...ACCOUNTS),
              cents: fc.integer({ min: 1, max: 1_000_000 }),
            }),
          ),
          { minLength: 1, maxLength: 10 },
        ),
        async (moves) => {
          const before = new Map<string, number>();
          for (const a of [...ACCOUNTS, PLATFORM_ACCOUNT_ID, PAYOUTS_ACCOUNT_ID]) {
            before.set(a, await balanceOf(db, a));
          }
          const expected = new Map(before);
          for (const m of moves) {
            const postings: Posting[] =
              m.kind === 'lease_charge'
                ? fillPostings(m.buyer, m.seller, m.cents)
                : m.kind === 'adjustment'
                  ? adjustmentPostings(m.buyer, m.cents)
                  : payoutPostings(m.seller, m.cents);
            const kind: TransactionKind = m.kind;
            await db.transaction((tx) => post(tx, { id: `txn_${++txn}`, kind, postings }));
            for (const p of postings) {
              expected.set(p.accountId, (expected.get(p.accountId) ?? 0) + p.amountCents);
            }
          }
          expect(await ledgerTotal(db)).toBe(0);
          for (const [account, cents] of expected) {
            expect(await balanceOf(db, account)).toBe(cents);
          }
        },
      ),
      { seed: 21, numRuns: 15 },
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
      post(tx, {
        id: 'txn_ok',
        kind: 'lease_charge',
        postings: fillPostings('acc_a', 'acc_c', 1000),
      }),
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
      post(tx, {
        id: 'txn_keep',
        kind: 'lease_charge',
        postings: fillPostings('acc_a', 'acc_c', 1000),
      }),
    );
    await expect(db.query('UPDATE ledger_entries SET amount_cents = 1')).rejects.toThrow(
      /append-only/,
    );
    await expect(db.query('DELETE FROM ledger_entries')).rejects.toThrow(/append-only/);
    expect(await ledgerTotal(db)).toBe(0);
  });
});
