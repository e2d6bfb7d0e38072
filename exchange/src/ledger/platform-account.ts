// The platform's own account (D2: both fees go there), as operators see it
// through the admin API: what it earned in fees and what it gave back.

import type { Cents } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import { PLATFORM_ACCOUNT_ID } from './ledger.js';

export interface PlatformTotals {
  /** Σ of its entries: fees earned less fees refunded (D3). */
  readonly balanceCents: Cents;
  /** Σ of its `platform_fee` entries (D2): the buyer's and the seller's fee of every fill. */
  readonly feesEarnedCents: Cents;
  /** −Σ of its `fee_refund` entries (D25, D26): fees given back, as a positive amount. */
  readonly feesRefundedCents: Cents;
}

export async function platformTotals(q: Queryable): Promise<PlatformTotals> {
  const rows = await q.query<{ kind: string; cents: number }>(
    `SELECT kind, COALESCE(SUM(amount_cents), 0)::bigint AS cents
       FROM ledger_entries WHERE account_id = $1 GROUP BY kind`,
    [PLATFORM_ACCOUNT_ID],
  );
  let balance = 0;
  let earned = 0;
  let refunded = 0;
  for (const r of rows) {
    balance += r.cents;
    if (r.kind === 'platform_fee') earned += r.cents;
    if (r.kind === 'fee_refund') refunded -= r.cents;
  }
  return { balanceCents: balance, feesEarnedCents: earned, feesRefundedCents: refunded };
}
