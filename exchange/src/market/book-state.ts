// Everything one book owns, in memory, changed by its single writer only:
// the matching engine's book, its open orders' rows, its clusters' node
// capacity (capacity.ts) and its live leases (book-leases.ts). Commands run
// synchronously, record what they changed in a ChangeSet, which the writer
// commits (book-writer.ts), and return rows and typed outcomes: a refusal is
// returned (refusal.ts), a throw is a bug that costs the book a rebuild.
//
// Order rules: D3 (credit holds), D9-D17 (the engine), D31 (capacity).
// Lease rules: book-leases.ts.

import { GPUS_PER_NODE, InvariantError } from '@gpux/shared';
import type { CancelReason, GpuType, Zone } from '@gpux/shared';

import { resaleOrder } from '../leases/resale.js';
import { chargedCents, holdAfter, priceMovedPastHold } from '../orders/credit.js';
import type { ResaleRequest } from '../leases/resale.js';
import { leaseGroups } from '../matching/index.js';
import type { BookEvent, Fill, OrderBook } from '../matching/index.js';
import { BookLeases } from './book-leases.js';
import type { LeaseHost, LiveLease } from './book-leases.js';
import { freeNodes, sellRefusal, setNodeStatus } from './capacity.js';
import type { ClusterState, NodeState } from './capacity.js';
import type { ChangeSet } from './change-set.js';
import { notActive, refuse } from './refusal.js';
import { inputOf, statusOf, syncBookColumns } from './rows.js';
import type { FillRow, OrderRow } from './rows.js';
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

export interface BookStateOptions {
  /** D25: a lease still provisioning after this long fails, refunded in full. */
  readonly provisioningTimeoutMs: number;
}

export class BookState implements LeaseHost {
  /** Open orders by id (resting, scheduled, unseen). */
  readonly orders = new Map<string, OrderRow>();
  readonly clusters = new Map<string, ClusterState>();
  /** Open buys holding credit (D3, orders/credit.ts): order id → the hold. */
  readonly holds = new Map<string, number>();
  private readonly leaseBook: BookLeases;

  // The running command.
  private current: ChangeSet | null = null;
  private touched = new Set<string>();
  private newFills: FillRow[] = [];
  /** Cancellations the exchange caused, whose reason is not the engine's "user". */
  private reasonOverride = new Map<string, CancelReason>();

  constructor(
    readonly gpuType: GpuType,
    readonly zone: Zone,
    readonly book: OrderBook,
    fillSeq: number,
    options: BookStateOptions,
  ) {
    this.leaseBook = new BookLeases(
      gpuType,
      zone,
      this.clusters,
      fillSeq,
      options.provisioningTimeoutMs,
    );
  }

  /** The book's live leases by id. */
  get leases(): Map<string, LiveLease> {
    return this.leaseBook.live;
  }

  /** The last fill's number in this book (fills.book_seq). */
  get fillSeq(): number {
    return this.leaseBook.fillSeq;
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

  // ---- internals ----

  /** Run one command: its changes go to `changes`, touched orders are synced at the end. */
  private command<T>(changes: ChangeSet, run: () => T): T {
    this.current = changes;
    this.touched = new Set();
    this.newFills = [];
    this.reasonOverride = new Map();
    try {
      const result = run();
      this.finish();
      return result;
    } finally {
      this.current = null;
    }
  }

  /** The running command's change set. */
  get changes(): ChangeSet {
    if (this.current === null) throw new InvariantError('no command is running');
    return this.current;
  }

  // ---- LeaseHost: what the leases use of the running command ----

  touch(orderId: string): void {
    this.touched.add(orderId);
  }

  filled(fill: FillRow): void {
    this.changes.fills.push(fill);
    this.newFills.push(fill);
  }

  withdrawResale(orderId: string, reason: CancelReason, at: number): void {
    this.withdraw(orderId, reason, at);
  }

  /** Take an open order out of the book for a reason of the exchange's (D12). */
  private withdraw(orderId: string, reason: CancelReason, at: number): boolean {
    this.reasonOverride.set(orderId, reason);
    const result = this.book.cancel(orderId, at);
    this.handle(result.events);
    return result.ok;
  }

  private cluster(id: string): ClusterState {
    const c = this.clusters.get(id);
    if (c === undefined) {
      throw new InvariantError(`cluster ${id} is not loaded in book ${this.gpuType}/${this.zone}`);
    }
    return c;
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
      return refuse(result.code, result.message, result.missingGpus);
    }
    if (result.referencePrice !== undefined) row.reference_price_cents = result.referencePrice;
    this.orders.set(row.id, row);
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

  private advance(now: number): void {
    this.handle(this.book.advance(now));
    this.leaseBook.advance(this, now);
  }

  /** Sync every order the command touched into its row and the change set. */
  private finish(): void {
    for (const id of this.touched) {
      const row = this.orders.get(id);
      if (row === undefined) continue;
      const oo = this.book.openOrder(id);
      syncBookColumns(row, oo);
      row.status = statusOf(row);
      this.changes.order(row);
      if (oo === undefined) this.orders.delete(id);
      if (this.holds.size > 0) this.syncHold(row, oo === undefined);
    }
    this.touched.clear();
  }

  /** D3: a held buy's hold follows what it has left; it goes when the buy closes. */
  private syncHold(row: OrderRow, closed: boolean): void {
    const held = this.holds.get(row.id);
    if (held === undefined) return;
    const next = holdAfter(row, held, closed);
    if (next === undefined) return;
    if (next === 0) this.holds.delete(row.id);
    else this.holds.set(row.id, next);
    this.changes.hold(row.id, next);
  }

  private handle(events: readonly BookEvent[]): void {
    for (const ev of events) {
      switch (ev.type) {
        case 'rested':
          this.touched.add(ev.orderId);
          break;
        case 'matched':
          this.matched(ev.buyOrderId, ev.fills, ev.at);
          break;
        case 'cancelled':
          this.cancelled(ev.orderId, ev.nodes, ev.reason, ev.at);
          break;
      }
    }
  }

  private cancelled(orderId: string, nodes: number, reason: CancelReason, at: number): void {
    const row = this.orderRow(orderId);
    row.cancelled_gpus += nodes * GPUS_PER_NODE;
    row.cancel_reason = this.reasonOverride.get(orderId) ?? reason;
    row.cancelled_ms = at;
    this.touched.add(orderId);
    if (row.side !== 'sell') return;
    if (row.resale_lease_id !== null) {
      const lease = this.leases.get(row.resale_lease_id);
      if (lease !== undefined && lease.resaleOrderId === row.id) lease.resaleOrderId = null;
    } else if (row.cluster_id !== null) {
      this.cluster(row.cluster_id).openSellNodes -= nodes;
    }
  }

  orderRow(id: string): OrderRow {
    const row = this.orders.get(id);
    if (row === undefined) throw new InvariantError(`book event for unknown order ${id}`);
    return row;
  }

  /** One matching step (D11): one lease per cluster (or per resold lease). */
  private matched(buyOrderId: string, fills: readonly Fill[], at: number): void {
    const buy = this.orderRow(buyOrderId);
    this.touched.add(buyOrderId);
    for (const group of leaseGroups(fills)) this.leaseBook.create(this, buy, group, at);
  }
}
