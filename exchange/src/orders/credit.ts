// D3: an optional per-account credit limit. What the account owes (−balance)
// plus the most its open buys can still cost, fee included, never exceeds it.
//
// The most an open buy can still cost is its hold (migration 0009): taken in
// PostgreSQL at acceptance, under a lock on the account's row, so the rule
// holds across books and across exchange processes; lowered as the buy
// fills and dropped when it closes, in the same statement as the ledger rows
// of its fills (change-set.ts).
//
// What a hold covers (docs/api/orders.md "Credit limit"):
// - a limit buy: its remaining GPUs × hours × limit price, plus the fee;
// - a market buy that executes now: the estimate of what it would pay now,
//   plus the fee; its book refuses it (insufficient_funds) when by the time
//   it runs the price has moved past its hold, so it never costs more;
// - an order whose cost cannot be bounded when it is placed (a market buy
//   scheduled for later, a flexible buy without a limit price, which ends at
//   market) is refused for an account with a credit limit: it must name a
//   limit price.
// Each lease of a fill pays its own fee, rounded half-even (D1); one cent
// per node above the fee of the whole covers that rounding, so the charges
// never pass the hold.

import { GPUS_PER_NODE, GpuxError, formatDollars, splitFee } from '@gpux/shared';
import type { Cents } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import { refuse } from '../market/refusal.js';
import type { Refusal } from '../market/refusal.js';
import type { FillRow, OrderRow } from '../market/rows.js';

/** Compute cost plus the platform fee the buyer pays on it (D2). */
export function withFee(computeCents: Cents): Cents {
  return computeCents + splitFee(computeCents).fee;
}

/**
 * The most a buy of `nodes` nodes whose fills cost `computeCents` can be
 * charged: the compute, the fee, and one cent per node for the rounding of
 * each lease's own fee (a step makes at most one lease per node).
 */
export function holdCents(computeCents: Cents, nodes: number): Cents {
  return withFee(computeCents) + nodes;
}

/** The hold of what an open limit buy has left (D3). */
export function remainingHoldCents(row: OrderRow): Cents {
  const nodes = row.remaining_nodes ?? 0;
  const price = row.limit_price_cents ?? 0;
  return holdCents(nodes * GPUS_PER_NODE * row.duration_hours * price, nodes);
}

/**
 * A market buy holding `holdCents`, about to run against a book whose
 * estimate for it now is `est`: refused (insufficient_funds) when its fills
 * would now cost more than its hold; undefined when it may run.
 */
export function priceMovedPastHold(
  est: { readonly computeCostCents: number; readonly sufficientLiquidity: boolean },
  nodes: number,
  heldCents: Cents,
): Refusal | undefined {
  const cost = holdCents(est.computeCostCents, nodes);
  if (!est.sufficientLiquidity || cost <= heldCents) return undefined;
  return refuse(
    'insufficient_funds',
    `the price moved: this buy would now cost up to $${formatDollars(cost).toFixed(2)}, more than the $${formatDollars(heldCents).toFixed(2)} held against the credit limit`,
  );
}

/** What the fills charge the buyer: each lease its compute and its own fee (D2). */
export function chargedCents(
  fills: readonly Pick<FillRow, 'lease_id' | 'price_cents' | 'gpus' | 'hours'>[],
): Cents {
  const perLease = new Map<string, number>();
  for (const f of fills) {
    perLease.set(f.lease_id, (perLease.get(f.lease_id) ?? 0) + f.price_cents * f.gpus * f.hours);
  }
  let charged = 0;
  for (const compute of perLease.values()) charged += withFee(compute);
  return charged;
}

/**
 * A held buy's hold after its order changed: undefined when unchanged, 0
 * when the order closed (the hold goes), else what it has left, never more.
 */
export function holdAfter(row: OrderRow, held: Cents, closed: boolean): Cents | undefined {
  if (closed) return 0;
  if (row.filled_gpus === 0) return undefined;
  const left = remainingHoldCents(row);
  return left < held ? left : undefined;
}

/** Why an order of a credit-limited account cannot be held, or undefined. */
export function unboundedCost(row: OrderRow, startGiven: boolean): string | undefined {
  if (row.side !== 'buy' || row.limit_price_cents !== null) return undefined;
  if (row.flexible_window_hours !== null) {
    return 'a flexible buy without a limit price ends at market, so its cost has no bound; an account with a credit limit must give limit_price';
  }
  if (startGiven) {
    return 'a market buy that starts later has no bound on its cost; an account with a credit limit must give limit_price';
  }
  return undefined;
}

export function insufficientFunds(hold: Cents, detail: string): GpuxError {
  return new GpuxError(
    'insufficient_funds',
    `this order could cost up to $${formatDollars(hold).toFixed(2)} with the fee; ${detail}`,
  );
}

interface HoldRow {
  granted: boolean | null;
  limit_cents: number | null;
  owed_cents: number | null;
  held_cents: number | null;
}

/**
 * Hold `cents` for the order, or refuse with insufficient_funds. Returns
 * false when the account has no credit limit (nothing was held).
 */
export async function holdCredit(
  db: Queryable,
  order: Pick<OrderRow, 'id' | 'account_id' | 'gpu_type' | 'zone'>,
  cents: Cents,
  nowMs: number,
): Promise<boolean> {
  const [r] = await db.query<HoldRow>(
    'SELECT granted, limit_cents, owed_cents, held_cents FROM gpux_hold_credit($1, $2, $3, $4, $5, $6)',
    [order.account_id, order.id, order.gpu_type, order.zone, cents, nowMs],
    { name: 'gpux_hold_credit' },
  );
  if (r === undefined || r.granted === null) return false;
  if (!r.granted) {
    const owed = r.owed_cents ?? 0;
    const held = r.held_cents ?? 0;
    throw insufficientFunds(
      cents,
      `the account owes $${formatDollars(owed).toFixed(2)} and its open buys hold ` +
        `$${formatDollars(held).toFixed(2)}, so it would pass its credit limit of ` +
        `$${formatDollars(r.limit_cents ?? 0).toFixed(2)}`,
    );
  }
  return true;
}

/** Drop a hold whose order never reached its book (its batch failed). */
export async function releaseCredit(db: Queryable, orderId: string): Promise<void> {
  await db.query('DELETE FROM credit_holds WHERE order_id = $1', [orderId]);
}

/**
 * Holds older than `graceMs` whose order is not open: left by a process that
 * stopped between the hold and its order's commit. The grace keeps another
 * process's hold that is still on its way to its book.
 */
export async function purgeStaleHolds(
  db: Queryable,
  nowMs: number,
  graceMs = 600_000,
): Promise<number> {
  const rows = await db.query(
    `DELETE FROM credit_holds h WHERE h.created_ms < $1
        AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = h.order_id AND o.book_state IS NOT NULL)
      RETURNING 1`,
    [nowMs - graceMs],
  );
  return rows.length;
}
