// Placing and cancelling orders: the request's checks, then the book's
// single writer (docs/architecture.md flow 1). Routes turn the outcomes into
// views and errors.

import { GPUS_PER_NODE, GpuxError } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import type { Queryable } from '../db/database.js';
import type { PlaceOutcome } from '../market/book-state.js';
import type { AfterCommand } from '../market/book-writer.js';
import type { ChangeSet } from '../market/change-set.js';
import type { Market } from '../market/market.js';
import { orderOf } from '../market/queries.js';
import { refuse } from '../market/refusal.js';
import type { Refusal } from '../market/refusal.js';
import type { OrderRow } from '../market/rows.js';
import { holdCents, holdCredit, releaseCredit, unboundedCost } from './credit.js';
import { orderIntake } from './intake.js';
import type { ClusterLookup, OrderRequest } from './intake.js';

export interface OrderContext {
  readonly db: Queryable;
  readonly market: Market;
  readonly directory: ClusterLookup;
}

export async function placeOrder(
  { db, market, directory }: OrderContext,
  caller: Principal,
  request: OrderRequest,
  after?: AfterCommand<PlaceOutcome>,
): Promise<PlaceOutcome> {
  const row = await orderIntake(directory, caller, request);
  const writer = market.writer(row.gpu_type, row.zone);
  const startGiven = request.start_time !== undefined;
  let hold: number | undefined;
  if (row.side === 'buy' && caller.creditLimitCents !== null) {
    hold = await holdFor(db, market, row, startGiven);
  }
  if (row.cluster_id !== null) await writer.ensureCluster(row.cluster_id);
  try {
    return await writer.submit((state, changes) => {
      const now = market.clock.now();
      row.created_ms = now;
      if (!startGiven) row.start_ms = now;
      const outcome = market.isSuspended(caller.accountId)
        ? suspendedRefusal(row, changes, hold)
        : state.place(row, now, changes, hold);
      after?.(outcome, changes);
      return outcome;
    });
  } catch (err) {
    // The batch was lost: its order never reached the book, nor its hold's end.
    if (hold !== undefined) await releaseCredit(db, row.id);
    throw err;
  }
}

/**
 * An operator suspended the account after its request was let in (the
 * operators' API): the book's writer refuses the order, and drops the
 * credit it held.
 */
function suspendedRefusal(row: OrderRow, changes: ChangeSet, hold?: number): Refusal {
  if (hold !== undefined) changes.hold(row.id, 0);
  return refuse('account_suspended', `account ${row.account_id} is suspended`);
}

/**
 * D3: hold the most the buy can cost against the account's credit limit
 * (orders/credit.ts), or refuse it. Undefined when the account has no limit.
 */
async function holdFor(
  db: Queryable,
  market: Market,
  row: OrderRow,
  startGiven: boolean,
): Promise<number | undefined> {
  const nodes = row.gpu_count / GPUS_PER_NODE;
  const unbounded = unboundedCost(row, startGiven);
  if (unbounded !== undefined) throw new GpuxError('insufficient_funds', unbounded);
  const compute =
    row.limit_price_cents !== null
      ? row.gpu_count * row.duration_hours * row.limit_price_cents
      : market.writer(row.gpu_type, row.zone).view.book.estimate(
          {
            nodes,
            durationHours: row.duration_hours,
            accountId: row.account_id,
            orgId: row.organization_id,
          },
          market.clock.now(),
        ).computeCostCents;
  const cents = holdCents(compute, nodes);
  const held = await holdCredit(db, row, cents, market.clock.now());
  return held ? cents : undefined;
}

export interface Cancellation {
  readonly ok: true;
  readonly orderId: string;
  readonly cancelledGpus: number;
  readonly cancelledAt: number;
  /** Set when the order was cancelled before this request (DELETE is idempotent). */
  readonly cancelReason?: OrderRow['cancel_reason'];
}

/** DELETE /v1/orders/{id}: only pending or partially filled orders can be cancelled. */
export async function cancelOrder(
  { db, market }: Pick<OrderContext, 'db' | 'market'>,
  accountId: string,
  orderId: string,
  after?: AfterCommand<Cancellation | Refusal>,
): Promise<Cancellation | Refusal> {
  const row = await orderOf(db, accountId, orderId);
  if (row === undefined) return refuse('not_found', `no order ${orderId}`);
  if (row.book_state !== null) {
    const outcome = await market.writer(row.gpu_type, row.zone).submit((state, changes) => {
      const c = state.cancel(orderId, accountId, market.clock.now(), changes);
      if (!c.ok) return c;
      const cancelled: Cancellation = { ...c, orderId };
      after?.(cancelled, changes);
      return cancelled;
    });
    if (outcome.ok) return outcome;
  }
  // Closed before this request got to it: say how.
  const closed = await orderOf(db, accountId, orderId);
  if (closed === undefined) return refuse('not_found', `no order ${orderId}`);
  if (closed.status === 'cancelled') {
    return {
      ok: true,
      orderId,
      cancelledGpus: closed.cancelled_gpus,
      cancelledAt: closed.cancelled_ms ?? closed.created_ms,
      cancelReason: closed.cancel_reason,
    };
  }
  return refuse(
    'order_already_filled',
    `order ${orderId} is fully filled; to give up its GPUs, terminate the lease (DELETE /v1/leases/{lease_id}) or resell it`,
  );
}
