// The money page of the console (issue 23, GET /v1/admin/platform/days):
// the platform account's fees, fee refunds and adjustments per UTC day,
// the refunds and payouts of that day, and the ledger's sum-to-zero check
// (D3): every day's entries, and all entries ever, add up to zero, and no
// transaction is unbalanced. It reads the whole ledger: an operator's page,
// not a hot path.

import type { Queryable } from '../db/database.js';
import { PAYOUTS_ACCOUNT_ID, PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';

export interface PlatformDay {
  readonly day: string;
  readonly fees: number;
  readonly fee_refunds: number;
  readonly adjustments: number;
  readonly platform_net: number;
  readonly refunds: number;
  readonly payouts: number;
  readonly transactions: number;
  readonly ledger_sum: number;
}

export interface PlatformDays {
  readonly days: PlatformDay[];
  readonly ledger: {
    readonly sum: number;
    readonly entries: number;
    readonly unbalanced_transactions: number;
    readonly balanced: boolean;
  };
}

const dollars = (cents: string | null): number => Number(cents ?? 0) / 100;

export async function platformDays(q: Queryable, days: number): Promise<PlatformDays> {
  const [rows, [total], [unbalanced]] = await Promise.all([
    q.query<{
      day: string;
      fees: string | null;
      fee_refunds: string | null;
      adjustments: string | null;
      platform_net: string | null;
      refunds: string | null;
      payouts: string | null;
      transactions: number;
      ledger_sum: string;
    }>(
      `SELECT to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
              sum(e.amount_cents) FILTER (WHERE e.account_id = $1 AND e.kind = 'platform_fee')::text AS fees,
              sum(e.amount_cents) FILTER (WHERE e.account_id = $1 AND e.kind = 'fee_refund')::text AS fee_refunds,
              sum(e.amount_cents) FILTER (WHERE e.account_id = $1 AND e.kind = 'adjustment')::text AS adjustments,
              sum(e.amount_cents) FILTER (WHERE e.account_id = $1)::text AS platform_net,
              sum(e.amount_cents) FILTER (WHERE e.kind = 'refund')::text AS refunds,
              sum(e.amount_cents) FILTER (WHERE e.account_id = $2)::text AS payouts,
              count(DISTINCT e.transaction_id)::int AS transactions,
              sum(e.amount_cents)::text AS ledger_sum
         FROM ledger_entries e
        WHERE e.created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                              - make_interval(days => $3 - 1)
        GROUP BY 1 ORDER BY 1 DESC`,
      [PLATFORM_ACCOUNT_ID, PAYOUTS_ACCOUNT_ID, days],
    ),
    q.query<{ sum: string; entries: number }>(
      'SELECT COALESCE(sum(amount_cents), 0)::text AS sum, count(*)::int AS entries FROM ledger_entries',
    ),
    q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT transaction_id FROM ledger_entries
        GROUP BY transaction_id HAVING sum(amount_cents) <> 0) u`,
    ),
  ]);
  const sum = dollars(total?.sum ?? '0');
  const bad = unbalanced?.n ?? 0;
  return {
    days: rows.map((r) => ({
      day: r.day,
      fees: dollars(r.fees),
      fee_refunds: dollars(r.fee_refunds),
      adjustments: dollars(r.adjustments),
      platform_net: dollars(r.platform_net),
      refunds: dollars(r.refunds),
      payouts: dollars(r.payouts),
      transactions: r.transactions,
      ledger_sum: dollars(r.ledger_sum),
    })),
    ledger: {
      sum,
      entries: total?.entries ?? 0,
      unbalanced_transactions: bad,
      balanced: sum === 0 && bad === 0,
    },
  };
}
