import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { LedgerError, PAYOUTS_ACCOUNT_ID, PLATFORM_ACCOUNT_ID, assertBalanced } from './ledger.js';
import {
  adjustmentPostings,
  failurePostings,
  fillPostings,
  payoutPostings,
  refundPostings,
} from './postings.js';

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

describe('refundPostings (D26) and failurePostings (D25)', () => {
  it('balance for any amounts, and give the holder exactly the refund', () => {
    fc.assert(
      fc.property(cents, (refund) => {
        const ps = refundPostings('holder', 'seller', refund);
        assertBalanced(ps);
        expect(ps.filter((p) => p.accountId === 'holder').map((p) => p.amountCents)).toEqual([
          refund,
        ]);
      }),
      { seed: 8, numRuns: 300 },
    );
  });

  it('refund nothing for a zero refund', () => {
    expect(refundPostings('holder', 'seller', 0)).toEqual([]);
  });

  it("give a failed lease's buyer back compute and fee, and take both fees from the platform", () => {
    const ps = failurePostings('buyer', 'seller', 10_000, 1_000);
    assertBalanced(ps);
    const of = (a: string): number =>
      ps.filter((p) => p.accountId === a).reduce((s, p) => s + p.amountCents, 0);
    expect(of('buyer')).toBe(11_000);
    expect(of('seller')).toBe(-9_000);
    expect(of(PLATFORM_ACCOUNT_ID)).toBe(-2_000);
  });
});

describe('an operator’s adjustments and payouts (docs/api/admin.md)', () => {
  it('an adjustment moves the amount between the account and the platform, either way', () => {
    fc.assert(
      fc.property(cents, fc.boolean(), (c, credit) => {
        const amount = credit ? c : -c;
        const ps = adjustmentPostings('acc_x', amount);
        assertBalanced(ps);
        expect(ps).toEqual([
          { accountId: 'acc_x', kind: 'adjustment', amountCents: amount },
          { accountId: PLATFORM_ACCOUNT_ID, kind: 'adjustment', amountCents: -amount },
        ]);
      }),
      { seed: 21, numRuns: 200 },
    );
    expect(() => adjustmentPostings('acc_x', 0)).toThrow(LedgerError);
    expect(() => adjustmentPostings(PLATFORM_ACCOUNT_ID, 100)).toThrow(LedgerError);
  });

  it('a payout takes a positive amount out of the account into the payouts account', () => {
    fc.assert(
      fc.property(cents, (c) => {
        const ps = payoutPostings('acc_x', c);
        assertBalanced(ps);
        expect(ps).toEqual([
          { accountId: 'acc_x', kind: 'payout', amountCents: -c },
          { accountId: PAYOUTS_ACCOUNT_ID, kind: 'payout', amountCents: c },
        ]);
      }),
      { seed: 22, numRuns: 200 },
    );
    for (const bad of [0, -1]) expect(() => payoutPostings('acc_x', bad)).toThrow(LedgerError);
    expect(() => payoutPostings(PAYOUTS_ACCOUNT_ID, 100)).toThrow(LedgerError);
  });
});
