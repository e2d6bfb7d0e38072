// The postings of every movement of money the market makes (D2, D3, D25-D27):
// pure functions from amounts to balanced postings. Each result sums to zero
// and leaves out zero amounts (a fill too small for a fee has none).

import { PLATFORM_FEE_PERCENT, splitFee } from '@gpux/shared';
import type { Cents } from '@gpux/shared';

import { LedgerError, PAYOUTS_ACCOUNT_ID, PLATFORM_ACCOUNT_ID } from './ledger.js';
import type { Posting } from './ledger.js';

function nonZero(postings: Posting[]): Posting[] {
  return postings.filter((p) => p.amountCents !== 0);
}

/**
 * D2: the postings of one lease worth `computeCents`: the buyer pays it plus
 * the fee, the seller is owed it less the fee, the platform gets both fees.
 */
export function fillPostings(
  buyerAccountId: string,
  sellerAccountId: string,
  computeCents: Cents,
): Posting[] {
  const { fee } = splitFee(computeCents, PLATFORM_FEE_PERCENT);
  return nonZero([
    { accountId: buyerAccountId, kind: 'buyer_charge', amountCents: -computeCents },
    { accountId: buyerAccountId, kind: 'buyer_fee', amountCents: -fee },
    { accountId: sellerAccountId, kind: 'seller_proceeds', amountCents: computeCents },
    { accountId: sellerAccountId, kind: 'seller_fee', amountCents: -fee },
    { accountId: PLATFORM_ACCOUNT_ID, kind: 'platform_fee', amountCents: 2 * fee },
  ]);
}

/**
 * D26 / D27: `cents` of unused time back to the lease's holder, taken back
 * from whoever was paid for it: the seller's share and the platform's fee on
 * it. Empty when there is nothing to refund.
 */
export function refundPostings(
  holderAccountId: string,
  sellerAccountId: string,
  cents: Cents,
): Posting[] {
  if (cents <= 0) return [];
  const { fee, payout } = splitFee(cents);
  return nonZero([
    { accountId: holderAccountId, kind: 'refund', amountCents: cents },
    { accountId: sellerAccountId, kind: 'refund_reversal', amountCents: -payout },
    { accountId: PLATFORM_ACCOUNT_ID, kind: 'fee_refund', amountCents: -fee },
  ]);
}

/**
 * D25: the provider could not provision the lease: the buyer gets back all
 * it paid (compute and fee), the seller returns its payout, the platform
 * both fees. `feeCents` is the fee charged on each side at the fill.
 */
export function failurePostings(
  buyerAccountId: string,
  sellerAccountId: string,
  computeCents: Cents,
  feeCents: Cents,
): Posting[] {
  return nonZero([
    { accountId: buyerAccountId, kind: 'refund', amountCents: computeCents + feeCents },
    {
      accountId: sellerAccountId,
      kind: 'refund_reversal',
      amountCents: -(computeCents - feeCents),
    },
    { accountId: PLATFORM_ACCOUNT_ID, kind: 'fee_refund', amountCents: -2 * feeCents },
  ]);
}

/**
 * An operator's adjustment (docs/api/admin.md): `cents` to the account
 * (positive: a credit, an outage's or goodwill's; negative: a correction),
 * the platform's account on the other side.
 */
export function adjustmentPostings(accountId: string, cents: Cents): Posting[] {
  if (cents === 0) throw new LedgerError('an adjustment moves money: it cannot be 0');
  if (accountId === PLATFORM_ACCOUNT_ID || accountId === PAYOUTS_ACCOUNT_ID) {
    throw new LedgerError(`${accountId} cannot be adjusted against the platform`);
  }
  return [
    { accountId, kind: 'adjustment', amountCents: cents },
    { accountId: PLATFORM_ACCOUNT_ID, kind: 'adjustment', amountCents: -cents },
  ];
}

/**
 * A payout (docs/api/admin.md): `cents` of the account's earnings leave the
 * exchange; the payouts account holds what was paid out.
 */
export function payoutPostings(accountId: string, cents: Cents): Posting[] {
  if (cents <= 0) throw new LedgerError('a payout is a positive amount');
  if (accountId === PLATFORM_ACCOUNT_ID || accountId === PAYOUTS_ACCOUNT_ID) {
    throw new LedgerError(`${accountId} is not paid out`);
  }
  return [
    { accountId, kind: 'payout', amountCents: -cents },
    { accountId: PAYOUTS_ACCOUNT_ID, kind: 'payout', amountCents: cents },
  ];
}
