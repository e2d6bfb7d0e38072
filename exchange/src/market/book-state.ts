// Everything one book owns, in memory, changed by its single writer only:
// the matching engine's book, its open orders' rows, its clusters' node
// capacity (capacity.ts) and its live leases (book-leases.ts); the state and
// how engine events become rows are in book-core.ts, the commands here.
// Commands run synchronously, record what they changed in a ChangeSet, which
// the writer commits (book-writer.ts), and return rows and typed outcomes: a
// refusal is returned (refusal.ts), a throw is a bug that costs the book a
// rebuild.
//
// Order rules: D3 (credit holds), D9-D17 (the engine), D31 (capacity).
// Lease rules: book-leases.ts.

import { GPUS_PER_NODE, InvariantError } from '@gpux/shared';
import type { CancelReason } from '@gpux/shared';

import { resaleOrder } from '../leases/resale.js';
import { chargedCents, priceMovedPastHold } from '../orders/credit.js';
import type { ResaleRequest } from '../leases/resale.js';
import { BookCore } from './book-core.js';
import { BookLeases } from './book-leases.js';
import type { LiveLease } from './book-leases.js';
import { freeNodes, sellRefusal, setNodeStatus } from './capacity.js';
import type { NodeState } from './capacity.js';
import type { ChangeSet } from './change-set.js';
import { notActive, refuse, refuseOrder } from './refusal.js';
import { inputOf } from './rows.js';
import type { OrderRow } from './rows.js';
import type {
  CancelOutcome,
  OperatorLeaseOutcome,
  PlaceOutcome,
  ResellOutcome,
  TerminateOutcome,
} from './outcomes.js';

export type { LiveLease };

export type {
  CancelOutcome,
  OperatorLeaseOutcome,
  PlaceOutcome,
  Placed,
  ResellOutcome,
  TerminateOutcome,
} from './outcomes.js';

export type { BookStateOptions } from './book-core.js';

export class BookState extends BookCore {
  /**
   * An operator halts (true) or resumes (false) the book: while halted new
   * orders are refused market_halted and its timers wait (OrderBook.setHalted);
   * leases run on. False when the book already was so.
   */
  setHalted(halted: boolean, now: number, changes: ChangeSet): boolean {
    if ((this.halted !== null) === halted) return false;
    return this.command(changes, () => {
      if (halted) this.advance(now);
      this.handle(this.book.setHalted(halted, now));
      if (!halted) this.leaseBook.advance(this, now);
      this.halted = halted ? now : null;
      changes.halts.push({ gpu_type: this.gpuType, zone: this.zone, halted_ms: this.halted });
      return true;
    });
  }

  /** The book was halted at `at` when it was loaded (book-loader.ts). */
  restoreHalt(at: number): void {
    this.halted = at;
    this.book.setHalted(true, this.book.clock);
  }

  /**
   * A new order, already checked against the account (orders/intake.ts).
   * `holdCents`: the credit the buy holds (D3); a market buy whose fills
   * would now cost more is refused with insufficient_funds.
   */
  place(row: OrderRow, now: number, changes: ChangeSet, holdCents?: number): PlaceOutcome {
    return this.command(changes, () => {
      if (holdCents === undefined) return this.placeRow(row, now);
      const outcome = this.placeHeld(row, now, holdCents);
      if (!outcome.ok) changes.hold(row.id, 0);
      return outcome;
    });
  }

  /** DELETE /v1/orders/{id}. */
  cancel(orderId: string, accountId: string, now: number, changes: ChangeSet): CancelOutcome {
    const row = this.orders.get(orderId);
    if (row === undefined || row.account_id !== accountId) return { ok: false };
    return this.command(changes, () => {
      const result = this.book.cancel(orderId, now);
      this.handle(result.events);
      if (!result.ok) return { ok: false };
      return {
        ok: true,
        cancelledGpus: result.nodes * GPUS_PER_NODE,
        cancelledAt: row.cancelled_ms ?? now,
      };
    });
  }

  /**
   * An operator's sweep (docs/api/admin.md): every open order that `which`
   * picks (resting, scheduled, unseen) leaves the book as a customer's
   * cancel would, its credit hold released, with `reason` (account_suspended,
   * cluster_cordoned). Live leases stay. Returns the ids cancelled.
   */
  withdrawOrders(
    which: (o: OrderRow) => boolean,
    reason: CancelReason,
    now: number,
    changes: ChangeSet,
  ): string[] {
    const ids = [...this.orders.values()].filter(which).map((o) => o.id);
    if (ids.length === 0) return [];
    return this.command(changes, () => {
      this.advance(now);
      return ids.filter((id) => this.withdraw(id, reason, now));
    });
  }

  /** D26: terminate a live lease of `accountId` now, with the refund of the rest. */
  terminate(leaseId: string, accountId: string, now: number, changes: ChangeSet): TerminateOutcome {
    const live = this.leases.get(leaseId);
    if (live === undefined || live.row.account_id !== accountId) return notActive(leaseId);
    return this.command(changes, () => {
      this.advance(now);
      // The lease may have ended while the clock advanced.
      if (!this.leases.has(leaseId)) return notActive(leaseId);
      // D27: a lease sold ahead is the buyer's from the transfer.
      const sold = BookLeases.soldAheadRefusal(live);
      if (sold !== undefined) return sold;
      const refund = this.leaseBook.terminate(this, live, now);
      return { ok: true, lease: { ...live.row }, terminatedAt: now, refund };
    });
  }

  /** An operator fails or revokes a live lease, whoever holds it (BookLeases.operatorEnd). */
  operatorEnd(
    leaseId: string,
    action: 'fail' | 'revoke',
    now: number,
    changes: ChangeSet,
  ): OperatorLeaseOutcome {
    const live = this.leases.get(leaseId);
    if (live === undefined) return notActive(leaseId);
    return this.command(changes, (): OperatorLeaseOutcome => {
      this.advance(now);
      // The lease may have ended (expired, timed out) while the clock advanced.
      if (!this.leases.has(leaseId)) return notActive(leaseId);
      return this.leaseBook.operatorEnd(this, live, action, now);
    });
  }

  /** D27: offer a live lease of `accountId` for resale, as one sell of the whole lease. */
  resell(leaseId: string, request: ResaleRequest, now: number, changes: ChangeSet): ResellOutcome {
    const live = this.leases.get(leaseId);
    if (live === undefined || live.row.account_id !== request.accountId) return notActive(leaseId);
    return this.command(changes, () => {
      this.advance(now);
      if (!this.leases.has(leaseId) || BookLeases.soldAhead(live)) return notActive(leaseId);
      // A lease still provisioning may yet fail and be refunded in full
      // (D25): it is resold once it is active.
      if (live.row.status !== 'active') {
        return refuse(
          'lease_not_ready',
          `lease ${leaseId} is still provisioning; it can be resold once it is active`,
        );
      }
      if (live.resaleOrderId !== null) {
        return refuse(
          'invalid_request',
          `lease ${leaseId} is already offered by resell order ${live.resaleOrderId}; cancel it first (DELETE /v1/orders/${live.resaleOrderId})`,
        );
      }
      const row = resaleOrder(live.row, request, now);
      if (!row.ok) return row;
      const placed = this.placeRow(row.order, now);
      if (!placed.ok) return placed;
      const [fill] = placed.fills;
      const transferAt =
        fill === undefined
          ? undefined
          : (this.leases.get(fill.lease_id)?.row.start_ms ?? fill.at_ms);
      return { ...placed, sourceLease: { ...live.row }, window: row.window, transferAt };
    });
  }

  /** The agent reported the lease provisioned (D25): provisioning → active. */
  leaseReady(leaseId: string, now: number, changes: ChangeSet): boolean {
    return this.leaseBook.ready(leaseId, now, changes);
  }

  /**
   * The agent reported that it cannot provision the lease: it fails now, with
   * D25's full refund, without waiting for the timeout. Only a lease still
   * provisioning fails so; returns whether it did.
   */
  leaseFailed(leaseId: string, now: number, changes: ChangeSet): boolean {
    const live = this.leases.get(leaseId);
    if (live === undefined || live.row.status !== 'provisioning') return false;
    return this.command(changes, () => {
      this.advance(now);
      if (!this.leases.has(leaseId)) return false;
      this.leaseBook.fail(this, live, now);
      return true;
    });
  }

  /**
   * D29: nodes of a cluster change status (heartbeats, silence). When fewer
   * nodes are up than the cluster's open sells and live leases need, its
   * newest sells are withdrawn (cancel_reason nodes_offline) until they fit;
   * live leases stay (the lease read shows their nodes' status).
   */
  setNodeStatus(
    clusterId: string,
    statuses: ReadonlyMap<string, NodeState['status']>,
    now: number,
    changes: ChangeSet,
  ): void {
    const cluster = this.cluster(clusterId);
    this.command(changes, () => {
      this.advance(now);
      for (const n of cluster.nodes) {
        const status = statuses.get(n.id);
        if (status === undefined || status === n.status) continue;
        setNodeStatus(cluster, n, status);
        changes.nodes.push({ id: n.id, status });
      }
      if (freeNodes(cluster) >= 0) return;
      const sells = [...this.orders.values()]
        .filter(
          (o) => o.cluster_id === clusterId && o.side === 'sell' && o.resale_lease_id === null,
        )
        .sort((a, b) => b.created_ms - a.created_ms || (b.id < a.id ? -1 : 1));
      for (const sell of sells) {
        if (freeNodes(cluster) >= 0) break;
        this.withdraw(sell.id, 'nodes_offline', now);
      }
    });
  }

  /** Time passes: the book's timers, lease ends (D25) and provisioning timeouts. */
  tick(now: number, changes: ChangeSet): void {
    this.command(changes, () => this.advance(now));
  }

  /** D3: a buy holding credit (orders/credit.ts) never costs more than its hold. */
  private placeHeld(row: OrderRow, now: number, holdCents: number): PlaceOutcome {
    const nodes = row.gpu_count / GPUS_PER_NODE;
    if (row.limit_price_cents === null) {
      const party = { accountId: row.account_id, orgId: row.organization_id };
      const est = this.book.estimate({ nodes, durationHours: row.duration_hours, ...party }, now);
      const moved = priceMovedPastHold(est, nodes, holdCents);
      if (moved !== undefined) return moved;
    }
    this.holds.set(row.id, holdCents);
    const outcome = this.placeRow(row, now);
    if (!outcome.ok) this.holds.delete(row.id);
    else if (chargedCents(outcome.fills) > holdCents) {
      throw new InvariantError(`order ${row.id} was charged past its hold of ${holdCents} c`);
    }
    return outcome;
  }

  private placeRow(row: OrderRow, now: number): PlaceOutcome {
    if (this.halted !== null) {
      return refuse(
        'market_halted',
        `the ${this.gpuType} ${this.zone} book is halted by an operator; open orders can still be cancelled`,
      );
    }
    const refused = sellRefusal(this.clusters, row);
    if (refused !== undefined) return refused;
    const cluster =
      row.resale_lease_id === null && row.cluster_id !== null
        ? this.cluster(row.cluster_id)
        : undefined;
    const nodes = row.gpu_count / GPUS_PER_NODE;
    const result = this.book.place(inputOf(row), now);
    if (!result.ok) {
      this.handle(result.events);
      return refuseOrder(result);
    }
    if (result.referencePrice !== undefined) row.reference_price_cents = result.referencePrice;
    this.orders.set(row.id, row);
    this.tally.placed++;
    this.touched.add(row.id);
    if (cluster !== undefined) cluster.openSellNodes += nodes;
    if (row.resale_lease_id !== null) {
      const lease = this.leases.get(row.resale_lease_id);
      if (lease !== undefined) lease.resaleOrderId = row.id;
    }
    this.handle(result.events);
    // The row as the command leaves it (finish() syncs the book's columns first).
    this.finish();
    return {
      ok: true,
      order: { ...row },
      fills: this.newFills.filter((f) => f.buy_order_id === row.id || f.sell_order_id === row.id),
    };
  }
}
