// The double-entry ledger (D1-D3). Every movement of money is one balanced
// ledger transaction; the database refuses an unbalanced one at commit
// (migrations/0001), and this module refuses it before it gets there.

import type { Cents } from '@gpux/shared';

import type { Queryable } from '../db/database.js';

/** The platform's own account: both fees go there (D2). */
export const PLATFORM_ACCOUNT_ID = 'acc_platform';

/**
 * Money paid out of the exchange to providers (issue 21, docs/api/admin.md):
 * the other side of every payout, so the ledger still sums to zero. Its
 * balance is everything ever paid out. Made, in the platform's organization,
 * by the first payout (ledger/admin-postings.ts).
 */
export const PAYOUTS_ACCOUNT_ID = 'acc_payouts';

/** What each ledger entry (one account's side of a movement of money) is. */
export const ENTRY_KINDS = [
  /** Buyer pays the compute cost of a fill. */
  'buyer_charge',
  /** Buyer pays the platform fee on top (D2). */
  'buyer_fee',
  /** Seller (provider or reseller) is owed the compute cost of the fill... */
  'seller_proceeds',
  /** ...less the platform fee (D2: the seller receives 90 %). */
  'seller_fee',
  /** Platform's side of either fee. */
  'platform_fee',
  /** Refund of unused time to the buyer, and the seller's matching reversal (D4, D26). */
  'refund',
  'refund_reversal',
  /** The platform gives back its fee on refunded time (D26) or on a failed lease (D25). */
  'fee_refund',
  /** An operator's credit (an outage, goodwill) or correction, and the platform's side of it. */
  'adjustment',
  /** A provider's earnings paid out of the exchange, and the payouts account's side of it. */
  'payout',
] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** What each ledger transaction (one balanced movement of money) is. */
export const TRANSACTION_KINDS = [
  /** A fill made a lease: the buyer pays, the seller is owed, the platform takes its fees (D2). */
  'lease_charge',
  /** The lease was terminated: its unused time is refunded (D26). */
  'lease_refund',
  /** The provider could not provision the lease: everything is refunded (D25). */
  'lease_failed',
  /** A resold lease: the reseller is refunded the hours nobody uses (D27). */
  'resale_refund',
  /** An operator credited (or debited) an account against the platform's account. */
  'adjustment',
  /** An operator recorded a payout of a provider's earnings. */
  'payout',
] as const;
export type TransactionKind = (typeof TRANSACTION_KINDS)[number];

export interface Posting {
  readonly accountId: string;
  readonly kind: EntryKind;
  /** Positive: the account is owed money; negative: it owes. Integer cents. */
  readonly amountCents: Cents;
}

export interface LedgerTransaction {
  /** txn_… */
  readonly id: string;
  readonly kind: TransactionKind;
  readonly orderId?: string | undefined;
  readonly leaseId?: string | undefined;
  readonly postings: readonly Posting[];
}

export class LedgerError extends Error {
  override readonly name = 'LedgerError';
}

/** Throws unless the postings are integer cents, non-zero, and sum to zero. */
export function assertBalanced(postings: readonly Posting[]): void {
  if (postings.length < 2) throw new LedgerError('a ledger transaction needs two postings or more');
  let sum = 0;
  for (const p of postings) {
    if (!Number.isSafeInteger(p.amountCents) || p.amountCents === 0) {
      throw new LedgerError(
        `posting ${p.kind} of ${p.accountId}: ${p.amountCents} is not a non-zero integer of cents`,
      );
    }
    sum += p.amountCents;
  }
  if (sum !== 0) throw new LedgerError(`postings sum to ${sum}, not 0`);
}

/** An account's balance: the sum of its entries (D33). */
export async function balanceOf(q: Queryable, accountId: string): Promise<Cents> {
  const [row] = await q.query<{ balance: number }>(
    'SELECT COALESCE(SUM(amount_cents), 0)::bigint AS balance FROM ledger_entries WHERE account_id = $1',
    [accountId],
  );
  return row?.balance ?? 0;
}

/** Σ over every account, the platform's included: always 0 (D3). */
export async function ledgerTotal(q: Queryable): Promise<Cents> {
  const [row] = await q.query<{ total: number }>(
    'SELECT COALESCE(SUM(amount_cents), 0)::bigint AS total FROM ledger_entries',
  );
  return row?.total ?? 0;
}

export interface EntryView {
  readonly transactionId: string;
  readonly transactionKind: TransactionKind;
  readonly kind: EntryKind;
  readonly amountCents: Cents;
  readonly orderId: string | null;
  readonly leaseId: string | null;
  readonly createdAt: Date;
}

/** D33: an account's ledger rows, newest first, and how many there are. */
export async function entriesOf(
  q: Queryable,
  accountId: string,
  limit: number,
  offset: number,
): Promise<{ entries: EntryView[]; total: number }> {
  const rows = await q.query<{
    transaction_id: string;
    transaction_kind: TransactionKind;
    kind: EntryKind;
    amount_cents: number;
    order_id: string | null;
    lease_id: string | null;
    created_at: Date;
  }>(
    // Issue 24: each row points at objects its account can read. A
    // transaction names the lease holder's order and lease; a seller's side
    // of it (a provider, or a reseller) names instead the seller's own sell
    // order that filled into the lease, and a reseller's own lease the new
    // one was sold from. A provider's side keeps the lease, which it reads in
    // GET /v1/clusters/{id}.
    `SELECT e.transaction_id, t.kind AS transaction_kind, e.kind, e.amount_cents, e.created_at,
            CASE WHEN l.account_id IS NULL OR l.account_id = e.account_id THEN t.order_id
                 ELSE COALESCE(
                   (SELECT f.sell_order_id FROM fills f JOIN orders o ON o.id = f.sell_order_id
                     WHERE f.lease_id = t.lease_id AND o.account_id = e.account_id
                     ORDER BY f.book_seq LIMIT 1),
                   t.order_id) END AS order_id,
            CASE WHEN l.account_id IS NULL OR l.account_id = e.account_id THEN t.lease_id
                 WHEN src.account_id = e.account_id THEN src.id
                 ELSE t.lease_id END AS lease_id
       FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
       LEFT JOIN leases l ON l.id = t.lease_id
       LEFT JOIN leases src ON src.id = l.source_lease_id
      WHERE e.account_id = $1
      ORDER BY e.id DESC LIMIT $2 OFFSET $3`,
    [accountId, limit, offset],
  );
  const [count] = await q.query<{ n: number }>(
    'SELECT count(*)::bigint AS n FROM ledger_entries WHERE account_id = $1',
    [accountId],
  );
  return {
    entries: rows.map((r) => ({
      transactionId: r.transaction_id,
      transactionKind: r.transaction_kind,
      kind: r.kind,
      amountCents: r.amount_cents,
      orderId: r.order_id,
      leaseId: r.lease_id,
      createdAt: r.created_at,
    })),
    total: count?.n ?? 0,
  };
}
